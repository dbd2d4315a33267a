// Rebase (Engine::rebase, engine.hpp): the engine moved onto a new lower that holds the tree as
// one of its snapshots saw it (a volume's compaction wrote that snapshot into a pack, keeping
// its inode numbers). Nothing is replaced: every cell stays where it is, so open files, node
// references and readers in a read section go on as they were. Under the writer lock, in one
// pass over the inode table:
//
// - A cell the snapshot saw as it is now (unchanged since), which no snapshot sees, is handed
//   back: the new lower holds the same, so it becomes a stub of the new lower's node (a reader
//   that found it as a cell reads the lower from then on: Engine::as_lower; node references and
//   open files hold the stub, and a write through one copies it up again: Engine::relive),
//   freed at once when nothing holds it. Its content and entries go: this is where a
//   compaction gives the tree's memory back. A cell named by an entry of a directory that
//   stays, where the new lower does not have that entry alike, stays too (an entry's cell must
//   stay at its address).
// - A directory that stays (the root, one a snapshot sees, one changed since): unchanged since
//   the snapshot, it drops its own entries and shows the new lower's (O(1)); changed since, it
//   drops the own entries the new lower has alike (one lookup each: what it changed since the
//   last compaction, not its size). It needs no new whiteout: between the freeze and the
//   rebase every name a directory with a lower loses leaves one (Engine::leaves_whiteout), so a
//   name made before the snapshot and removed after is hidden already. One made here and
//   changed since stays opaque as it is.
// - A file that stays keeps reading the bytes it has not written from its own inode in the new
//   lower: a chunk it still reads from below was read from below at the snapshot too. A file
//   whose bytes below are another inode's (a clone of a lower file) or that has no name in the
//   new lower (unlinked, still open) has those bytes copied in.
// - A stub moves to the new lower's node; a stub made meanwhile by a reader that read the old
//   layer moves itself (Engine::hold). A tombstone of a number the new lower lacks goes.
//
// Snapshots older than the rebase keep reading the old lower (Engine::layer_at); it goes with
// the last of them (trim_layers, free_layers). A cell the pass could not move (the new lower
// failed to answer) stays on the old layer, reading what it read, and keeps that layer for the
// engine's life.
#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "mem/engine.hpp"

namespace packfs::mem {

// What becomes of a directory that stays: its node in the new lower (none: removed, or the
// lower failed), and then one of three: unchanged since the snapshot, it shows what the new
// lower shows and its own entries all go (`clear`); made here and changed since, it stays
// opaque as it is (`opaque`); else the own entries the new lower has alike go (`drop`: an entry
// of the same inode, or a whiteout of a name the new lower lacks).
struct DirPlan {
    std::optional<uint64_t> fresh;
    bool clear = false, opaque = false;
    std::vector<std::string> drop;
};

struct Engine::RebaseScan {
    uint64_t since = 0;
    uint16_t from = 0, to = 0;
    Lower* old_lower = nullptr;
    Lower* new_lower = nullptr;
    std::unordered_map<const Cell*, DirPlan> dirs;  // the directories that stay
};

Result<void> Engine::rebase(std::shared_ptr<Lower> next, uint64_t since) {
    if (!next) return fail(EINVAL, "rebase");
    auto lock = this->lock();
    if (!top()) return fail(EINVAL, "rebase (a mem tree has no lower)");
    RebaseScan scan;
    scan.since = since;
    scan.from = top_index();
    scan.to = scan.from;
    for (uint16_t step = 1; step < kLayers && scan.to == scan.from; ++step) {
        const auto i = static_cast<uint16_t>((scan.from + step) % kLayers);
        if (!layers_->slot[i].load(std::memory_order_acquire)) scan.to = i;
    }
    if (scan.to == scan.from)
        return fail(EBUSY, "rebase (old snapshots still read too many lowers)");
    scan.old_lower = &lower(scan.from);
    scan.new_lower = next.get();
    // States made from here on are the new lower's; readers that start now read it for every
    // inode without a cell (unchanged since the old lower: the new one holds the same).
    ++gen_;
    // Walks that straddle the pass start again (Engine::rename_seq).
    rebasing_.store(true, std::memory_order_release);
    rename_seq_.fetch_add(1, std::memory_order_acq_rel);
    layers_->slot[scan.to].store(new Layer{gen_, std::move(next), scan.new_lower->limit()},
                                 std::memory_order_release);
    layer_order_.push_back(scan.to);
    top_.store(scan.to, std::memory_order_release);

    // The cells that can be handed back: unchanged since the snapshot, unheld, seen by no
    // snapshot (no version kept, none newer than the state), not the root, named, and in the
    // new lower; and not named by an entry of a directory that stays, unless the new lower
    // has that entry too (such an entry goes: the lower answers for it).
    std::vector<Cell*> cells;
    table_.each([&](Cell* c) { cells.push_back(c); });
    std::vector<std::pair<Cell*, uint64_t>> candidates;
    std::unordered_set<uint64_t> named;
    auto plan_dir = [&](Cell* dir) {
        DirPlan& plan = scan.dirs[dir];
        const CellState& s = dir->state;
        const auto* trie = static_cast<const TrieNode*>(s.data);
        auto fresh = scan.new_lower->node_of(dir->ino);
        if (fresh) plan.fresh = *fresh;
        if (fresh && s.modified_gen <= since) {
            plan.clear = true;
            return;
        }
        plan.opaque = fresh && !s.lower;
        trie_each(trie, [&](const EntryRec& e) {
            if (fresh && !plan.opaque) {
                auto found = scan.new_lower->lookup(*fresh, e.name());
                const bool has = found && *found;
                if ((e.ino && has && (*found)->ino == e.ino) || (!e.ino && found && !has)) {
                    plan.drop.emplace_back(e.name());
                    return true;
                }
            }
            if (e.ino) named.insert(e.ino);
            return true;
        });
    };
    for (Cell* cell : cells) {
        const CellState& s = cell->state;
        if (s.kind != CellKind::live) continue;
        // (A held cell may go too: a stub carries holds, node references and open files read
        // the lower through it, and a write through an open file copies it up again.)
        const bool may_go = s.modified_gen <= since && s.modified_gen > last_snapshot_ &&
                            !s.prev && cell->ino != kRootIno && s.nlink > 0;
        if (may_go) {
            if (auto node = scan.new_lower->node_of(cell->ino)) {
                candidates.emplace_back(cell, *node);
                continue;
            }
        }
        if (s.type == FileType::directory) plan_dir(cell);
    }
    // A candidate such an entry names stays, and its own entries then count: to a fixed point.
    for (bool changed = true; changed;) {
        changed = false;
        std::erase_if(candidates, [&](const std::pair<Cell*, uint64_t>& c) {
            if (!named.contains(c.first->ino)) return false;
            if (c.first->state.type == FileType::directory) plan_dir(c.first);
            changed = true;
            return true;
        });
    }
    std::unordered_set<const Cell*> going;
    for (const auto& [cell, node] : candidates) going.insert(cell);

    bool pinned = false;  // a cell stayed on the old layer
    for (Cell* cell : cells)
        if (!going.contains(cell) && !rebase_cell(cell, scan)) pinned = true;
    for (const auto& [cell, node] : candidates) hand_back(cell, node);
    if (pinned) {
        // The old layer stays for good: a cell still reads it.
        layer_order_.erase(std::find(layer_order_.begin(), layer_order_.end(), scan.from));
    }
    trim_layers();
    rebase_expected_ = false;
    rename_seq_.fetch_add(1, std::memory_order_release);
    rebasing_.store(false, std::memory_order_release);
    return {};
}

bool Engine::rebase_cell(Cell* cell, const RebaseScan& scan) {
    const CellState& now = cell->state;
    if (now.kind == CellKind::stub) {
        repoint_stub(cell);
        return true;
    }
    if (now.kind == CellKind::dead) {
        // A tombstone hides a lower inode's number; one the new lower lacks hides nothing.
        if (now.prev || cell->held() || scan.new_lower->node_of(cell->ino)) return true;
        void* expected = cell;
        table_.slot(cell->ino).compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel);
        retire_cell(cell);
        return true;
    }
    if (now.type == FileType::directory) return rebase_dir(cell, scan);
    if (!now.lower || now.layer != scan.from) return true;  // made here: reads no lower
    auto fresh = scan.new_lower->node_of(cell->ino);
    bool copy_in = false;
    if (now.type == FileType::regular && now.aux > 0) {
        // Its own inode's bytes read the same from the new lower; another's (a clone's
        // source) may not, and an inode the new lower lacks (unlinked) has none there.
        auto self = fresh ? scan.old_lower->node_of(cell->ino) : Result<uint64_t>(0);
        copy_in = !fresh || !self || *self != now.lower;
    }
    CellState s = begin_edit(cell);
    if (copy_in) {
        if (auto ok = materialize(s); !ok) {
            commit(cell, s);  // still on the old layer: what it copied reads the same
            return false;
        }
        s.aux = 0;
        s.lower = 0;
    } else {
        s.lower = fresh ? *fresh : 0;  // (a symlink's or device's copy-up origin only)
    }
    s.layer = scan.to;
    commit(cell, s);
    return true;
}

bool Engine::rebase_dir(Cell* cell, const RebaseScan& scan) {
    const CellState& now = cell->state;
    const DirPlan& plan = scan.dirs.at(cell);
    if (!plan.fresh) {
        // Removed while held (or the new lower could not find it): its own entries are all it
        // shows. One that merged the old lower stays on it if the new lower failed to answer.
        if (!now.lower || now.layer != scan.from) return true;
        if (scan.new_lower->node_of(cell->ino)) return false;
        CellState s = begin_edit(cell);
        s.lower = 0;
        s.layer = scan.to;
        commit(cell, s);
        return true;
    }
    if (plan.opaque) return true;  // made here, changed since: reads no lower yet
    // One commit: a reader sees the old entries over the old lower or the new ones over the
    // new lower (entries are erased on a copy of the trie; a cleared trie goes after the
    // grace period).
    CellState s = begin_edit(cell);
    if (plan.clear) {
        trie_release(static_cast<TrieNode*>(s.data), reclaimer_);
        s.data = nullptr;
        s.entries = 0;
    } else {
        erase_entries(s, plan.drop);
    }
    s.lower = *plan.fresh;
    s.layer = scan.to;
    commit(cell, s);
    return true;
}

void Engine::erase_entries(CellState& dir, std::span<const std::string> names) {
    if (names.empty()) return;
    auto* root = static_cast<TrieNode*>(dir.data);
    TrieNode* const before = root;
    trie_retain(before);  // shared: the writer copies what it changes
    TrieWriter w(root, reclaimer_, *arena_);
    for (const std::string& name : names) {
        const uint64_t hash = name_hash(name);
        const EntryRec* e = trie_find(root, hash, name);
        if (e && e->ino) --dir.entries;
        w.erase(name, hash);
    }
    dir.data = root;
    trie_release(before, reclaimer_);  // retired once no reader has it
}

Result<void> Engine::materialize(CellState& s) {
    const Backing* backing = writer_backing(s);
    if (!backing) return fail(EIO, "rebase (a file's lower bytes)");
    const uint64_t before = s.allocated;
    ContentWriter writer(s, reclaimer_, *arena_, backing);
    std::vector<std::byte> buffer(kChunkSize);
    Result<void> out;
    for (uint64_t at = 0; at < s.aux; at += kChunkSize) {
        if (Content(s.data).chunk(at / kChunkSize)) continue;  // written here: its own
        const std::span<std::byte> chunk(buffer.data(), std::min<uint64_t>(kChunkSize, s.aux - at));
        auto got = backing->read(at, chunk);
        if (!got) {
            out = std::unexpected(got.error());
            break;
        }
        std::fill(chunk.begin() + static_cast<std::ptrdiff_t>(*got), chunk.end(), std::byte{0});
        if (out = writer.write(at, chunk); !out) break;
    }
    bytes_used_.fetch_add(s.allocated - before, std::memory_order_relaxed);  // (mod 2^64)
    return out;
}

void Engine::hand_back(Cell* cell, uint64_t node) {
    const CellState s = cell->state;
    CellState stub;
    stub.kind = CellKind::stub;
    stub.type = s.type;
    stub.lower = node;
    stub.layer = top_index();
    stub.modified_gen = gen_;
    bytes_used_.fetch_sub(s.allocated, std::memory_order_relaxed);
    inodes_.fetch_sub(1, std::memory_order_relaxed);
    // Readers that found the cell read the lower from now on (Engine::as_lower); what the
    // state pointed to goes after the grace period.
    cell->write(stub);
    release_state(s);
    if (!cell->try_kill()) return;  // held meanwhile: a stub, until its last release
    void* expected = cell;
    table_.slot(cell->ino).compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel);
    retire_cell(cell);  // (a reader that put a fresh stub in its place keeps that one)
}

}  // namespace packfs::mem
