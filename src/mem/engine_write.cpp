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

Result<bool> Engine::leaves_whiteout(const Cell* dir, std::string_view name) {
    const uint64_t lower_dir = dir->state.lower;
    if (!lower_dir || !top()) return false;
    if (rebase_expected_) return true;
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
    auto lower_has = leaves_whiteout(*dcell, name);
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
    auto lower_has = leaves_whiteout(*dcell, name);
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
        lower_has = leaves_whiteout(*scell, name);
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

}  // namespace packfs::mem
