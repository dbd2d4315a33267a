// The inode of the mem engine (DESIGN §5, §6): one Cell per inode number, at a stable address
// for the life of the inode, holding its stat fields inline; what it points to (directory
// entries, file content, symlink target, xattrs) are persistent structures shared with the
// versions that snapshots still see.
//
// VERSIONS (MVCC). A cell's fields are its current state. Each state records the generation it
// was made in (`modified_gen`). snapshot() takes the current generation g and starts g + 1, so
// a snapshot of generation g sees, for each cell, the newest state made in a generation <= g.
// Before the writer changes a cell whose state a snapshot can see (modified_gen <= the last
// snapshot's generation), it keeps that state as a Version on the cell's `prev` chain; a state
// made after the last snapshot is changed in place, since no snapshot can see it. So the live
// tree pays for versions only on the first change of each cell after a snapshot, and a
// snapshot costs O(1) to take. Versions are freed when no snapshot between their making and
// their replacement is left (Engine::drop_snapshot, engine.cpp).
//
// READERS. A cell's state is guarded by a sequence count (seqlock.hpp): the one writer changes
// it inside write_begin/write_end; readers copy what they need and retry when it moved. What
// the state points to is immutable once published or changed in ways a reader at either side
// can read (see trie.hpp, content.hpp), and reclaimed only after a grace period (rcu.hpp).
//
// HOLDS. `holds` counts what keeps the live inode alive besides its names: open files and node
// references (Backend::forget). When the writer removes the last name of an inode it tries to
// swap 0 for kDying; when it cannot, the inode stays as an orphan (nlink 0, unreachable by
// name) and the last release frees it. An opener increments only a count that is not kDying,
// so either the unlink sees the opener or the opener sees the unlink.
//
// KINDS. A `live` cell is an inode of the tree's own (made in it, or copied up from a lower).
// A `stub` stands for an unchanged lower inode that is held or open: it carries the holds and
// the lower node, and reads as if there were no cell. A `dead` cell is an inode removed while a
// snapshot can still see it, or a lower inode the tree removed (its number must not come back
// from the lower).
#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/seqlock.hpp"
#include "packfs/types.hpp"

namespace packfs::mem {

inline constexpr uint64_t kRootIno = 1;
inline constexpr uint64_t kLiveGen = UINT64_MAX;  // the generation a live reader reads at

// What every shared, immutable-once-published piece carries: the number of parents (cells,
// versions, nodes) that reference it. Touched only by the writer, under its lock: readers
// never count (they are protected by RCU), and so the counts need no atomics.
struct Counted {
    uint32_t refs = 1;
};

struct Target : Counted {
    std::string text;
    explicit Target(std::string_view t) : text(t) {}
};

// A set of xattrs, sorted by name; replaced as a whole on change (sets are small).
struct XattrSet : Counted {
    std::vector<std::pair<std::string, std::string>> items;
    const std::string* find(std::string_view name) const noexcept {
        for (const auto& [k, v] : items)
            if (k == name) return &v;
        return nullptr;
    }
};

enum class CellKind : uint8_t { stub, live, dead };

struct Version;

// Everything a reader copies out of a cell: one version of the inode. Ordered for the lines a
// reader touches: what a lookup and a stat read come first and together (type and kind, the
// stat fields, the lower node), then what only a read of the contents, a snapshot or the writer
// needs. With the cell's header that is its first 112 bytes: two cache lines of an aligned cell.
struct alignas(8) CellState {
    FileType type = FileType::regular;
    CellKind kind = CellKind::live;
    uint16_t layer = 0;  // the lower `lower` is a node of (Engine's layers: a rebase adds one)
    uint32_t mode = 0;
    uint32_t uid = 0;
    uint32_t gid = 0;
    uint32_t nlink = 0;
    uint32_t entries = 0;       // directory: names of its own (whiteouts not counted)
    uint64_t size = 0;
    // directory: parent ino (0: not known, a lower directory reached by node);
    // device: rdev; regular file: bytes still read from the lower (copy-up backing)
    uint64_t aux = 0;
    uint64_t allocated = 0;     // bytes of content buffers (st_blocks, statfs)
    Time atime, mtime, ctime;
    uint64_t lower = 0;  // the lower node this inode is (stub) or was copied up from
    // directory: its entry trie (trie.hpp); regular file: its content (content.hpp);
    // symlink: its Target
    void* data = nullptr;
    XattrSet* xattrs = nullptr;  // null: none
    uint64_t modified_gen = 0;   // the generation this state was made in
    Version* prev = nullptr;     // the state it replaced, where a snapshot still sees it
};

static_assert(std::is_standard_layout_v<CellState> && sizeof(CellState) % 8 == 0);

// What a live lookup needs of a directory: read together (three words, not the whole state).
struct DirFields {
    CellKind kind;
    const void* data;  // the entry trie
    uint64_t lower;
    uint16_t layer;
};

// A kept state. Immutable but for `state.prev`, which the writer may relink (atomically) when
// it frees an older version; `until` is the generation that replaced it.
struct Version {
    CellState state;
    uint64_t until = 0;
};

struct Cell {
    Cell(uint64_t number, bool in_arena) noexcept : ino(number), pooled(in_arena) {}

    SeqCount seq;
    std::atomic<uint32_t> holds{0};
    const uint64_t ino;
    CellState state;  // under `seq`: the writer writes it with write(); readers read()
    // From the engine's arena (the writer's cells), or the heap (a stub a reader made).
    const bool pooled;

    static constexpr uint32_t kDying = 0x8000'0000u;

    // A consistent copy of the state (readers; the writer may read `state` directly).
    CellState read() const noexcept { return read_part<0, sizeof(CellState)>(); }
    // A consistent copy of the state's bytes [From, To) (offsetof bounds, widened to whole
    // words), for a reader that needs a few fields: the hot paths copy a few words, not 17. The
    // other words read as zero. (The copy is built in an array of words, every one written once:
    // a default-constructed CellState would be zeroed first, a rep stos on every read.)
    template <std::size_t From, std::size_t To>
    CellState read_part() const noexcept {
        constexpr std::size_t kWords = sizeof(CellState) / 8;
        constexpr std::size_t from = From / 8;
        constexpr std::size_t to = (To + 7) / 8;
        static_assert(from < to && to <= kWords);
        std::array<uint64_t, kWords> words;
        auto* src = reinterpret_cast<uint64_t*>(const_cast<CellState*>(&state));
        for (;;) {
            const uint32_t s = seq.read_begin();
            for (std::size_t i = 0; i < kWords; ++i) {
                words[i] = i >= from && i < to
                               ? std::atomic_ref<uint64_t>(src[i]).load(std::memory_order_relaxed)
                               : 0;
            }
            if (seq.read_valid(s)) return std::bit_cast<CellState>(words);
        }
    }
    DirFields dir_fields() const noexcept {
        auto* src = reinterpret_cast<uint64_t*>(const_cast<CellState*>(&state));
        auto word = [&](std::size_t offset) {
            return std::atomic_ref<uint64_t>(src[offset / 8]).load(std::memory_order_relaxed);
        };
        for (;;) {
            const uint32_t s = seq.read_begin();
            const uint64_t head = word(offsetof(CellState, type));
            const uint64_t data = word(offsetof(CellState, data));
            const uint64_t lower = word(offsetof(CellState, lower));
            if (!seq.read_valid(s)) continue;
            CellState probe;
            std::memcpy(reinterpret_cast<char*>(&probe) + offsetof(CellState, type), &head, 8);
            return DirFields{probe.kind, reinterpret_cast<const void*>(data), lower, probe.layer};
        }
    }
    // One field read alone (a single word: never torn).
    CellKind kind() const noexcept {
        return std::atomic_ref<CellKind>(const_cast<CellKind&>(state.kind))
            .load(std::memory_order_relaxed);
    }
    uint32_t nlink() const noexcept {
        return std::atomic_ref<uint32_t>(const_cast<uint32_t&>(state.nlink))
            .load(std::memory_order_relaxed);
    }
    uint64_t lower_node() const noexcept {
        return std::atomic_ref<uint64_t>(const_cast<uint64_t&>(state.lower))
            .load(std::memory_order_relaxed);
    }
    // The writer replaces the state (readers see all of it or none of it).
    void write(const CellState& next) noexcept {
        seq.write_begin();
        atomic_copy_in(state, next);
        seq.write_end();
    }

    // An open file or node reference taken by a reader; false when the inode is being freed.
    bool try_hold() noexcept {
        uint32_t h = holds.load(std::memory_order_relaxed);
        do {
            if (h & kDying) return false;
        } while (!holds.compare_exchange_weak(h, h + 1, std::memory_order_acquire,
                                              std::memory_order_relaxed));
        return true;
    }
    // Gives one back; true when it was the last (the caller then asks the writer to free an
    // orphan or remove a stub).
    bool release_hold() noexcept { return holds.fetch_sub(1, std::memory_order_acq_rel) == 1; }
    // The writer, removing the last name: true when nothing holds the inode (it is then marked
    // dying and no one can hold it again).
    bool try_kill() noexcept {
        uint32_t expected = 0;
        return holds.compare_exchange_strong(expected, kDying, std::memory_order_acq_rel);
    }
    bool held() const noexcept { return (holds.load(std::memory_order_acquire) & ~kDying) != 0; }
};

// A lookup and a stat read the sequence count and the state up to `data`: two lines.
static_assert(offsetof(Cell, state) + offsetof(CellState, data) <= 128);

Stat stat_of(uint64_t ino, const CellState& s) noexcept;

}  // namespace packfs::mem
