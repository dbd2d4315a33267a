// The Backend's defaults: every path call derived from the node calls through the one walker
// (path_api.hpp), and the node mutations of a read-only backend (EROFS).
#include "core/path_api.hpp"

#include "core/checks.hpp"

namespace packfs {
namespace {

// The node calls of any Backend, as the walker and the path layer take them.
struct VirtualOps {
    using NodeT = Node;
    Backend& fs;

    Result<Node> root() const noexcept { return kRootNode; }
    Result<std::optional<walk::Step<Node>>> lookup(Node dir, std::string_view name) {
        auto e = fs.lookup(dir, name);
        if (!e) {
            if (e.error().code() == ENOENT) return std::nullopt;
            return std::unexpected(e.error());
        }
        return walk::Step<Node>{e->node, e->stat.type};
    }
    Result<std::string> readlink(Node n) { return fs.readlink(n); }
    void release(Node n) noexcept {
        if (n && n != kRootNode) fs.forget(n, 1);
    }
    bool read_only() const noexcept { return fs.read_only(); }
    bool same(Node a, Node b) const noexcept { return a == b; }

    Result<Stat> getattr(Node n) { return fs.getattr(n); }
    Result<std::vector<DirEntry>> list(Node n) { return fs.list(n); }
    Result<FileHandle> open(Node n, int flags) { return fs.open(n, flags); }
    Result<std::string> getxattr(Node n, std::string_view name) { return fs.getxattr(n, name); }
    Result<std::vector<std::string>> listxattr(Node n) { return fs.listxattr(n); }
    Result<StatFs> statfs(Node n) { return fs.statfs(n); }
    bool has_entries(Node dir) {
        auto entries = fs.list(dir);
        return !entries || !entries->empty();  // unknown counts as not empty: refuse
    }

    Result<FileHandle> create(Node dir, std::string_view name, int flags, uint32_t mode) {
        auto made = fs.create(dir, name, flags, mode);
        if (!made) return std::unexpected(made.error());
        release(made->entry.node);
        return std::move(made->file);
    }
    template <class R>
    Result<void> made(R&& r) {
        if (!r) return std::unexpected(r.error());
        release(r->node);
        return {};
    }
    Result<void> mkdir(Node dir, std::string_view name, uint32_t mode) {
        return made(fs.mkdir(dir, name, mode));
    }
    Result<void> mknod(Node dir, std::string_view name, FileType type, uint32_t mode,
                       uint64_t rdev) {
        return made(fs.mknod(dir, name, type, mode, rdev));
    }
    Result<void> symlink(Node dir, std::string_view name, std::string_view target) {
        return made(fs.symlink(dir, name, target));
    }
    Result<void> link(Node node, Node dir, std::string_view name) {
        return made(fs.link(node, dir, name));
    }
    Result<void> unlink(Node dir, std::string_view name) { return fs.unlink(dir, name); }
    Result<void> rmdir(Node dir, std::string_view name) { return fs.rmdir(dir, name); }
    Result<void> rename(Node dir, std::string_view name, Node to_dir, std::string_view to_name,
                        RenameFlags flags) {
        return fs.rename(dir, name, to_dir, to_name, flags);
    }
    Result<void> setattr(Node n, const SetAttr& change) {
        auto st = fs.setattr(n, change);
        if (!st) return std::unexpected(st.error());
        return {};
    }
    Result<void> setxattr(Node n, std::string_view name, std::string_view value, XattrMode mode) {
        return fs.setxattr(n, name, value, mode);
    }
    Result<void> removexattr(Node n, std::string_view name) { return fs.removexattr(n, name); }
};

}  // namespace

#define PACKFS_PATHS paths::PathApi<VirtualOps>
#define PACKFS_OPS VirtualOps ops{*this}

Result<Stat> Backend::stat(std::string_view path) {
    PACKFS_OPS;
    return PACKFS_PATHS(ops).stat(path, true, "stat");
}
Result<Stat> Backend::lstat(std::string_view path) {
    PACKFS_OPS;
    return PACKFS_PATHS(ops).stat(path, false, "lstat");
}
Result<std::vector<DirEntry>> Backend::readdir(std::string_view path) {
    PACKFS_OPS;
    return PACKFS_PATHS(ops).readdir(path);
}
Result<std::string> Backend::readlink(std::string_view path) {
    PACKFS_OPS;
    return PACKFS_PATHS(ops).readlink(path);
}
Result<StatFs> Backend::statfs(std::string_view path) {
    PACKFS_OPS;
    return PACKFS_PATHS(ops).statfs(path);
}
Result<FileHandle> Backend::open(std::string_view path, int flags, uint32_t mode) {
    PACKFS_OPS;
    return PACKFS_PATHS(ops).open(path, flags, mode);
}
Result<void> Backend::truncate(std::string_view path, uint64_t size) {
    PACKFS_OPS;
    return PACKFS_PATHS(ops).truncate(path, size);
}
Result<void> Backend::mkdir(std::string_view path, uint32_t mode) {
    PACKFS_OPS;
    return PACKFS_PATHS(ops).mkdir(path, mode);
}
Result<void> Backend::rmdir(std::string_view path) {
    PACKFS_OPS;
    return PACKFS_PATHS(ops).rmdir(path);
}
Result<void> Backend::unlink(std::string_view path) {
    PACKFS_OPS;
    return PACKFS_PATHS(ops).unlink(path);
}
Result<void> Backend::rename(std::string_view from, std::string_view to, RenameFlags flags) {
    PACKFS_OPS;
    return PACKFS_PATHS(ops).rename(from, to, flags);
}
Result<void> Backend::symlink(std::string_view target, std::string_view link_path) {
    PACKFS_OPS;
    return PACKFS_PATHS(ops).symlink(target, link_path);
}
Result<void> Backend::link(std::string_view existing, std::string_view new_path) {
    PACKFS_OPS;
    return PACKFS_PATHS(ops).link(existing, new_path);
}
Result<void> Backend::mknod(std::string_view path, FileType type, uint32_t mode, uint64_t rdev) {
    PACKFS_OPS;
    return PACKFS_PATHS(ops).mknod(path, type, mode, rdev);
}
Result<void> Backend::chmod(std::string_view path, uint32_t mode) {
    PACKFS_OPS;
    return PACKFS_PATHS(ops).chmod(path, mode);
}
Result<void> Backend::chown(std::string_view path, uint32_t uid, uint32_t gid, Follow follow) {
    PACKFS_OPS;
    return PACKFS_PATHS(ops).chown(path, uid, gid, follow);
}
Result<void> Backend::utimens(std::string_view path, TimeUpdate atime, TimeUpdate mtime,
                              Follow follow) {
    PACKFS_OPS;
    return PACKFS_PATHS(ops).utimens(path, atime, mtime, follow);
}
Result<std::string> Backend::getxattr(std::string_view path, std::string_view name) {
    PACKFS_OPS;
    return PACKFS_PATHS(ops).getxattr(path, name);
}
Result<void> Backend::setxattr(std::string_view path, std::string_view name,
                               std::string_view value, XattrMode mode) {
    PACKFS_OPS;
    return PACKFS_PATHS(ops).setxattr(path, name, value, mode);
}
Result<std::vector<std::string>> Backend::listxattr(std::string_view path) {
    PACKFS_OPS;
    return PACKFS_PATHS(ops).listxattr(path);
}
Result<void> Backend::removexattr(std::string_view path, std::string_view name) {
    PACKFS_OPS;
    return PACKFS_PATHS(ops).removexattr(path, name);
}

#undef PACKFS_OPS
#undef PACKFS_PATHS

Result<Entry> lookup_path(Backend& fs, std::string_view path, Follow follow) {
    const std::string_view op = "lookup";
    auto normal = NormalPath::make(path, op);
    if (!normal) return std::unexpected(normal.error());
    VirtualOps ops{fs};
    walk::Walker<VirtualOps> w(ops, op, path);
    auto step = w.resolve(*normal, follow == Follow::yes);
    if (!step) return std::unexpected(step.error());
    auto st = fs.getattr(step->node);
    if (!st) {
        ops.release(step->node);
        return std::unexpected(st.error().with_path(path));
    }
    return Entry{step->node, *st};
}

// --- the node calls a read-only backend need not write ---------------------------------------

Result<StatFs> Backend::statfs(Node) { return StatFs{}; }
Result<std::vector<NamedEntry>> Backend::list_entries(Node dir) {
    auto names = list(dir);
    if (!names) return std::unexpected(names.error());
    std::vector<NamedEntry> out;
    out.reserve(names->size());
    for (DirEntry& name : *names) {
        auto entry = lookup(dir, name.name);
        if (!entry) {
            if (entry.error().code() == ENOENT) continue;  // removed since the listing
            for (const NamedEntry& e : out) forget(e.entry.node, 1);
            return std::unexpected(entry.error());
        }
        out.push_back(NamedEntry{std::move(name.name), *entry});
    }
    return out;
}
Result<Entry> Backend::lookup_ino(uint64_t) { return fail(ENOTSUP, "lookup by inode number"); }

Result<Created> Backend::create(Node, std::string_view name, int, uint32_t, std::optional<Owner>) {
    return fail(EROFS, "create", name);
}
Result<Entry> Backend::mkdir(Node, std::string_view name, uint32_t, std::optional<Owner>) {
    return fail(EROFS, "mkdir", name);
}
Result<Entry> Backend::mknod(Node, std::string_view name, FileType, uint32_t, uint64_t,
                             std::optional<Owner>) {
    return fail(EROFS, "mknod", name);
}
Result<Entry> Backend::symlink(Node, std::string_view name, std::string_view,
                               std::optional<Owner>) {
    return fail(EROFS, "symlink", name);
}
Result<Entry> Backend::link(Node, Node, std::string_view name) { return fail(EROFS, "link", name); }
Result<void> Backend::unlink(Node, std::string_view name) { return fail(EROFS, "unlink", name); }
Result<void> Backend::rmdir(Node, std::string_view name) { return fail(EROFS, "rmdir", name); }
Result<void> Backend::rename(Node, std::string_view name, Node, std::string_view, RenameFlags) {
    return fail(EROFS, "rename", name);
}
Result<Stat> Backend::setattr(Node, const SetAttr&) { return fail(EROFS, "setattr"); }
Result<std::string> Backend::getxattr(Node, std::string_view) { return fail(ENODATA, "getxattr"); }
Result<std::vector<std::string>> Backend::listxattr(Node) { return std::vector<std::string>{}; }
Result<void> Backend::setxattr(Node, std::string_view, std::string_view, XattrMode) {
    return fail(EROFS, "setxattr");
}
Result<void> Backend::removexattr(Node, std::string_view) { return fail(EROFS, "removexattr"); }

}  // namespace packfs
