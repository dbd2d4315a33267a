// `packfs convert IN OUT`: rewrites a pack in another format version (2 by default, or 1 for
// older readers) or with another compression. The tree is read from IN and written by the
// same writer as `packfs build`, with IN's block size, inline limit, inode numbers and recorded
// times, so the result is byte-identical to a fresh build of the same tree with those options.
// A pack does not record the codec level or whether dedup was on: the codec's default level
// and dedup are assumed unless given (--compress zstd:19, --no-dedup).
#include <fmt/format.h>

#include <chrono>
#include <memory>

#include "build_options.hpp"
#include "command.hpp"
#include "format.hpp"
#include "pack_report.hpp"
#include "progress.hpp"
#include "report.hpp"
#include "source.hpp"
#include "tree.hpp"

namespace packfs::cli {

namespace {

struct ConvertArgs {
    std::string in, out;
    uint32_t format = 2;
    std::string compress;    // empty: IN's codec at its default level
    std::string keep_times;  // empty: what IN records
    std::string metadata;    // empty: as IN stores it (compressed when IN cannot tell)
    unsigned jobs = 0;
    bool no_dedup = false;
    bool no_block_digests = false;
    bool json = false;
};

// Whether IN's tree carries atimes or ctimes of its own. A version 2 pack says so in its
// header. A version 1 pack always stores all three, equal when its build recorded the mtime
// alone: one that keeps inode numbers was written by a volume's compaction, which records all
// times; for any other the tree tells (all equal: the mtime alone).
Result<PackTimes> recorded_times(PackBackend& pack) {
    const PackInfo& info = pack.info();
    if (!info.stores_all_times) return PackTimes::mtime;
    if (info.version != 1 || info.keeps_inode_numbers) return PackTimes::all;
    PackTimes times = PackTimes::mtime;
    std::optional<Error> failed;
    walk_tree(pack, "/",
              {.entry =
                   [&](const std::string&, const Stat& st) {
                       if (st.atime != st.mtime || st.ctime != st.mtime) times = PackTimes::all;
                   },
               .on_error = [&](const Error& e) { failed = failed.value_or(e); }});
    if (failed) return std::unexpected(*failed);
    return times;
}

int run_convert(const ConvertArgs& args) {
    const Output out(args.json);
    auto pack = open_pack_file(args.in);
    if (!pack) return out.fail(source_failure(pack.error()));
    const PackInfo& info = (*pack)->info();

    std::string why;
    CompressionSpec compression{info.compression, 0};
    if (!args.compress.empty()) compression = *parse_compression(args.compress, why);
    PackWriteOptions options;
    options.format = args.format;
    options.compression = compression.codec;
    options.level = compression.level;
    options.block_size = info.block_size;
    options.inline_max = info.inline_max;
    options.keep_inode_numbers = info.keeps_inode_numbers;
    options.dedup = !args.no_dedup;
    options.block_digests = !args.no_block_digests;
    options.jobs = args.jobs;
    // A compressed version 2 pack tells whether its metadata is compressed; any other is
    // converted with the default (compressed, where the output is compressed).
    const bool in_tells = info.version >= 2 && info.compression != Compression::none;
    options.compress_metadata = args.metadata.empty() ? !in_tells || info.compressed_metadata
                                                      : args.metadata == "compressed";
    if (args.keep_times.empty()) {
        auto times = recorded_times(**pack);
        if (!times) return out.fail(times.error());
        options.times = *times;
    } else {
        options.times = args.keep_times == "all" ? PackTimes::all : PackTimes::mtime;
    }

    ProgressLine progress;
    if (progress.enabled()) {
        options.progress = [&progress](const BuildProgress& p) {
            progress.update([&] { return build_progress_text(p); });
        };
    }
    const auto start = std::chrono::steady_clock::now();
    auto stats = write_pack(**pack, args.out, options);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    progress.clear();
    if (!stats) {
        Failure failure = Failure::from(stats.error());
        // Paths inside the tree are IN's; the output is named by its host path (op "build").
        if (failure.op != "build" && failure.path.starts_with('/'))
            failure.path = args.in + ":" + failure.path;
        return out.fail(failure);
    }
    const char* times = options.times == PackTimes::all ? "all" : "mtime";
    if (out.json()) {
        Output::emit(Json{{"pack", args.out},
                          {"source", args.in},
                          {"source_format_version", info.version},
                          {"format_version", options.format},
                          {"compression", compression_name(compression.codec)},
                          {"level", compression.level},
                          {"block_size", options.block_size},
                          {"inline_max", options.inline_max},
                          {"dedup", options.dedup},
                          {"keeps_inode_numbers", options.keep_inode_numbers},
                          {"times", times},
                          {"compressed_metadata", compresses_metadata(options)},
                          {"elapsed_s", seconds},
                          {"stats", pack_stats_json(*stats)}});
        return kExitOk;
    }
    fmt::print(
        "converted {} (format version {}) to {} (format version {}) in {:.2f} s, "
        "compression {}{}\n",
        args.in, info.version, args.out, options.format, seconds,
        compression_text(compression, options.block_size), options.dedup ? "" : ", no dedup");
    fmt::print("  times     {}{}\n",
               options.times == PackTimes::all ? "atime, mtime and ctime" : "mtime only",
               options.keep_inode_numbers ? "; inode numbers kept" : "");
    fmt::print("{}", pack_stats_text(*stats));
    return kExitOk;
}

}  // namespace

Command add_convert_command(CLI::App& parent) {
    auto args = std::make_shared<ConvertArgs>();
    CLI::App* sub = parent.add_subcommand(
        "convert", "Rewrite a pack in another format version or compression (same tree)");
    sub->add_option("IN", args->in, "Pack file or URL (http(s)://, oci://) to read")->required();
    sub->add_option("OUT", args->out, "Pack file to write (replaced atomically; may be IN)")
        ->required();
    sub->add_option("--format", args->format,
                    "Format version to write: 2 (default) or 1 (for readers that predate 2)")
        ->check(CLI::IsMember({1u, 2u}));
    sub->add_option("--compress", args->compress,
                    "Block compression: zstd or lz4, optionally with a level, or none; default "
                    "IN's codec at its default level (a pack does not record its level)")
        ->check(kCompressionValidator);
    sub->add_option("--keep-times", args->keep_times,
                    "Times recorded: mtime or all; default what IN records")
        ->check(CLI::IsMember({"mtime", "all"}));
    sub->add_option("--metadata", args->metadata,
                    std::string(kMetadataHelp) + " (default: as IN stores it)")
        ->check(CLI::IsMember({"compressed", "raw"}));
    sub->add_option("--jobs,-j", args->jobs, "Worker threads (default: one per core)");
    sub->add_flag("--no-dedup", args->no_dedup, "Store duplicate contents again");
    sub->add_flag("--no-block-digests", args->no_block_digests,
                  "Leave out the SHA-256 of each block (32 bytes per block) and of each 16 KiB "
                  "of metadata that reading the pack remotely needs");
    sub->add_flag("--json", args->json, "Print the figures as one JSON object");
    return {sub, [args](const std::string&) { return run_convert(*args); }};
}

}  // namespace packfs::cli
