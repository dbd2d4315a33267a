// Rollback (Engine::rollback, engine.hpp): the live tree put back as a snapshot it still holds
// sees it. A volume whose journal failed keeps a snapshot before every change the journal may
// yet lose (a checkpoint, packfs/overlay.hpp) and comes back to it, so the tree is again what
// the journal holds. Nothing is replaced: every cell stays where it is, edited back as any
// mutation edits it (begin_edit keeps what the snapshots taken since see), so node references
// and open files hold the same inodes before and after, and the ESTALE a replaced tree gave
// the references it could not move cannot happen.
//
// Under the writer lock, in one pass over the inode table, for the cells changed since:
// - An inode that was the tree's own at `to` gets that state back (its content, entries,
//   attributes and link count; a freed one lives again, with the holds it has now).
// - A lower inode copied up since goes back to the lower's: its cell leaves the table, or, held
//   or seen by a snapshot taken since, is copied up again from the lower as it is there. A
//   tombstone made since goes (the lower's inode shows again).
// - An inode made since has no name at `to`: held, it stays as an orphan (nlink 0, an empty
//   directory if it was one, its content kept for the open file), else it is freed. Its number
//   is not given again: a node reference the kernel still has must not meet another inode.
// The inodes of `to` come back first, and with them the entries of `to`, so no entry names an
// inode after it was freed (the order a lock-free reader needs). Walks that straddle the pass
// start again (rename_seq, as for a rebase).
#include "mem/engine.hpp"

namespace packfs::mem {
namespace {

// The cell's state at generation `to` (under the lock): nullopt when it had none of its own.
std::optional<CellState> state_at(const Cell& cell, uint64_t to) {
    const CellState* s = &cell.state;
    while (s->modified_gen > to) {
        if (!s->prev) return std::nullopt;
        s = &s->prev->state;
    }
    if (s->kind == CellKind::stub) return std::nullopt;
    return *s;
}

}  // namespace

void Engine::reserve_inodes(uint64_t next) noexcept {
    auto lock = this->lock();
    if (next > next_ino()) next_ino_.store(next, std::memory_order_relaxed);
}

Result<void> Engine::rollback(uint64_t to) {
    auto lock = this->lock();
    if (!snapshots_.contains(to)) return fail(EINVAL, "rollback (no snapshot of that generation)");
    if (const Layer* t = top(); t && t->first_gen > to)
        return fail(EINVAL, "rollback (a rebase came since the snapshot)");
    rebasing_.store(true, std::memory_order_release);
    rename_seq_.fetch_add(1, std::memory_order_acq_rel);
    std::vector<Cell*> existed, made_since;
    table_.each([&](Cell* c) {
        const CellState& s = c->state;
        if (s.kind == CellKind::stub || s.modified_gen <= to) return;
        (state_at(*c, to) ? existed : made_since).push_back(c);
    });
    Result<void> out;
    for (Cell* cell : existed) {
        const CellState at = *state_at(*cell, to);
        CellState next = begin_edit(cell);
        if (next.kind == CellKind::live) {
            bytes_used_.fetch_sub(next.allocated, std::memory_order_relaxed);
            inodes_.fetch_sub(1, std::memory_order_relaxed);
            release_state(next);
        }
        const uint64_t gen = next.modified_gen;
        Version* const prev = next.prev;
        next = at;
        next.modified_gen = gen;
        next.prev = prev;
        if (next.kind == CellKind::live) {
            retain_state(next);
            bytes_used_.fetch_add(next.allocated, std::memory_order_relaxed);
            inodes_.fetch_add(1, std::memory_order_relaxed);
            cell->holds.fetch_and(~Cell::kDying, std::memory_order_acq_rel);  // freed since
        }
        commit(cell, next);
    }
    for (Cell* cell : made_since)
        if (auto ok = roll_back_cell(cell); !ok && out) out = ok;
    rename_seq_.fetch_add(1, std::memory_order_release);
    rebasing_.store(false, std::memory_order_release);
    return out;
}

Result<void> Engine::roll_back_cell(Cell* cell) {
    const CellState& now = cell->state;
    // Seen by a snapshot taken since: this state, or one it replaced.
    const bool seen = now.modified_gen <= last_snapshot_ || now.prev != nullptr;
    std::optional<uint64_t> lower_node;
    if (lower_number(cell->ino)) {
        if (auto node = lower(top_index()).node_of(cell->ino)) lower_node = *node;
    }
    if (lower_node) {
        // A lower inode the tree changed (or removed) since: the lower's again.
        if (!seen && !cell->held() && cell->ino != kRootIno) {
            if (now.kind == CellKind::live) {
                bytes_used_.fetch_sub(now.allocated, std::memory_order_relaxed);
                inodes_.fetch_sub(1, std::memory_order_relaxed);
                release_state(now);
            }
            table_.slot(cell->ino).store(nullptr, std::memory_order_release);
            retire_cell(cell);
            return {};
        }
        auto fresh = copy_up_state(Ref{cell->ino, cell, *lower_node, now.type, top_index()});
        if (!fresh) return std::unexpected(fresh.error());
        CellState next = begin_edit(cell);
        if (next.kind == CellKind::live) {
            bytes_used_.fetch_sub(next.allocated, std::memory_order_relaxed);
            release_state(next);
        } else {
            inodes_.fetch_add(1, std::memory_order_relaxed);
            cell->holds.fetch_and(~Cell::kDying, std::memory_order_acq_rel);
        }
        const uint64_t gen = next.modified_gen;
        Version* const prev = next.prev;
        next = *fresh;
        next.modified_gen = gen;
        next.prev = prev;
        commit(cell, next);
        return {};
    }
    if (now.kind != CellKind::live) return {};  // made and freed since: gone already
    // Made since: no name any more.
    if (cell->try_kill()) {
        free_inode(cell);
        return {};
    }
    CellState next = begin_edit(cell);
    next.nlink = 0;
    if (next.type == FileType::directory && next.data) {
        // Its entries name inodes made since too, freed here: an orphan directory is empty.
        trie_release(static_cast<TrieNode*>(next.data), reclaimer_);
        next.data = nullptr;
        next.entries = 0;
    }
    commit(cell, next);
    // The last hold may have gone meanwhile, seeing the old nlink (see Engine::release).
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (cell->try_kill()) free_inode(cell);
    return {};
}

}  // namespace packfs::mem
