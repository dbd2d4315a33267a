// `packfs verify PACK`: checks every section, metadata block, compressed block and file
// digest of a pack, and the image digest; OK with the digest, or every problem found.
#include <fmt/format.h>

#include <memory>

#include "command.hpp"
#include "format.hpp"
#include "progress.hpp"
#include "report.hpp"
#include "source.hpp"

namespace packfs::cli {

namespace {

struct VerifyArgs {
    std::string pack;
    bool json = false;
};

int run_verify(const VerifyArgs& args) {
    const Output out(args.json);
    auto pack = open_pack_file(args.pack);
    if (!pack) return out.fail(source_failure(pack.error()));
    ProgressLine progress;
    std::function<void(uint64_t, uint64_t)> on_progress;
    if (progress.enabled()) {
        on_progress = [&progress](uint64_t done, uint64_t total) {
            progress.update([&] {
                return fmt::format("verifying: {} / {}", human_size(done), human_size(total));
            });
        };
    }
    const VerifyReport report = (*pack)->verify(on_progress);
    progress.clear();
    const std::string& digest = (*pack)->info().digest;
    if (out.json()) {
        Json problems = Json::array();
        for (const VerifyProblem& p : report.problems) {
            problems.push_back(Json{{"where", p.where}, {"what", p.what}});
        }
        Output::emit(Json{{"pack", args.pack},
                          {"ok", report.ok()},
                          {"digest", digest},
                          {"sections_checked", report.sections_checked},
                          {"blocks_checked", report.blocks_checked},
                          {"files_checked", report.files_checked},
                          {"bytes_checked", report.bytes_checked},
                          {"problems", std::move(problems)}});
    } else if (report.ok()) {
        fmt::print("OK {} {}\n", args.pack, digest);
        fmt::print("  checked {} sections, {} blocks, {} files, {}\n", report.sections_checked,
                   report.blocks_checked, report.files_checked, human_size(report.bytes_checked));
    } else {
        fmt::print("FAILED {}: {} problem{}\n", args.pack, report.problems.size(),
                   report.problems.size() == 1 ? "" : "s");
        for (const VerifyProblem& p : report.problems) fmt::print("  {}: {}\n", p.where, p.what);
    }
    return report.ok() ? kExitOk : kExitFailed;
}

}  // namespace

Command add_verify_command(CLI::App& parent) {
    auto args = std::make_shared<VerifyArgs>();
    CLI::App* sub = parent.add_subcommand(
        "verify", "Check every byte of a pack against its checksums and digests");
    sub->add_flag("--json", args->json, "Print the report as one JSON object");
    sub->add_option("PACK", args->pack, "Pack file or URL (http(s)://, oci://)")->required();
    return {sub, [args](const std::string&) { return run_verify(*args); }};
}

}  // namespace packfs::cli
