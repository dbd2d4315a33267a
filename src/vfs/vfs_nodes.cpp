// The Vfs's node calls (docs/VFS.md "Nodes"): lookups that cross mount points, merged union
// directories, and every mutation forwarded to the member that holds the node. Each is written
// once, on a node's description (the *_of / *_in functions); the node calls describe their node
// ids and intern what they make, and the path calls' walk (vfs.cpp) calls the same functions on
// descriptions it holds for the length of one call, so both answer alike.
//
// What a node id stands for is in core/union_nodes.hpp. The rules, each the path calls' own:
// - lookup(dir, name) in a directory that can hold mount points first asks the current mount
//   table whether dir/name is a mount point (then the node is the union mounted there); else
//   the members' nodes of dir answer, the first that has the name deciding what it is, and a
//   directory merging with the same directory in the members below it. A name that only leads
//   to mounts further down is a synthetic directory.
// - Reads of a node go to its top part; a synthetic directory answers as the path calls'
//   virtual directory does.
// - A change to an existing entry goes to the part that holds it (EROFS when that one is not
//   writable); a new entry goes to the part that holds the name or else the first writable
//   part; a rename or link whose two directories have no part in one mount is EXDEV.
#include "vfs/vfs_impl.hpp"

#include <fcntl.h>

#include <optional>

#include "core/checks.hpp"

namespace packfs::vfs {
namespace {

// What dir/name is in the mount table, for a directory that can hold mount points.
struct Crossing {
    const UnionPtr* mounted = nullptr;  // dir/name is a mount point: its union
    bool mounts_below = false;          // something is mounted at or below dir/name
    std::string path;                   // dir/name; empty when dir has no path
};

Crossing crossing(const Table& table, const NodeDesc& dir, std::string_view name) {
    Crossing c;
    if (dir.path.empty()) return c;
    c.path = path_join(dir.path, name);
    c.mounted = table.mounts.find(c.path);
    c.mounts_below = c.mounted != nullptr || has_mount_below(table, c.path);
    return c;
}

// The Vfs's union rules (core/union_nodes.hpp): a lower member's non-directory under an upper
// directory is passed over, and a lower member's error, once an upper one answered, too.
constexpr unions::MergeRules kVfsRules{.non_directory_hides_below = false,
                                       .lower_errors_fail = false};

// The part of a directory that holds `name`: the first whose lookup answers anything but ENOENT
// (it has the name, or fails on it and reports that itself when asked to change it).
struct Holding {
    const Part* part = nullptr;  // null: no part has the name
    std::optional<Entry> entry;  // what the holder found (one reference), when kept
    std::optional<Error> error;  // what the holder failed with
};

Holding holder_of(const std::vector<Part>& parts, std::string_view name, bool keep) {
    for (const Part& p : parts) {
        auto hit = p.backend->lookup(p.node, name);
        if (hit) {
            Holding h{&p, std::nullopt, std::nullopt};
            if (keep) {
                h.entry = *hit;
            } else {
                p.backend->forget(hit->node, 1);
            }
            return h;
        }
        if (hit.error().code() != ENOENT) return Holding{&p, std::nullopt, hit.error()};
    }
    return {};
}

const Part* first_writable_part(const std::vector<Part>& parts) {
    for (const Part& p : parts) {
        if (p.writable) return &p;
    }
    return nullptr;
}

// The part of a directory in the member `member` (a Member's id), if it has one.
const Part* part_in(const std::vector<Part>& parts, uint64_t member) {
    for (const Part& p : parts) {
        if (p.layer == member) return &p;
    }
    return nullptr;
}

// A new member node (one reference, just handed by `in`'s member) as the only part of a node.
NodeDesc single(const Part& in, Node node) {
    NodeDesc d;
    d.parts.push_back(Part{in.backend, in.layer, in.writable, node});
    return d;
}

template <class T>
std::unexpected<Error> error_of(const Result<T>& r) {
    return std::unexpected(r.error());
}

}  // namespace

// --- what a node is ----------------------------------------------------------------------------

Result<DescPtr> VfsImpl::describe(Node node, const Table& table, std::string_view op) const {
    if (node == kRootNode) return table.root;
    if (DescPtr d = nodes_.find(node.id)) return d;
    return std::unexpected(Error(ESTALE, op));
}

Result<DescPtr> VfsImpl::describe(Node node, std::string_view op) const {
    if (node == kRootNode) {
        Published<Table>::Reader table(table_);
        return table->root;
    }
    if (DescPtr d = nodes_.find(node.id)) return d;
    return std::unexpected(Error(ESTALE, op));
}

void VfsImpl::forget(Node node, uint64_t count) noexcept {
    if (!node || node == kRootNode || count == 0) return;
    nodes_.forget(node.id, count);
}

Entry VfsImpl::interned(Made made) {
    return Entry{Node{nodes_.intern(std::move(made.desc))}, made.stat};
}

// --- reads -----------------------------------------------------------------------------------

Result<VfsImpl::Made> VfsImpl::lookup_in(const Table& table, const NodeDesc& parent,
                                         std::string_view name) const {
    Crossing c = crossing(table, parent, name);
    Made out;
    NodeDesc& child = out.desc;
    child.path = std::move(c.path);
    if (c.mounted) {
        // A mount point: the roots of the members mounted there, whatever parent holds there.
        for (const Member& m : **c.mounted) child.parts.push_back(m.root_part());
        auto st = child.top().backend->getattr(kRootNode);
        if (!st) return error_of(st);
        out.stat = *st;
        return out;
    }
    auto found = unions::merge_lookup(parent.parts, name, kVfsRules);
    if (!found) return error_of(found);
    child.parts = std::move(found->parts);
    out.stat = found->stat;
    if (child.parts.empty()) {
        if (!c.mounts_below) return fail(ENOENT, "lookup", name);
        out.stat = virtual_dir_stat(child.path, created_);  // only leads to mounts: synthetic
    } else if (!c.mounts_below || out.stat.type != FileType::directory) {
        child.path.clear();  // no mount can be met below it: a plain member node
    }
    return out;
}

Result<Entry> VfsImpl::lookup(Node dir, std::string_view name) {
    if (auto ok = check_name(name, "lookup"); !ok) return error_of(ok);
    Published<Table>::Reader table(table_);
    auto d = describe(dir, *table, "lookup");
    if (!d) return error_of(d);
    auto child = lookup_in(*table, **d, name);
    if (!child) return error_of(child);
    return interned(std::move(*child));
}

Result<Stat> VfsImpl::getattr_of(const NodeDesc& desc) const {
    if (desc.synthetic()) return virtual_dir_stat(desc.path, created_);
    return desc.top().backend->getattr(desc.top().node);
}

Result<Stat> VfsImpl::getattr(Node node) {
    auto d = describe(node, "getattr");
    if (!d) return error_of(d);
    return getattr_of(**d);
}

Result<std::vector<DirEntry>> VfsImpl::list_of(const Table& table, const NodeDesc& desc) const {
    std::vector<DirEntry> out;
    if (!desc.parts.empty()) {
        auto listing = unions::merge_list(desc.parts, kVfsRules);
        if (!listing) return error_of(listing);
        out = std::move(*listing);
    }
    if (!desc.path.empty())
        add_mount_children(table, desc.path, mount_children(table, desc.path), out);
    return out;
}

Result<std::vector<DirEntry>> VfsImpl::list(Node dir) {
    Published<Table>::Reader table(table_);
    auto d = describe(dir, *table, "readdir");
    if (!d) return error_of(d);
    return list_of(*table, **d);
}

Result<std::string> VfsImpl::readlink_of(const NodeDesc& desc) const {
    if (desc.synthetic()) return fail(EINVAL, "readlink", desc.path);
    return desc.top().backend->readlink(desc.top().node);
}

Result<std::string> VfsImpl::readlink(Node node) {
    auto d = describe(node, "readlink");
    if (!d) return error_of(d);
    return readlink_of(**d);
}

Result<StatFs> VfsImpl::statfs_of(const NodeDesc& desc) const {
    if (desc.synthetic()) return StatFs{};
    return desc.top().backend->statfs(desc.top().node);
}

Result<StatFs> VfsImpl::statfs(Node node) {
    auto d = describe(node, "statfs");
    if (!d) return error_of(d);
    return statfs_of(**d);
}

Result<std::string> VfsImpl::getxattr_of(const NodeDesc& desc, std::string_view name) const {
    if (desc.synthetic()) return fail(ENODATA, "getxattr", desc.path);
    return desc.top().backend->getxattr(desc.top().node, name);
}

Result<std::string> VfsImpl::getxattr(Node node, std::string_view name) {
    auto d = describe(node, "getxattr");
    if (!d) return error_of(d);
    return getxattr_of(**d, name);
}

Result<std::vector<std::string>> VfsImpl::listxattr_of(const NodeDesc& desc) const {
    if (desc.synthetic()) return std::vector<std::string>{};
    return desc.top().backend->listxattr(desc.top().node);
}

Result<std::vector<std::string>> VfsImpl::listxattr(Node node) {
    auto d = describe(node, "listxattr");
    if (!d) return error_of(d);
    return listxattr_of(**d);
}

Result<FileHandle> VfsImpl::open_of(const NodeDesc& desc, int flags) {
    if ((flags & O_ACCMODE) == O_ACCMODE) return fail(EINVAL, "open");
    const bool writes = (flags & O_ACCMODE) != O_RDONLY;
    if (desc.synthetic()) {
        if (writes) return fail(EISDIR, "open", desc.path);
        return FileHandle(std::make_unique<VirtualDirFile>(virtual_dir_stat(desc.path, created_)));
    }
    const Part& top = desc.top();
    const bool changing = writes || (flags & O_TRUNC);
    if (changing && !top.writable) {
        // What the node is answers first (EISDIR, ELOOP, ...), then EROFS, as on a read-only
        // mount; a read-only mount of a writable backend never gets a changing open.
        auto st = top.backend->getattr(top.node);
        if (!st) return error_of(st);
        if (auto ok = check_open_target(st->type, flags); !ok) return error_of(ok);
        return fail(EROFS, "open");
    }
    std::optional<Gate::Pass> changes;
    if (changing) changes.emplace(*change_gate_);
    auto file = top.backend->open(top.node, flags);
    if (!file || !writes) return file;
    // Its writes are changes: they share the change lock (see LockedFile).
    return FileHandle(std::make_unique<LockedFile>(std::move(*file), change_gate_));
}

Result<FileHandle> VfsImpl::open(Node node, int flags) {
    if ((flags & O_ACCMODE) == O_ACCMODE) return fail(EINVAL, "open");
    auto d = describe(node, "open");
    if (!d) return error_of(d);
    return open_of(**d, flags);
}

// --- new entries -------------------------------------------------------------------------------

Result<VfsImpl::Made> VfsImpl::create_in(const Table& table, const NodeDesc& desc,
                                         std::string_view name, int flags, uint32_t mode,
                                         std::optional<Owner> owner) {
    // A mount point, or a name leading to one, is a directory.
    if (crossing(table, desc, name).mounts_below)
        return fail((flags & O_EXCL) ? EEXIST : EISDIR, "create", name);
    if (desc.synthetic()) return fail(EROFS, "create", name);
    const bool writes = (flags & O_ACCMODE) != O_RDONLY;

    const Part* target = nullptr;
    if (desc.parts.size() == 1 && desc.top().writable) {
        target = &desc.top();  // the member makes or opens the name, in one step
    } else {
        Holding h = holder_of(desc.parts, name, true);
        if (h.part && !h.part->writable) {
            // A part that cannot change holds the name: what is there opens read-only, as on a
            // read-only filesystem (O_EXCL: EEXIST; a change: EROFS).
            if (h.error) return std::unexpected(*h.error);
            const Part& in = *h.part;
            HeldNode held(*in.backend, h.entry->node);
            if (flags & O_EXCL) return fail(EEXIST, "create", name);
            if (auto ok = check_open_target(h.entry->stat.type, flags); !ok) return error_of(ok);
            if (writes || (flags & O_TRUNC)) return fail(EROFS, "create", name);
            auto file = in.backend->open(h.entry->node, flags);
            if (!file) return error_of(file);
            return Made{single(in, held.release()), h.entry->stat, std::move(*file)};
        }
        if (h.entry) h.part->backend->forget(h.entry->node, 1);
        // The part that has the name opens it (or reports why not); else the first writable
        // part makes it.
        target = h.part ? h.part : first_writable_part(desc.parts);
    }
    if (!target) return fail(EROFS, "create", name);
    auto made = target->backend->create(target->node, name, flags, mode, owner);
    if (!made) return error_of(made);
    FileHandle file = std::move(made->file);
    if (writes) file = std::make_unique<LockedFile>(std::move(file), change_gate_);
    return Made{single(*target, made->entry.node), made->entry.stat, std::move(file)};
}

Result<Created> VfsImpl::create(Node dir, std::string_view name, int flags, uint32_t mode,
                                std::optional<Owner> owner) {
    if (auto ok = check_name(name, "create"); !ok) return error_of(ok);
    if ((flags & O_ACCMODE) == O_ACCMODE) return fail(EINVAL, "create", name);
    Gate::Pass changes(*change_gate_);
    Published<Table>::Reader table(table_);
    auto d = describe(dir, *table, "create");
    if (!d) return error_of(d);
    auto made = create_in(*table, **d, name, flags, mode, owner);
    if (!made) return error_of(made);
    FileHandle file = std::move(made->file);
    return Created{interned(std::move(*made)), std::move(file)};
}

template <class Make>
Result<VfsImpl::Made> VfsImpl::make_in(const Table& table, const NodeDesc& desc,
                                       std::string_view name, std::string_view op, Make&& make) {
    if (crossing(table, desc, name).mounts_below) return fail(EEXIST, op, name);
    if (desc.synthetic()) return fail(EROFS, op, name);
    const Part* target = &desc.top();
    if (desc.parts.size() > 1) {
        Holding h = holder_of(desc.parts, name, false);
        if (h.part && !h.part->writable) return fail(h.error ? EROFS : EEXIST, op, name);
        target = h.part ? h.part : first_writable_part(desc.parts);
    }
    if (!target || !target->writable) return fail(EROFS, op, name);
    Result<Entry> made = make(*target);
    if (!made) return error_of(made);
    return Made{single(*target, made->node), made->stat, nullptr};
}

template <class Make>
Result<Entry> VfsImpl::make_node(Node dir, std::string_view name, std::string_view op,
                                 Make&& make) {
    if (auto ok = check_name(name, op); !ok) return error_of(ok);
    Gate::Pass changes(*change_gate_);
    Published<Table>::Reader table(table_);
    auto d = describe(dir, *table, op);
    if (!d) return error_of(d);
    auto made = make(*table, **d);
    if (!made) return error_of(made);
    return interned(std::move(*made));
}

Result<VfsImpl::Made> VfsImpl::mkdir_in(const Table& table, const NodeDesc& dir,
                                        std::string_view name, uint32_t mode,
                                        std::optional<Owner> owner) {
    return make_in(table, dir, name, "mkdir", [&](const Part& p) {
        return p.backend->mkdir(p.node, name, mode, owner);
    });
}

Result<Entry> VfsImpl::mkdir(Node dir, std::string_view name, uint32_t mode,
                             std::optional<Owner> owner) {
    return make_node(dir, name, "mkdir", [&](const Table& table, const NodeDesc& d) {
        return mkdir_in(table, d, name, mode, owner);
    });
}

Result<VfsImpl::Made> VfsImpl::mknod_in(const Table& table, const NodeDesc& dir,
                                        std::string_view name, FileType type, uint32_t mode,
                                        uint64_t rdev, std::optional<Owner> owner) {
    return make_in(table, dir, name, "mknod", [&](const Part& p) {
        return p.backend->mknod(p.node, name, type, mode, rdev, owner);
    });
}

Result<Entry> VfsImpl::mknod(Node dir, std::string_view name, FileType type, uint32_t mode,
                             uint64_t rdev, std::optional<Owner> owner) {
    // As mknod(2): the type is judged before the name.
    if (type == FileType::directory || type == FileType::symlink)
        return fail(EINVAL, "mknod", name);
    return make_node(dir, name, "mknod", [&](const Table& table, const NodeDesc& d) {
        return mknod_in(table, d, name, type, mode, rdev, owner);
    });
}

Result<VfsImpl::Made> VfsImpl::symlink_in(const Table& table, const NodeDesc& dir,
                                          std::string_view name, std::string_view target,
                                          std::optional<Owner> owner) {
    return make_in(table, dir, name, "symlink", [&](const Part& p) {
        return p.backend->symlink(p.node, name, target, owner);
    });
}

Result<Entry> VfsImpl::symlink(Node dir, std::string_view name, std::string_view target,
                               std::optional<Owner> owner) {
    // As symlink(2): the target is judged first.
    if (auto ok = check_symlink_target(target, name); !ok) return error_of(ok);
    return make_node(dir, name, "symlink", [&](const Table& table, const NodeDesc& d) {
        return symlink_in(table, d, name, target, owner);
    });
}

Result<VfsImpl::Made> VfsImpl::link_in(const Table& table, const NodeDesc& source,
                                       const NodeDesc& desc, std::string_view name) {
    const Crossing target = crossing(table, desc, name);
    if (source.synthetic() || !source.path.empty()) {
        // A directory the Vfs knows by path (the root, a mount point, one holding mounts),
        // reached here by a walk (a symlink to it): answered as a member asked to link a
        // directory answers, EEXIST for a name that is there, else EPERM.
        Holding h = holder_of(desc.parts, name, false);
        const bool there = target.mounts_below || (h.part && !h.error);
        return fail(there ? EEXIST : EPERM, "link", name);
    }
    if (target.mounts_below) return fail(EBUSY, "link", name);
    const Part& from = source.top();
    const Part* to = part_in(desc.parts, from.layer);
    if (!to) return fail(EXDEV, "link", name);
    if (desc.parts.size() > 1) {
        // The name may exist only in the member the source is in.
        Holding h = holder_of(desc.parts, name, false);
        if (h.part && h.part->layer != from.layer) return fail(EXDEV, "link", name);
    }
    if (!from.writable) return fail(EROFS, "link", name);
    auto made = from.backend->link(from.node, to->node, name);
    if (!made) return error_of(made);
    return Made{single(from, made->node), made->stat, nullptr};
}

Result<Entry> VfsImpl::link(Node node, Node dir, std::string_view name) {
    if (auto ok = check_name(name, "link"); !ok) return error_of(ok);
    Gate::Pass changes(*change_gate_);
    Published<Table>::Reader table(table_);
    auto n = describe(node, *table, "link");
    if (!n) return error_of(n);
    auto d = describe(dir, *table, "link");
    if (!d) return error_of(d);
    auto made = link_in(*table, **n, **d, name);
    if (!made) return error_of(made);
    return interned(std::move(*made));
}

// --- changes to existing entries ---------------------------------------------------------------

Result<void> VfsImpl::remove_in(const Table& table, const NodeDesc& desc, std::string_view name,
                                bool is_dir) {
    const std::string_view op = is_dir ? "rmdir" : "unlink";
    Crossing c = crossing(table, desc, name);
    if (c.mounted) {
        // A mount point: what its first member answers for its own root.
        if (!(*c.mounted)->front().writable()) return fail(EROFS, op, name);
        return fail(is_dir ? EBUSY : EISDIR, op, name);
    }
    const Part* h = desc.parts.size() == 1 ? &desc.top() : holder_of(desc.parts, name, false).part;
    // Nobody holds it: a name that only leads to mounts is the (read-only) synthetic directory.
    if (!h) return fail(c.mounts_below ? EROFS : ENOENT, op, name);
    if (!h->writable) return fail(EROFS, op, name);
    return is_dir ? h->backend->rmdir(h->node, name) : h->backend->unlink(h->node, name);
}

Result<void> VfsImpl::remove_node(Node dir, std::string_view name, bool is_dir) {
    const std::string_view op = is_dir ? "rmdir" : "unlink";
    if (auto ok = check_name(name, op); !ok) return ok;
    Gate::Pass changes(*change_gate_);
    Published<Table>::Reader table(table_);
    auto d = describe(dir, *table, op);
    if (!d) return error_of(d);
    return remove_in(*table, **d, name, is_dir);
}

Result<void> VfsImpl::unlink(Node dir, std::string_view name) {
    return remove_node(dir, name, false);
}

Result<void> VfsImpl::rmdir(Node dir, std::string_view name) {
    return remove_node(dir, name, true);
}

Result<VfsImpl::RenameParts> VfsImpl::rename_parts(const Table& table, const NodeDesc& src,
                                                   std::string_view name, const NodeDesc& dst,
                                                   std::string_view to_name) const {
    // A mount point, or a directory holding one, stays where it is.
    if (crossing(table, src, name).mounts_below) return fail(EBUSY, "rename", name);
    if (crossing(table, dst, to_name).mounts_below) return fail(EBUSY, "rename", to_name);
    if (src.synthetic()) return fail(ENOENT, "rename", name);
    const Part* from = &src.top();
    if (src.parts.size() > 1) {
        // The part that holds the source; with none, the first writable one answers (its own
        // checks give ENOENT, or EROFS when none can change).
        from = holder_of(src.parts, name, false).part;
        if (!from) from = first_writable_part(src.parts);
        if (!from) from = &src.top();
    }
    const Part* to = part_in(dst.parts, from->layer);
    if (!to) return fail(EXDEV, "rename", name);
    if (dst.parts.size() > 1) {
        // The target may exist only in the member the source is in.
        Holding h = holder_of(dst.parts, to_name, false);
        if (h.part && h.part->layer != from->layer) return fail(EXDEV, "rename", to_name);
    }
    if (!from->writable) return fail(EROFS, "rename", name);
    return RenameParts{from, to};
}

Result<void> VfsImpl::may_rename_in(const Table& table, const NodeDesc& src,
                                    std::string_view name, const NodeDesc& dst,
                                    std::string_view to_name) const {
    auto parts = rename_parts(table, src, name, dst, to_name);
    if (!parts) return error_of(parts);
    return {};
}

Result<void> VfsImpl::rename(Node dir, std::string_view name, Node to_dir,
                             std::string_view to_name, RenameFlags flags) {
    if (auto ok = check_name(name, "rename"); !ok) return ok;
    if (auto ok = check_name(to_name, "rename"); !ok) return ok;
    Gate::Pass changes(*change_gate_);
    Published<Table>::Reader table(table_);
    auto s = describe(dir, *table, "rename");
    if (!s) return error_of(s);
    auto t = describe(to_dir, *table, "rename");
    if (!t) return error_of(t);
    return rename_in(*table, **s, name, **t, to_name, flags);
}

Result<void> VfsImpl::rename_in(const Table& table, const NodeDesc& src, std::string_view name,
                                const NodeDesc& dst, std::string_view to_name, RenameFlags flags) {
    auto parts = rename_parts(table, src, name, dst, to_name);
    if (!parts) return error_of(parts);
    const Part& from = *parts->from;
    return from.backend->rename(from.node, name, parts->to->node, to_name, flags);
}

Result<Stat> VfsImpl::setattr_of(const NodeDesc& desc, const SetAttr& change) {
    if (desc.synthetic() || !desc.top().writable) return fail(EROFS, "setattr", desc.path);
    return desc.top().backend->setattr(desc.top().node, change);
}

Result<Stat> VfsImpl::setattr(Node node, const SetAttr& change) {
    Gate::Pass changes(*change_gate_);
    auto d = describe(node, "setattr");
    if (!d) return error_of(d);
    return setattr_of(**d, change);
}

// Within one mounted backend: its own copy_range (which may share storage); across two, the
// default's copy through handles of this Vfs (each write a change of its own).
Result<uint64_t> VfsImpl::copy_range(Node from, uint64_t offset, Node to, uint64_t to_offset,
                                     uint64_t length) {
    {
        Gate::Pass changes(*change_gate_);
        auto s = describe(from, "copy_file_range");
        if (!s) return error_of(s);
        auto t = describe(to, "copy_file_range");
        if (!t) return error_of(t);
        const NodeDesc& source = **s;
        const NodeDesc& target = **t;
        if (source.synthetic() || target.synthetic()) return fail(EISDIR, "copy_file_range");
        if (!target.top().writable) return fail(EROFS, "copy_file_range", target.path);
        if (source.top().backend == target.top().backend)
            return source.top().backend->copy_range(source.top().node, offset, target.top().node,
                                                    to_offset, length);
    }
    return Backend::copy_range(from, offset, to, to_offset, length);
}

Result<void> VfsImpl::setxattr_of(const NodeDesc& desc, std::string_view name,
                                  std::string_view value, XattrMode mode) {
    if (desc.synthetic() || !desc.top().writable) return fail(EROFS, "setxattr", desc.path);
    return desc.top().backend->setxattr(desc.top().node, name, value, mode);
}

Result<void> VfsImpl::setxattr(Node node, std::string_view name, std::string_view value,
                               XattrMode mode) {
    Gate::Pass changes(*change_gate_);
    auto d = describe(node, "setxattr");
    if (!d) return error_of(d);
    return setxattr_of(**d, name, value, mode);
}

Result<void> VfsImpl::removexattr_of(const NodeDesc& desc, std::string_view name) {
    if (desc.synthetic() || !desc.top().writable) return fail(EROFS, "removexattr", desc.path);
    return desc.top().backend->removexattr(desc.top().node, name);
}

Result<void> VfsImpl::removexattr(Node node, std::string_view name) {
    Gate::Pass changes(*change_gate_);
    auto d = describe(node, "removexattr");
    if (!d) return error_of(d);
    return removexattr_of(**d, name);
}

}  // namespace packfs::vfs
