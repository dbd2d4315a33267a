// `packfs cat SOURCE PATH...`: the raw bytes of files, in order, on stdout. Reads in 1 MiB
// slices, straight from a pack's mapping where the bytes are stored raw.
#include <csignal>
#include <memory>
#include <vector>

#include "command.hpp"
#include "content.hpp"
#include "host_io.hpp"
#include "report.hpp"
#include "source.hpp"

namespace packfs::cli {

namespace {

struct CatArgs {
    std::string source;
    std::vector<std::string> paths;
};

int run_cat(const CatArgs& args) {
    const Output out(false);
    auto fs = open_source(args.source);
    if (!fs) return out.fail(source_failure(fs.error()));
    // EPIPE as an error code instead of a fatal signal, so a closed pipe ends us quietly.
    std::signal(SIGPIPE, SIG_IGN);
    int status = kExitOk;
    for (const std::string& path : args.paths) {
        auto reader = ContentReader::open(**fs, path);
        if (!reader) {
            status = out.fail(reader.error());
            continue;
        }
        // Bytes stored raw in a pack go from its file to stdout in the kernel (sendfile).
        auto ok = reader->copy_to(STDOUT_FILENO);
        // A reader that went away (`packfs cat big | head`) is not worth a message.
        if (!ok && ok.error().code() == EPIPE) return status;
        if (!ok) status = out.fail(ok.error());
    }
    return status;
}

}  // namespace

Command add_cat_command(CLI::App& parent) {
    auto args = std::make_shared<CatArgs>();
    CLI::App* sub = parent.add_subcommand("cat", "Write files of a SOURCE to stdout");
    sub->add_option("SOURCE", args->source,
                    "Pack file or URL (http(s)://, oci://), volume or directory")
        ->required();
    sub->add_option("PATH", args->paths, "Paths inside SOURCE")->required();
    return {sub, [args](const std::string&) { return run_cat(*args); }};
}

}  // namespace packfs::cli
