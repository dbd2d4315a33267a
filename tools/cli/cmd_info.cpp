// `packfs info PACK`: what a pack holds and how it is stored: counts, sizes, dedup savings,
// compression, format version, whether it keeps its source's inode numbers, and digest. The
// header gives the storage facts; the counts come from a walk of the tree (tally_pack), since a
// pack does not store them.
#include <fmt/format.h>

#include <memory>

#include "command.hpp"
#include "format.hpp"
#include "pack_report.hpp"
#include "progress.hpp"
#include "report.hpp"
#include "source.hpp"

namespace packfs::cli {

namespace {

struct InfoArgs {
    std::string pack;
    bool json = false;
};

int run_info(const InfoArgs& args) {
    const Output out(args.json);
    auto pack = open_pack_file(args.pack);
    if (!pack) return out.fail(source_failure(pack.error()));
    const PackInfo& info = (*pack)->info();
    ProgressLine progress;
    auto stats = tally_pack(**pack, [&progress](uint64_t entries, uint64_t bytes_read) {
        progress.update([&] {
            return fmt::format("reading: {} entries, {} compared", entries, human_size(bytes_read));
        });
    });
    progress.clear();
    if (!stats) return out.fail(stats.error());
    if (out.json()) {
        Output::emit(Json{{"pack", args.pack},
                          {"format_version", info.version},
                          {"compression", compression_name(info.compression)},
                          {"block_size", info.block_size},
                          {"inline_max", info.inline_max},
                          {"has_xattrs", info.has_xattrs},
                          {"keeps_inode_numbers", info.keeps_inode_numbers},
                          {"compressed_metadata", info.compressed_metadata},
                          {"has_holes", info.has_holes},
                          {"has_block_digests", info.has_block_digests},
                          {"has_metadata_digests", info.has_metadata_digests},
                          {"metadata_inflated_bytes", info.meta_length},
                          {"chunk_size", info.chunk_size},
                          {"extents", info.extents},
                          {"bases", [&] {
                               Json bases = Json::array();
                               for (const auto& [digest, name] : info.bases)
                                   bases.push_back(Json{{"digest", digest}, {"name", name}});
                               return bases;
                           }()},
                          {"stats", pack_stats_json(*stats)}});
        return kExitOk;
    }
    fmt::print("{}: pack format version {}, compression {}", args.pack, info.version,
               compression_name(info.compression));
    if (info.compression != Compression::none || info.has_holes) {
        fmt::print(" ({} blocks)", human_size(info.block_size));
    }
    if (info.has_holes) fmt::print(", with holes (blocks of zeros stored in nothing)");
    fmt::print(", inline up to {} bytes", info.inline_max);
    if (info.compressed_metadata)
        fmt::print(", metadata compressed ({} inflated)", human_size(info.meta_length));
    if (info.keeps_inode_numbers) fmt::print(", keeps its source's inode numbers");
    if (info.has_block_digests) fmt::print(", block digests (readable remotely)");
    if (info.has_metadata_digests) fmt::print(", metadata digests (its metadata fetched by block)");
    if (info.chunk_size != 0)
        fmt::print(", contents of {} or more cut into chunks ({} extents)",
                   human_size(info.chunk_size), info.extents);
    fmt::print("\n");
    for (const auto& [digest, name] : info.bases)
        fmt::print("  base      {} (sha256:{})\n", name, digest);
    fmt::print("{}", pack_stats_text(*stats));
    return kExitOk;
}

}  // namespace

Command add_info_command(CLI::App& parent) {
    auto args = std::make_shared<InfoArgs>();
    CLI::App* sub = parent.add_subcommand(
        "info", "Show a pack's counts, sizes, dedup savings, compression and digest");
    sub->add_flag("--json", args->json, "Print the figures as one JSON object");
    sub->add_option("PACK", args->pack, "Pack file or URL (http(s)://, oci://)")->required();
    return {sub, [args](const std::string&) { return run_info(*args); }};
}

}  // namespace packfs::cli
