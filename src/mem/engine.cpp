// The engine's life, its versions and its holds (engine.hpp has the protocol).
#include "mem/engine.hpp"

#include <algorithm>


namespace packfs::mem {

Stat stat_of(uint64_t ino, const CellState& s) noexcept {
    Stat st;
    st.ino = ino;
    st.type = s.type;
    st.mode = s.mode;
    st.uid = s.uid;
    st.gid = s.gid;
    st.nlink = s.nlink;
    // A directory's size is 0, whichever layer it comes from (a pack records its number of
    // entries, which a copy-up would carry and then leave behind): a compaction or a remount
    // never changes what stat says of it.
    st.size = s.type == FileType::directory ? 0 : s.size;
    st.rdev = (s.type == FileType::char_device || s.type == FileType::block_device) ? s.aux : 0;
    const uint64_t backed = s.type == FileType::regular ? s.aux : 0;
    st.blocks = (s.allocated + backed + 511) / 512;  // (a byte stored takes a block, as du counts)
    st.atime = s.atime;
    st.mtime = s.mtime;
    st.ctime = s.ctime;
    return st;
}

Engine::Engine(const MemOptions& options, std::shared_ptr<Lower> lower, uint64_t next_ino)
    : options_(options), table_(lower ? lower->limit() : 64) {
    const uint64_t limit = lower ? lower->limit() : 0;
    next_ino_.store(std::max<uint64_t>({kRootIno + 1, next_ino, limit}), std::memory_order_relaxed);
    if (lower) {
        // The root, like everything else, is the lower's until it changes.
        layers_->slot[0].store(new Layer{0, std::move(lower), limit}, std::memory_order_release);
        layer_order_.push_back(0);
        return;
    }
    Cell* root = new_cell(kRootIno);
    CellState& s = root->state;
    s.modified_gen = 0;  // every snapshot sees the root
    s.type = FileType::directory;
    s.mode = options.root_mode & 07777;
    s.uid = options.uid;
    s.gid = options.gid;
    s.nlink = 2;
    s.aux = kRootIno;
    s.atime = s.mtime = s.ctime = Time::now();
    table_.slot(kRootIno).store(root, std::memory_order_release);
    live_root_.store(root, std::memory_order_release);
    inodes_.store(1, std::memory_order_relaxed);
}

Engine::~Engine() {
    // No reader is left (every one holds the engine): free everything now.
    reclaimer_.flush();
    std::vector<Cell*> cells;
    table_.each([&](Cell* c) { cells.push_back(c); });
    for (Cell* c : cells) {
        const CellState& s = c->state;
        std::vector<Version*> chain;
        for (Version* v = s.prev; v; v = v->state.prev) chain.push_back(v);
        Arena& arena = *arena_;
        auto destroy_state = [&arena](const CellState& st) {
            switch (st.type) {
                case FileType::directory:
                    trie_destroy_now(static_cast<TrieNode*>(st.data), arena);
                    break;
                case FileType::regular:
                    Content::destroy_now(Content(st.data), arena);
                    break;
                case FileType::symlink:
                    if (auto* t = static_cast<Target*>(st.data); t && --t->refs == 0) delete t;
                    break;
                default:
                    break;
            }
            if (st.xattrs && --st.xattrs->refs == 0) delete st.xattrs;
        };
        if (s.kind == CellKind::live) destroy_state(s);
        for (Version* v : chain) {
            if (v->state.kind == CellKind::live) destroy_state(v->state);
            arena_->destroy(v);
        }
        destroy_cell_now(c);
    }
    // What was retired earlier is freed by the reclamation thread: it needs nothing of the engine.
}

Cell* Engine::new_cell(uint64_t ino) {
    cells_made_.fetch_add(1, std::memory_order_relaxed);
    return new (arena_->allocate(sizeof(Cell), Arena::Place::beside, Arena::Align::line))
        Cell(ino, true);
}

Cell* Engine::new_stub_cell(uint64_t ino) {
    cells_made_.fetch_add(1, std::memory_order_relaxed);
    return new Cell(ino, false);
}

void Engine::retire_cell(Cell* cell) noexcept {
    if (cell->pooled) {
        retire_in_arena(reclaimer_, cell);
    } else {
        reclaimer_.retire(cell);
    }
}

void Engine::destroy_cell_now(Cell* cell) noexcept {
    if (cell->pooled) {
        arena_->destroy(cell);
    } else {
        delete cell;
    }
}

// --- versions ----------------------------------------------------------------------------------

std::optional<CellState> Engine::visible(const Cell& cell, uint64_t gen) noexcept {
    CellState s = cell.read();
    while (s.modified_gen > gen) {
        const Version* v = s.prev;
        if (!v) return std::nullopt;
        s = atomic_copy(v->state);
    }
    if (s.kind == CellKind::stub) return std::nullopt;
    return s;
}

void Engine::retain_state(const CellState& s) noexcept {
    switch (s.type) {
        case FileType::directory: trie_retain(static_cast<TrieNode*>(s.data)); break;
        case FileType::regular: Content::retain(Content(s.data)); break;
        case FileType::symlink:
            if (s.data) ++static_cast<Target*>(s.data)->refs;
            break;
        default: break;
    }
    if (s.xattrs) ++s.xattrs->refs;
}

void Engine::release_state(const CellState& s) noexcept {
    switch (s.type) {
        case FileType::directory: trie_release(static_cast<TrieNode*>(s.data), reclaimer_); break;
        case FileType::regular: Content::release(Content(s.data), reclaimer_); break;
        case FileType::symlink:
            if (auto* t = static_cast<Target*>(s.data); t && --t->refs == 0) reclaimer_.retire(t);
            break;
        default: break;
    }
    if (s.xattrs && --s.xattrs->refs == 0) reclaimer_.retire(s.xattrs);
}

CellState Engine::begin_edit(Cell* cell) {
    CellState next = cell->state;
    if (next.modified_gen <= last_snapshot_ && next.kind != CellKind::stub) {
        // A snapshot sees this state: keep it, sharing what it points to.
        auto* kept = arena_->make<Version>(next, gen_);
        versions_made_.fetch_add(1, std::memory_order_relaxed);
        if (next.kind == CellKind::live) retain_state(next);
        next.prev = kept;
        snapshots_[last_snapshot_].versions.emplace_back(cell, kept);
    }
    next.modified_gen = gen_;
    return next;
}

Engine::SnapshotInfo Engine::take_snapshot() {
    const uint64_t gen = gen_++;  // newer than every snapshot: its place is the end
    if (spare_snapshot_) {
        spare_snapshot_.key() = gen;
        spare_snapshot_.mapped() = Kept{1, {}};
        snapshots_.insert(snapshots_.end(), std::move(spare_snapshot_));
    } else {
        snapshots_.emplace_hint(snapshots_.end(), gen, Kept{1, {}});
    }
    last_snapshot_ = gen;
    return SnapshotInfo{gen, bytes_used_.load(std::memory_order_relaxed), next_ino()};
}

void Engine::drop_snapshot(uint64_t gen) noexcept {
    auto it = snapshots_.find(gen);
    if (it == snapshots_.end()) return;
    if (--it->second.count > 0) return;
    auto versions = std::move(it->second.versions);
    spare_snapshot_ = snapshots_.extract(it);
    last_snapshot_ = snapshots_.empty() ? 0 : snapshots_.rbegin()->first;
    // The next older snapshot takes over what it still sees; the rest is freed.
    auto older = snapshots_.lower_bound(gen);
    const bool has_older = older != snapshots_.begin();
    if (has_older) --older;
    std::vector<Cell*> touched;
    for (auto& [cell, version] : versions) {
        if (has_older && older->first >= version->state.modified_gen) {
            older->second.versions.emplace_back(cell, version);
            continue;
        }
        // Unlink it from its cell's chain (readers of other snapshots may be passing: the
        // link they follow is swapped whole, and the version is retired, not freed).
        Version* after = version->state.prev;
        if (cell->state.prev == version) {
            CellState s = cell->state;
            s.prev = after;
            cell->write(s);
        } else {
            for (Version* v = cell->state.prev; v; v = v->state.prev) {
                if (v->state.prev == version) {
                    std::atomic_ref<Version*>(v->state.prev).store(after, std::memory_order_release);
                    break;
                }
            }
        }
        if (version->state.kind == CellKind::live) release_state(version->state);
        retire_in_arena(reclaimer_, version);
        touched.push_back(cell);
    }
    // A dead inode no snapshot sees any more leaves the table (unless it stands for a lower
    // inode, whose number must not come back).
    trim_layers();  // an old lower may have been read by this snapshot alone
    for (Cell* cell : touched) {
        const CellState& s = cell->state;
        if (s.kind != CellKind::dead || s.prev || cell->held()) continue;
        if (lower_number(cell->ino)) continue;
        auto& slot = table_.slot(cell->ino);
        if (slot.load(std::memory_order_relaxed) != cell) continue;
        slot.store(nullptr, std::memory_order_release);
        retire_cell(cell);
    }
}

// --- layers ------------------------------------------------------------------------------------

uint16_t Engine::layer_at(uint64_t gen) const noexcept {
    const uint16_t top_at = top_index();
    if (gen == kLiveGen) return top_at;
    // The layer with the latest start at or before `gen` (layers are few; the slots are
    // scanned whole, since the layers between two that old snapshots keep may have gone).
    uint16_t best = top_at;
    uint64_t best_gen = 0;
    bool found = false;
    for (uint16_t i = 0; i < kLayers; ++i) {
        const Layer* l = layers_->slot[i].load(std::memory_order_acquire);
        if (!l || l->first_gen > gen || (found && l->first_gen <= best_gen)) continue;
        best = i;
        best_gen = l->first_gen;
        found = true;
    }
    return best;
}

void Engine::trim_layers() noexcept {
    // A layer other than the newest is read only by the snapshots taken over it (every live
    // state was moved onto the newer one by the rebase that made it): those with a generation
    // from its first to the next layer's. One no snapshot reads goes, wherever it is in the
    // line (a snapshot kept across many compactions keeps only its own).
    for (std::size_t i = 0; i + 1 < layer_order_.size();) {
        const uint64_t from = layer(layer_order_[i]).first_gen;
        const uint64_t until = layer(layer_order_[i + 1]).first_gen;
        auto reader = snapshots_.lower_bound(from);
        if (reader != snapshots_.end() && reader->first < until) {
            ++i;
            continue;
        }
        trimmed_layers_.push_back(layer_order_[i]);
        layer_order_.erase(layer_order_.begin() + static_cast<std::ptrdiff_t>(i));
    }
}

void Engine::free_layers() {
    std::vector<uint16_t> gone;
    {
        auto lock = this->lock();
        gone.swap(trimmed_layers_);
    }
    if (gone.empty()) return;
    // Two grace periods. A reader that read a state of the old layer before the rebase moved
    // it may still be in its read section: after the first none is, and no state names the
    // layer any more, so its slot can be emptied. A reader that began since may still be
    // scanning the slots in layer_at (reading each one's first_gen): after the second none
    // holds the pointer, and the layer can go.
    rcu::synchronize();
    std::vector<const Layer*> unlinked;
    unlinked.reserve(gone.size());
    for (uint16_t i : gone) {
        unlinked.push_back(layers_->slot[i].exchange(nullptr, std::memory_order_acq_rel));
    }
    rcu::synchronize();
    for (const Layer* l : unlinked) delete l;
}

void Engine::repoint_stub(Cell* cell) {
    CellState s = cell->state;
    const uint16_t newest = top_index();
    if (s.kind != CellKind::stub || s.layer == newest) return;
    auto node = lower(newest).node_of(cell->ino);
    if (node) {
        s.lower = *node;
        s.layer = newest;
    } else {
        s.kind = CellKind::dead;  // the new lower has no such inode: it was removed meanwhile
    }
    cell->write(s);
}

// --- holds -------------------------------------------------------------------------------------

Result<Cell*> Engine::hold(uint64_t ino) {
    if (ino == 0) return fail(ESTALE, "open");
    for (;;) {
        rcu::ReadSection section;
        Cell* cell = table_.find(ino);
        if (cell) {
            if (cell->try_hold()) {
                if (cell->read().kind == CellKind::dead) {
                    cell->holds.fetch_sub(1, std::memory_order_acq_rel);
                    return fail(ESTALE, "open");
                }
                return cell;
            }
            // Being freed: an orphan or a dead inode is gone for good; a stub being removed
            // may be replaced by a fresh one.
            if (cell->read().kind != CellKind::stub) return fail(ESTALE, "open");
        }
        if (!lower_number(ino)) return fail(ESTALE, "open");
        const uint16_t layer_index = top_index();
        Lower& lower = this->lower(layer_index);
        auto node = lower.node_of(ino);
        if (!node) return fail(ESTALE, "open");
        auto st = lower.getattr(*node);
        if (!st) return std::unexpected(st.error());
        Cell* stub = new_stub_cell(ino);
        stub->holds.store(1, std::memory_order_relaxed);
        stub->state.kind = CellKind::stub;
        stub->state.type = st->type;
        stub->state.lower = *node;
        stub->state.layer = layer_index;
        void* expected = cell;
        if (table_.slot(ino).compare_exchange_strong(expected, stub, std::memory_order_acq_rel)) {
            // (A dying stub it replaced is retired by its remover.) A rebase that began after
            // this read the layer may have passed the table before the stub was in it: then
            // the stub is moved here, under the lock the rebase has given back by then (and
            // before its old layer can go: that waits for this read section).
            if (top_index() != layer_index) {
                auto lock = this->lock();
                repoint_stub(stub);
            }
            return stub;
        }
        delete stub;  // another thread was first: look again
    }
}

void Engine::release(Cell* cell) noexcept {
    // In a read section: once the count is 0 the writer may free the cell (after a grace period).
    rcu::ReadSection section;
    if (!cell->release_hold()) return;
    // The last hold: an orphan is freed, a stub removed. Anything else stays as it is, and a
    // named live inode (the common close) is told without the lock. The fence pairs with the
    // one drop_link makes after it orphans an inode: either it sees this release, or this
    // sees its nlink of 0.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (cell->kind() == CellKind::live && cell->nlink() > 0) return;
    auto lock = this->lock();
    if (cell->held()) return;  // held again meanwhile
    const CellState& s = cell->state;
    const bool orphan = s.kind == CellKind::live && s.nlink == 0;
    if (s.kind != CellKind::stub && !orphan) return;
    if (!cell->try_kill()) return;
    if (orphan) {
        free_inode(cell);
        return;
    }
    void* expected = cell;
    table_.slot(cell->ino).compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel);
    retire_cell(cell);
}

}  // namespace packfs::mem
