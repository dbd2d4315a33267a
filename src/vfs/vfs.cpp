// The Vfs's path calls: dispatch of each through the mount table to the members' own path
// calls (see vfs.hpp for the semantics, vfs_impl.hpp for the class).
#include "vfs/vfs_impl.hpp"

#include <unordered_map>
#include <unordered_set>

namespace packfs::vfs {

Result<std::vector<DirEntry>> VfsImpl::readdir(std::string_view path) {
    auto normal = NormalPath::make(path, "readdir");
    if (!normal) return std::unexpected(normal.error());
    Published<Table>::Reader table(table_);
    Target t = dispatch(*table, normal->view(), normal->wants_dir());
    // Mount points below this directory are entries of it, whatever the backends hold.
    std::vector<std::string> children = mount_children(*table, normal->view());
    std::vector<DirEntry> out;
    bool exists = false;
    if (t.members && t.members->size() == 1) {
        // One member: its listing as it is (no copy of the names), then the mounts below.
        auto listing = t.members->front().backend->readdir(t.inner());
        if (listing) {
            exists = true;
            out = std::move(*listing);
        } else if (listing.error().code() != ENOENT || children.empty()) {
            if (!(normal->is_root() && listing.error().code() == ENOENT))
                return std::unexpected(listing.error().with_path(path));
        }
    } else if (t.members) {
        // A union: members in order, the first entry of a name wins.
        std::unordered_set<std::string> seen;
        for (const Member& m : *t.members) {
            auto listing = m.backend->readdir(t.inner());
            if (!listing) {
                if (listing.error().code() == ENOENT) continue;
                if (!exists) return std::unexpected(listing.error().with_path(path));
                continue;  // a lower member has a non-directory there: the upper one wins
            }
            exists = true;
            for (DirEntry& e : *listing) {
                if (seen.insert(e.name).second) out.push_back(std::move(e));
            }
        }
    }
    if (!exists && children.empty() && !normal->is_root()) return fail(ENOENT, "readdir", path);
    add_mount_children(*table, normal->view(), std::move(children), out);
    return out;
}

void VfsImpl::add_mount_children(const Table& table, std::string_view dir,
                                 std::vector<std::string> children,
                                 std::vector<DirEntry>& out) const {
    if (children.empty()) return;
    // A child that is itself a mount point is listed as the mounted root (what lstat of it
    // answers); one that only leads to mounts further down is a virtual directory. A name the
    // backends also hold is covered by the mount.
    std::unordered_map<std::string, std::size_t> listed;  // only the mount children's names
    for (const std::string& name : children) listed.emplace(name, SIZE_MAX);
    for (std::size_t i = 0; i < out.size(); ++i) {
        if (auto it = listed.find(out[i].name); it != listed.end()) it->second = i;
    }
    for (std::string& name : children) {
        std::string child = path_join(dir, name);
        uint64_t ino = virtual_dir_stat(child, created_).ino;
        if (const UnionPtr* mounted = table.mounts.find(child)) {
            for (const Member& m : **mounted) {
                if (auto root = m.backend->lstat("/")) {
                    ino = root->ino;
                    break;
                }
            }
        }
        const std::size_t at = listed[name];
        if (at != SIZE_MAX) {
            out[at].ino = ino;
            out[at].type = FileType::directory;
        } else {
            out.push_back(DirEntry{std::move(name), ino, FileType::directory});
        }
    }
}

Result<FileHandle> VfsImpl::open(std::string_view path, int flags, uint32_t mode) {
    auto normal = NormalPath::make(path, "open");
    if (!normal) return std::unexpected(normal.error());
    const bool changing = changes_file(flags);
    std::optional<Gate::Pass> changes;
    if (changing) changes.emplace(*change_gate_);
    Published<Table>::Reader table(table_);
    Target t = dispatch(*table, normal->view(), normal->wants_dir());
    // A directory only the mount table makes (asked only when no member has the path).
    auto is_virtual = [&] { return normal->is_root() || has_mount_below(*table, normal->view()); };
    // Writable handles take the change lock for their writes (see LockedFile).
    auto wrap = [&](Result<FileHandle> r) -> Result<FileHandle> {
        if (!r) return std::unexpected(r.error().with_path(path));
        if ((flags & O_ACCMODE) == O_RDONLY) return r;
        return FileHandle(std::make_unique<LockedFile>(std::move(*r), change_gate_));
    };
    auto open_virtual = [&]() -> Result<FileHandle> {
        if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_CREAT)) return fail(EISDIR, "open", path);
        return FileHandle(
            std::make_unique<VirtualDirFile>(virtual_dir_stat(normal->view(), created_)));
    };
    if (!t.members) {
        if (is_virtual()) return open_virtual();
        return fail((flags & O_CREAT) ? EROFS : ENOENT, "open", path);
    }
    if (t.members->size() == 1) {
        const Member& only = t.members->front();
        if (changing && !only.writable() && !only.backend->read_only()) {
            // A read-only mount of a writable backend: never hand it a changing open, but
            // answer what exists first, as a read-only backend would.
            auto existing = only.backend->stat(t.inner());
            if (!existing && existing.error().code() == ENOENT && !(flags & O_CREAT) &&
                !is_virtual())
                return fail(ENOENT, "open", path);
            if (existing && existing->type == FileType::directory &&
                (flags & O_ACCMODE) != O_RDONLY)
                return fail(EISDIR, "open", path);
            return fail(EROFS, "open", path);
        }
        auto r = only.backend->open(t.inner(), flags, mode);
        if (!r && r.error().code() == ENOENT && is_virtual()) return open_virtual();
        return wrap(std::move(r));
    }
    // A union: the first member that has the path serves it.
    // O_CREAT|O_EXCL never follows a final symlink: the link itself is what exists.
    const bool exclusive = (flags & O_CREAT) && (flags & O_EXCL);
    auto found = holder(*t.members, t.inner_path, !(flags & O_NOFOLLOW) && !exclusive);
    if (!found) return std::unexpected(found.error().with_path(path));
    if (const Member* m = *found) {
        if (changing && !m->writable()) {
            if ((flags & O_CREAT) && (flags & O_EXCL)) return fail(EEXIST, "open", path);
            if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC))
                return fail(EROFS, "open", path);
            return wrap(m->backend->open(t.inner(), flags & ~O_CREAT, mode));
        }
        return wrap(m->backend->open(t.inner(), flags, mode));
    }
    if (flags & O_CREAT) {
        const Member* w = first_writable(*t.members);
        if (!w) return fail(EROFS, "open", path);
        return wrap(w->backend->open(t.inner(), flags, mode));
    }
    if (is_virtual()) return open_virtual();
    return fail(ENOENT, "open", path);
}

template <class Call>
Result<void> VfsImpl::two_paths(std::string_view from, std::string_view to, std::string_view op,
                                Call&& call) {
    auto src = NormalPath::make(from, op);
    if (!src) return std::unexpected(src.error());
    auto dst = NormalPath::make(to, op);
    if (!dst) return std::unexpected(dst.error());
    Gate::Pass changes(*change_gate_);
    Published<Table>::Reader table(table_);
    Target s = dispatch(*table, src->view(), src->wants_dir());
    Target d = dispatch(*table, dst->view(), dst->wants_dir());
    // A mount point, or a directory that holds one, stays where it is.
    for (const auto* p : {&*src, &*dst}) {
        const Target& pt = p == &*src ? s : d;
        if (p->is_root() || p->view() == pt.mount_path || has_mount_below(*table, p->view()))
            return fail(EBUSY, op, p == &*src ? from : to);
    }
    if (!s.members || !d.members) return fail(ENOENT, op, from);
    if (s.members != d.members) return fail(EXDEV, op, from);
    auto found = holder(*s.members, s.inner_path, false);
    if (!found) return std::unexpected(found.error().with_path(from));
    const Member* m = *found;
    if (!m) {
        // No member has the source: the first writable one answers, so the error is the one
        // its own checks give first (a destination under a file is ENOTDIR, not ENOENT). With
        // none writable the first answers, as a read-only filesystem does: EROFS.
        m = first_writable(*s.members);
        if (!m) m = &s.members->front();
        return renamed(call(*m->backend, s.inner(), d.inner()), from);
    }
    if (s.members->size() > 1) {
        // The target may exist only in the member the source is in.
        auto target = holder(*s.members, d.inner_path, false);
        if (!target) return std::unexpected(target.error().with_path(to));
        if (*target && *target != m) return fail(EXDEV, op, to);
    }
    if (!m->writable()) return fail(EROFS, op, from);
    return renamed(call(*m->backend, s.inner(), d.inner()), from);
}

Result<void> VfsImpl::rename(std::string_view from, std::string_view to, RenameFlags flags) {
    return two_paths(from, to, "rename", [&](Backend& b, std::string_view f, std::string_view t) {
        return b.rename(f, t, flags);
    });
}

Result<void> VfsImpl::link(std::string_view existing, std::string_view new_path) {
    return two_paths(existing, new_path, "link",
                     [](Backend& b, std::string_view f, std::string_view t) { return b.link(f, t); });
}

Result<std::shared_ptr<Backend>> VfsImpl::snapshot() {
    // Alone: no change through this Vfs lands between two members' snapshots.
    Gate::Closed changes(*change_gate_);
    TablePtr table = table_.owner();
    Table frozen;
    std::unordered_map<uint64_t, std::shared_ptr<Backend>> snapshots;  // by Member::id
    for (auto it = table->mounts.begin(); it != table->mounts.end(); ++it) {
        Union members;
        for (const Member& m : *it.value()) {
            auto snap = m.backend->snapshot();
            if (!snap) return std::unexpected(snap.error().with_path(it.key()));
            MountOptions options = m.options;
            options.read_only = true;
            snapshots.emplace(m.id, *snap);
            members.push_back(Member{std::move(*snap), options, m.id});
        }
        frozen.put(it.key(), std::make_shared<const Union>(std::move(members)));
    }
    auto out = std::make_shared<VfsImpl>(seal(std::move(frozen)), true, created_,
                                         nodes_.counter());
    // The live nodes are the snapshot's too, under the same ids (as a member's snapshot keeps
    // its node numbers): each part on the member's snapshot. A node of a member no longer
    // mounted has no counterpart there.
    nodes_.copy_into(out->nodes_, [&](const Part& p) -> std::optional<Part> {
        auto it = snapshots.find(p.mount);
        if (it == snapshots.end()) return std::nullopt;
        return Part{it->second, p.mount, false, p.node};
    });
    return out;
}

}  // namespace packfs::vfs

namespace packfs {

std::shared_ptr<Vfs> Vfs::create() {
    return std::make_shared<vfs::VfsImpl>(vfs::seal(vfs::Table{}), false, Time::now());
}

}  // namespace packfs
