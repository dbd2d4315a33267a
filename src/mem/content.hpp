// File content of the mem engine (DESIGN §6): chunks that each cover a fixed 64 KiB range of the
// file, so writing never re-copies what was written and a snapshot shares every chunk it can.
//
// Shape. A file's content is a tagged pointer in its cell: nothing (empty, all holes, or all
// still in the lower), one Chunk for a file whose bytes all lie in its first 64 KiB (the common
// small file: no map at all), or a ChunkMap, a 64-way radix tree of chunks by index. A chunk's
// buffer may be smaller than 64 KiB (it starts at 64 bytes and doubles), so a 128-byte file
// costs a 128-byte buffer; bytes past a buffer and missing chunks read as zeros (holes).
//
// Appends in place. Each chunk records a frontier: the most bytes of it that any state of the
// file (live or kept for a snapshot) could ever show. Bytes at or past it are invisible to every
// reader, so the writer fills them in place and then publishes the larger size; an older state
// keeps its smaller size and never reads past it. An overwrite of bytes some state can see
// copies that one chunk (never the file), and the new chunk is published with one store. A
// truncate lowers the size, never the frontier, so bytes a snapshot still sees are never
// rewritten; growing again zero-fills by copy-on-write where needed.
//
// Sharing. Chunks and map nodes carry writer-owned reference counts (cell.hpp, Counted). A map
// node referenced once is the live file's own and changes in place (one slot store, which a
// reader sees whole); one a kept version also references is copied with the path above it.
//
// Backing. A file copied up from a lower (an overlay's, DESIGN §9) reads chunks it does not
// hold from the lower, below `backing` bytes; the first write into such a chunk copies just that
// chunk up, so a one-byte write into a 1 GB lower file copies 64 KiB.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "core/rcu.hpp"
#include "mem/arena.hpp"
#include "mem/cell.hpp"
#include "packfs/error.hpp"

namespace packfs::mem {

inline constexpr uint32_t kChunkSize = 64 * 1024;
inline constexpr uint64_t kMaxFileSize = 1ull << 52;  // 4 PiB: offsets stay far from overflow

// Bytes of full-size buffers the process keeps for reuse (a large sequential write reuses what
// earlier files freed instead of page-faulting fresh memory in).
inline constexpr std::size_t kChunkPoolBytes = 64u << 20;

// A chunk and, below 64 KiB, its buffer after it in one object of the engine's arena (a small
// file's bytes sit next to its inode and entry, made together); a full buffer comes from a
// process-wide pool and goes back there when the chunk is destroyed.
struct Chunk : Counted {
    uint32_t capacity = 0;
    uint32_t frontier = 0;  // the writer's: see above
    std::byte* data = nullptr;

    Chunk() = default;
    Chunk(const Chunk&) = delete;
    Chunk& operator=(const Chunk&) = delete;
    ~Chunk();
    bool inline_buffer() const noexcept { return capacity < kChunkSize; }
    static Chunk* make(Arena& arena, uint32_t capacity);
};
inline std::size_t arena_size(const Chunk& c) noexcept {
    return sizeof(Chunk) + (c.inline_buffer() ? c.capacity : 0);
}

struct ChunkMap : Counted {
    static constexpr int kBits = 6;
    static constexpr int kSlots = 1 << kBits;
    uint32_t height = 0;  // 0: slots are chunks
    std::atomic<void*> slots[kSlots] = {};

    uint64_t capacity() const noexcept { return uint64_t{1} << (kBits * (height + 1)); }
};

// Where a copied-up file's unchanged bytes are (a lower File, read with pread).
class Backing {
public:
    virtual ~Backing() = default;
    virtual Result<std::size_t> read(uint64_t offset, std::span<std::byte> out) const = 0;
};

// A file's content as the cell holds it (CellState::data of a regular file).
class Content {
public:
    Content() = default;
    explicit Content(void* raw) noexcept : raw_(reinterpret_cast<uintptr_t>(raw)) {}
    void* raw() const noexcept { return reinterpret_cast<void*>(raw_); }
    bool empty() const noexcept { return raw_ == 0; }

    // The chunk holding bytes [index * 64 KiB, ...), or nullptr (a hole, or still backed).
    const Chunk* chunk(uint64_t index) const noexcept;
    // The first index >= `index` that holds a chunk (skipping missing subtrees whole), or
    // UINT64_MAX when none does.
    uint64_t next_chunk(uint64_t index) const noexcept;

    // --- readers ---------------------------------------------------------------------------
    // Copies the bytes [offset, ...) of a file of `size` bytes into `out`; returns the count.
    // Chunks it lacks read from `backing` below `backing_size`, and as zeros beyond.
    Result<std::size_t> read(uint64_t size, uint64_t offset, std::span<std::byte> out,
                             const Backing* backing, uint64_t backing_size) const;
    // lseek's SEEK_DATA (`data`) or SEEK_HOLE from `offset` in a file of `size` bytes: chunks
    // held, and below `backing_size` the lower's, are data; missing ones are holes (a chunk is
    // the unit: zeros inside a held chunk are data). nullopt: ENXIO (at or past the end, or no
    // data after `offset`).
    std::optional<uint64_t> seek(uint64_t size, uint64_t offset, bool data,
                                 uint64_t backing_size) const noexcept;

    // --- the writer (the content must be the live state's, see ContentWriter) -------------
    static void retain(Content c) noexcept;
    // (`reclaimer`'s context is `arena`, where the chunks live.)
    static void release(Content c, rcu::Reclaimer& reclaimer) noexcept;
    static void destroy_now(Content c, Arena& arena) noexcept;

private:
    friend class ContentWriter;
    static constexpr uintptr_t kMapTag = 1;
    bool is_map() const noexcept { return raw_ & kMapTag; }
    Chunk* as_chunk() const noexcept { return reinterpret_cast<Chunk*>(raw_); }
    ChunkMap* as_map() const noexcept { return reinterpret_cast<ChunkMap*>(raw_ & ~kMapTag); }
    static Content of(Chunk* c) noexcept { return Content(c); }
    static Content of(ChunkMap* m) noexcept {
        Content out;
        out.raw_ = reinterpret_cast<uintptr_t>(m) | kMapTag;
        return out;
    }
    uintptr_t raw_ = 0;
};

// Changes one file's content: `state` is the cell's next state (content, size, allocated and
// backing are read and updated in it; the caller publishes it).
class ContentWriter {
public:
    ContentWriter(CellState& state, rcu::Reclaimer& reclaimer, Arena& arena,
                  const Backing* backing) noexcept
        : state_(state), reclaimer_(reclaimer), arena_(arena), backing_(backing) {}

    // Writes `data` at `offset` (the size grows to cover it; a gap reads as zeros). A backing
    // lower's read error is returned, and nothing is changed then.
    Result<void> write(uint64_t offset, std::span<const std::byte> data);
    // Sets the size: drops whole chunks past a new, smaller end; a larger size reads as zeros.
    Result<void> resize(uint64_t new_size);
    // Makes [offset, offset + length) (clipped to the size) read as zeros: the chunks wholly
    // inside become holes, the ones it cuts are zeroed there (a hole stays a hole). Below the
    // backing size a missing chunk would read the lower again, so there zeros are written.
    Result<void> punch(uint64_t offset, uint64_t length);
    // Makes chunks [to_index, to_index + count) the chunks [from_index, ...) of `from`, another
    // file's content (holes where it has none), shared: neither file writes them in place
    // again (their frontier is their capacity), so a write to either copies the chunk first.
    // The range must lie below a backing lower's (none here is read from it).
    void share(Content from, uint64_t from_index, uint64_t to_index, uint64_t count);

private:
    Result<void> modify_chunk(uint64_t index, uint32_t visible_before, uint32_t visible_after,
                              uint32_t a, std::span<const std::byte> data);
    Result<Chunk*> chunk_from_backing(uint64_t index, uint32_t visible, uint32_t capacity_needed);
    Result<void> read_backing(uint64_t pos, uint64_t end, std::byte* dst) const;
    // Makes chunk `index` be `chunk` (nullptr: a hole), releasing what was there.
    void set_chunk(uint64_t index, Chunk* chunk);
    ChunkMap* own_map(ChunkMap* node, std::atomic<void*>* parent_slot);
    void drop_from(uint64_t first_index);

    Content content() const noexcept { return Content(state_.data); }
    void set_content(Content c) noexcept { state_.data = c.raw(); }

    CellState& state_;
    rcu::Reclaimer& reclaimer_;
    Arena& arena_;
    const Backing* backing_;
    // While a chunk a reader may be reading is replaced or removed, map nodes are copied even
    // when they are the file's own (the copies are published with the state); the copies this
    // writer made are not copied again.
    bool copying_ = false;
    std::vector<ChunkMap*> made_;
    std::vector<std::pair<uint64_t, Chunk*>> backed_;  // chunks read from the lower, by index
};

}  // namespace packfs::mem
