// packfs push PACK oci://REGISTRY/REPOSITORY[:TAG]: upload a pack (and the bases it was built
// over) to an OCI registry as an artifact, only the blobs it lacks, and print its reference by
// digest. packfs pull SOURCE OUT: copy a remote pack (URL or reference) down whole, checked, into
// OUT, and its bases beside it. docs/REMOTE.md, "Registries" and "Packs over bases".
#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

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
    std::vector<std::string> mount_from;
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

// --json's words for PushedBlob's enums, in their order.
constexpr std::string_view kOutcomes[] = {"sent", "present", "mounted"};
constexpr std::string_view kRoles[] = {"pack", "base", "config"};

int run_push(const PushArgs& args) {
    const Output out(args.json);
    ProgressLine progress;
    const PushOptions push{.bases = pack_options().bases, .mount_from = args.mount_from};
    auto pushed = push_pack_report(args.pack, args.reference, with_progress(progress, "push"), push);
    progress.clear();
    if (!pushed) return out.fail(pushed.error());
    if (out.json()) {
        Json blobs = Json::array();
        for (const PushedBlob& blob : pushed->blobs) {
            Json one{{"role", kRoles[static_cast<std::size_t>(blob.role)]},
                     {"name", blob.name},
                     {"digest", blob.digest},
                     {"size", blob.size},
                     {"outcome", kOutcomes[static_cast<std::size_t>(blob.outcome)]}};
            if (!blob.mounted_from.empty()) one["mounted_from"] = blob.mounted_from;
            blobs.push_back(std::move(one));
        }
        Output::emit(Json{{"pack", args.pack},
                          {"reference", pushed->reference},
                          {"bytes_uploaded", pushed->bytes_uploaded},
                          {"blobs_sent", pushed->blobs_sent},
                          {"blobs_present", pushed->blobs_present},
                          {"blobs_mounted", pushed->blobs_mounted},
                          {"blobs", std::move(blobs)}});
    } else {
        // The reference alone on stdout, for scripts; what moved on stderr.
        fmt::print("{}\n", pushed->reference);
        fmt::print(stderr, "packfs: push: {} uploaded: {} blob(s) sent, {} already there, {} mounted\n",
                   human_size(pushed->bytes_uploaded), pushed->blobs_sent, pushed->blobs_present,
                   pushed->blobs_mounted);
    }
    return kExitOk;
}

int run_pull(const PullArgs& args) {
    const Output out(args.json);
    const auto start = std::chrono::steady_clock::now();
    ProgressLine progress;
    auto pulled = pull_pack_report(args.source, args.out, with_progress(progress, "pull"));
    progress.clear();
    if (!pulled) return out.fail(pulled.error());
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (out.json()) {
        Json bases = Json::array();
        for (const PulledPack& base : pulled->bases)
            bases.push_back(Json{{"path", base.path},
                                 {"digest", base.digest},
                                 {"size", base.size},
                                 {"fetched", base.fetched}});
        Output::emit(Json{{"source", args.source},
                          {"out", args.out},
                          {"bytes", pulled->pack.size},
                          {"bytes_fetched", pulled->bytes_fetched},
                          {"bases", std::move(bases)},
                          {"seconds", seconds}});
    } else {
        fmt::print("{} -> {}: {} in {:.2f} s\n", args.source, args.out,
                   human_size(pulled->pack.size), seconds);
        for (const PulledPack& base : pulled->bases)
            fmt::print("  base {}: {}\n", base.path,
                       base.fetched ? human_size(base.size) : std::string("already there"));
    }
    return kExitOk;
}

}  // namespace

Command add_push_command(CLI::App& parent) {
    auto args = std::make_shared<PushArgs>();
    CLI::App* sub = parent.add_subcommand(
        "push",
        "Upload a pack to an OCI registry, and the bases it was built over, sending only the "
        "blobs the registry lacks; prints its reference by digest");
    sub->add_option("PACK", args->pack,
                    "Pack file (a pack built over bases: each found beside it under the name it "
                    "records, or given with --base PACK)")
        ->required();
    sub->add_option("REFERENCE", args->reference,
                    "oci://REGISTRY/REPOSITORY[:TAG] (default tag latest)")
        ->required();
    sub->add_option("--mount-from", args->mount_from,
                    "A repository of the same registry to mount a blob the target lacks from "
                    "instead of uploading it (repeatable, tried in order)")
        ->type_name("REPOSITORY")
        ->allow_extra_args(false);
    sub->add_flag("--json", args->json,
                  "Print the result as one JSON object (the reference, bytes uploaded, and each "
                  "blob: sent, present or mounted)");
    return {sub, [args](const std::string&) { return run_push(*args); }};
}

Command add_pull_command(CLI::App& parent) {
    auto args = std::make_shared<PullArgs>();
    CLI::App* sub = parent.add_subcommand(
        "pull",
        "Copy a remote pack down whole (an http(s) URL or an oci:// reference), checked, and "
        "the bases it was built over beside OUT (a base already there is kept)");
    sub->add_option("SOURCE", args->source,
                    "http(s)://… or oci://REGISTRY/REPOSITORY(:TAG|@sha256:…)")
        ->required();
    sub->add_option("OUT", args->out,
                    "Where to write the pack (its bases go beside it, under the names it records)")
        ->required();
    sub->add_flag("--json", args->json, "Print the result as one JSON object");
    return {sub, [args](const std::string&) { return run_pull(*args); }};
}

}  // namespace packfs::cli
