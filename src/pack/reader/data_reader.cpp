// DataReader: the stream's blocks (stored raw, compressed through the block cache, or holes),
// reads and zero-copy views of a file's bytes, SEEK_DATA / SEEK_HOLE, st_blocks, and the stored
// blocks a pack's source fetches.
#include "pack/reader/data_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/buffer_pool.hpp"
#include "pack/format/codec.hpp"

namespace packfs::pack {

namespace {

// Buffers for stored blocks read with pread (decompress): 8 kept idle, of at most 1 MiB (a
// block of the default 64 KiB is stored in at most that; larger ones are allocated each time).
BufferPool& staging_pool() {
    static BufferPool* pool = new BufferPool(8, 1 << 20);  // never destroyed: threads may outlive
    return *pool;
}

}  // namespace

void DataReader::open(const PackImage& image, const MetaReader& meta,
                      const PackOpenOptions& options) {
    const Header& h = meta.header();
    image_ = &image;
    meta_ = &meta;
    blocks_rel_ = section(h, Section::blocks).offset - h.meta_offset;
    block_count_ = section(h, Section::blocks).length / 8;
    if (block_count_ > 0) --block_count_;  // count + 1 offsets
    block_digests_ = (h.compat_features & kCompatBlockDigests) != 0;
    if (block_digests_)
        block_digests_rel_ = section(h, Section::block_digests).offset - h.meta_offset;
    stream_size_ = h.stream_size;
    data_offset_ = h.data_offset;
    data_length_ = h.data_length;
    block_size_ = h.block_size;
    codec_ = static_cast<Codec>(h.codec);
    holes_ = (h.incompat_features & kIncompatHoles) != 0;
    if (codec_ != Codec::none)
        cache_ = std::make_unique<BlockCache>(options.block_cache_bytes, block_size_);
    if (codec_ != Codec::none && holes_) allocated_ = std::make_unique<AllocatedCache>();
    // Not for a remote pack: its source fetches ahead of a reader already, by its own policy.
    if (codec_ != Codec::none && cache_->enabled() && image.source() == nullptr)
        ahead_ = std::make_unique<DecompressAhead>([this](uint64_t i) { return inflate_ahead(i); },
                                                   block_size_, block_count_);
}

Result<DataReader::StoredBlock> DataReader::stored_block(uint64_t index, const Ctx& ctx) const {
    const uint64_t rel = blocks_rel_ + index * 8;
    if (index >= block_count_) [[unlikely]]
        return meta_->corrupt(ctx, rel, block_count_, index, "block index");
    auto at = meta_->meta(rel, 16, ctx);
    if (!at) return std::unexpected(at.error());
    const auto begin = load<uint64_t>(*at);
    const auto end = load<uint64_t>(*at + 8);
    if (index == 0 && begin != 0) [[unlikely]]
        return meta_->corrupt(ctx, rel, 0, begin, "first block offset");
    if (begin > end || end > data_length_) [[unlikely]]
        return meta_->corrupt(ctx, rel + 8, data_length_, end,
                              "block offset (decreasing, or past the data region)");
    if (index + 1 == block_count_ && end != data_length_) [[unlikely]]
        return meta_->corrupt(ctx, rel + 8, data_length_, end, "last block offset");
    StoredBlock b;
    b.stored_offset = data_offset_ + begin;
    b.stored_length = end - begin;
    b.stream_length = std::min<uint64_t>(block_size_, stream_size_ - index * block_size_);
    if (b.hole() && !holes_) [[unlikely]]
        return meta_->corrupt(ctx, rel + 8, begin + b.stream_length, end,
                              "block offset (an empty block, without the holes feature)");
    if (codec_ == Codec::none && !b.hole() && !b.raw()) [[unlikely]]
        return meta_->corrupt(ctx, rel + 8, begin + b.stream_length, end,
                              "block offset (a raw block of the wrong length)");
    return b;
}

Result<DataReader::FileExtent> DataReader::block_extent(uint64_t index, const Ctx& ctx) const {
    if (codec_ != Codec::none || holes_) {
        auto where = stored_block(index, ctx);
        if (!where) return std::unexpected(where.error());
        return FileExtent{where->stored_offset, static_cast<std::size_t>(where->stored_length)};
    }
    const uint64_t count = stream_block_count();
    if (index >= count) [[unlikely]]
        return meta_->corrupt(ctx, 0, count, index, "block index");
    const uint64_t begin = index * block_size_;
    return FileExtent{data_offset_ + begin, static_cast<std::size_t>(std::min<uint64_t>(
                                                block_size_, stream_size_ - begin))};
}

Result<BlockDigest> DataReader::block_digest(uint64_t index, const Ctx& ctx) const {
    const uint64_t count = stream_block_count();
    if (!block_digests_ || index >= count) [[unlikely]]
        return meta_->corrupt(ctx, block_digests_rel_, count, index, "block digest index");
    auto at =
        meta_->meta(block_digests_rel_ + index * sizeof(BlockDigest), sizeof(BlockDigest), ctx);
    if (!at) return std::unexpected(at.error());
    return load<BlockDigest>(*at);
}

Result<std::vector<StoredBlockRef>> DataReader::stored_blocks(const Ctx& ctx) const {
    std::vector<StoredBlockRef> out;
    const uint64_t count = stream_block_count();
    out.reserve(count);
    for (uint64_t i = 0; i < count; ++i) {
        auto extent = block_extent(i, ctx);
        if (!extent) return std::unexpected(extent.error());
        auto digest = block_digest(i, ctx);
        if (!digest) return std::unexpected(digest.error());
        out.push_back(StoredBlockRef{extent->offset, extent->length, *digest});
    }
    return out;
}

std::optional<uint64_t> DataReader::raw_offset(uint64_t offset, uint64_t length) const {
    if (codec_ != Codec::none) return std::nullopt;
    if (!holes_) return data_offset_ + offset;
    // Raw blocks are stored back to back: the range is contiguous when no hole lies between
    // its first and last block, that is when their stored distance is their stream distance.
    const Ctx ctx{"read", {}};
    const uint64_t first = offset / block_size_, last = (offset + length - 1) / block_size_;
    auto a = stored_block(first, ctx);
    auto b = last == first ? a : stored_block(last, ctx);
    if (!a || !b || a->hole() || b->hole() ||
        b->stored_offset - a->stored_offset != (last - first) * block_size_)
        return std::nullopt;  // a read reports the damage, if any
    return a->stored_offset + offset % block_size_;
}

Result<void> DataReader::decompress(uint64_t index, const StoredBlock& where,
                                    std::span<std::byte> out, const Ctx& ctx,
                                    uint64_t content_end) const {
    // The stored bytes are read with pread into a pooled buffer even when the pack is mapped:
    // pages of the mapping once touched stay in the process's RSS (as file pages) for as long
    // as the kernel keeps them cached, so reading a whole compressed pack through the mapping
    // made the whole pack part of a daemon's RSS. The copy costs little beside the
    // decompression. Pooled rather than one per thread: a daemon has up to 64 worker threads.
    BufferPool::Lease staging = staging_pool().take();
    const std::span<std::byte> stored(staging.resize(where.stored_length), where.stored_length);
    if (auto got = image_->read_at(where.stored_offset, stored, content_end); !got)
        return std::unexpected(got.error().relabeled(ctx.op, ctx.path));
    if (!decompress_block(codec_, stored, out)) [[unlikely]] {
        return std::unexpected(Error::corrupt(
            ctx.op, ctx.path,
            Corruption{where.stored_offset, where.stream_length, where.stored_length,
                       fmt::format("compressed block {} (does not decompress)", index)}));
    }
    return {};
}

Result<CachedBlock> DataReader::cached_block(uint64_t index, const StoredBlock& where,
                                             const Ctx& ctx, uint64_t content_end) const {
    if (ahead_) ahead_->at(index);
    if (CachedBlock hit = cache_->find(index)) return hit;
    if (ahead_ && ahead_->wait_for(index)) {
        if (CachedBlock hit = cache_->find(index)) return hit;
    }
    return inflate_into_cache(index, where, ctx, content_end);
}

Result<CachedBlock> DataReader::inflate_into_cache(uint64_t index, const StoredBlock& where,
                                                   const Ctx& ctx, uint64_t content_end) const {
    auto bytes = std::make_shared_for_overwrite<std::byte[]>(where.stream_length);
    if (auto ok =
            decompress(index, where, std::span(bytes.get(), where.stream_length), ctx, content_end);
        !ok)
        return std::unexpected(ok.error());
    return cache_->insert(index, CachedBlock{std::move(bytes), where.stream_length});
}

bool DataReader::inflate_ahead(uint64_t index) const {
    const Ctx ctx{"read", {}};
    auto where = stored_block(index, ctx);
    if (!where || where->hole() || where->raw() || cache_->find(index)) return false;
    return inflate_into_cache(index, *where, ctx, 0).has_value();
}

Result<void> DataReader::read_stream(uint64_t offset, std::span<std::byte> out, const Ctx& ctx,
                                     uint64_t content_end) const {
    const std::byte* map = image_->mapping();
    if (codec_ == Codec::none && !holes_) {
        if (map != nullptr) {
            std::memcpy(out.data(), map + data_offset_ + offset, out.size());
        } else if (auto got = image_->read_at(data_offset_ + offset, out, content_end); !got) {
            return std::unexpected(got.error().relabeled(ctx.op, ctx.path));
        }
        return {};
    }
    std::size_t done = 0;
    while (done < out.size()) {
        const uint64_t pos = offset + done;
        const uint64_t index = pos / block_size_;
        const uint64_t in_block = pos % block_size_;
        auto where = stored_block(index, ctx);
        if (!where) return std::unexpected(where.error());
        const std::size_t n =
            std::min<uint64_t>(out.size() - done, where->stream_length - in_block);
        std::span<std::byte> part = out.subspan(done, n);
        if (where->hole()) {
            std::memset(part.data(), 0, n);
        } else if (where->raw()) {  // stored raw: no need to cache
            // A compressed pack's raw blocks are read with pread too, so that none of its
            // data region is mapped into the process (decompress).
            if (map != nullptr && codec_ == Codec::none) {
                std::memcpy(part.data(), map + where->stored_offset + in_block, n);
            } else if (auto got =
                           image_->read_at(where->stored_offset + in_block, part, content_end);
                       !got) {
                return std::unexpected(got.error().relabeled(ctx.op, ctx.path));
            }
        } else {
            auto block = cached_block(index, *where, ctx, content_end);
            if (!block) return std::unexpected(block.error());
            std::memcpy(part.data(), block->bytes.get() + in_block, n);
        }
        done += n;
    }
    return {};
}

std::optional<StoredRange> DataReader::stored_range(const ContentRef& content,
                                                    const Ctx& ctx) const noexcept {
    if (content.where != ContentRef::Where::stream || content.size == 0) return std::nullopt;
    const uint64_t last = content.offset + content.size - 1;  // its last byte in the stream
    if (codec_ == Codec::none && !holes_)
        return StoredRange{data_offset_ + content.offset, data_offset_ + last + 1};
    const uint64_t first_block = content.offset / block_size_, last_block = last / block_size_;
    auto first = block_extent(first_block, ctx);
    auto end = block_extent(last_block, ctx);
    if (!first || !end || first->length == 0) return std::nullopt;
    return StoredRange{first->offset, end->offset + end->length};
}

uint64_t DataReader::content_end(const ContentRef& content) const noexcept {
    if (image_->source() == nullptr) return 0;
    auto range = stored_range(content, Ctx{"read", {}});
    return range ? range->end : 0;
}

Result<DataReader::Piece> DataReader::piece(uint64_t index, const Ctx& ctx) const {
    auto e = meta_->extent(index, ctx);
    if (!e) return std::unexpected(e.error());
    const DataReader* from = e->pack == 0 ? this : nullptr;
    if (e->pack != 0 && e->pack <= bases_.size()) from = bases_[e->pack - 1];
    if (from == nullptr) [[unlikely]]  // PackReader::open gives every base or fails
        return fail(EIO, ctx.op, fmt::format("{} (extent {}: base {} is not open)", ctx.path,
                                             index, e->pack));
    if (!within(e->offset, e->length, from->stream_size_)) [[unlikely]]
        return meta_->corrupt(ctx, meta_->extent_rel(index), from->stream_size_,
                              e->offset + e->length, "extent range (past its pack's stream)");
    return Piece{*e, from};
}

Result<DataReader::Piece> DataReader::piece_at(const ContentRef& content, uint64_t offset,
                                               uint64_t& index, const Ctx& ctx) const {
    uint64_t lo = content.offset, hi = content.offset + content.extent_count;  // [lo, hi)
    while (hi - lo > 1) {
        const uint64_t mid = lo + (hi - lo) / 2;
        auto e = meta_->extent(mid, ctx);
        if (!e) return std::unexpected(e.error());
        (e->at <= offset ? lo : hi) = mid;
    }
    auto p = piece(lo, ctx);
    if (!p) return std::unexpected(p.error());
    // A run out of order, with gaps, or not summing to the size lands here.
    if (offset < p->extent.at || offset - p->extent.at >= p->extent.length ||
        p->extent.at + p->extent.length > content.size) [[unlikely]]
        return meta_->corrupt(ctx, meta_->extent_rel(lo), offset, p->extent.at,
                              "extent run (out of order, with a gap, or past its content)");
    index = lo;
    return p;
}

Result<void> DataReader::read_extents(const ContentRef& content, uint64_t offset,
                                      std::span<std::byte> out, const Ctx& ctx) const {
    uint64_t index = 0;
    auto p = piece_at(content, offset, index, ctx);
    if (!p) return std::unexpected(p.error());
    for (std::size_t done = 0;;) {
        const uint64_t in = offset + done - p->extent.at;
        const std::size_t n = std::min<uint64_t>(out.size() - done, p->extent.length - in);
        if (p->from == this) {
            if (auto ok = read_stream(p->extent.offset + in, out.subspan(done, n), ctx); !ok)
                return ok;
        } else {
            const ContentRef range{.where = ContentRef::Where::stream,
                                   .size = p->extent.length,
                                   .offset = p->extent.offset};
            auto got = p->from->read(range, in, out.subspan(done, n), ctx);
            if (!got) return std::unexpected(got.error());
        }
        done += n;
        if (done == out.size()) return {};
        // The next extent must go on where this one ends.
        const uint64_t expected_at = p->extent.at + p->extent.length;
        if (++index >= content.offset + content.extent_count) [[unlikely]]
            return meta_->corrupt(ctx, meta_->extent_rel(index), content.size, expected_at,
                                  "extent run (ends before its content)");
        p = piece(index, ctx);
        if (!p) return std::unexpected(p.error());
        if (p->extent.at != expected_at) [[unlikely]]
            return meta_->corrupt(ctx, meta_->extent_rel(index), expected_at, p->extent.at,
                                  "extent at (a gap or an overlap in the run)");
    }
}

std::optional<DataReader::InBase> DataReader::base_of(const ContentRef& content) const noexcept {
    if (content.pack == 0 || content.pack > bases_.size() || bases_[content.pack - 1] == nullptr)
        return std::nullopt;
    const DataReader* from = bases_[content.pack - 1];
    if (!within(content.offset, content.size, from->stream_size_)) return std::nullopt;
    return InBase{from, ContentRef{.where = ContentRef::Where::stream,
                                   .size = content.size,
                                   .offset = content.offset}};
}

Result<DataReader::InBase> DataReader::in_base(const ContentRef& content, const Ctx& ctx) const {
    if (auto found = base_of(content)) return *found;
    if (content.pack == 0 || content.pack > bases_.size() || bases_[content.pack - 1] == nullptr)
        return fail(EIO, ctx.op, fmt::format("{} (a content in base {}, which is not open)",
                                             ctx.path, content.pack));
    return std::unexpected(Error(
        kErrCorrupt, ctx.op,
        fmt::format("{} (a content in base {} at {} of {} bytes: past that base's stream of {})",
                    ctx.path, content.pack, content.offset, content.size,
                    bases_[content.pack - 1]->stream_size_)));
}

Result<std::size_t> DataReader::read(const ContentRef& content, uint64_t offset,
                                     std::span<std::byte> out, const Ctx& ctx) const {
    if (offset >= content.size || out.empty()) return 0;
    if (content.where == ContentRef::Where::base) {
        auto base = in_base(content, ctx);
        if (!base) return std::unexpected(base.error());
        return base->from->read(base->content, offset, out, ctx);
    }
    const std::size_t n = std::min<uint64_t>(out.size(), content.size - offset);
    if (content.where == ContentRef::Where::inline_bytes) {
        std::memcpy(out.data(), content.inline_data + offset, n);
        return n;
    }
    if (content.where == ContentRef::Where::extents) {
        if (auto ok = read_extents(content, offset, out.first(n), ctx); !ok)
            return std::unexpected(ok.error());
        return n;
    }
    if (auto ok = read_stream(content.offset + offset, out.first(n), ctx, content_end(content));
        !ok)
        return std::unexpected(ok.error());
    return n;
}

Result<std::span<const std::byte>> DataReader::view(const ContentRef& content, uint64_t offset,
                                                    std::size_t length, std::string& scratch,
                                                    const Ctx& ctx) const {
    if (offset >= content.size || length == 0) return std::span<const std::byte>();
    if (content.where == ContentRef::Where::base) {
        auto base = in_base(content, ctx);
        if (!base) return std::unexpected(base.error());
        return base->from->view(base->content, offset, length, scratch, ctx);
    }
    const std::size_t n = std::min<uint64_t>(length, content.size - offset);
    if (content.where == ContentRef::Where::inline_bytes)
        return std::span(content.inline_data + offset, n);
    if (content.where == ContentRef::Where::extents) {
        uint64_t index = 0;
        auto p = piece_at(content, offset, index, ctx);
        if (!p) return std::unexpected(p.error());
        const uint64_t in = offset - p->extent.at;
        if (n <= p->extent.length - in) {  // inside one extent: a view of its pack's stream
            const ContentRef range{.where = ContentRef::Where::stream,
                                   .size = p->extent.length,
                                   .offset = p->extent.offset};
            return p->from->view(range, in, n, scratch, ctx);
        }
        scratch.resize(n);
        auto out = std::as_writable_bytes(std::span(scratch.data(), n));
        if (auto ok = read_extents(content, offset, out, ctx); !ok)
            return std::unexpected(ok.error());
        return std::span<const std::byte>(out);
    }
    if (image_->mapping() != nullptr) {
        if (auto at = raw_offset(content.offset + offset, n))
            return std::span(image_->mapping() + *at, n);
    }
    scratch.resize(n);
    auto out = std::as_writable_bytes(std::span(scratch.data(), n));
    if (auto ok = read_stream(content.offset + offset, out, ctx, content_end(content)); !ok)
        return std::unexpected(ok.error());
    return std::span<const std::byte>(out);
}

// O(1) in a raw pack (raw_data_bytes); in a compressed one a walk of the content's blocks, done
// once per content while the cache keeps it. A damaged block makes it the file's whole size (a
// read says what is wrong), which is not kept.
uint64_t DataReader::allocated_blocks(const ContentRef& content, uint64_t index) const noexcept {
    const uint64_t whole = (content.size + 511) / 512;
    if (content.where == ContentRef::Where::base) {  // `index` is the base's own
        auto base = base_of(content);
        return base ? base->from->allocated_blocks(base->content, index) : whole;
    }
    if (content.where != ContentRef::Where::stream) return whole;
    const uint64_t end = content.offset + content.size;
    if (codec_ == Codec::none) {
        auto bytes = raw_data_bytes(content.offset, end);
        return bytes ? (*bytes + 511) / 512 : whole;
    }
    if (auto kept = allocated_->find(index)) return *kept;
    const Ctx ctx{"stat", {}};
    uint64_t bytes = 0;
    for (uint64_t pos = content.offset; pos < end;) {
        const uint64_t block = pos / block_size_;
        auto where = stored_block(block, ctx);
        if (!where) return whole;
        const uint64_t next = std::min(end, (block + 1) * block_size_);
        if (!where->hole()) bytes += next - pos;
        pos = next;
    }
    allocated_->insert(index, (bytes + 511) / 512);
    return (bytes + 511) / 512;
}

// Raw blocks are stored back to back and a hole in nothing, so the stored bytes from the first
// block of [offset, end) to the end of its last are the stream bytes of its data blocks; less
// what lies outside the range in those two blocks when they are data, that is its bytes
// outside holes. Two entries of the blocks section read, whatever the length. nullopt when
// either end block is damaged, or the two disagree with the range (the blocks between them
// were not checked: a damaged section then gives a wrong count within the file's size, and a
// read reports the damage).
std::optional<uint64_t> DataReader::raw_data_bytes(uint64_t offset, uint64_t end) const noexcept {
    const Ctx ctx{"stat", {}};
    const uint64_t first = offset / block_size_, last = (end - 1) / block_size_;
    auto a = stored_block(first, ctx);
    auto b = last == first ? a : stored_block(last, ctx);
    if (!a || !b) return std::nullopt;
    const uint64_t stored_end = b->stored_offset + b->stored_length;
    if (stored_end < a->stored_offset) return std::nullopt;
    uint64_t outside = 0;  // bytes of the two end blocks outside the range, when they are data
    if (!a->hole()) outside += offset - first * block_size_;
    if (!b->hole()) outside += last * block_size_ + b->stream_length - end;
    const uint64_t stored = stored_end - a->stored_offset;
    if (stored < outside || stored - outside > end - offset) return std::nullopt;
    return stored - outside;
}

Result<uint64_t> DataReader::seek(const ContentRef& content, uint64_t offset, bool data,
                                  const Ctx& ctx) const {
    if (offset >= content.size) return fail(ENXIO, ctx.op, ctx.path);
    if (content.where == ContentRef::Where::base) {
        auto base = in_base(content, ctx);
        if (!base) return std::unexpected(base.error());
        return base->from->seek(base->content, offset, data, ctx);
    }
    if (!holes_ || content.where != ContentRef::Where::stream) return data ? offset : content.size;
    // Block by block from the one holding `offset`: a hole block reads as zeros throughout, so
    // the answer is `offset` itself or the start of the first block of the other kind.
    const uint64_t end = content.offset + content.size;
    for (uint64_t pos = content.offset + offset; pos < end;) {
        const uint64_t index = pos / block_size_;
        auto where = stored_block(index, ctx);
        if (!where) return std::unexpected(where.error());
        if (where->hole() != data) return pos - content.offset;
        pos = (index + 1) * block_size_;
    }
    if (data) return fail(ENXIO, ctx.op, ctx.path);  // only a hole up to the end
    return content.size;
}

}  // namespace packfs::pack
