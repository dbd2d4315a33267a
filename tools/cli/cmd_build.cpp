// `packfs build SRC OUT.pack`: packs a host directory (write_pack_from_host), less what
// --exclude names, and reports what it wrote: counts, sizes, dedup savings, compression ratio,
// digest, time and throughput.
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "build_options.hpp"
#include "command.hpp"
#include "exclude_options.hpp"
#include "format.hpp"
#include "pack_report.hpp"
#include "packfs/pack.hpp"
#include "packfs/remote.hpp"
#include "progress.hpp"
#include "report.hpp"
#include "source.hpp"

namespace packfs::cli {

namespace {

struct BuildArgs {
    std::string source, out;
    std::string compress = "none";
    std::string block_size = "64K";
    std::string inline_max = "64";
    unsigned jobs = 0;
    bool no_dedup = false;
    bool no_block_digests = false;
    std::string layout;  // empty: walk (format 2; a format 1 pack is in inode order)
    bool json = false;
    std::string keep_times = "mtime";
    std::string metadata = "compressed";
    uint32_t format = 2;
    std::string clamp_mtime;  // empty: SOURCE_DATE_EPOCH's, if set
    std::string chunk_size;   // empty: contents whole (64K with --base)
    std::vector<std::string> bases;
    bool no_files_cache = false;
    ExcludeArgs exclude;
};

// The files cache (PackWriteOptions::files_cache): "files" in the cache directory (--cache,
// else the default), none with --no-files-cache or --cache none.
std::string files_cache_dir(const BuildArgs& args) {
    if (args.no_files_cache) return {};
    const std::string& given = remote_options().cache_dir;
    if (given == "none") return {};
    return (given.empty() ? remote_cache_dir() : given) + "/files";
}

// Where the clamp came from, for the report.
struct Clamp {
    std::optional<int64_t> seconds;
    std::string origin;  // "--clamp-mtime" or "SOURCE_DATE_EPOCH"
};

// The clamp of --clamp-mtime, else of SOURCE_DATE_EPOCH (the reproducible-builds convention:
// set and not empty means clamp); a malformed SOURCE_DATE_EPOCH is an error, never ignored.
// A chunk size the format takes: a power of two from 1 KiB to 4 MiB.
bool chunk_size_ok(uint32_t size) {
    return size >= (1u << 10) && size <= (4u << 20) && (size & (size - 1)) == 0;
}

std::optional<Clamp> clamp_of(const BuildArgs& args, std::string& why) {
    if (!args.clamp_mtime.empty())
        return Clamp{parse_epoch_seconds(args.clamp_mtime), "--clamp-mtime"};
    const char* env = std::getenv("SOURCE_DATE_EPOCH");
    if (!env || !*env) return Clamp{};
    auto seconds = parse_epoch_seconds(env);
    if (!seconds) {
        why = fmt::format("SOURCE_DATE_EPOCH='{}': expected whole seconds since the epoch", env);
        return std::nullopt;
    }
    return Clamp{seconds, "SOURCE_DATE_EPOCH"};
}

// Where `out` would land inside `source`, as a path from its root ("/sub/out.pack"); nullopt
// when it lands outside. Inside, the pack would pack itself unless it is excluded.
std::optional<std::string> path_inside(const std::string& out, const std::string& source) {
    std::error_code ec;
    const auto file = std::filesystem::weakly_canonical(std::filesystem::absolute(out, ec), ec);
    const auto root = std::filesystem::canonical(source, ec);
    if (ec) return std::nullopt;
    auto [root_end, file_at] = std::mismatch(root.begin(), root.end(), file.begin(), file.end());
    if (root_end != root.end()) return std::nullopt;
    std::string path;
    for (; file_at != file.end(); ++file_at) {
        if (file_at->empty()) continue;  // the empty last element of a trailing slash
        path += '/';
        path += file_at->string();
    }
    return path.empty() ? "/" : path;
}

int run_build(const BuildArgs& args) {
    const Output out(args.json);
    std::string why;
    const CompressionSpec compression = *parse_compression(args.compress, why);
    PackWriteOptions options;
    options.compression = compression.codec;
    options.level = compression.level;
    options.block_size = *parse_block_size(args.block_size);
    options.inline_max = static_cast<uint32_t>(*parse_size(args.inline_max));
    options.jobs = args.jobs;
    options.dedup = !args.no_dedup;
    options.block_digests = !args.no_block_digests;
    if (args.layout == "walk" && args.format < 2)
        return out.usage("build: --layout walk needs --format 2");
    options.layout = args.layout == "inodes" ? PackWriteOptions::Layout::inodes
                                             : PackWriteOptions::Layout::walk;
    options.times = args.keep_times == "all" ? PackTimes::all : PackTimes::mtime;
    options.format = args.format;
    options.compress_metadata = args.metadata == "compressed";
    if (!args.chunk_size.empty()) {
        const auto size = parse_size(args.chunk_size);
        if (!size || *size > (4u << 20) ||
            !chunk_size_ok(static_cast<uint32_t>(*size)))
            return out.usage("build: --chunk-size wants a power of two from 1K to 4M, such as 64K");
        options.chunk_size = static_cast<uint32_t>(*size);
    }
    options.bases = args.bases;
    options.files_cache = files_cache_dir(args);
    if ((options.chunk_size != 0 || !options.bases.empty()) && args.format < 2)
        return out.usage("build: --chunk-size and --base need --format 2");
    const std::optional<Clamp> clamp = clamp_of(args, why);
    if (!clamp) return out.usage(fmt::format("build: {}", why));
    if (clamp->seconds) options.clamp_time = Time{*clamp->seconds, 0};
    auto exclude = exclude_patterns(args.exclude);
    if (!exclude) {
        // A file that cannot be read failed; a pattern that cannot be used is misuse.
        if (exclude.error().op() == "exclude-from") return out.fail(exclude.error());
        return out.usage(fmt::format("build: {}", exclude.error().message()));
    }
    options.exclude = std::move(*exclude);

    struct stat st {};
    if (::stat(args.source.c_str(), &st) != 0) return out.fail(Error(errno, "build", args.source));
    if (!S_ISDIR(st.st_mode)) return out.fail(Error(ENOTDIR, "build", args.source));
    if (const auto at = path_inside(args.out, args.source); at && *at == "/") {
        return out.usage(fmt::format("build: {} is {} itself", args.out, args.source));
    } else if (at && !options.exclude.leaves_out(*at, false)) {
        return out.usage(fmt::format(
            "build: {} is inside {}: the pack would contain itself (exclude it: --exclude {})",
            args.out, args.source, *at));
    }

    ProgressLine progress;
    if (progress.enabled()) {
        options.progress = [&progress](const BuildProgress& p) {
            progress.update([&] { return build_progress_text(p); });
        };
    }
    const auto start = std::chrono::steady_clock::now();
    auto stats = write_pack_from_host(args.source, args.out, options);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    progress.clear();
    if (!stats) {
        Failure failure = Failure::from(stats.error());
        // The library names entries of the tree as "/sub/file" and the output by its host
        // path (op "build"): put the tree's paths under SRC, where the user can find them.
        if (failure.op != "build" && failure.path.starts_with('/')) {
            failure.path = args.source + (failure.path == "/" ? "" : failure.path);
        }
        return out.fail(failure);
    }
    const double mb_per_s =
        seconds > 0 ? static_cast<double>(stats->file_bytes) / 1e6 / seconds : 0;
    if (out.json()) {
        Output::emit(Json{{"pack", args.out},
                          {"source", args.source},
                          {"compression", compression_name(compression.codec)},
                          {"level", compression.level},
                          {"block_size", options.block_size},
                          {"inline_max", options.inline_max},
                          {"dedup", options.dedup},
                          {"format_version", options.format},
                          {"times", args.keep_times},
                          {"compressed_metadata", compresses_metadata(options)},
                          {"clamp_mtime", clamp->seconds ? Json(*clamp->seconds) : Json(nullptr)},
                          {"elapsed_s", seconds},
                          {"mb_per_s", mb_per_s},
                          {"phases_s",
                           {{"scan", stats->scan_seconds},
                            {"hash", stats->hash_seconds},
                            {"data", stats->data_seconds},
                            {"finish", stats->finish_seconds}}},
                          {"stats", pack_stats_json(*stats)}});
        return kExitOk;
    }
    const std::string codec = compression_text(compression, options.block_size);
    fmt::print("built {} (format version {}) from {} in {:.2f} s ({:.1f} MB/s), compression {}{}\n",
               args.out, options.format, args.source, seconds, mb_per_s, codec,
               options.dedup ? "" : ", no dedup");
    fmt::print(
        "  times     {}{}\n",
        options.times == PackTimes::all ? "atime, mtime and ctime" : "mtime only",
        clamp->seconds ? fmt::format(", clamped to {} ({})", *clamp->seconds, clamp->origin) : "");
    fmt::print("{}", pack_stats_text(*stats));
    fmt::print("  time      scan {:.2f} s, hash {:.2f} s, data {:.2f} s, finish {:.2f} s\n",
               stats->scan_seconds, stats->hash_seconds, stats->data_seconds,
               stats->finish_seconds);
    return kExitOk;
}

}  // namespace

Command add_build_command(CLI::App& parent) {
    auto args = std::make_shared<BuildArgs>();
    CLI::App* sub = parent.add_subcommand("build", "Pack a host directory into a pack file");
    sub->add_option("SRC", args->source, "Host directory to pack")->required();
    sub->add_option("OUT", args->out, "Pack file to write (replaced atomically)")->required();
    sub->add_option("--compress", args->compress,
                    "Block compression: zstd or lz4, optionally with a level (zstd:19, lz4:9); "
                    "default none")
        ->check(kCompressionValidator);
    sub->add_option("--block-size", args->block_size,
                    "Compression block size, a power of two from 4K to 16M (default 64K)")
        ->check(kBlockSizeValidator);
    sub->add_option("--jobs,-j", args->jobs, "Worker threads (default: one per core)");
    sub->add_option("--inline-max", args->inline_max,
                    "Files up to this size are stored in the metadata (default 64)")
        ->check(kInlineMaxValidator);
    sub->add_flag("--no-dedup", args->no_dedup, "Store duplicate contents again");
    sub->add_option("--layout", args->layout,
                    "Where contents go: walk (the default: the order find, tar and cp -r read "
                    "them, so a cold read of the whole tree streams the pack front to back) or "
                    "inodes (breadth-first, each directory by name; what --format 1 always "
                    "uses)")
        ->check(CLI::IsMember({"inodes", "walk"}));
    sub->add_flag("--no-block-digests", args->no_block_digests,
                  "Leave out the SHA-256 of each block (32 bytes per block) and of each 16 KiB "
                  "of metadata that reading the pack remotely needs");
    sub->add_option("--format", args->format,
                    "Pack format version: 2 (lookups in one hash probe, 64-byte inodes) or 1 "
                    "(for readers that predate version 2); default 2")
        ->check(CLI::IsMember({1u, 2u}));
    sub->add_option("--metadata", args->metadata, kMetadataHelp)
        ->check(CLI::IsMember({"compressed", "raw"}));
    sub->add_option("--keep-times", args->keep_times,
                    "Times recorded: mtime (default; readers see atime = ctime = mtime, so any "
                    "copy of the tree packs to the same bytes) or all")
        ->check(CLI::IsMember({"mtime", "all"}));
    sub->add_option("--clamp-mtime", args->clamp_mtime,
                    "Record times later than SECONDS (since the epoch) as SECONDS; default: "
                    "$SOURCE_DATE_EPOCH when set")
        ->check(kEpochValidator);
    sub->add_option("--chunk-size", args->chunk_size,
                    "Cut contents of at least SIZE into chunks of about SIZE (a power of two "
                    "from 1K to 4M) at boundaries their bytes decide, each named by its SHA-256, "
                    "so that a later pack built over this one (--base) stores only the chunks "
                    "it lacks; default: files whole (with --base: the first base's size, else 64K)")
        ->type_name("SIZE");
    sub->add_option("--base", args->bases,
                    "Build over PACK (repeatable): contents and chunks PACK holds are "
                    "referenced there, not stored again. Reading the new pack needs PACK (and "
                    "the packs PACK was built over): beside it under the same names, or given "
                    "to each command with --base")
        ->type_name("PACK")
        ->allow_extra_args(false);  // one PACK each time: what follows is not a base
    sub->add_flag("--no-files-cache", args->no_files_cache,
                  "Read every file. By default a build records each file's path, size, mtime, "
                  "ctime and inode number in the files cache (under --cache), and a build over "
                  "--base takes a file whose record still holds as the content the base has, "
                  "without reading it");
    add_exclude_options(*sub, args->exclude);
    sub->add_flag("--json", args->json, "Print the figures as one JSON object");
    return {sub, [args](const std::string&) { return run_build(*args); }};
}

}  // namespace packfs::cli
