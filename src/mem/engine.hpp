// The mem engine (DESIGN §5, §6, §9): the tree of a mem backend, and of an overlay (the same
// tree over a lower: lower.hpp, the one interface through which the engine reaches it, which
// src/overlay implements over a read-only Backend). The Backend classes over it are in
// live_tree.hpp, snapshot_backend.cpp and mem_files.hpp; this is the state and every
// operation on it, by inode (engine.cpp: versions and holds; engine_read.cpp; engine_write.cpp:
// names and attributes; engine_inodes.cpp; engine_content.cpp; engine_rebase.cpp).
//
// STATE. An inode table (inode_table.hpp) of cells (cell.hpp): each cell is one inode with its
// stat fields inline; a directory's cell holds its entry trie (trie.hpp), a file's its chunked
// content (content.hpp). Inode numbers are never reused; a node of the Backend is its inode
// number (Node::id == st_ino), the root is 1.
//
// CONCURRENCY (the protocol in one place).
// - One writer at a time: every mutation holds `writer_`. Readers never take it: they enter an
//   RCU read section (rcu.hpp), read cells under their sequence counts and follow pointers that
//   stay allocated until the section ends. A reader writes no shared cache line.
// - The writer changes what no snapshot can see in place, in steps a reader sees whole: a new
//   inode's cell is complete and in the table before an entry names it; an entry is removed
//   before its inode is freed; a cell's state changes in one seqlocked write.
// - A path walk (the generic walker, core/walker.hpp) makes several lookups; a directory rename
//   between them could make it combine two trees. Renames of directories (and rebases) bump
//   `rename_seq_`, and a walk that saw it move starts again (Linux's rename_lock).
// - snapshot() (under the writer lock) records the current generation and starts the next:
//   O(1). What changes after it keeps the state it replaced for the snapshot (cell.hpp). A
//   snapshot is frozen, contents included; dropping one frees what only it kept.
// - Holds (open files, node references) live in the cells; an inode whose last name goes while
//   it is held stays as an orphan until the last hold goes.
//
// OVERLAY. With a lower, the table holds only what the tree changed: an inode without a cell
// (or with a stub) is the lower's, reached through the lower's own nodes; the first change of a
// lower inode copies it up into a cell of the same number (metadata and xattrs copied, content
// read from the lower chunk by chunk until written). A directory copied up keeps its lower node
// and goes on showing its lower entries, hidden by whiteouts (trie entries with ino 0); one made
// in the tree has none, so one re-made over a deleted lower directory is opaque. How the lower's
// inode numbers become the overlay's is the Lower's (lower.hpp, implemented by src/overlay).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/op_clock.hpp"
#include "core/rcu.hpp"
#include "mem/arena.hpp"
#include "mem/cell.hpp"
#include "mem/content.hpp"
#include "mem/inode_table.hpp"
#include "mem/lower.hpp"
#include "mem/trie.hpp"
#include "packfs/backend.hpp"
#include "packfs/mem.hpp"

namespace packfs::mem {

// A node as a walk or a call carries it, valid inside the RCU read section (or writer lock) it
// was made in: its number, its cell when the tree holds one for the generation read, and its
// lower node when it has one.
struct Ref {
    uint64_t ino = 0;
    Cell* cell = nullptr;  // null: the lower's inode, unchanged
    uint64_t lower = 0;    // its lower node (a lower inode, or what a cell was copied up from)
    FileType type = FileType::regular;
    uint16_t layer = 0;  // the layer `lower` is a node of (Engine::Layer)
    bool is_dir() const noexcept { return type == FileType::directory; }
};

// A lower the engine reads through, from one generation on. An overlay starts with one; each
// rebase (a volume's compaction: the tree written into a new pack) adds the next, and a layer
// goes once no state and no snapshot reads it. Every lower node the engine keeps (a state's, a
// Ref's) says which layer it is a node of, so a reader never asks one lower about another's
// node, whenever a rebase happens.
struct Layer {
    uint64_t first_gen = 0;  // snapshots of this generation and newer read this lower
    std::shared_ptr<Lower> lower;
    uint64_t limit = 0;  // lower->limit()
};

// The lower File a reader has open, so successive reads of one copied-up or lower file do not
// open it again. Owned by a handle (or by one call). A handle is read by several threads at
// once (FUSE's parallel READs of one open file): each read takes the File it needs, kept alive
// by its reference while a rebase's next read of the handle opens another.
class LowerFiles {
public:
    std::shared_ptr<const Backing> get(const Layer& layer, uint64_t node);

private:
    class Adapter final : public Backing {
    public:
        explicit Adapter(FileHandle file) : file_(std::move(file)) {}
        Result<std::size_t> read(uint64_t offset, std::span<std::byte> out) const override {
            return file_->pread(out, offset);
        }

    private:
        FileHandle file_;
    };
    std::mutex mu_;
    uint64_t node_ = 0;
    uint64_t layer_gen_ = 0;  // the layer's first_gen: unique for the engine's life
    std::shared_ptr<const Adapter> open_;
};

class Engine : public std::enable_shared_from_this<Engine> {
public:
    // A plain mem tree (`lower` null), or an overlay over `lower`. New inodes are numbered from
    // `next_ino` (0: from 2, or just above the lower's numbers).
    Engine(const MemOptions& options, std::shared_ptr<Lower> lower, uint64_t next_ino);
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    const MemOptions& options() const noexcept { return options_; }

    // === reading: inside an rcu::ReadSection, at kLiveGen or a snapshot's generation ========

    Ref root(uint64_t gen) const {
        if (gen == kLiveGen) {
            if (Cell* cell = live_root_.load(std::memory_order_acquire))
                return Ref{kRootIno, cell, cell->lower_node(), FileType::directory};
        }
        return root_at(gen);
    }
    // The entry `name` of directory `dir`; nullopt when it has none.
    Result<std::optional<Ref>> child(const Ref& dir, std::string_view name, uint64_t gen) const;
    // A live lookup that answers only the common case, cheaply: the tree's own entry of that
    // name; nullopt for anything else (none, a whiteout, a lower's entry), which child() answers.
    std::optional<Ref> child_fast(const Ref& dir, std::string_view name) const noexcept {
        if (!dir.cell || !dir.is_dir()) return std::nullopt;
        const DirFields d = dir.cell->dir_fields();
        if (d.kind != CellKind::live) return std::nullopt;
        const EntryRec* e = trie_find(static_cast<const TrieNode*>(d.data), name_hash(name), name);
        if (!e || e->ino == 0) return std::nullopt;
        Cell* cell = e->cell ? e->cell : table_.find(e->ino);
        if (!cell || cell->kind() != CellKind::live) return std::nullopt;
        return Ref{e->ino, cell, cell->lower_node(), e->type};
    }
    // A live node found as a cell that a rebase has since handed back to the lower (its cell
    // a stub now): the lower's node, which reads the same. nullopt for anything else.
    std::optional<Ref> as_lower(const Ref& node, uint64_t gen) const noexcept;
    // The node with number `ino`: ESTALE when there is none at `gen`.
    Result<Ref> by_ino(uint64_t ino, uint64_t gen) const;
    Result<Stat> stat(const Ref& node, uint64_t gen) const;
    // The same, and whether the node may have xattrs (false only when it is known to have
    // none: a cell without an xattr set), read together.
    Result<Stat> stat(const Ref& node, uint64_t gen, bool& may_have_xattrs) const;
    Result<std::vector<DirEntry>> list(const Ref& dir, uint64_t gen) const;
    // The entries of `dir` with their nodes, in one pass over its trie, when it merges no lower
    // directory (every name is its own); nullopt when it does (the caller asks name by name).
    Result<std::optional<std::vector<std::pair<std::string, Ref>>>> own_entries(const Ref& dir,
                                                                                uint64_t gen) const;
    Result<std::string> target(const Ref& link, uint64_t gen) const;
    Result<std::string> getxattr(const Ref& node, std::string_view name, uint64_t gen) const;
    Result<std::vector<std::string>> listxattr(const Ref& node, uint64_t gen) const;
    Result<bool> has_entries(const Ref& dir, uint64_t gen) const;
    Result<std::size_t> read(const Ref& file, std::span<std::byte> out, uint64_t offset,
                             uint64_t gen, LowerFiles& lower_files) const;
    // A held live cell's bytes as they are now (an open file's read): one read of its state.
    Result<std::size_t> read_held(const Cell& cell, std::span<std::byte> out, uint64_t offset,
                                  LowerFiles& lower_files) const;
    // lseek's SEEK_DATA/SEEK_HOLE in a file at `gen` (Content::seek; a file still wholly in
    // the lower has no holes), and the same for a held live cell as it is now.
    Result<uint64_t> seek(const Ref& file, uint64_t offset, bool data, uint64_t gen) const;
    Result<uint64_t> seek_held(const Cell& cell, uint64_t offset, bool data) const;
    StatFs statfs(uint64_t gen) const;

    // The state a cell shows at `gen` (nullopt: none; it is then the lower's, or nothing).
    static std::optional<CellState> visible(const Cell& cell, uint64_t gen) noexcept;

    // Directory renames and rebases since the engine began (odd while one is under way). A
    // walk that saw it move starts again: a rebase hands cells back to the new lower, and a
    // walk that went on in the old lower past them would read what they had changed.
    uint32_t rename_seq() const noexcept { return rename_seq_.load(std::memory_order_acquire); }
    // Waits (outside any read section) until a rebase under way has ended; a rename's odd
    // count is only spun on.
    void wait_out_rebase() {
        if (!rebasing_.load(std::memory_order_acquire)) return;
        auto held = lock();  // (the rebase holds it: this returns once the rebase has ended)
    }

    // === holds (any thread, outside a read section for release) =============================

    // A hold on the live node `ino` (an open file or a node reference): its cell, a stub made
    // for a lower inode. ESTALE when it is gone.
    Result<Cell*> hold(uint64_t ino);
    // The same for a node a reader just found (inside its read section): its cell directly.
    Result<Cell*> hold(const Ref& node) {
        if (node.cell && node.cell->try_hold()) {
            if (node.cell->kind() != CellKind::dead) return node.cell;
            release(node.cell);
            return fail(ESTALE, "open");
        }
        return hold(node.ino);
    }
    // Gives a hold back; the last one of an orphan frees it, of a stub removes it.
    void release(Cell* cell) noexcept;
    // The cell of `ino`, if it has one (a held node always has).
    Cell* find_cell(uint64_t ino) const noexcept { return table_.find(ino); }

    // === the writer ===========================================================================

    // The writer's lock. What a mutation retires is handed to the reclamation thread only when
    // the lock is given back: by then every change is committed, so nothing retired is still
    // published (a grace period that began while a retired node was still reachable would not
    // wait for the readers that reach it after).
    class WriterLock {
    public:
        explicit WriterLock(Engine& engine) : engine_(&engine), lock_(engine.writer_) {}
        WriterLock(WriterLock&& o) noexcept = default;
        ~WriterLock() {
            if (lock_.owns_lock()) engine_->reclaimer_.collect();
        }

    private:
        Engine* engine_;
        std::unique_lock<std::mutex> lock_;
    };
    WriterLock lock() { return WriterLock(*this); }

    // Everything below needs the lock. Refs come from the live tree (by_ino/child at kLiveGen).
    // New inodes belong to `owner` (with the set-group-ID rule) or to the options' owner.
    // `free_known`: the caller has just looked the name up and found none (under the lock).
    Result<Ref> make(const Ref& dir, std::string_view name, FileType type, uint32_t mode,
                     uint64_t rdev, std::string_view target, const std::optional<Owner>& owner,
                     bool free_known = false);
    Result<void> link(const Ref& node, const Ref& dir, std::string_view name);
    Result<void> unlink(const Ref& dir, std::string_view name);
    Result<void> rmdir(const Ref& dir, std::string_view name);
    // `ancestry_checked`: the caller (a path walk) already knows neither directory is inside
    // the other where that matters.
    Result<void> rename(const Ref& dir, std::string_view name, const Ref& to_dir,
                        std::string_view to_name, RenameFlags flags, bool ancestry_checked);
    Result<Stat> setattr(const Ref& node, const SetAttr& change);
    Result<void> setxattr(const Ref& node, std::string_view name, std::string_view value,
                          XattrMode mode);
    Result<void> removexattr(const Ref& node, std::string_view name);
    // A handle's write and truncate (the cell is held by the handle).
    Result<std::size_t> write(Cell* cell, std::span<const std::byte> data, uint64_t offset,
                              bool append);
    Result<void> truncate(Cell* cell, uint64_t size);
    // fallocate(2) on a held file (File::allocate's modes): a punch or zeroing drops the
    // whole chunks in the range and zeroes the partial ones at its edges.
    Result<void> allocate(Cell* cell, int mode, uint64_t offset, uint64_t length);
    // Bytes [offset, offset + length) of held file `from` into held file `to` at `to_offset`,
    // their whole 64 KiB chunks shared copy-on-write (a reflink), the rest copied. nullopt
    // when the files cannot share (one file, offsets not equal modulo 64 KiB, or `from` still
    // reads the lower): the caller copies. Returns the bytes copied (clipped at `from`'s end).
    Result<std::optional<uint64_t>> clone_range(Cell* from, uint64_t offset, Cell* to,
                                                uint64_t to_offset, uint64_t length);
    // The live node's cell, copying a lower inode up first (a handle opened for writing holds
    // the copy, so its writes need no copy-up).
    Result<Cell*> own(const Ref& node);

    uint64_t next_ino() const noexcept { return next_ino_.load(std::memory_order_relaxed); }
    // No new inode gets a number below `next` (a replayed journal that skipped numbers).
    void reserve_inodes(uint64_t next) noexcept;

    // Puts the live tree back as the snapshot of generation `to` (still held) sees it: every
    // cell changed since is edited back to its state at `to`, in place, so node references,
    // open files and the snapshots taken since go on as they were. An inode made since loses
    // its names (held: an orphan, as if unlinked; else freed); its number is not given again.
    // One pass over the inode table, under the lock: for a journal that failed (a volume's),
    // not for everyday use. EINVAL when no snapshot of `to` is held or a rebase came since.
    Result<void> rollback(uint64_t to);

    // === layers =============================================================================

    // The newest layer (null: a plain mem tree), its index, and the layer a reader at `gen`
    // reads (a snapshot older than a rebase reads the lower it was taken over).
    const Layer* top() const noexcept {
        return layers_->slot[top_.load(std::memory_order_acquire)].load(std::memory_order_acquire);
    }
    uint16_t top_index() const noexcept { return top_.load(std::memory_order_acquire); }
    uint16_t layer_at(uint64_t gen) const noexcept;
    const Layer& layer(uint16_t index) const noexcept {
        return *layers_->slot[index].load(std::memory_order_acquire);
    }
    Lower& lower(uint16_t index) const noexcept { return *layer(index).lower; }
    // Whether `ino` may be a lower inode's number (below the newest lower's limit).
    bool lower_number(uint64_t ino) const noexcept {
        const Layer* t = top();
        return t && ino < t->limit;
    }

    // Moves the engine onto `next`, a lower that holds the tree as the snapshot of generation
    // `since` saw it, with its inode numbers (a volume's compaction wrote that snapshot into a
    // pack): what the tree changed up to `since` is handed back to the lower, and only what it
    // changed after stays in cells. Nothing a reader, an open file or a node reference holds is
    // replaced: cells stay where they are. Older snapshots go on reading the lower they were
    // taken over. Takes the writer lock. EBUSY when old snapshots keep too many lowers.
    Result<void> rebase(std::shared_ptr<Lower> next, uint64_t since);
    // Says a rebase onto a pack of the snapshot just taken is to come (Overlay::freeze): until
    // it, removals leave whiteouts as leaves_whiteout says. Under the lock.
    void expect_rebase() noexcept { rebase_expected_ = true; }
    // Frees the lowers no state and no snapshot reads any more (after a rebase, or once the
    // last snapshot over an old lower was dropped): waits for a grace period, so never inside a
    // read section nor under the lock. Their pack files close here.
    void free_layers();

    // === versions ===========================================================================

    // A snapshot: the generation it reads at, kept until released (both under the lock).
    struct SnapshotInfo {
        uint64_t gen;
        uint64_t bytes_used;
        uint64_t next_ino;
    };
    SnapshotInfo take_snapshot();
    void drop_snapshot(uint64_t gen) noexcept;

    // Tests: what the engine allocated (cells, versions, trie and map nodes, entries, chunks).
    struct Counters {
        uint64_t cells = 0, versions = 0;
    };
    Counters counters() const noexcept {
        return {cells_made_.load(std::memory_order_relaxed),
                versions_made_.load(std::memory_order_relaxed)};
    }

private:
    friend class LowerFiles;

    // The cell's next state, for an edit under the lock: when a snapshot can see its current
    // state, that state is kept as a Version first.
    CellState begin_edit(Cell* cell);
    void commit(Cell* cell, const CellState& next) noexcept { cell->write(next); }
    // A held cell made live again when a rebase made it a stub (a write through an open file
    // that the rebase handed back); ESTALE for a dead one.
    Result<void> relive(Cell* cell, std::string_view op);
    // The live cell of `node`, copied up from the lower when it has none (needs the lock).
    Result<Cell*> own_cell(const Ref& node);
    // The state a copy-up of lower inode `node` starts with: its metadata, target and xattrs
    // copied; its content left in the lower until a chunk of it is written.
    Result<CellState> copy_up_state(const Ref& node);
    // A cell from the arena (the writer), or from the heap (a reader's stub).
    Cell* new_cell(uint64_t ino);
    Cell* new_stub_cell(uint64_t ino);
    // Frees a cell after the grace period / at once (nobody can reach it).
    void retire_cell(Cell* cell) noexcept;
    void destroy_cell_now(Cell* cell) noexcept;
    // A fresh inode of `type` (not yet named).
    Cell* make_inode(FileType type, uint32_t mode, Time now, const std::optional<Owner>& owner,
                     const CellState& parent);
    // The entry `name` of a live directory, as lookup sees it (whiteouts are no entry).
    Result<std::optional<Ref>> live_child(const Ref& dir, std::string_view name);
    // Names `ino` as dir/name (the name free or a whiteout) in `dir_state` (the dir's next state).
    void add_name(CellState& dir_state, std::string_view name, uint64_t ino, FileType type);
    // Whether removing `name` from `dir` (a cell of the tree's) leaves a whiteout: where the
    // directory merges a lower that has the name; and, between a freeze and the rebase onto its
    // pack (rebase_expected_), wherever the directory merges a lower, whether that lower has the
    // name or not (one it lacks hides nothing). So a name made before the freeze and removed
    // after is a whiteout, and the rebase never has to find which names the new lower holds
    // that the directory no longer shows. (Always doing so would let an overlay that is never
    // rebased gather a whiteout for every temporary name it ever removed.)
    Result<bool> leaves_whiteout(const Cell* dir, std::string_view name);
    // Removes dir/name: erased, or a whiteout where the directory merges a lower.
    void remove_name(CellState& dir_state, std::string_view name, bool lower_has);

    // Removing one link of a node, in two steps so that a mutation can do everything that may
    // fail (the lower's link count, a copy-up) before it changes any name, and then cannot
    // fail half-way: prepare_drop decides, drop_link does. At nlink 0 the inode is freed, or
    // left as an orphan while held; a lower inode nobody holds only needs a tombstone.
    struct LinkDrop {
        uint64_t ino = 0;
        Cell* cell = nullptr;  // the tree's own cell to drop a link of; null: bury `ino`
    };
    Result<LinkDrop> prepare_drop(const Ref& node);
    void drop_link(const LinkDrop& drop, Time now);
    // Frees a live inode with no name and no hold (or marks it dead for the snapshots and the
    // lower that still know its number).
    void free_inode(Cell* cell);
    void release_state(const CellState& s) noexcept;
    Ref root_at(uint64_t gen) const;
    Result<std::size_t> read_state(const CellState& s, std::span<std::byte> out, uint64_t offset,
                                   LowerFiles& lower_files) const;
    void retain_state(const CellState& s) noexcept;
    // Whether `dir` is `ancestor` or inside it: up the parents the cells record, or where a
    // lower directory's parent is not known, down the ancestor's subtree.
    Result<bool> inside(const Ref& dir, const Ref& ancestor);
    // A dead cell for a lower inode the tree removed unheld (its number must not come back).
    void bury(uint64_t ino);
    const Backing* writer_backing(const CellState& s);
    Result<void> add_lower_xattrs(CellState& s, uint64_t lower_node);

    // rollback's edit of a cell that was not the tree's own at its snapshot (engine_rollback.cpp).
    Result<void> roll_back_cell(Cell* cell);

    // The rebase's steps (engine_rebase.cpp), under the lock.
    struct RebaseScan;
    // A cell that stays, moved onto the new layer; false when it had to stay on the old one.
    bool rebase_cell(Cell* cell, const RebaseScan& scan);
    // A directory that stays, merged with the new lower's as its plan says (engine_rebase.cpp).
    bool rebase_dir(Cell* cell, const RebaseScan& scan);
    // Those entries erased, on a copy of the trie, in a directory's next state.
    void erase_entries(CellState& dir, std::span<const std::string> names);
    // A file's bytes still read from its lower, copied into its own content (s: its next state).
    Result<void> materialize(CellState& s);
    // A cell the new lower holds as it is, handed back to the lower (node: its node there).
    void hand_back(Cell* cell, uint64_t node);
    // A stub made from a layer a rebase has since replaced, moved onto the newest (the lock).
    void repoint_stub(Cell* cell);
    // Layers no state and no snapshot reads any more, set aside for free_layers (the lock).
    void trim_layers() noexcept;

    const MemOptions options_;
    // The layers by index (a rebase takes the next free slot; a layer's slot is freed once no
    // snapshot reads it: free_layers).
    static constexpr uint16_t kLayers = 64;
    struct LayerSlots {
        std::array<std::atomic<const Layer*>, kLayers> slot{};
        ~LayerSlots() {
            for (auto& s : slot) delete s.load(std::memory_order_relaxed);
        }
    };
    const std::shared_ptr<LayerSlots> layers_ = std::make_shared<LayerSlots>();
    std::atomic<uint16_t> top_{0};
    std::vector<uint16_t> layer_order_;     // the writer's: live layers, oldest first
    std::vector<uint16_t> trimmed_layers_;  // the writer's: for free_layers
    InodeTable table_;
    // The root's cell once it has a live one (from the start, or its copy-up over a lower):
    // never removed after, so every live walk starts here without a table lookup.
    std::atomic<Cell*> live_root_{nullptr};

    std::mutex writer_;
    // The writer's small objects (arena.hpp); what it retires goes back there, so the
    // reclaimer keeps the arena alive until its last batch ran.
    const std::shared_ptr<Arena> arena_ = std::make_shared<Arena>();
    rcu::Reclaimer reclaimer_{arena_};
    LowerFiles writer_files_;                       // the lower files the writer reads chunks from
    std::atomic<uint64_t> next_ino_{kRootIno + 1};  // changed by the writer; read by anyone
    uint64_t gen_ = 1;                              // the generation mutations make now
    uint64_t last_snapshot_ = 0;           // the newest live snapshot's generation (0: none)
    std::atomic<uint64_t> bytes_used_{0};  // the writer's, read by statfs
    std::atomic<uint64_t> inodes_{0};      // the tree's own live inodes (likewise)
    std::atomic<uint32_t> rename_seq_{0};
    std::atomic<bool> rebasing_{false};
    bool rebase_expected_ = false;  // the writer's: a freeze was made, its rebase not yet
    // Live snapshots by generation, each with the versions only it (and older ones) still need.
    struct Kept {
        uint32_t count = 0;  // snapshots of this generation
        std::vector<std::pair<Cell*, Version*>> versions;
    };
    std::map<uint64_t, Kept> snapshots_;
    // The node of the last snapshot dropped, for the next one taken: a program that takes and
    // drops snapshots in a loop allocates nothing for them here.
    std::map<uint64_t, Kept>::node_type spare_snapshot_;

    std::atomic<uint64_t> cells_made_{0}, versions_made_{0};
};

}  // namespace packfs::mem
