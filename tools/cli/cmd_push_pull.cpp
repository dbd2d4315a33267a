// packfs push PACK oci://REGISTRY/REPOSITORY[:TAG]: upload a pack to an OCI registry as an
// artifact and print its reference by digest. packfs pull SOURCE OUT: copy a remote pack (URL or
// reference) down whole, checked, into OUT. docs/REMOTE.md, "Registries".
#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <string>

#include "command.hpp"
#include "format.hpp"
#include "packfs/remote.hpp"
#include "progress.hpp"
#include "report.hpp"
#include "source.hpp"

namespace packfs::cli {
namespace {

struct PushArgs {
    std::string pack, reference;
    bool json = false;
};

struct PullArgs {
    std::string source, out;
    bool json = false;
};

// The remote options with a progress display of the bytes moved (on a terminal only).
RemoteOptions with_progress(ProgressLine& line, std::string_view verb) {
    RemoteOptions options = remote_options();
    if (line.enabled()) {
        options.progress = [&line, verb](uint64_t done, uint64_t total) {
            line.update([&] {
                if (total == 0) return fmt::format("{}: {}", verb, human_size(done));
                return fmt::format("{}: {} of {} ({:.0f}%)", verb, human_size(done),
                                   human_size(total),
                                   100.0 * static_cast<double>(done) / static_cast<double>(total));
            });
        };
    }
    return options;
}

int run_push(const PushArgs& args) {
    const Output out(args.json);
    ProgressLine progress;
    auto pushed = push_pack(args.pack, args.reference, with_progress(progress, "push"));
    progress.clear();
    if (!pushed) return out.fail(pushed.error());
    if (out.json()) {
        Output::emit(Json{{"pack", args.pack}, {"reference", *pushed}});
    } else {
        fmt::print("{}\n", *pushed);
    }
    return kExitOk;
}

int run_pull(const PullArgs& args) {
    const Output out(args.json);
    const auto start = std::chrono::steady_clock::now();
    ProgressLine progress;
    auto size = pull_pack(args.source, args.out, with_progress(progress, "pull"));
    progress.clear();
    if (!size) return out.fail(size.error());
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (out.json()) {
        Output::emit(Json{
            {"source", args.source}, {"out", args.out}, {"bytes", *size}, {"seconds", seconds}});
    } else {
        fmt::print("{} -> {}: {} in {:.2f} s\n", args.source, args.out, human_size(*size), seconds);
    }
    return kExitOk;
}

}  // namespace

Command add_push_command(CLI::App& parent) {
    auto args = std::make_shared<PushArgs>();
    CLI::App* sub = parent.add_subcommand(
        "push", "Upload a pack to an OCI registry; prints its reference by digest");
    sub->add_option("PACK", args->pack, "Pack file")->required();
    sub->add_option("REFERENCE", args->reference,
                    "oci://REGISTRY/REPOSITORY[:TAG] (default tag latest)")
        ->required();
    sub->add_flag("--json", args->json, "Print the result as one JSON object");
    return {sub, [args](const std::string&) { return run_push(*args); }};
}

Command add_pull_command(CLI::App& parent) {
    auto args = std::make_shared<PullArgs>();
    CLI::App* sub = parent.add_subcommand(
        "pull", "Copy a remote pack down whole (an http(s) URL or an oci:// reference), checked");
    sub->add_option("SOURCE", args->source,
                    "http(s)://… or oci://REGISTRY/REPOSITORY(:TAG|@sha256:…)")
        ->required();
    sub->add_option("OUT", args->out, "Where to write the pack")->required();
    sub->add_flag("--json", args->json, "Print the result as one JSON object");
    return {sub, [args](const std::string&) { return run_pull(*args); }};
}

}  // namespace packfs::cli
