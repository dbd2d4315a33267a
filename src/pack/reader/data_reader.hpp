// The data part of a pack's reader (PackReader, reader.hpp): the stream of contents, stored raw
// or as blocks (compressed, raw, or holes that store nothing), the block cache of decompressed
// blocks, and what a file's bytes are read, viewed and sought through. The blocks section and
// the block digests are metadata, read through the MetaReader's checked accessor; the bytes of
// the data region through the PackImage.
//
// Concurrency. Immutable after open() except for the block cache (sharded mutexes), the
// allocated-blocks table (atomics) and the decompress-ahead thread's queue (a mutex). Safe to
// share between threads.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "pack/format/format.hpp"
#include "pack/reader/allocated_cache.hpp"
#include "pack/reader/block_cache.hpp"
#include "pack/reader/decompress_ahead.hpp"
#include "pack/reader/image.hpp"
#include "pack/reader/meta_reader.hpp"
#include "packfs/error.hpp"
#include "packfs/pack.hpp"

namespace packfs::pack {

class DataReader {
public:
    DataReader() = default;
    DataReader(const DataReader&) = delete;
    DataReader& operator=(const DataReader&) = delete;

    // Takes the data region of `image` as `meta`'s header describes it (both outlive this).
    void open(const PackImage& image, const MetaReader& meta, const PackOpenOptions& options);

    // The data readers of the bases a pack with extents names (kIncompatExtents), in the order
    // of its bases section: extent pack k reads from bases[k - 1]. They outlive this one.
    void set_bases(std::vector<const DataReader*> bases) { bases_ = std::move(bases); }

    Codec codec() const noexcept { return codec_; }
    uint64_t stream_size() const noexcept { return stream_size_; }
    // kIncompatHoles: the blocks section exists whatever the codec, and empty blocks are holes.
    bool holes() const noexcept { return holes_; }
    uint32_t block_size() const noexcept { return block_size_; }

    // --- a file's bytes ---------------------------------------------------------------------
    // Copies up to out.size() bytes of `content` from `offset`; 0 at or past its end.
    Result<std::size_t> read(const ContentRef& content, uint64_t offset, std::span<std::byte> out,
                             const Ctx& ctx) const;
    // The bytes [offset, offset + length) of `content` (clipped): a span into the mapping or
    // the metadata when they are stored there raw, else copied into `scratch`.
    Result<std::span<const std::byte>> view(const ContentRef& content, uint64_t offset,
                                            std::size_t length, std::string& scratch,
                                            const Ctx& ctx) const;

    // Where bytes [offset, offset + length) of `content` (clipped) lie in the pack file when
    // they are stored there raw (an uncompressed pack's stream): the file offset and the
    // count, for a caller that reads them with pread or splice from the image's fd(). nullopt
    // for inline, compressed or empty ranges, and for a pack from a source (use view()).
    struct FileExtent {
        uint64_t offset;
        std::size_t length;
    };
    std::optional<FileExtent> file_extent(const ContentRef& content, uint64_t offset,
                                          std::size_t length) const {
        if (content.where != ContentRef::Where::stream || codec_ != Codec::none ||
            offset >= content.size || length == 0 || image_->source() != nullptr)
            return std::nullopt;
        const auto n = static_cast<std::size_t>(std::min<uint64_t>(length, content.size - offset));
        auto at = raw_offset(content.offset + offset, n);
        if (!at) return std::nullopt;
        return FileExtent{*at, n};
    }

    // The first offset at or after `offset` where `content` has data (`data`), or a hole
    // (a hole block of the stream, or the end): lseek's SEEK_DATA / SEEK_HOLE. ENXIO at or past
    // the end. Without the holes feature the data is everywhere.
    Result<uint64_t> seek(const ContentRef& content, uint64_t offset, bool data,
                          const Ctx& ctx) const;

    // st_blocks of a file whose content is `content` (its index `index`, MetaReader::
    // content_index) and may lie in hole blocks: 512-byte units of its bytes outside them.
    uint64_t allocated_blocks(const ContentRef& content, uint64_t index) const noexcept;

    // The decompressed-block cache's bound, what it holds and the most it ever held (a
    // compressed pack; zeros otherwise).
    BlockCache::Stats cache_stats() const noexcept {
        return cache_ ? cache_->stats() : BlockCache::Stats{};
    }
    // Blocks inflated ahead of a sequential reader (a local compressed pack; zeros otherwise).
    DecompressAhead::Stats ahead_stats() const noexcept {
        return ahead_ ? ahead_->stats() : DecompressAhead::Stats{};
    }

    // --- stored blocks, for a source that fetches them one by one (a remote pack) ---------
    // Format 2 with the block-digests feature: every stream block's stored bytes have a SHA-256.
    bool has_block_digests() const noexcept { return block_digests_; }
    // ceil(stream_size / block_size): what block indexes below run to.
    uint64_t stream_block_count() const noexcept {
        return stream_size_ / block_size_ + (stream_size_ % block_size_ != 0 ? 1 : 0);
    }
    // Where stream block `index` is stored in the file: [offset, offset + length), length 0
    // for a hole. From the blocks section when there is one, else the raw stream's own place.
    Result<FileExtent> block_extent(uint64_t index, const Ctx& ctx) const;
    // The SHA-256 of block `index`'s stored bytes (has_block_digests() only).
    Result<BlockDigest> block_digest(uint64_t index, const Ctx& ctx) const;
    // Every stream block's stored place and digest, in order (has_block_digests() only).
    Result<std::vector<StoredBlockRef>> stored_blocks(const Ctx& ctx) const;
    // Where `content`'s stored bytes lie in the file, from its first block to its last; nullopt
    // when it has none there (inline, empty) or starts in a hole, or when finding out needs
    // metadata it cannot have (`ctx` with HereOnly, metadata not here).
    std::optional<StoredRange> stored_range(const ContentRef& content,
                                            const Ctx& ctx) const noexcept;

private:
    friend class Verifier;  // reads every block

    struct StoredBlock {
        uint64_t stored_offset = 0;  // absolute file offset of its stored bytes
        uint64_t stored_length = 0;
        uint64_t stream_length = 0;
        bool hole() const noexcept { return stored_length == 0; }  // only with kIncompatHoles
        bool raw() const noexcept { return stored_length == stream_length; }
    };
    Result<StoredBlock> stored_block(uint64_t index, const Ctx& ctx) const;
    // A content made of extents: extent `i` of it (index into the section), checked to lie in
    // its pack's stream, with the reader of that pack.
    struct Piece {
        Extent extent;
        const DataReader* from;
    };
    Result<Piece> piece(uint64_t index, const Ctx& ctx) const;
    // A content a base holds whole (Where::base): that base's reader, and the content as a
    // range of its stream, checked to lie inside it (base_of: nullopt when it does not).
    struct InBase {
        const DataReader* from;
        ContentRef content;
    };
    std::optional<InBase> base_of(const ContentRef& content) const noexcept;
    Result<InBase> in_base(const ContentRef& content, const Ctx& ctx) const;
    // The index of the extent of `content` holding byte `offset` (< size): a binary search of
    // its run by `at`, each record it lands on checked to hold the byte.
    Result<Piece> piece_at(const ContentRef& content, uint64_t offset, uint64_t& index,
                           const Ctx& ctx) const;
    Result<void> read_extents(const ContentRef& content, uint64_t offset, std::span<std::byte> out,
                              const Ctx& ctx) const;
    // A pack from a source: where `content`'s stored bytes end, passed with its reads so that
    // the source can fetch on to there (ByteSource::read_data); 0 for a local pack.
    uint64_t content_end(const ContentRef& content) const noexcept;
    // The data stream; `content_end` as above.
    Result<void> read_stream(uint64_t offset, std::span<std::byte> out, const Ctx& ctx,
                             uint64_t content_end = 0) const;
    // A raw pack with holes: the bytes of stream range [offset, end) outside hole blocks, from
    // the blocks section's entries for its first and last block alone.
    std::optional<uint64_t> raw_data_bytes(uint64_t offset, uint64_t end) const noexcept;
    // The file offset of stream bytes [offset, offset + length) when they are stored raw and
    // contiguous (an uncompressed stream, or raw blocks without a hole between); else nullopt.
    std::optional<uint64_t> raw_offset(uint64_t offset, uint64_t length) const;
    // Decompresses block `index` from what is stored (no cache), into `out` (stream_length).
    Result<void> decompress(uint64_t index, const StoredBlock& where, std::span<std::byte> out,
                            const Ctx& ctx, uint64_t content_end = 0) const;
    Result<CachedBlock> cached_block(uint64_t index, const StoredBlock& where, const Ctx& ctx,
                                     uint64_t content_end) const;
    // Block `index` decompressed and put in the cache (what the cache then holds for it).
    Result<CachedBlock> inflate_into_cache(uint64_t index, const StoredBlock& where,
                                           const Ctx& ctx, uint64_t content_end) const;
    // DecompressAhead's work: block `index` into the cache, unless it is there or stored raw
    // (a failure is left for the reader to meet and report); true when it inflated it.
    bool inflate_ahead(uint64_t index) const;

    const PackImage* image_ = nullptr;
    const MetaReader* meta_ = nullptr;  // the blocks and block_digests sections
    uint64_t blocks_rel_ = 0, block_count_ = 0;
    uint64_t stream_size_ = 0;
    uint64_t data_offset_ = 0, data_length_ = 0;
    uint32_t block_size_ = 0;
    Codec codec_ = Codec::none;
    bool holes_ = false;          // kIncompatHoles: the blocks section exists whatever the codec
    bool block_digests_ = false;  // kCompatBlockDigests: the block_digests section exists
    uint64_t block_digests_rel_ = 0;
    std::vector<const DataReader*> bases_;  // kIncompatExtents: extent pack k is bases_[k - 1]
    std::unique_ptr<BlockCache> cache_;
    std::unique_ptr<AllocatedCache> allocated_;  // compressed with holes: st_blocks walked once
    // A local compressed pack with a cache: the next block inflated ahead of a sequential
    // reader. Last, so that its thread stops before the cache goes.
    std::unique_ptr<DecompressAhead> ahead_;
};

}  // namespace packfs::pack
