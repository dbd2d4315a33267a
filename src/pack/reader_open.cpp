// PackReader, opening: the header and its every field and section range checked against the
// file, and the sums array; nothing per entry (reader.hpp, "Trust protocol").
#include "pack/reader.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "pack/digest.hpp"

namespace packfs::pack {

namespace {

constexpr uint32_t kMinBlockSize = 4096;
constexpr uint32_t kMaxBlockSize = 16u << 20;
constexpr uint32_t kMaxInlineMax = 4096;

std::unexpected<Error> header_corrupt(std::string_view path, uint64_t offset, uint64_t expected,
                                      uint64_t actual, std::string_view what) {
    return std::unexpected(
        Error::corrupt("open_pack", path, Corruption{offset, expected, actual, std::string(what)}));
}

// Error has no free text beyond the path, so the unsupported feature is named after it.
std::unexpected<Error> unsupported(std::string_view path, std::string_view detail) {
    return std::unexpected(Error(ENOTSUP, "open_pack", fmt::format("{} ({})", path, detail)));
}

static_assert(kSectionRecordSizes[0] == sizeof(Inode) && kSectionRecordSizes[1] == sizeof(Dirent) &&
              kSectionRecordSizes[2] == sizeof(Content) && kSectionRecordSizes[3] == sizeof(Xattr));
static_assert(kSectionRecordSizesV2[0] == sizeof(InodeV2) &&
              kSectionRecordSizesV2[9] == sizeof(InodeTimes));

}  // namespace

Result<std::unique_ptr<PackReader>> PackReader::open(std::string_view host_path,
                                                     const PackOpenOptions& options,
                                                     const OpenHooks& hooks) {
    auto image = PackImage::open(host_path);
    if (!image) return std::unexpected(image.error());
    return open(std::move(*image), host_path, options, hooks);
}

Result<std::unique_ptr<PackReader>> PackReader::open(std::unique_ptr<PackImage> image,
                                                     std::string_view host_path,
                                                     const PackOpenOptions& options,
                                                     const OpenHooks& hooks) {
    std::unique_ptr<PackReader> r(new PackReader());  // private constructor
    r->image_ = std::move(image);
    std::memcpy(&r->header_, r->image_->header_bytes().data(), kHeaderSize);
    if (auto ok = r->validate_header(host_path); !ok) return std::unexpected(ok.error());
    const Header& h = r->header_;
    if (auto ok = r->image_->load(options.access, h.meta_offset, host_path); !ok)
        return std::unexpected(ok.error());

    const std::byte* stored = r->image_->meta();  // file offset meta_offset
    r->meta_ = stored;
    r->version_ = h.version;
    r->name_hash_hook_ = hooks.name_hash;
    const bool v2 = h.version >= 2;
    r->inode_size_ = v2 ? sizeof(InodeV2) : sizeof(Inode);
    r->meta_offset_ = h.meta_offset;
    r->meta_length_ = h.meta_length;
    r->inode_count_ = h.inode_count;
    auto section = [&](Section s) -> const SectionEntry& { return pack::section(h, s); };
    r->inodes_rel_ = section(Section::inodes).offset - h.meta_offset;
    r->dirents_rel_ = section(Section::dirents).offset - h.meta_offset;
    r->dirent_count_ = section(Section::dirents).length / sizeof(Dirent);
    r->contents_rel_ = section(Section::contents).offset - h.meta_offset;
    r->content_count_ = section(Section::contents).length / (v2 ? 32 : sizeof(Content));
    r->xattrs_rel_ = section(Section::xattrs).offset - h.meta_offset;
    r->xattr_count_ = section(Section::xattrs).length / sizeof(Xattr);
    r->blocks_rel_ = section(Section::blocks).offset - h.meta_offset;
    r->block_count_ = section(Section::blocks).length / 8;
    if (r->block_count_ > 0) --r->block_count_;  // count + 1 offsets
    r->bytes_rel_ = section(Section::bytes).offset - h.meta_offset;
    r->bytes_length_ = section(Section::bytes).length;
    r->buckets_rel_ = section(Section::buckets).offset - h.meta_offset;
    r->bucket_count_ = v2 ? section(Section::buckets).length / 4 : 0;
    r->all_times_ = v2 && (h.compat_features & kCompatAllTimes) != 0;
    if (r->all_times_) r->times_rel_ = section(Section::times).offset - h.meta_offset;
    r->block_digests_ = (h.compat_features & kCompatBlockDigests) != 0;
    if (r->block_digests_)
        r->block_digests_rel_ = section(Section::block_digests).offset - h.meta_offset;
    r->numbered_ = (h.incompat_features & kIncompatInodeNumbers) != 0;
    if (r->numbered_) {
        r->numbers_rel_ = section(Section::inode_numbers).offset - h.meta_offset;
        r->order_rel_ = section(Section::inode_order).offset - h.meta_offset;
    }
    r->stream_size_ = h.stream_size;
    r->data_offset_ = h.data_offset;
    r->data_length_ = h.data_length;
    r->block_size_ = h.block_size;
    r->inline_max_ = h.inline_max;
    r->codec_ = static_cast<Codec>(h.codec);
    r->holes_ = (h.incompat_features & kIncompatHoles) != 0;

    // The sums array: the one thing read whole on open (8 bytes per 16 KiB of metadata), with
    // the frame index when the metadata is compressed (as many more).
    r->block_sum_count_ = h.sums_length / 8;
    r->sums_ = stored + (h.sums_offset - h.meta_offset);
    const uint64_t sums = xxh3_64(std::span(r->sums_, h.sums_length));
    if (r->image_->damaged()) return fail(EIO, "open_pack", host_path);
    if (sums != h.sums_checksum)
        return header_corrupt(host_path, h.sums_offset, h.sums_checksum, sums,
                              "metadata block sums checksum");
    if (const uint64_t length = meta_digests_length(h); length != 0)
        r->meta_digests_ = std::span(stored + (meta_digests_offset(h) - h.meta_offset), length);
    if ((h.incompat_features & kIncompatCompressedMeta) != 0) {
        const std::byte* index = stored + (frame_index_offset(h) - h.meta_offset);
        const uint64_t index_sum = xxh3_64(std::span(index, 8 * (r->block_sum_count_ + 1)));
        if (r->image_->damaged()) return fail(EIO, "open_pack", host_path);
        if (index_sum != h.meta_index_checksum)
            return header_corrupt(host_path, frame_index_offset(h), h.meta_index_checksum,
                                  index_sum, "metadata frame index checksum");
        // The padding before the index (under 8 bytes) is zero, so no stored byte goes unchecked.
        for (uint64_t at = h.meta_frames_length; at < frame_index_offset(h) - h.meta_offset; ++at) {
            if (stored[at] != std::byte{0})
                return header_corrupt(host_path, h.meta_offset + at, 0,
                                      static_cast<uint64_t>(stored[at]),
                                      "metadata frames padding (not zero)");
        }
        // A remote pack's frames fetched on demand are checked against the metadata digests
        // (the opener checks those against the image digest before anything is read).
        std::byte* on_demand = r->image_->fetched_frames();
        if (on_demand != nullptr && r->meta_digests_.empty())
            return unsupported(host_path, "metadata fetched on demand without metadata digests");
        auto frames = on_demand != nullptr
                          ? MetaFrames::create_fetching(h, on_demand, index, r->meta_digests_,
                                                        *r->image_->remote())
                          : MetaFrames::create(h, stored, index, host_path);
        if (!frames) return std::unexpected(frames.error());
        r->frames_ = std::move(*frames);
        r->meta_ = r->frames_->region();
    }
    const std::size_t words = (r->block_sum_count_ + 63) / 64;
    r->checked_ = std::make_unique<std::atomic<uint64_t>[]>(words);
    r->failed_ = std::make_unique<std::atomic<uint64_t>[]>(words);
    if (r->codec_ != Codec::none)
        r->cache_ = std::make_unique<BlockCache>(options.block_cache_bytes, r->block_size_);
    if (r->image_->remote() != nullptr && r->version_ >= 2)
        r->walk_ = std::make_unique<WalkAhead>();
    return r;
}

Result<Sha256Digest> PackReader::image_digest(const Ctx& ctx) const {
    Header zeroed = header_;
    zeroed.header_checksum = 0;
    std::memset(zeroed.image_digest, 0, sizeof zeroed.image_digest);
    Sha256 sha;
    sha.update(std::as_bytes(std::span(&zeroed, 1)));
    // With metadata digests, the table stands for the region (verify checks each block
    // against its entry).
    if (!meta_digests_.empty()) {
        sha.update(meta_digests_);
        return sha.finish();
    }
    // Block by block through meta(): each is checked against its sum (and inflated) first.
    for (uint64_t at = 0; at < meta_length_; at += kMetaBlockSize) {
        const uint64_t n = std::min<uint64_t>(kMetaBlockSize, meta_length_ - at);
        auto bytes = meta(at, n, ctx);
        if (!bytes) return std::unexpected(bytes.error());
        sha.update(std::span(*bytes, n));
    }
    return sha.finish();
}

Result<void> PackReader::check_metadata_digests(const Ctx& ctx) const {
    for (uint64_t b = 0; b * kMetaBlockSize < meta_length_ && !meta_digests_.empty(); ++b) {
        const uint64_t at = b * kMetaBlockSize;
        const uint64_t n = std::min<uint64_t>(kMetaBlockSize, meta_length_ - at);
        auto bytes = meta(at, n, ctx);
        if (!bytes) return std::unexpected(bytes.error());
        if (auto mismatch = check_meta_block(meta_digests_, b, std::span(*bytes, n)))
            return corrupt(ctx, at, mismatch->expected_prefix, mismatch->found_prefix,
                           mismatch->describe(b));
    }
    return {};
}

Result<void> PackReader::validate_header(std::string_view path) const {
    const Header& h = header_;
    const uint64_t real_size = image_->size();
    auto at = [](std::size_t field_offset) { return static_cast<uint64_t>(field_offset); };

    if (std::memcmp(h.magic, kMagic.data(), kMagic.size()) != 0) {
        return header_corrupt(
            path, 0, load<uint64_t>(reinterpret_cast<const std::byte*>(kMagic.data())),
            load<uint64_t>(reinterpret_cast<const std::byte*>(h.magic)), "magic (not a pack)");
    }
    // Before the checksum: a newer version may lay its header out differently.
    if (h.version > kFormatVersion) {
        return unsupported(path, fmt::format("pack format version {}; this reader reads version {}",
                                             h.version, kFormatVersion));
    }
    if (h.version < kOldestFormatVersion)
        return header_corrupt(path, at(offsetof(Header, version)), kOldestFormatVersion, h.version,
                              "format version");
    const bool v2 = h.version >= 2;
    if (h.header_size != kHeaderSize)
        return header_corrupt(path, at(offsetof(Header, header_size)), kHeaderSize, h.header_size,
                              "header size");
    Header zeroed = h;
    zeroed.header_checksum = 0;
    const uint64_t sum = xxh3_64(std::as_bytes(std::span(&zeroed, 1)));
    if (sum != h.header_checksum)
        return header_corrupt(path, at(offsetof(Header, header_checksum)), h.header_checksum, sum,
                              "header checksum");
    if (const uint64_t unknown = h.incompat_features & ~kIncompatKnown; unknown != 0) {
        return unsupported(path, fmt::format("unknown incompatible feature bits {:#x}", unknown));
    }
    if (h.file_size != real_size)
        return header_corrupt(path, at(offsetof(Header, file_size)), h.file_size, real_size,
                              "file size (the pack was truncated or extended)");
    if (h.meta_block_size != kMetaBlockSize)
        return header_corrupt(path, at(offsetof(Header, meta_block_size)), kMetaBlockSize,
                              h.meta_block_size, "metadata block size");
    if (h.data_offset != kDataOffset)
        return header_corrupt(path, at(offsetof(Header, data_offset)), kDataOffset, h.data_offset,
                              "data offset");
    const bool compressed = (h.incompat_features & kIncompatCompressedData) != 0;
    const auto codec = static_cast<Codec>(h.codec);
    if (compressed && codec != Codec::zstd && codec != Codec::lz4) {
        if (codec == Codec::none)
            return header_corrupt(path, at(offsetof(Header, codec)), 1, h.codec,
                                  "codec (none, with the compressed-data feature)");
        return unsupported(path, fmt::format("unknown codec {}", h.codec));
    }
    if (!compressed && codec != Codec::none)
        return header_corrupt(path, at(offsetof(Header, codec)), 0, h.codec,
                              "codec (without the compressed-data feature)");
    if (h.block_size < kMinBlockSize || h.block_size > kMaxBlockSize ||
        (h.block_size & (h.block_size - 1)) != 0)
        return header_corrupt(path, at(offsetof(Header, block_size)), kMinBlockSize, h.block_size,
                              "block size (a power of two, 4 KiB to 16 MiB)");
    if (h.inline_max > kMaxInlineMax)
        return header_corrupt(path, at(offsetof(Header, inline_max)), kMaxInlineMax, h.inline_max,
                              "inline limit");
    if (h.inode_count == 0 || h.inode_count > std::numeric_limits<uint32_t>::max())
        return header_corrupt(path, at(offsetof(Header, inode_count)), 1, h.inode_count,
                              "inode count");

    // The regions: data, then metadata, then sums, ending exactly at the end of the file.
    if (!within(h.data_offset, h.data_length, real_size))
        return header_corrupt(path, at(offsetof(Header, data_length)), real_size - h.data_offset,
                              h.data_length, "data length (past the end of the file)");
    const uint64_t data_end = h.data_offset + h.data_length;
    const uint64_t meta_align = v2 ? 64 : 8;  // v2: each inode is one cache line
    if (h.meta_offset % meta_align != 0 || h.meta_offset < data_end || h.meta_offset > real_size)
        return header_corrupt(path, at(offsetof(Header, meta_offset)), data_end, h.meta_offset,
                              "metadata offset");
    // Holes: version 2 only; the blocks section then exists whatever the codec.
    const bool holes = (h.incompat_features & kIncompatHoles) != 0;
    if (holes && !v2)
        return header_corrupt(path, at(offsetof(Header, incompat_features)),
                              h.incompat_features & ~kIncompatHoles, h.incompat_features,
                              "incompatible features (holes in version 1)");
    if (!compressed && !holes && h.stream_size != h.data_length)
        return header_corrupt(path, at(offsetof(Header, stream_size)), h.data_length, h.stream_size,
                              "stream size (raw data)");
    // Compressed metadata: the region is stored as frames plus their index, and meta_length is
    // its inflated size (bounded below through the sums, 8 bytes of file per block).
    const bool framed = (h.incompat_features & kIncompatCompressedMeta) != 0;
    if (framed && (!v2 || !compressed))
        return header_corrupt(path, at(offsetof(Header, incompat_features)),
                              h.incompat_features & ~kIncompatCompressedMeta, h.incompat_features,
                              v2 ? "incompatible features (compressed metadata without compressed "
                                   "data)"
                                 : "incompatible features (compressed metadata in version 1)");
    if (!framed && (h.meta_frames_length != 0 || h.meta_index_checksum != 0))
        return header_corrupt(path, at(offsetof(Header, meta_frames_length)), 0,
                              h.meta_frames_length | h.meta_index_checksum,
                              "metadata frames (without the compressed-metadata feature)");
    const uint64_t meta_blocks = meta_block_count(h.meta_length);
    if (h.meta_length % 8 != 0 ||
        (framed ? meta_blocks > real_size / 8 : !within(h.meta_offset, h.meta_length, real_size)))
        return header_corrupt(path, at(offsetof(Header, meta_length)), real_size - h.meta_offset,
                              h.meta_length, "metadata length (past the end of the file)");
    const uint64_t meta_end = h.meta_offset + h.meta_length;
    uint64_t stored_end = meta_end;  // where the stored metadata ends and the sums start
    if (framed) {
        if (!within(h.meta_offset, h.meta_frames_length, real_size))
            return header_corrupt(path, at(offsetof(Header, meta_frames_length)),
                                  real_size - h.meta_offset, h.meta_frames_length,
                                  "metadata frames length (past the end of the file)");
        const uint64_t index = frame_index_offset(h);
        if (!within(index, 8 * (meta_blocks + 1), real_size))
            return header_corrupt(path, at(offsetof(Header, meta_frames_length)),
                                  real_size - h.meta_offset, h.meta_frames_length,
                                  "metadata frame index (past the end of the file)");
        stored_end = index + 8 * (meta_blocks + 1);
    }
    if (h.sums_offset != stored_end)
        return header_corrupt(path, at(offsetof(Header, sums_offset)), stored_end, h.sums_offset,
                              "block sums offset");
    if (h.sums_length != meta_blocks * 8)
        return header_corrupt(path, at(offsetof(Header, sums_length)), meta_blocks * 8,
                              h.sums_length, "block sums length");
    // Then the metadata digests (v2 with kIncompatMetaDigests), or nothing: the file ends.
    const bool meta_digests = (h.incompat_features & kIncompatMetaDigests) != 0;
    if (meta_digests && !v2)
        return header_corrupt(path, at(offsetof(Header, incompat_features)),
                              h.incompat_features & ~kIncompatMetaDigests, h.incompat_features,
                              "incompatible features (metadata digests in version 1)");
    const uint64_t tail = meta_digests ? 32 * meta_blocks : 0;
    if (!within(h.sums_offset, h.sums_length, real_size) ||
        real_size - h.sums_offset - h.sums_length != tail)
        return header_corrupt(path, at(offsetof(Header, sums_length)), real_size - h.sums_offset,
                              h.sums_length + tail,
                              meta_digests ? "block sums and metadata digests (must end the file)"
                                           : "block sums (must end the file)");

    // The sections: in order, 8-aligned (gaps under 8 bytes), inside the metadata region, whole
    // records.
    // Without the inode-numbers feature its two sections are absent: entries all zero, as v1
    // writers left those reserved bytes.
    // v1 has no buckets or times (its writers left those bytes zero); v2 has buckets always
    // and times with kCompatAllTimes.
    const bool numbered = (h.incompat_features & kIncompatInodeNumbers) != 0;
    const bool all_times = v2 && (h.compat_features & kCompatAllTimes) != 0;
    const bool block_digests = (h.compat_features & kCompatBlockDigests) != 0;
    if (block_digests && !v2)
        return header_corrupt(path, at(offsetof(Header, compat_features)),
                              h.compat_features & ~kCompatBlockDigests, h.compat_features,
                              "compatible features (block digests in version 1)");
    auto absent = [&](std::size_t i) -> const char* {
        const auto s = static_cast<Section>(i);
        if ((s == Section::inode_numbers || s == Section::inode_order) && !numbered)
            return "without the inode-numbers feature";
        if (s == Section::buckets && !v2) return "in a version 1 pack";
        if (s == Section::times && !all_times) return "without the all-times feature";
        if (s == Section::block_digests && !block_digests)
            return "without the block-digests feature";
        return nullptr;
    };
    uint64_t end = h.meta_offset;
    for (std::size_t i = 0; i < kSectionCount; ++i) {
        const SectionEntry& s = section(h, i);
        const uint64_t field = section_entry_offset(i);
        if (const char* why = absent(i)) {
            if (s.offset != 0 || s.length != 0 || s.checksum != 0)
                return header_corrupt(
                    path, field, 0, s.offset | s.length | s.checksum,
                    fmt::format("section {} entry ({})", section_name(h.version, i), why));
            continue;
        }
        if (s.offset % 8 != 0 || s.offset < end || s.offset - end >= 8 ||
            !within(s.offset, s.length, meta_end))
            return header_corrupt(path, field, end, s.offset,
                                  fmt::format("section {} range", section_name(h.version, i)));
        const uint64_t record = section_record_size(h.version, i);
        if (s.length % record != 0)
            return header_corrupt(
                path, field + 8, record, s.length % record,
                fmt::format("section {} length (not whole records)", section_name(h.version, i)));
        end = s.offset + s.length;
    }
    // The region ends with the last section, padded to 8 bytes.
    if (meta_end - end >= 8)
        return header_corrupt(path, at(offsetof(Header, meta_length)), end - h.meta_offset,
                              h.meta_length, "metadata length (past the last section)");
    const SectionEntry& inodes = h.sections[static_cast<std::size_t>(Section::inodes)];
    const uint64_t inode_size = section_record_size(h.version, 0);
    if (inodes.length / inode_size != h.inode_count)
        return header_corrupt(path, at(offsetof(Header, inode_count)), inodes.length / inode_size,
                              h.inode_count, "inode count (against the inodes section)");
    if (v2 && inodes.offset != h.meta_offset)  // so every inode is one aligned cache line
        return header_corrupt(path, section_entry_offset(0), h.meta_offset, inodes.offset,
                              "section inodes range (must start the metadata region)");
    // inode_count fits 32 bits (checked above): these products cannot wrap.
    for (Section s : {Section::inode_numbers, Section::inode_order, Section::times}) {
        const auto i = static_cast<std::size_t>(s);
        const bool present = s == Section::times ? all_times : numbered;
        const uint64_t want = present ? section_record_size(h.version, i) * h.inode_count : 0;
        if (section(h, s).length != want)
            return header_corrupt(path, section_entry_offset(i) + 8, want, section(h, s).length,
                                  fmt::format("section {} length (one record per inode)",
                                              section_name(h.version, i)));
    }
    // ceil(stream_size / block_size) without overflow: near 2^64 the rounded-up sum wrapped to a
    // small count that a short blocks section then matched.
    const uint64_t block_count =
        h.stream_size / h.block_size + (h.stream_size % h.block_size != 0 ? 1 : 0);
    const uint64_t blocks_length = compressed || holes ? 8 * (block_count + 1) : 0;
    const SectionEntry& blocks = h.sections[static_cast<std::size_t>(Section::blocks)];
    if (blocks.length != blocks_length)
        return header_corrupt(path,
                              at(offsetof(Header, sections)) +
                                  static_cast<uint64_t>(Section::blocks) * sizeof(SectionEntry) + 8,
                              blocks_length, blocks.length, "section blocks length");
    const uint64_t digests_length = block_digests ? sizeof(BlockDigest) * block_count : 0;
    if (h.digests_section.length != digests_length)
        return header_corrupt(path, at(offsetof(Header, digests_section)) + 8, digests_length,
                              h.digests_section.length,
                              "section block_digests length (one per stream block)");
    return {};
}

PackInfo PackReader::info() const {
    PackInfo i;
    i.version = header_.version;
    i.file_size = header_.file_size;
    i.inode_count = header_.inode_count;
    i.data_length = header_.data_length;
    i.stream_size = header_.stream_size;
    i.meta_length = header_.meta_length;
    i.compressed_metadata = frames_ != nullptr;
    i.meta_stored_length = header_.file_size - header_.meta_offset;
    switch (codec_) {
        case Codec::none:
            i.compression = Compression::none;
            break;
        case Codec::zstd:
            i.compression = Compression::zstd;
            break;
        case Codec::lz4:
            i.compression = Compression::lz4;
            break;
    }
    i.block_size = header_.block_size;
    i.inline_max = header_.inline_max;
    i.has_xattrs = (header_.compat_features & kCompatXattrs) != 0;
    i.has_holes = holes_;
    i.has_block_digests = block_digests_;
    i.has_metadata_digests = !meta_digests_.empty();
    i.keeps_inode_numbers = numbered_;
    i.stores_all_times = version_ == 1 || all_times_;
    i.digest = to_hex(std::span<const uint8_t>(header_.image_digest));
    return i;
}

}  // namespace packfs::pack
