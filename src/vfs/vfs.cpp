// The Vfs's path calls (walks of its node calls, vfs_nodes.cpp), its listing of mount points,
// its snapshots and its factory (see vfs.hpp for the semantics, vfs_impl.hpp for the class).
#include "vfs/vfs_impl.hpp"

#include "core/path_api.hpp"

#include <deque>
#include <optional>
#include <unordered_map>

namespace packfs::vfs {

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

// --- the path calls ----------------------------------------------------------------------------
//
// Each is the path API's walk (core/path_api.hpp, the Backend defaults' own) over WalkOps: the
// node calls' functions on descriptions (vfs_nodes.cpp), with the descriptions a walk meets
// held by the walk itself for the length of the call instead of interned as node ids. Each
// step reads the current table and passes the change gate as the node call would, so a path
// call answers what the same walk by node (FUSE) answers.
//
// One shortcut more: when the whole namespace is one writable member mounted at "/" (nothing
// mounted anywhere else), the Vfs's root is that member's root and every node call goes to it
// unchanged, so its own path calls (a walk of its own nodes from that root, by the contract)
// answer exactly what the walk would, in fewer steps. Changes still pass the change gate and
// writable handles are still wrapped, as the node calls do.

namespace {

class WalkOps {
public:
    using NodeT = const NodeDesc*;

    explicit WalkOps(VfsImpl& vfs) : vfs_(vfs) {
        Published<Table>::Reader table(vfs_.table());
        root_ = table->root;
    }
    WalkOps(const WalkOps&) = delete;
    WalkOps& operator=(const WalkOps&) = delete;

    Result<NodeT> root() const noexcept { return root_.get(); }
    Result<std::optional<walk::Step<NodeT>>> lookup(NodeT dir, std::string_view name) {
        Published<Table>::Reader table(vfs_.table());
        auto child = vfs_.lookup_in(*table, *dir, name);
        if (!child) {
            if (child.error().code() == ENOENT) return std::nullopt;
            return std::unexpected(child.error());
        }
        return walk::Step<NodeT>{keep(std::move(child->desc)), child->stat.type};
    }
    Result<std::string> readlink(NodeT n) { return vfs_.readlink_of(*n); }

    // The walker's fast try (core/walker.hpp): the same lookups, answered only when the name
    // simply exists (the try gives up on anything else and the walk above answers).
    bool fast_lookup(NodeT dir, std::string_view name, walk::Step<NodeT>& out) {
        auto found = lookup(dir, name);
        if (!found || !*found) return false;
        out = **found;
        return true;
    }
    // Where the fast try of "/p/name" starts: the mount-prefix shortcut. When exactly one
    // prefix M of `prefix` is a mount point (nothing mounted at "/" or anywhere else above),
    // every directory above M is synthetic, so a walk from the root reaches M's union without
    // meeting a member: it starts there, from the table, and walks only the rest of `prefix`
    // (plain directories; anything else and the walk from the root answers).
    bool cached_dir(std::string_view prefix, NodeT& out) {
        const NodeDesc* at = nullptr;
        std::size_t mount_length = 0;
        {
            Published<Table>::Reader table(vfs_.table());
            if (!table->root->synthetic()) return false;
            std::size_t end = prefix.size();
            std::size_t components = 0;
            for (std::size_t i = 1; i < prefix.size(); ++i) components += prefix[i] == '/';
            if (components + 1 > table->deepest) {
                // No mount is deeper than `deepest` components: start probing there.
                end = 0;
                for (std::size_t seen = 0; seen < table->deepest; ++seen)
                    end = prefix.find('/', end + 1);
                if (table->deepest == 0 || end == std::string_view::npos) return false;
            }
            const UnionPtr* mounted = nullptr;
            for (;;) {
                if (const UnionPtr* hit = table->mounts.find(prefix.substr(0, end))) {
                    if (mounted) return false;  // a second mount above: members met on the way
                    mounted = hit;
                    mount_length = end;
                }
                end = prefix.rfind('/', end - 1);
                if (end == 0 || end == std::string_view::npos) break;
            }
            if (!mounted) return false;
            NodeDesc desc;
            desc.path = std::string(prefix.substr(0, mount_length));
            for (const Member& m : **mounted) desc.parts.push_back(m.root_part());
            auto st = desc.top().backend->getattr(kRootNode);
            if (!st || st->type != FileType::directory) return false;
            at = keep(std::move(desc));
        }
        // The rest of the prefix, each component a plain name of a directory.
        std::string_view rest = prefix.substr(mount_length);
        while (!rest.empty()) {
            rest.remove_prefix(1);  // the '/'
            const std::size_t slash = rest.find('/');
            const std::string_view name = rest.substr(0, slash);
            rest.remove_prefix(slash == std::string_view::npos ? rest.size() : slash);
            walk::Step<NodeT> step;
            if (name.empty() || name.size() > kMaxNameLength || name == "." || name == ".." ||
                name.find('\0') != std::string_view::npos || !fast_lookup(at, name, step)) {
                release(at);
                return false;
            }
            release(at);
            if (step.type != FileType::directory) {
                release(step.node);
                return false;
            }
            at = step.node;
        }
        out = at;
        return true;
    }
    void remember_dir(std::string_view, NodeT) {}

    // Each description but the root's was made by one lookup for one walk step, and is
    // released once: its member references go back.
    void release(NodeT n) noexcept {
        if (n && n != root_.get()) NodeTable::release_parts(*n);
    }
    bool read_only() const noexcept { return vfs_.read_only(); }
    bool same(NodeT a, NodeT b) const noexcept {
        if (a == b) return true;
        if (a->path != b->path || a->parts.size() != b->parts.size()) return false;
        for (std::size_t i = 0; i < a->parts.size(); ++i) {
            if (a->parts[i].layer != b->parts[i].layer || a->parts[i].node != b->parts[i].node)
                return false;
        }
        return true;
    }

    Result<Stat> getattr(NodeT n) { return vfs_.getattr_of(*n); }
    Result<std::vector<DirEntry>> list(NodeT n) {
        Published<Table>::Reader table(vfs_.table());
        return vfs_.list_of(*table, *n);
    }
    Result<FileHandle> open(NodeT n, int flags) { return vfs_.open_of(*n, flags); }
    Result<std::string> getxattr(NodeT n, std::string_view name) {
        return vfs_.getxattr_of(*n, name);
    }
    Result<std::vector<std::string>> listxattr(NodeT n) { return vfs_.listxattr_of(*n); }
    Result<StatFs> statfs(NodeT n) { return vfs_.statfs_of(*n); }
    bool has_entries(NodeT dir) {
        auto entries = list(dir);
        return !entries || !entries->empty();  // unknown counts as not empty: refuse
    }

    Result<FileHandle> create(NodeT dir, std::string_view name, int flags, uint32_t mode) {
        return change([&](const Table& table) -> Result<FileHandle> {
            auto made = vfs_.create_in(table, *dir, name, flags, mode, std::nullopt);
            if (!made) return std::unexpected(made.error());
            NodeTable::release_parts(made->desc);
            return std::move(made->file);
        });
    }
    Result<void> mkdir(NodeT dir, std::string_view name, uint32_t mode) {
        return change([&](const Table& table) {
            return given_back(vfs_.mkdir_in(table, *dir, name, mode, std::nullopt));
        });
    }
    Result<void> mknod(NodeT dir, std::string_view name, FileType type, uint32_t mode,
                       uint64_t rdev) {
        return change([&](const Table& table) {
            return given_back(vfs_.mknod_in(table, *dir, name, type, mode, rdev, std::nullopt));
        });
    }
    Result<void> symlink(NodeT dir, std::string_view name, std::string_view target) {
        return change([&](const Table& table) {
            return given_back(vfs_.symlink_in(table, *dir, name, target, std::nullopt));
        });
    }
    Result<void> link(NodeT node, NodeT dir, std::string_view name) {
        return change([&](const Table& table) {
            return given_back(vfs_.link_in(table, *node, *dir, name));
        });
    }
    Result<void> unlink(NodeT dir, std::string_view name) {
        return change([&](const Table& table) { return vfs_.remove_in(table, *dir, name, false); });
    }
    Result<void> rmdir(NodeT dir, std::string_view name) {
        return change([&](const Table& table) { return vfs_.remove_in(table, *dir, name, true); });
    }
    Result<void> may_rename(NodeT dir, std::string_view name, NodeT to_dir,
                            std::string_view to_name) {
        Published<Table>::Reader table(vfs_.table());
        return vfs_.may_rename_in(*table, *dir, name, *to_dir, to_name);
    }
    Result<void> rename(NodeT dir, std::string_view name, NodeT to_dir, std::string_view to_name,
                        RenameFlags flags) {
        return change([&](const Table& table) {
            return vfs_.rename_in(table, *dir, name, *to_dir, to_name, flags);
        });
    }
    Result<void> setattr(NodeT n, const SetAttr& what) {
        return change([&](const Table&) -> Result<void> {
            auto st = vfs_.setattr_of(*n, what);
            if (!st) return std::unexpected(st.error());
            return {};
        });
    }
    Result<void> setxattr(NodeT n, std::string_view name, std::string_view value,
                          XattrMode mode) {
        return change([&](const Table&) { return vfs_.setxattr_of(*n, name, value, mode); });
    }
    Result<void> removexattr(NodeT n, std::string_view name) {
        return change([&](const Table&) { return vfs_.removexattr_of(*n, name); });
    }

private:
    NodeT keep(NodeDesc desc) {
        met_.push_back(std::move(desc));
        return &met_.back();
    }
    // A change, as a node call makes it: through the change gate, on one version of the table.
    template <class Body>
    auto change(Body&& body) -> decltype(body(std::declval<const Table&>())) {
        Gate::Pass pass(vfs_.change_gate());
        Published<Table>::Reader table(vfs_.table());
        return body(*table);
    }
    static Result<void> given_back(Result<VfsImpl::Made> made) {
        if (!made) return std::unexpected(made.error());
        NodeTable::release_parts(made->desc);
        return {};
    }

    VfsImpl& vfs_;
    DescPtr root_;               // the root as the table described it when the call began
    std::deque<NodeDesc> met_;   // every description the walk looked up (stable addresses)
};

using Paths = paths::PathApi<WalkOps>;

}  // namespace

template <class Call, class Walk>
auto VfsImpl::alone(bool changes, Call&& call, Walk&& walk) -> decltype(walk()) {
    {
        std::optional<Gate::Pass> pass;
        if (changes) pass.emplace(*change_gate_);
        Published<Table>::Reader table(table_);  // the member stays mounted while it answers
        const NodeDesc& root = *table->root;
        if (table->deepest == 0 && root.parts.size() == 1 && root.top().writable)
            return call(*root.top().backend);
    }
    // Neither held here: each step of the walk passes the gate and reads the table itself.
    return walk();
}

#define PACKFS_WALK(...)        \
    [&] {                       \
        WalkOps ops(*this);     \
        return Paths(ops).__VA_ARGS__; \
    }

Result<Stat> VfsImpl::stat(std::string_view path) {
    return alone(false, [&](Backend& b) { return b.stat(path); },
                 PACKFS_WALK(stat(path, true, "stat")));
}
Result<Stat> VfsImpl::lstat(std::string_view path) {
    return alone(false, [&](Backend& b) { return b.lstat(path); },
                 PACKFS_WALK(stat(path, false, "lstat")));
}
Result<std::vector<DirEntry>> VfsImpl::readdir(std::string_view path) {
    return alone(false, [&](Backend& b) { return b.readdir(path); }, PACKFS_WALK(readdir(path)));
}
Result<std::string> VfsImpl::readlink(std::string_view path) {
    return alone(false, [&](Backend& b) { return b.readlink(path); },
                 PACKFS_WALK(readlink(path)));
}
Result<StatFs> VfsImpl::statfs(std::string_view path) {
    return alone(false, [&](Backend& b) { return b.statfs(path); }, PACKFS_WALK(statfs(path)));
}
Result<FileHandle> VfsImpl::open(std::string_view path, int flags, uint32_t mode) {
    return alone(
        changes_file(flags),
        [&](Backend& b) -> Result<FileHandle> {
            auto file = b.open(path, flags, mode);
            if (!file || (flags & O_ACCMODE) == O_RDONLY) return file;
            // Its writes are changes: they share the change gate (see LockedFile).
            return FileHandle(std::make_unique<LockedFile>(std::move(*file), change_gate_));
        },
        PACKFS_WALK(open(path, flags, mode)));
}
Result<void> VfsImpl::truncate(std::string_view path, uint64_t size) {
    return alone(true, [&](Backend& b) { return b.truncate(path, size); },
                 PACKFS_WALK(truncate(path, size)));
}
Result<void> VfsImpl::mkdir(std::string_view path, uint32_t mode) {
    return alone(true, [&](Backend& b) { return b.mkdir(path, mode); },
                 PACKFS_WALK(mkdir(path, mode)));
}
Result<void> VfsImpl::rmdir(std::string_view path) {
    return alone(true, [&](Backend& b) { return b.rmdir(path); }, PACKFS_WALK(rmdir(path)));
}
Result<void> VfsImpl::unlink(std::string_view path) {
    return alone(true, [&](Backend& b) { return b.unlink(path); }, PACKFS_WALK(unlink(path)));
}
Result<void> VfsImpl::rename(std::string_view from, std::string_view to, RenameFlags flags) {
    return alone(true, [&](Backend& b) { return b.rename(from, to, flags); },
                 PACKFS_WALK(rename(from, to, flags)));
}
Result<void> VfsImpl::symlink(std::string_view target, std::string_view link_path) {
    return alone(true, [&](Backend& b) { return b.symlink(target, link_path); },
                 PACKFS_WALK(symlink(target, link_path)));
}
Result<void> VfsImpl::link(std::string_view existing, std::string_view new_path) {
    return alone(true, [&](Backend& b) { return b.link(existing, new_path); },
                 PACKFS_WALK(link(existing, new_path)));
}
Result<void> VfsImpl::mknod(std::string_view path, FileType type, uint32_t mode, uint64_t rdev) {
    return alone(true, [&](Backend& b) { return b.mknod(path, type, mode, rdev); },
                 PACKFS_WALK(mknod(path, type, mode, rdev)));
}
Result<void> VfsImpl::chmod(std::string_view path, uint32_t mode) {
    return alone(true, [&](Backend& b) { return b.chmod(path, mode); },
                 PACKFS_WALK(chmod(path, mode)));
}
Result<void> VfsImpl::chown(std::string_view path, uint32_t uid, uint32_t gid, Follow follow) {
    return alone(true, [&](Backend& b) { return b.chown(path, uid, gid, follow); },
                 PACKFS_WALK(chown(path, uid, gid, follow)));
}
Result<void> VfsImpl::utimens(std::string_view path, TimeUpdate atime, TimeUpdate mtime,
                              Follow follow) {
    return alone(true, [&](Backend& b) { return b.utimens(path, atime, mtime, follow); },
                 PACKFS_WALK(utimens(path, atime, mtime, follow)));
}
Result<std::string> VfsImpl::getxattr(std::string_view path, std::string_view name) {
    return alone(false, [&](Backend& b) { return b.getxattr(path, name); },
                 PACKFS_WALK(getxattr(path, name)));
}
Result<void> VfsImpl::setxattr(std::string_view path, std::string_view name,
                               std::string_view value, XattrMode mode) {
    return alone(true, [&](Backend& b) { return b.setxattr(path, name, value, mode); },
                 PACKFS_WALK(setxattr(path, name, value, mode)));
}
Result<std::vector<std::string>> VfsImpl::listxattr(std::string_view path) {
    return alone(false, [&](Backend& b) { return b.listxattr(path); },
                 PACKFS_WALK(listxattr(path)));
}
Result<void> VfsImpl::removexattr(std::string_view path, std::string_view name) {
    return alone(true, [&](Backend& b) { return b.removexattr(path, name); },
                 PACKFS_WALK(removexattr(path, name)));
}

#undef PACKFS_WALK

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
        auto it = snapshots.find(p.layer);
        if (it == snapshots.end()) return std::nullopt;
        return Part{it->second, p.layer, false, p.node};
    });
    return out;
}

}  // namespace packfs::vfs

namespace packfs {

std::shared_ptr<Vfs> Vfs::create() {
    return std::make_shared<vfs::VfsImpl>(vfs::seal(vfs::Table{}), false, Time::now());
}

}  // namespace packfs
