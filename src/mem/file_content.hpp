// Chunked file content of the mem backend (DESIGN §6).
//
// A file's bytes live in chunks that cover fixed 64 KiB ranges of the file: chunk i holds
// bytes [i*64K, (i+1)*64K). A chunk's buffer may be smaller than 64 KiB (small files stay
// small; the buffer grows by doubling), bytes past a buffer's capacity and missing chunks
// (holes) read as zeros.
//
// Versions share chunks by reference. Overwriting bytes some version can see copies that
// one chunk (never the file). Appending does not copy: each chunk records a `frontier`, the
// highest byte count any version has been able to see in it; bytes at or past the frontier
// are invisible to every version, so the single writer may fill them in place, and only then
// publishes the version with the larger size. Older versions keep their smaller size and
// never read past it. A truncate lowers a version's size but never the frontier, so bytes a
// snapshot can still see are never rewritten.
//
// Copied-up files (an overlay's, DESIGN §9) are backed by their lower's bytes: a chunk the
// file does not hold reads from `backing` below `backing_size`, and zeros beyond. The first
// write into such a chunk copies that one chunk from the lower and changes it; the rest of the
// file stays where it was, so a one-byte write into a huge lower file copies 64 KiB.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "core/persistent_map.hpp"
#include "mem/lower_layer.hpp"
#include "packfs/error.hpp"

namespace packfs::mem {

inline constexpr uint32_t kChunkSize = 64 * 1024;

// A chunk's buffer. Full-size (64 KiB) buffers come from a bounded process-wide pool, so a
// large sequential write reuses memory that earlier files freed instead of page-faulting
// fresh memory in (which costs more than the copy itself).
class Chunk {
public:
    explicit Chunk(uint32_t capacity);
    ~Chunk();
    Chunk(const Chunk&) = delete;
    Chunk& operator=(const Chunk&) = delete;

    uint32_t capacity() const noexcept { return capacity_; }
    std::byte* data() noexcept { return data_; }
    const std::byte* data() const noexcept { return data_; }

    // Touched only by the one writer (under the backend's writer lock).
    uint32_t frontier = 0;

private:
    uint32_t capacity_;
    std::byte* data_;
};

// Bytes of full-size buffers the pool keeps for reuse at most (they are returned to the
// allocator beyond that).
inline constexpr std::size_t kChunkPoolBytes = 64u << 20;

using ChunkPtr = std::shared_ptr<Chunk>;

class FileContent {
public:
    // Content that reads as the lower's `size` bytes until it is changed.
    static FileContent backed_by(std::shared_ptr<const LowerContent> lower, uint64_t size);

    // Copies into `out` the bytes at [offset, ...) of a file of `size` bytes; returns the count.
    // Fails only when a backing lower fails.
    Result<std::size_t> read(uint64_t size, uint64_t offset, std::span<std::byte> out) const;
    // Writes `data` at `offset` of a file of `size` bytes (its new size is the larger of size
    // and offset + data.size(); a gap reads as zeros). A backing lower's failure throws
    // LowerFault (the writer's mutation catches it and publishes nothing).
    void write(uint64_t size, uint64_t offset, std::span<const std::byte> data);
    // Changes the size from `old_size` to `new_size`: drops whole chunks past the end when
    // shrinking, makes the new bytes read as zeros when growing.
    void resize(uint64_t old_size, uint64_t new_size);

    // Bytes of chunk buffers this content references (for st_blocks and statfs).
    uint64_t allocated() const noexcept { return allocated_; }
    // Bytes still read from the lower (a copied-up file's unchanged part, end included).
    uint64_t backed_bytes() const noexcept { return backing_ ? backing_size_ : 0; }

private:
    // Makes chunk `index` hold `data` at [a, a + data.size()) and read as zeros in the rest
    // of [visible_before, visible_after) (in-chunk offsets).
    void modify_chunk(uint64_t index, uint32_t visible_before, uint32_t visible_after, uint32_t a,
                      std::span<const std::byte> data);

    // Reads the lower's bytes of [pos, end) of chunk space into dst, zeros past backing_size_.
    Result<void> read_backing(uint64_t pos, uint64_t end, std::byte* dst) const;
    // A private chunk holding the lower's bytes of chunk `index`, up to `visible` bytes.
    ChunkPtr chunk_from_backing(uint64_t index, uint32_t visible, uint32_t capacity_needed);

    PersistentMap<uint64_t, ChunkPtr> chunks_;
    uint64_t allocated_ = 0;
    std::shared_ptr<const LowerContent> backing_;
    uint64_t backing_size_ = 0;  // <= the file's size in every version that holds this content
};

}  // namespace packfs::mem
