// The last step of a build: the metadata region (inodes, dirents, contents, xattrs, blocks,
// bytes, and inode_numbers and inode_order when the pack keeps its source's numbers), its
// block sums, and the header, from the scanned tree and the content plan.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/huge_pages.hpp"
#include "pack/format/format.hpp"
#include "pack/writer/base_index.hpp"
#include "pack/writer/content_plan.hpp"
#include "pack/writer/tree_scan.hpp"
#include "packfs/error.hpp"

namespace packfs::pack {

struct MetadataImage {
    std::vector<std::byte, HugePageAllocator<std::byte>> region;  // [meta_offset, + meta_length)
    std::vector<std::byte> sums;    // the block sums that follow it
    std::vector<std::byte> meta_digests;  // kIncompatMetaDigests: after the sums, else empty
    Header header{};                // complete: checksums and digest set
    uint64_t inline_bytes = 0;
};

struct StreamFacts {
    Codec codec = Codec::none;
    uint32_t block_size = 0;
    uint32_t inline_max = 0;
    uint64_t data_length = 0;
    uint64_t stream_size = 0;
    std::vector<uint64_t> block_offsets;  // compressed, or with holes
    bool holes = false;                   // some block is a hole (kIncompatHoles)
    std::vector<BlockDigest> block_digests;  // v2: one per block (kCompatBlockDigests), or none
};

struct MetadataFormat {
    uint32_t version = kFormatVersion;
    bool all_times = false;  // v2: the times section (v1 always holds all three times)
    bool meta_digests = false;  // v2: a SHA-256 per metadata block (kIncompatMetaDigests)
    uint32_t (*name_hash_for_tests)(std::string_view) = nullptr;  // v2: instead of name_hash()
    // v2: contents may be made of extents (kIncompatExtents), cut at this average size;
    // 0: none. `bases`: the packs the extents name.
    uint32_t chunk_size = 0;
    std::vector<BaseSpec> bases = {};
};

// Encodes everything, for metadata stored raw; inline contents' bytes come from the plan (always
// kept). With `numbering` (null: inodes numbered by position) the pack keeps those inode numbers.
Result<MetadataImage> build_metadata(const ScannedTree& tree, ContentPlan& plan,
                                     const StreamFacts& stream, const MetadataFormat& format,
                                     const InodeNumbering* numbering = nullptr);

// Lays `image`'s header out for its region stored as compressed frames (format 2 with compressed
// data: kIncompatCompressedMeta), written at `frame_offsets` (meta_block_count + 1 of them,
// relative to meta_offset), and seals it again. Returns the frame index to write after the
// frames (padded to 8), before the sums.
std::vector<std::byte> frame_metadata(MetadataImage& image,
                                      std::span<const uint64_t> frame_offsets);

}  // namespace packfs::pack
