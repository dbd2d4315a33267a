// PackReader, opening: the header and its every field and section range checked against the
// file, and the sums array; nothing per entry (reader.hpp, "Trust protocol").
#include "pack/reader.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "pack/digest.hpp"
#include "pack/header_check.hpp"

namespace packfs::pack {

namespace {

std::unexpected<Error> header_corrupt(std::string_view path, uint64_t offset, uint64_t expected,
                                      uint64_t actual, std::string_view what) {
    return std::unexpected(
        Error::corrupt("open_pack", path, Corruption{offset, expected, actual, std::string(what)}));
}

// Error has no free text beyond the path, so the unsupported feature is named after it.
std::unexpected<Error> unsupported(std::string_view path, std::string_view detail) {
    return std::unexpected(Error(ENOTSUP, "open_pack", fmt::format("{} ({})", path, detail)));
}

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
    if (auto ok = validate_header(r->header_, r->image_->size(), host_path); !ok)
        return std::unexpected(ok.error());
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
    if (r->codec_ != Codec::none && r->holes_) r->allocated_ = std::make_unique<AllocatedCache>();
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
