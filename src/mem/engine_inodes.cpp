// The engine's inodes (engine.hpp), under the writer lock: copy-up of a lower inode into a cell
// of its number, new inodes, and the end of one (a link dropped in two steps, freed, buried).
#include <algorithm>

#include "mem/engine.hpp"

namespace packfs::mem {

Result<void> Engine::add_lower_xattrs(CellState& s, uint64_t lower_node) {
    Lower& lower = this->lower(s.layer);
    auto names = lower.listxattr(lower_node);
    if (!names) return std::unexpected(names.error());
    if (names->empty()) return {};
    auto* set = new XattrSet;
    for (std::string& name : *names) {
        auto value = lower.getxattr(lower_node, name);
        if (!value) {
            delete set;
            return std::unexpected(value.error());
        }
        set->items.emplace_back(std::move(name), std::move(*value));
    }
    std::sort(set->items.begin(), set->items.end());
    s.xattrs = set;
    return {};
}

Result<CellState> Engine::copy_up_state(const Ref& node) {
    Lower& lower = this->lower(node.layer);
    auto st = lower.getattr(node.lower);
    if (!st) return std::unexpected(st.error());
    CellState s;
    s.modified_gen = gen_;
    s.layer = node.layer;
    s.kind = CellKind::live;
    s.type = st->type;
    s.mode = st->mode;
    s.uid = st->uid;
    s.gid = st->gid;
    s.nlink = static_cast<uint32_t>(st->nlink);
    s.size = st->size;
    s.atime = st->atime;
    s.mtime = st->mtime;
    s.ctime = st->ctime;
    s.lower = node.lower;
    switch (st->type) {
        case FileType::directory: s.aux = node.ino == kRootIno ? kRootIno : 0; break;
        case FileType::regular: s.aux = st->size; break;
        case FileType::char_device:
        case FileType::block_device: s.aux = st->rdev; break;
        case FileType::symlink: {
            auto target = lower.readlink(node.lower);
            if (!target) return std::unexpected(target.error());
            s.data = new Target(*target);
            break;
        }
        default: break;
    }
    if (auto ok = add_lower_xattrs(s, node.lower); !ok) {
        if (s.type == FileType::symlink) delete static_cast<Target*>(s.data);
        return std::unexpected(ok.error());
    }
    return s;
}

Result<Cell*> Engine::own_cell(const Ref& given) {
    if (given.cell && given.cell->state.kind == CellKind::live) return given.cell;
    // A Ref taken before an earlier call of the same operation copied the inode up (a rename
    // within one lower directory: its source and destination are two Refs of one inode).
    Cell* existing = table_.find(given.ino);
    if (existing && existing->state.kind == CellKind::live) return existing;
    // A stub's own lower node, made newest by a rebase since the Ref was taken.
    Ref node = given;
    if (existing && existing->state.kind == CellKind::stub) {
        node.lower = existing->state.lower;
        node.layer = existing->state.layer;
    }
    // A lower inode: copied up into a cell of its number.
    auto copied = copy_up_state(node);
    if (!copied) return std::unexpected(copied.error());
    CellState s = *copied;
    inodes_.fetch_add(1, std::memory_order_relaxed);
    Cell* cell = existing;
    if (cell) {
        // A stub (a held lower inode) becomes the copy: the holds stay where they are.
        s.prev = nullptr;
        cell->write(s);
    } else {
        cell = new_cell(node.ino);
        cell->state = s;
        table_.slot(node.ino).store(cell, std::memory_order_release);
    }
    if (node.ino == kRootIno) live_root_.store(cell, std::memory_order_release);
    return cell;
}

Cell* Engine::make_inode(FileType type, uint32_t mode, Time now,
                         const std::optional<Owner>& owner, const CellState& parent) {
    Cell* cell = new_cell(next_ino_.fetch_add(1, std::memory_order_relaxed));
    CellState& s = cell->state;
    s.modified_gen = gen_;
    s.kind = CellKind::live;
    s.type = type;
    s.mode = mode & 07777;
    if (owner) {
        // A kernel's caller: the set-group-ID rule, as a kernel filesystem applies it.
        s.uid = owner->uid;
        s.gid = owner->gid;
        if (parent.mode & 02000) {
            s.gid = parent.gid;
            if (type == FileType::directory) s.mode |= 02000;
        }
    } else {
        s.uid = options_.uid;
        s.gid = options_.gid;
    }
    s.nlink = type == FileType::directory ? 2 : 1;
    s.atime = s.mtime = s.ctime = now;
    inodes_.fetch_add(1, std::memory_order_relaxed);
    return cell;
}

void Engine::bury(uint64_t ino) {
    Cell* cell = new_cell(ino);
    cell->holds.store(Cell::kDying, std::memory_order_relaxed);
    cell->state.modified_gen = gen_;
    cell->state.kind = CellKind::dead;
    table_.slot(ino).store(cell, std::memory_order_release);
}

void Engine::free_inode(Cell* cell) {
    CellState s = begin_edit(cell);
    if (s.kind == CellKind::live) {
        bytes_used_.fetch_sub(s.allocated, std::memory_order_relaxed);
        inodes_.fetch_sub(1, std::memory_order_relaxed);
        release_state(s);
    }
    const Version* kept = s.prev;
    CellState dead;
    dead.modified_gen = gen_;
    dead.prev = s.prev;
    dead.kind = CellKind::dead;
    dead.type = s.type;
    if (!kept && !lower_number(cell->ino)) {
        // No snapshot sees it and no lower knows its number: gone.
        table_.slot(cell->ino).store(nullptr, std::memory_order_release);
        retire_cell(cell);
        return;
    }
    cell->write(dead);
}

Result<Engine::LinkDrop> Engine::prepare_drop(const Ref& node) {
    if (!node.cell) {
        // An unchanged lower inode: when this is its last name and nothing holds it, only a
        // tombstone is needed (a stub nobody holds goes: it can no longer be held once killed);
        // else it is copied up, to count its links or to live on as an orphan.
        Cell* stub = table_.find(node.ino);
        bool last = node.is_dir();
        if (!last && !(stub && stub->held())) {
            auto st = lower(node.layer).getattr(node.lower);
            if (!st) return std::unexpected(st.error());
            last = st->nlink <= 1;
        }
        if (last && (!stub || stub->try_kill())) {
            if (stub) {
                void* expected = stub;
                table_.slot(node.ino).compare_exchange_strong(expected, nullptr);
                retire_cell(stub);
            }
            return LinkDrop{node.ino, nullptr};
        }
    }
    auto cell = own_cell(node);
    if (!cell) return std::unexpected(cell.error());
    return LinkDrop{node.ino, *cell};
}

void Engine::drop_link(const LinkDrop& drop, Time now) {
    if (!drop.cell) {
        bury(drop.ino);
        return;
    }
    Cell* cell = drop.cell;
    CellState s = begin_edit(cell);
    if (s.type == FileType::directory || s.nlink <= 1) {
        if (cell->try_kill()) {
            commit(cell, s);
            free_inode(cell);
            return;
        }
        s.nlink = 0;  // an orphan: the last hold frees it (Engine::release)
    } else {
        s.nlink -= 1;
    }
    s.ctime = now;
    commit(cell, s);
    if (s.nlink == 0) {
        // The last hold may have gone meanwhile, seeing the old nlink (see Engine::release).
        std::atomic_thread_fence(std::memory_order_seq_cst);
        if (cell->try_kill()) free_inode(cell);
    }
}

Result<Cell*> Engine::own(const Ref& node) { return own_cell(node); }

}  // namespace packfs::mem
