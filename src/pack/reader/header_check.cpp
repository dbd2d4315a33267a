// validate_header, one check per part of the header, in the order the file is laid out: the
// identity, the fields, the data region, the metadata region as stored, the sums and what
// follows them, the section table, and the sizes the inode and block counts fix. The first
// fault found is the one reported, so the order of the checks is part of the behaviour.
#include "pack/reader/header_check.hpp"

#include <fmt/format.h>

#include <cstring>
#include <limits>
#include <span>
#include <string>

#include "pack/format/digest.hpp"

namespace packfs::pack {

namespace {

constexpr uint32_t kMinBlockSize = 4096;
constexpr uint32_t kMaxBlockSize = 16u << 20;
constexpr uint32_t kMaxInlineMax = 4096;

static_assert(kSectionRecordSizes[0] == sizeof(Inode) && kSectionRecordSizes[1] == sizeof(Dirent) &&
              kSectionRecordSizes[2] == sizeof(Content) && kSectionRecordSizes[3] == sizeof(Xattr));
static_assert(kSectionRecordSizesV2[0] == sizeof(InodeV2) &&
              kSectionRecordSizesV2[9] == sizeof(InodeTimes));

constexpr uint64_t at(std::size_t field_offset) noexcept {
    return static_cast<uint64_t>(field_offset);
}

class HeaderCheck {
public:
    HeaderCheck(const Header& h, uint64_t real_size, std::string_view path)
        : h_(h),
          real_size_(real_size),
          path_(path),
          v2_(h.version >= 2),
          compressed_((h.incompat_features & kIncompatCompressedData) != 0),
          holes_((h.incompat_features & kIncompatHoles) != 0),
          framed_((h.incompat_features & kIncompatCompressedMeta) != 0),
          meta_digests_((h.incompat_features & kIncompatMetaDigests) != 0),
          numbered_((h.incompat_features & kIncompatInodeNumbers) != 0),
          all_times_(v2_ && (h.compat_features & kCompatAllTimes) != 0),
          block_digests_((h.compat_features & kCompatBlockDigests) != 0),
          extents_((h.incompat_features & kIncompatExtents) != 0),
          meta_blocks_(meta_block_count(h.meta_length)),
          meta_end_(h.meta_offset + h.meta_length) {}

    Result<void> identity() const;
    Result<void> fields() const;
    Result<void> data_region() const;
    Result<void> metadata_region() const;
    Result<void> sums() const;
    Result<void> section_table() const;
    Result<void> per_inode_sections() const;
    Result<void> per_block_sections() const;

private:
    std::unexpected<Error> corrupt(uint64_t offset, uint64_t expected, uint64_t actual,
                                   std::string_view what) const {
        return std::unexpected(Error::corrupt(
            "open_pack", path_, Corruption{offset, expected, actual, std::string(what)}));
    }
    // Error has no free text beyond the path, so the unsupported feature is named after it.
    std::unexpected<Error> unsupported(std::string_view detail) const {
        return std::unexpected(Error(ENOTSUP, "open_pack", fmt::format("{} ({})", path_, detail)));
    }
    // Why section `i` must be absent (its entry all zero), or nullptr when it is present.
    const char* absent(std::size_t i) const noexcept;

    const Header& h_;
    const uint64_t real_size_;
    const std::string_view path_;
    const bool v2_, compressed_, holes_, framed_, meta_digests_, numbered_, all_times_,
        block_digests_, extents_;
    const uint64_t meta_blocks_;  // ceil(meta_length / meta_block_size)
    const uint64_t meta_end_;     // meta_offset + meta_length: where the sections must end
};

// Magic, version, header size, checksum, incompatible features: whether this is a pack this
// reader can read at all.
Result<void> HeaderCheck::identity() const {
    if (std::memcmp(h_.magic, kMagic.data(), kMagic.size()) != 0) {
        return corrupt(0, load<uint64_t>(reinterpret_cast<const std::byte*>(kMagic.data())),
                       load<uint64_t>(reinterpret_cast<const std::byte*>(h_.magic)),
                       "magic (not a pack)");
    }
    // Before the checksum: a newer version may lay its header out differently.
    if (h_.version > kFormatVersion) {
        return unsupported(fmt::format("pack format version {}; this reader reads version {}",
                                       h_.version, kFormatVersion));
    }
    if (h_.version < kOldestFormatVersion)
        return corrupt(at(offsetof(Header, version)), kOldestFormatVersion, h_.version,
                       "format version");
    if (h_.header_size != kHeaderSize)
        return corrupt(at(offsetof(Header, header_size)), kHeaderSize, h_.header_size,
                       "header size");
    Header zeroed = h_;
    zeroed.header_checksum = 0;
    const uint64_t sum = xxh3_64(std::as_bytes(std::span(&zeroed, 1)));
    if (sum != h_.header_checksum)
        return corrupt(at(offsetof(Header, header_checksum)), h_.header_checksum, sum,
                       "header checksum");
    if (const uint64_t unknown = h_.incompat_features & ~kIncompatKnown; unknown != 0)
        return unsupported(fmt::format("unknown incompatible feature bits {:#x}", unknown));
    return {};
}

// The fields that stand alone: file size, metadata block size, data offset, codec, block size,
// inline limit, inode count.
Result<void> HeaderCheck::fields() const {
    if (h_.file_size != real_size_)
        return corrupt(at(offsetof(Header, file_size)), h_.file_size, real_size_,
                       "file size (the pack was truncated or extended)");
    if (h_.meta_block_size != kMetaBlockSize)
        return corrupt(at(offsetof(Header, meta_block_size)), kMetaBlockSize, h_.meta_block_size,
                       "metadata block size");
    if (h_.data_offset != kDataOffset)
        return corrupt(at(offsetof(Header, data_offset)), kDataOffset, h_.data_offset,
                       "data offset");
    const auto codec = static_cast<Codec>(h_.codec);
    if (compressed_ && codec != Codec::zstd && codec != Codec::lz4) {
        if (codec == Codec::none)
            return corrupt(at(offsetof(Header, codec)), 1, h_.codec,
                           "codec (none, with the compressed-data feature)");
        return unsupported(fmt::format("unknown codec {}", h_.codec));
    }
    if (!compressed_ && codec != Codec::none)
        return corrupt(at(offsetof(Header, codec)), 0, h_.codec,
                       "codec (without the compressed-data feature)");
    if (h_.block_size < kMinBlockSize || h_.block_size > kMaxBlockSize ||
        (h_.block_size & (h_.block_size - 1)) != 0)
        return corrupt(at(offsetof(Header, block_size)), kMinBlockSize, h_.block_size,
                       "block size (a power of two, 4 KiB to 16 MiB)");
    if (h_.inline_max > kMaxInlineMax)
        return corrupt(at(offsetof(Header, inline_max)), kMaxInlineMax, h_.inline_max,
                       "inline limit");
    if (h_.inode_count == 0 || h_.inode_count > std::numeric_limits<uint32_t>::max())
        return corrupt(at(offsetof(Header, inode_count)), 1, h_.inode_count, "inode count");
    // Extents: version 2 only, with the chunk size they were cut with; none without them.
    if (extents_ && !v2_)
        return corrupt(at(offsetof(Header, incompat_features)),
                       h_.incompat_features & ~kIncompatExtents, h_.incompat_features,
                       "incompatible features (extents in version 1)");
    if (extents_ ? (h_.chunk_size < (1u << 10) || h_.chunk_size > (4u << 20) ||
                    (h_.chunk_size & (h_.chunk_size - 1)) != 0)
                 : h_.chunk_size != 0)
        return corrupt(at(offsetof(Header, chunk_size)), extents_ ? 64u << 10 : 0, h_.chunk_size,
                       extents_ ? "chunk size (a power of two, 1 KiB to 4 MiB)"
                                : "chunk size (without the extents feature)");
    if (h_.reserved != 0)
        return corrupt(at(offsetof(Header, reserved)), 0, h_.reserved, "reserved header field");
    return {};
}

// The data region inside the file, the metadata after it; holes (version 2 only); a raw stream
// without holes stored as it is.
Result<void> HeaderCheck::data_region() const {
    if (!within(h_.data_offset, h_.data_length, real_size_))
        return corrupt(at(offsetof(Header, data_length)), real_size_ - h_.data_offset,
                       h_.data_length, "data length (past the end of the file)");
    const uint64_t data_end = h_.data_offset + h_.data_length;
    const uint64_t meta_align = v2_ ? 64 : 8;  // v2: each inode is one cache line
    if (h_.meta_offset % meta_align != 0 || h_.meta_offset < data_end ||
        h_.meta_offset > real_size_)
        return corrupt(at(offsetof(Header, meta_offset)), data_end, h_.meta_offset,
                       "metadata offset");
    // Holes: version 2 only; the blocks section then exists whatever the codec.
    if (holes_ && !v2_)
        return corrupt(at(offsetof(Header, incompat_features)),
                       h_.incompat_features & ~kIncompatHoles, h_.incompat_features,
                       "incompatible features (holes in version 1)");
    if (!compressed_ && !holes_ && h_.stream_size != h_.data_length)
        return corrupt(at(offsetof(Header, stream_size)), h_.data_length, h_.stream_size,
                       "stream size (raw data)");
    return {};
}

// The metadata region as stored. Compressed metadata: the region is stored as frames plus their
// index, and meta_length is its inflated size (bounded below through the sums, 8 bytes of file
// per block); the frames and the index inside the file.
Result<void> HeaderCheck::metadata_region() const {
    if (framed_ && (!v2_ || !compressed_))
        return corrupt(at(offsetof(Header, incompat_features)),
                       h_.incompat_features & ~kIncompatCompressedMeta, h_.incompat_features,
                       v2_ ? "incompatible features (compressed metadata without compressed "
                             "data)"
                           : "incompatible features (compressed metadata in version 1)");
    if (!framed_ && (h_.meta_frames_length != 0 || h_.meta_index_checksum != 0))
        return corrupt(at(offsetof(Header, meta_frames_length)), 0,
                       h_.meta_frames_length | h_.meta_index_checksum,
                       "metadata frames (without the compressed-metadata feature)");
    if (h_.meta_length % 8 != 0 || (framed_ ? meta_blocks_ > real_size_ / 8
                                            : !within(h_.meta_offset, h_.meta_length, real_size_)))
        return corrupt(at(offsetof(Header, meta_length)), real_size_ - h_.meta_offset,
                       h_.meta_length, "metadata length (past the end of the file)");
    if (!framed_) return {};
    if (!within(h_.meta_offset, h_.meta_frames_length, real_size_))
        return corrupt(at(offsetof(Header, meta_frames_length)), real_size_ - h_.meta_offset,
                       h_.meta_frames_length, "metadata frames length (past the end of the file)");
    if (!within(frame_index_offset(h_), 8 * (meta_blocks_ + 1), real_size_))
        return corrupt(at(offsetof(Header, meta_frames_length)), real_size_ - h_.meta_offset,
                       h_.meta_frames_length, "metadata frame index (past the end of the file)");
    return {};
}

// The sums right after the stored metadata, one per metadata block; then the metadata digests
// (v2 with kIncompatMetaDigests), or nothing: the file ends.
Result<void> HeaderCheck::sums() const {
    // Where the stored metadata ends and the sums start.
    const uint64_t stored_end =
        framed_ ? frame_index_offset(h_) + 8 * (meta_blocks_ + 1) : meta_end_;
    if (h_.sums_offset != stored_end)
        return corrupt(at(offsetof(Header, sums_offset)), stored_end, h_.sums_offset,
                       "block sums offset");
    if (h_.sums_length != meta_blocks_ * 8)
        return corrupt(at(offsetof(Header, sums_length)), meta_blocks_ * 8, h_.sums_length,
                       "block sums length");
    if (meta_digests_ && !v2_)
        return corrupt(at(offsetof(Header, incompat_features)),
                       h_.incompat_features & ~kIncompatMetaDigests, h_.incompat_features,
                       "incompatible features (metadata digests in version 1)");
    const uint64_t tail = meta_digests_ ? 32 * meta_blocks_ : 0;
    if (!within(h_.sums_offset, h_.sums_length, real_size_) ||
        real_size_ - h_.sums_offset - h_.sums_length != tail)
        return corrupt(at(offsetof(Header, sums_length)), real_size_ - h_.sums_offset,
                       h_.sums_length + tail,
                       meta_digests_ ? "block sums and metadata digests (must end the file)"
                                     : "block sums (must end the file)");
    return {};
}

// Without the inode-numbers feature its two sections are absent: entries all zero, as v1
// writers left those reserved bytes. v1 has no buckets or times (its writers left those bytes
// zero); v2 has buckets always and times with kCompatAllTimes.
const char* HeaderCheck::absent(std::size_t i) const noexcept {
    const auto s = static_cast<Section>(i);
    if ((s == Section::inode_numbers || s == Section::inode_order) && !numbered_)
        return "without the inode-numbers feature";
    if (s == Section::buckets && !v2_) return "in a version 1 pack";
    if (s == Section::times && !all_times_) return "without the all-times feature";
    if (s == Section::block_digests && !block_digests_) return "without the block-digests feature";
    if ((s == Section::extents || s == Section::bases) && !extents_)
        return "without the extents feature";
    return nullptr;
}

// The sections: in order, 8-aligned (gaps under 8 bytes), inside the metadata region, whole
// records; the region ends with the last one, padded to 8 bytes.
Result<void> HeaderCheck::section_table() const {
    if (block_digests_ && !v2_)
        return corrupt(at(offsetof(Header, compat_features)),
                       h_.compat_features & ~kCompatBlockDigests, h_.compat_features,
                       "compatible features (block digests in version 1)");
    uint64_t end = h_.meta_offset;
    for (std::size_t i = 0; i < kSectionCount; ++i) {
        const SectionEntry& s = section(h_, i);
        const uint64_t field = section_entry_offset(i);
        if (const char* why = absent(i)) {
            if (s.offset != 0 || s.length != 0 || s.checksum != 0)
                return corrupt(
                    field, 0, s.offset | s.length | s.checksum,
                    fmt::format("section {} entry ({})", section_name(h_.version, i), why));
            continue;
        }
        if (s.offset % 8 != 0 || s.offset < end || s.offset - end >= 8 ||
            !within(s.offset, s.length, meta_end_))
            return corrupt(field, end, s.offset,
                           fmt::format("section {} range", section_name(h_.version, i)));
        const uint64_t record = section_record_size(h_.version, i);
        if (s.length % record != 0)
            return corrupt(
                field + 8, record, s.length % record,
                fmt::format("section {} length (not whole records)", section_name(h_.version, i)));
        end = s.offset + s.length;
    }
    if (meta_end_ - end >= 8)
        return corrupt(at(offsetof(Header, meta_length)), end - h_.meta_offset, h_.meta_length,
                       "metadata length (past the last section)");
    return {};
}

// The sections with one record per inode: inodes (v2: starting the region), inode_numbers,
// inode_order, times.
Result<void> HeaderCheck::per_inode_sections() const {
    const SectionEntry& inodes = h_.sections[static_cast<std::size_t>(Section::inodes)];
    const uint64_t inode_size = section_record_size(h_.version, 0);
    if (inodes.length / inode_size != h_.inode_count)
        return corrupt(at(offsetof(Header, inode_count)), inodes.length / inode_size,
                       h_.inode_count, "inode count (against the inodes section)");
    if (v2_ && inodes.offset != h_.meta_offset)  // so every inode is one aligned cache line
        return corrupt(section_entry_offset(0), h_.meta_offset, inodes.offset,
                       "section inodes range (must start the metadata region)");
    // inode_count fits 32 bits (fields()): these products cannot wrap.
    for (Section s : {Section::inode_numbers, Section::inode_order, Section::times}) {
        const auto i = static_cast<std::size_t>(s);
        const bool present = s == Section::times ? all_times_ : numbered_;
        const uint64_t want = present ? section_record_size(h_.version, i) * h_.inode_count : 0;
        if (section(h_, s).length != want)
            return corrupt(section_entry_offset(i) + 8, want, section(h_, s).length,
                           fmt::format("section {} length (one record per inode)",
                                       section_name(h_.version, i)));
    }
    return {};
}

// The sections with one record per stream block: blocks (count + 1 offsets, when compressed or
// with holes) and block_digests.
Result<void> HeaderCheck::per_block_sections() const {
    // ceil(stream_size / block_size) without overflow: near 2^64 the rounded-up sum wrapped to a
    // small count that a short blocks section then matched.
    const uint64_t block_count =
        h_.stream_size / h_.block_size + (h_.stream_size % h_.block_size != 0 ? 1 : 0);
    const uint64_t blocks_length = compressed_ || holes_ ? 8 * (block_count + 1) : 0;
    const SectionEntry& blocks = h_.sections[static_cast<std::size_t>(Section::blocks)];
    if (blocks.length != blocks_length)
        return corrupt(at(offsetof(Header, sections)) +
                           static_cast<uint64_t>(Section::blocks) * sizeof(SectionEntry) + 8,
                       blocks_length, blocks.length, "section blocks length");
    const uint64_t digests_length = block_digests_ ? sizeof(BlockDigest) * block_count : 0;
    if (h_.digests_section.length != digests_length)
        return corrupt(at(offsetof(Header, digests_section)) + 8, digests_length,
                       h_.digests_section.length,
                       "section block_digests length (one per stream block)");
    return {};
}

}  // namespace

Result<void> validate_header(const Header& header, uint64_t file_size, std::string_view path) {
    const HeaderCheck check(header, file_size, path);
    for (auto part :
         {&HeaderCheck::identity, &HeaderCheck::fields, &HeaderCheck::data_region,
          &HeaderCheck::metadata_region, &HeaderCheck::sums, &HeaderCheck::section_table,
          &HeaderCheck::per_inode_sections, &HeaderCheck::per_block_sections}) {
        if (auto ok = (check.*part)(); !ok) return ok;
    }
    return {};
}

}  // namespace packfs::pack
