// The engine's mutations (engine.hpp), all under the writer lock. Each one checks everything
// that can fail before it changes anything, then makes its changes in the order a lock-free
// reader may see them: a new inode is in the table before a name points to it, a name goes
// before its inode, a name is added where it goes before it leaves where it was.
#include <fcntl.h>

#include <algorithm>
#include <deque>
#include <unordered_set>
#include <vector>

#include "core/checks.hpp"
#include "core/rename_check.hpp"
#include "mem/engine.hpp"

namespace packfs::mem {
namespace {

Result<void> check_fits(uint64_t offset, std::size_t length, std::string_view op) {
    if (offset > kMaxFileSize || length > kMaxFileSize - offset) return fail(EFBIG, op);
    return {};
}

}  // namespace

const Backing* Engine::writer_backing(const CellState& s) {
    if (s.type != FileType::regular || s.aux == 0 || !s.lower || !top()) return nullptr;
    return writer_files_.get(layer(s.layer), s.lower);
}

// --- inodes ------------------------------------------------------------------------------------

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
    // A lower inode: copied up into a cell of its number. Metadata, target and xattrs are
    // copied; the content stays in the lower until a chunk of it is written.
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

// --- names -------------------------------------------------------------------------------------

Result<std::optional<Ref>> Engine::live_child(const Ref& dir, std::string_view name) {
    if (!dir.is_dir()) return fail(ENOTDIR, "lookup", name);
    return child(dir, name, kLiveGen);
}

// A directory removed while something held it (rmdir left it with nlink 0): it takes no new
// names (ENOENT, as Linux answers a create in a removed working directory).
static bool removed_dir(const Ref& dir) noexcept {
    return dir.cell && dir.cell->state.kind == CellKind::live && dir.cell->state.nlink == 0;
}

void Engine::add_name(CellState& dir, std::string_view name, uint64_t ino, FileType type) {
    auto* root = static_cast<TrieNode*>(dir.data);
    TrieWriter w(root, reclaimer_, *arena_);
    Cell* cell = ino ? table_.find(ino) : nullptr;
    if (cell && cell->state.kind != CellKind::live) cell = nullptr;  // a stub may be replaced
    const int64_t replaced = w.put(name, name_hash(name), ino, type, cell);
    dir.data = root;
    if (replaced <= 0) ++dir.entries;  // a new name (over nothing, or over a whiteout)
}

Result<bool> Engine::lower_has_name(const Cell* dir, std::string_view name) {
    const uint64_t lower_dir = dir->state.lower;
    if (!lower_dir || !top()) return false;
    return lower(dir->state.layer).has(lower_dir, name);
}

void Engine::remove_name(CellState& dir, std::string_view name, bool lower_has) {
    const uint64_t hash = name_hash(name);
    auto* root = static_cast<TrieNode*>(dir.data);
    const EntryRec* own = trie_find(root, hash, name);
    if (own && own->ino != 0) --dir.entries;
    TrieWriter w(root, reclaimer_, *arena_);
    if (lower_has) {
        w.put(name, hash, 0, FileType::regular);  // a whiteout hides the lower's name
    } else {
        w.erase(name, hash);
    }
    dir.data = root;
}

// --- the mutations -----------------------------------------------------------------------------

Result<Ref> Engine::make(const Ref& dir, std::string_view name, FileType type, uint32_t mode,
                         uint64_t rdev, std::string_view target,
                         const std::optional<Owner>& owner, bool free_known) {
    if (removed_dir(dir)) return fail(ENOENT, "create", name);
    if (!free_known) {
        auto existing = live_child(dir, name);
        if (!existing) return std::unexpected(existing.error());
        if (*existing) return fail(EEXIST, "create", name);
    }
    auto dcell = own_cell(dir);
    if (!dcell) return std::unexpected(dcell.error());
    const Time now = op_now();
    CellState ds = begin_edit(*dcell);
    // The entry goes first, the cell right after it: a lookup reads them in that order, and a
    // stat then touches three lines (the entry's, the cell's first two), all in a row.
    arena_->set_aside(EntryRec::bytes(name.size()), Arena::Align::line);
    Cell* cell = make_inode(type, mode, now, owner, ds);
    CellState& s = cell->state;
    switch (type) {
        case FileType::directory: s.aux = dir.ino; break;
        case FileType::char_device:
        case FileType::block_device: s.aux = rdev; break;
        case FileType::symlink:
            s.data = new Target(target);
            s.size = target.size();
            break;
        default: break;
    }
    // Complete before anything names it.
    table_.slot(cell->ino).store(cell, std::memory_order_release);
    add_name(ds, name, cell->ino, type);
    ds.mtime = ds.ctime = now;
    if (type == FileType::directory) ds.nlink += 1;  // the new directory's ".."
    commit(*dcell, ds);
    return Ref{cell->ino, cell, 0, type};
}

Result<void> Engine::link(const Ref& node, const Ref& dir, std::string_view name) {
    if (removed_dir(dir)) return fail(ENOENT, "link", name);
    auto existing = live_child(dir, name);
    if (!existing) return std::unexpected(existing.error());
    if (*existing) return fail(EEXIST, "link", name);
    if (node.is_dir()) return fail(EPERM, "link");
    auto cell = own_cell(node);
    if (!cell) return std::unexpected(cell.error());
    if ((*cell)->state.nlink == 0) return fail(ENOENT, "link");  // an orphan has no name to add to
    auto dcell = own_cell(dir);
    if (!dcell) return std::unexpected(dcell.error());
    const Time now = op_now();
    CellState s = begin_edit(*cell);
    s.nlink += 1;
    s.ctime = now;
    commit(*cell, s);
    CellState ds = begin_edit(*dcell);
    add_name(ds, name, node.ino, node.type);
    ds.mtime = ds.ctime = now;
    commit(*dcell, ds);
    return {};
}

Result<void> Engine::unlink(const Ref& dir, std::string_view name) {
    auto entry = live_child(dir, name);
    if (!entry) return std::unexpected(entry.error());
    if (!*entry) return fail(ENOENT, "unlink", name);
    if ((*entry)->is_dir()) return fail(EISDIR, "unlink", name);
    auto dcell = own_cell(dir);
    if (!dcell) return std::unexpected(dcell.error());
    auto lower_has = lower_has_name(*dcell, name);
    if (!lower_has) return std::unexpected(lower_has.error());
    auto drop = prepare_drop(**entry);
    if (!drop) return std::unexpected(drop.error());
    // Nothing below can fail.
    const Time now = op_now();
    CellState ds = begin_edit(*dcell);
    remove_name(ds, name, *lower_has);
    ds.mtime = ds.ctime = now;
    commit(*dcell, ds);
    drop_link(*drop, now);
    return {};
}

Result<void> Engine::rmdir(const Ref& dir, std::string_view name) {
    auto entry = live_child(dir, name);
    if (!entry) return std::unexpected(entry.error());
    if (!*entry) return fail(ENOENT, "rmdir", name);
    if (!(*entry)->is_dir()) return fail(ENOTDIR, "rmdir", name);
    auto full = has_entries(**entry, kLiveGen);
    if (!full) return std::unexpected(full.error());
    if (*full) return fail(ENOTEMPTY, "rmdir", name);
    auto dcell = own_cell(dir);
    if (!dcell) return std::unexpected(dcell.error());
    auto lower_has = lower_has_name(*dcell, name);
    if (!lower_has) return std::unexpected(lower_has.error());
    auto drop = prepare_drop(**entry);
    if (!drop) return std::unexpected(drop.error());
    // Nothing below can fail.
    const Time now = op_now();
    CellState ds = begin_edit(*dcell);
    remove_name(ds, name, *lower_has);
    ds.nlink -= 1;
    ds.mtime = ds.ctime = now;
    commit(*dcell, ds);
    drop_link(*drop, now);
    return {};
}

Result<bool> Engine::inside(const Ref& dir, const Ref& ancestor) {
    uint64_t at = dir.ino;
    for (int depth = 0; depth < (1 << 20); ++depth) {
        if (at == ancestor.ino) return true;
        if (at == kRootIno) return false;
        Cell* cell = table_.find(at);
        if (!cell || cell->state.kind != CellKind::live || cell->state.aux == 0) break;
        at = cell->state.aux;
    }
    // A lower directory whose parent is not known: search the ancestor's subtree instead.
    std::deque<Ref> pending{ancestor};
    while (!pending.empty()) {
        const Ref d = pending.front();
        pending.pop_front();
        auto entries = list(d, kLiveGen);
        if (!entries) return std::unexpected(entries.error());
        for (const DirEntry& e : *entries) {
            if (e.type != FileType::directory) continue;
            if (e.ino == dir.ino) return true;
            auto sub = child(d, e.name, kLiveGen);
            if (!sub) return std::unexpected(sub.error());
            if (*sub) pending.push_back(**sub);
        }
    }
    return false;
}

Result<void> Engine::rename(const Ref& dir, std::string_view name, const Ref& to_dir,
                            std::string_view to_name, RenameFlags flags, bool ancestry_checked) {
    if (!valid_rename_flags(flags)) return fail(EINVAL, "rename", name);
    if (removed_dir(to_dir)) return fail(ENOENT, "rename", to_name);
    auto moved = live_child(dir, name);
    if (!moved) return std::unexpected(moved.error());
    auto victim = live_child(to_dir, to_name);
    if (!victim) return std::unexpected(victim.error());
    RenameCase c;
    c.flags = flags;
    if (*moved) c.moved = (*moved)->type;
    if (*victim) c.victim = (*victim)->type;
    c.same_object = *moved && *victim && (*moved)->ino == (*victim)->ino;
    if (!ancestry_checked) {
        if (*moved && (*moved)->is_dir()) {
            auto in = inside(to_dir, **moved);
            if (!in) return std::unexpected(in.error());
            c.moved_contains_to_dir = *in;
        }
        if (*victim && (*victim)->is_dir()) {
            auto in = inside(dir, **victim);
            if (!in) return std::unexpected(in.error());
            c.victim_contains_from_dir = *in;
        }
    }
    Result<bool> victim_full = false;
    const RenameVerdict v = check_rename(c, [&] {
        victim_full = has_entries(**victim, kLiveGen);
        return !victim_full || *victim_full;
    });
    if (!victim_full) return std::unexpected(victim_full.error());
    if (v.code) return fail(v.code, "rename", v.names_to ? to_name : name);
    if (v.noop) return {};

    const Ref m = **moved;
    // Every cell this rename changes, copied up first (the only step that can fail).
    auto mcell = own_cell(m);
    if (!mcell) return std::unexpected(mcell.error());
    Result<Cell*> vcell = nullptr;
    if (*victim && flags == RenameFlags::exchange) {
        vcell = own_cell(**victim);
        if (!vcell) return std::unexpected(vcell.error());
    }
    auto scell = own_cell(dir);
    if (!scell) return std::unexpected(scell.error());
    auto dcell = own_cell(to_dir);
    if (!dcell) return std::unexpected(dcell.error());
    const bool same_dir = *scell == *dcell;
    Result<bool> lower_has = false;
    Result<LinkDrop> drop = LinkDrop{};
    if (flags != RenameFlags::exchange) {
        lower_has = lower_has_name(*scell, name);
        if (!lower_has) return std::unexpected(lower_has.error());
        if (*victim) {
            drop = prepare_drop(**victim);
            if (!drop) return std::unexpected(drop.error());
        }
    }
    // Nothing below can fail.

    const Time now = op_now();
    const bool dirs_move = m.is_dir() || (*victim && (*victim)->is_dir());
    if (dirs_move) rename_seq_.fetch_add(1, std::memory_order_acq_rel);
    CellState src = begin_edit(*scell);
    CellState dst_state;
    CellState& dst = same_dir ? src : (dst_state = begin_edit(*dcell), dst_state);
    auto set_parent = [&](Cell* cell, uint64_t parent) {
        CellState s = begin_edit(cell);
        if (s.type == FileType::directory) s.aux = parent;
        s.ctime = now;
        commit(cell, s);
    };
    if (flags == RenameFlags::exchange) {
        const Ref w = **victim;
        add_name(src, name, w.ino, w.type);
        add_name(dst, to_name, m.ino, m.type);
        if (m.is_dir() != w.is_dir() && !same_dir) {
            // One directory moved each way is no change; one moved one way is.
            const int delta = m.is_dir() ? 1 : -1;
            dst.nlink += delta;
            src.nlink -= delta;
        }
        set_parent(*vcell, dir.ino);
        set_parent(*mcell, to_dir.ino);
    } else {
        // The new name first, then the old one goes: a reader never finds the object nowhere.
        add_name(dst, to_name, m.ino, m.type);
        remove_name(src, name, *lower_has);
        if (*victim && (*victim)->is_dir()) dst.nlink -= 1;
        if (m.is_dir() && !same_dir) {
            src.nlink -= 1;
            dst.nlink += 1;
        }
        set_parent(*mcell, to_dir.ino);
    }
    src.mtime = src.ctime = now;
    dst.mtime = dst.ctime = now;
    commit(*scell, src);
    if (!same_dir) commit(*dcell, dst);
    if (*victim && flags != RenameFlags::exchange) drop_link(*drop, now);
    if (dirs_move) rename_seq_.fetch_add(1, std::memory_order_acq_rel);
    return {};
}

// --- attributes -----------------------------------------------------------------------------

Result<Stat> Engine::setattr(const Ref& node, const SetAttr& change) {
    if (change.truncate) {
        if (node.is_dir()) return fail(EISDIR, "truncate");
        if (node.type != FileType::regular) return fail(EINVAL, "truncate");
        if (change.size > kMaxFileSize) return fail(EFBIG, "truncate");
    }
    if (auto ok = check_time(change.atime); !ok) return std::unexpected(ok.error());
    if (auto ok = check_time(change.mtime); !ok) return std::unexpected(ok.error());
    auto cell = own_cell(node);
    if (!cell) return std::unexpected(cell.error());
    const Time now = op_now();
    CellState s = begin_edit(*cell);
    if (change.mode != SetAttr::kKeep) s.mode = change.mode & 07777;
    if (change.uid != SetAttr::kKeep) s.uid = change.uid;
    if (change.gid != SetAttr::kKeep) s.gid = change.gid;
    apply_time(s.atime, change.atime, now);
    apply_time(s.mtime, change.mtime, now);
    if (change.truncate) {
        const uint64_t before = s.allocated;
        ContentWriter w(s, reclaimer_, *arena_, writer_backing(s));
        if (auto ok = w.resize(change.size); !ok) return std::unexpected(ok.error());
        bytes_used_.fetch_add(s.allocated - before, std::memory_order_relaxed);
        s.mtime = now;
    }
    s.ctime = now;
    commit(*cell, s);
    return stat_of(node.ino, s);
}

Result<void> Engine::setxattr(const Ref& node, std::string_view name, std::string_view value,
                              XattrMode mode) {
    // Checked against what the node has before anything is copied up.
    auto current = getxattr(node, name, kLiveGen);
    if (!current && current.error().code() != ENODATA) return std::unexpected(current.error());
    const bool exists = current.has_value();
    if (exists && mode == XattrMode::create) return fail(EEXIST, "setxattr", name);
    if (!exists && mode == XattrMode::replace) return fail(ENODATA, "setxattr", name);
    auto cell = own_cell(node);
    if (!cell) return std::unexpected(cell.error());
    CellState s = begin_edit(*cell);
    auto* set = new XattrSet;
    if (s.xattrs) set->items = s.xattrs->items;
    auto it = std::lower_bound(set->items.begin(), set->items.end(), name,
                               [](const auto& item, std::string_view n) { return item.first < n; });
    if (it != set->items.end() && it->first == name) {
        it->second = std::string(value);
    } else {
        set->items.emplace(it, std::string(name), std::string(value));
    }
    if (s.xattrs && --s.xattrs->refs == 0) reclaimer_.retire(s.xattrs);
    s.xattrs = set;
    s.ctime = op_now();
    commit(*cell, s);
    return {};
}

Result<void> Engine::removexattr(const Ref& node, std::string_view name) {
    auto current = getxattr(node, name, kLiveGen);
    if (!current) return std::unexpected(current.error());
    auto cell = own_cell(node);
    if (!cell) return std::unexpected(cell.error());
    CellState s = begin_edit(*cell);
    XattrSet* set = nullptr;
    if (s.xattrs && s.xattrs->items.size() > 1) {
        set = new XattrSet;
        for (const auto& item : s.xattrs->items)
            if (item.first != name) set->items.push_back(item);
    }
    if (s.xattrs && --s.xattrs->refs == 0) reclaimer_.retire(s.xattrs);
    s.xattrs = set;
    s.ctime = op_now();
    commit(*cell, s);
    return {};
}

// --- contents ---------------------------------------------------------------------------------

Result<std::size_t> Engine::write(Cell* cell, std::span<const std::byte> data, uint64_t offset,
                                  bool append) {
    const CellState& current = cell->state;
    if (current.kind != CellKind::live) return fail(ESTALE, "write");
    if (current.type != FileType::regular) return fail(EBADF, "write");
    const uint64_t at = append ? current.size : offset;
    if (auto ok = check_fits(at, data.size(), "write"); !ok) return std::unexpected(ok.error());
    if (data.empty()) return 0;
    CellState s = begin_edit(cell);
    const uint64_t before = s.allocated;
    ContentWriter w(s, reclaimer_, *arena_, writer_backing(s));
    if (auto ok = w.write(at, data); !ok) return std::unexpected(ok.error());
    bytes_used_.fetch_add(s.allocated - before, std::memory_order_relaxed);
    s.mtime = s.ctime = op_now();
    commit(cell, s);
    return data.size();
}

Result<void> Engine::truncate(Cell* cell, uint64_t size) {
    const CellState& current = cell->state;
    if (current.kind != CellKind::live) return fail(ESTALE, "truncate");
    auto st = setattr(Ref{cell->ino, cell, current.lower, current.type}, SetAttr::resize(size));
    if (!st) return std::unexpected(st.error());
    return {};
}

Result<void> Engine::allocate(Cell* cell, int mode, uint64_t offset, uint64_t length) {
    const CellState& current = cell->state;
    if (current.kind != CellKind::live) return fail(ESTALE, "fallocate");
    if (current.type == FileType::directory) return fail(EISDIR, "fallocate");
    if (current.type != FileType::regular) return fail(ENODEV, "fallocate");
    if (length == 0) return fail(EINVAL, "fallocate");
    constexpr int kKeep = FALLOC_FL_KEEP_SIZE;
    const bool punch = mode == (FALLOC_FL_PUNCH_HOLE | kKeep);
    const bool zero = (mode & ~kKeep) == FALLOC_FL_ZERO_RANGE;
    if (mode != 0 && mode != kKeep && !punch && !zero) return fail(EOPNOTSUPP, "fallocate");
    if (auto ok = check_fits(offset, length, "fallocate"); !ok) return ok;
    const bool grows = !(mode & kKeep) && offset + length > current.size;
    // Memory reserves nothing ahead: an allocation inside the file changes nothing.
    if (!punch && !zero && !grows) return {};
    CellState s = begin_edit(cell);
    const uint64_t before = s.allocated;
    ContentWriter w(s, reclaimer_, *arena_, writer_backing(s));
    if (punch || zero) {
        if (auto ok = w.punch(offset, length); !ok) return ok;
    }
    if (grows) {
        if (auto ok = w.resize(offset + length); !ok) return ok;
    }
    bytes_used_.fetch_add(s.allocated - before, std::memory_order_relaxed);  // (mod 2^64)
    s.mtime = s.ctime = op_now();
    commit(cell, s);
    return {};
}

Result<std::optional<uint64_t>> Engine::clone_range(Cell* from, uint64_t offset, Cell* to,
                                                    uint64_t to_offset, uint64_t length) {
    const CellState& source = from->state;
    const CellState& target = to->state;
    if (source.kind == CellKind::dead || target.kind != CellKind::live)
        return fail(ESTALE, "copy_file_range");
    if (source.type == FileType::directory || target.type == FileType::directory)
        return fail(EISDIR, "copy_file_range");
    if (source.type != FileType::regular || target.type != FileType::regular)
        return fail(EINVAL, "copy_file_range");
    // A stub is the lower's file, unchanged: its size is the lower's.
    const bool stub = source.kind == CellKind::stub;
    uint64_t size = source.size;
    if (stub) {
        auto st = lower(source.layer).getattr(source.lower);
        if (!st) return std::unexpected(st.error());
        size = st->size;
    }
    if (offset >= size) return std::optional<uint64_t>(0);
    length = std::min(length, size - offset);
    if (auto ok = check_fits(to_offset, length, "copy_file_range"); !ok)
        return std::unexpected(ok.error());
    if (length == 0 || from == to) return std::optional<uint64_t>();
    // A whole file into an empty one made here (cp): the copy takes the source's state, its
    // chunks shared and, for what the source still reads from the lower (a pack's file), the
    // same lower file as its backing, as a copy-up has.
    // The content is shared whole, as a snapshot shares it (its root referenced once more: the
    // first write to either file copies the path to the chunk it changes, and a chunk's
    // frontier already covers what both files show): O(1) whatever the size.
    if (offset == 0 && to_offset == 0 && length == size && target.size == 0 && !target.lower &&
        Content(target.data).empty()) {
        CellState s = begin_edit(to);
        const uint64_t before = s.allocated;
        if (!stub) {
            Content::retain(Content(source.data));
            s.data = source.data;
            s.allocated = source.allocated;
        }
        s.size = size;
        s.aux = stub ? size : source.aux;
        s.lower = s.aux > 0 ? source.lower : 0;
        s.layer = source.layer;
        bytes_used_.fetch_add(s.allocated - before, std::memory_order_relaxed);  // (mod 2^64)
        s.mtime = s.ctime = op_now();
        commit(to, s);
        return std::optional<uint64_t>(length);
    }
    if (stub) return std::optional<uint64_t>();
    // Shared chunks cover the same 64 KiB ranges in both files; a file still reading chunks
    // from the lower (a copy-up) has none of its own there to share.
    if (offset % kChunkSize != to_offset % kChunkSize || writer_backing(source) != nullptr ||
        writer_backing(target) != nullptr)
        return std::optional<uint64_t>();
    const uint64_t end = offset + length, to_end = to_offset + length;
    CellState s = begin_edit(to);
    const uint64_t before = s.allocated;
    const Content content(source.data);
    ContentWriter w(s, reclaimer_, *arena_, nullptr);
    if (to_end > s.size) {
        if (auto ok = w.resize(to_end); !ok) return std::unexpected(ok.error());
    }
    // Whole chunks are shared; so is a last partial one when it ends both the source and the
    // target (what lies past the end of a chunk is then invisible in both). The edges are
    // copied.
    auto copy = [&](uint64_t at, uint64_t n) -> Result<void> {
        std::vector<std::byte> bytes(n);
        auto got = content.read(source.size, at, bytes, nullptr, 0);
        if (!got) return std::unexpected(got.error());
        return w.write(to_offset + (at - offset), bytes);
    };
    const uint64_t first = (offset + kChunkSize - 1) / kChunkSize;
    uint64_t last = end / kChunkSize;  // chunks [first, last) lie wholly inside
    if (end == source.size && to_end >= s.size && end % kChunkSize != 0) ++last;
    if (first >= last) {
        if (auto ok = copy(offset, length); !ok) return std::unexpected(ok.error());
    } else {
        if (offset < first * kChunkSize) {
            if (auto ok = copy(offset, first * kChunkSize - offset); !ok)
                return std::unexpected(ok.error());
        }
        const uint64_t to_first = (to_offset + (first * kChunkSize - offset)) / kChunkSize;
        w.share(content, first, to_first, last - first);
        if (last * kChunkSize < end) {
            if (auto ok = copy(last * kChunkSize, end - last * kChunkSize); !ok)
                return std::unexpected(ok.error());
        }
    }
    bytes_used_.fetch_add(s.allocated - before, std::memory_order_relaxed);  // (mod 2^64)
    s.mtime = s.ctime = op_now();
    commit(to, s);
    return std::optional<uint64_t>(length);
}

Result<Cell*> Engine::own(const Ref& node) { return own_cell(node); }

}  // namespace packfs::mem
