// The volume's path calls: reads straight from the tree (lock-free),
// mutations through the generic path layer (core/path_api.hpp) over the tree's lookups and the
// volume's journaled node calls (journaled.cpp), so only the final node call is journaled.
#include "core/path_api.hpp"
#include "volume/volume_impl.hpp"

namespace packfs::volume {

Result<Stat> VolumeImpl::stat(std::string_view p) {
    return tree_->stat(p);
}
Result<Stat> VolumeImpl::lstat(std::string_view p) {
    return tree_->lstat(p);
}
Result<std::vector<DirEntry>> VolumeImpl::readdir(std::string_view p) {
    return tree_->readdir(p);
}
Result<std::string> VolumeImpl::readlink(std::string_view p) {
    return tree_->readlink(p);
}
Result<StatFs> VolumeImpl::statfs(std::string_view p) {
    return tree_->statfs(p);
}
Result<std::string> VolumeImpl::getxattr(std::string_view p, std::string_view n) {
    return tree_->getxattr(p, n);
}
Result<std::vector<std::string>> VolumeImpl::listxattr(std::string_view p) {
    return tree_->listxattr(p);
}
Result<std::shared_ptr<Backend>> VolumeImpl::snapshot() {
    return tree_->snapshot();
}

namespace {

struct VolumeOps {
    using NodeT = Node;
    VolumeImpl& volume;
    Backend& tree;

    Result<Node> root() const noexcept { return kRootNode; }
    Result<std::optional<walk::Step<Node>>> lookup(Node dir, std::string_view name) const {
        auto e = tree.lookup(dir, name);
        if (!e) {
            if (e.error().code() == ENOENT) return std::nullopt;
            return std::unexpected(e.error());
        }
        return walk::Step<Node>{e->node, e->stat.type};
    }
    Result<std::string> readlink(Node n) const { return tree.readlink(n); }
    void release(Node n) const noexcept {
        if (n && n != kRootNode) tree.forget(n, 1);
    }
    bool read_only() const noexcept { return volume.read_only(); }
    bool same(Node a, Node b) const noexcept { return a == b; }
    bool has_entries(Node dir) const {
        auto entries = tree.list(dir);
        return !entries || !entries->empty();
    }
    Result<Stat> getattr(Node n) const { return tree.getattr(n); }
    Result<std::vector<DirEntry>> list(Node n) const { return tree.list(n); }
    Result<FileHandle> open(Node n, int flags) const { return volume.open(n, flags); }
    Result<std::string> getxattr(Node n, std::string_view name) const {
        return tree.getxattr(n, name);
    }
    Result<std::vector<std::string>> listxattr(Node n) const { return tree.listxattr(n); }
    Result<StatFs> statfs(Node n) const { return tree.statfs(n); }

    Result<FileHandle> create(Node dir, std::string_view name, int flags, uint32_t mode) const {
        auto made = volume.create(dir, name, flags, mode, std::nullopt);
        if (!made) return std::unexpected(made.error());
        volume.forget(made->entry.node, 1);
        return std::move(made->file);
    }
    Result<void> made(Result<Entry>&& e) const {
        if (!e) return std::unexpected(e.error());
        volume.forget(e->node, 1);
        return {};
    }
    Result<void> mkdir(Node dir, std::string_view name, uint32_t mode) const {
        return made(volume.mkdir(dir, name, mode, std::nullopt));
    }
    Result<void> mknod(Node dir, std::string_view name, FileType type, uint32_t mode,
                       uint64_t rdev) const {
        return made(volume.mknod(dir, name, type, mode, rdev, std::nullopt));
    }
    Result<void> symlink(Node dir, std::string_view name, std::string_view target) const {
        return made(volume.symlink(dir, name, target, std::nullopt));
    }
    Result<void> link(Node node, Node dir, std::string_view name) const {
        return made(volume.link(node, dir, name));
    }
    Result<void> unlink(Node dir, std::string_view name) const { return volume.unlink(dir, name); }
    Result<void> rmdir(Node dir, std::string_view name) const { return volume.rmdir(dir, name); }
    Result<void> rename(Node dir, std::string_view name, Node to_dir, std::string_view to_name,
                        RenameFlags flags) const {
        return volume.rename(dir, name, to_dir, to_name, flags);
    }
    Result<void> setattr(Node n, const SetAttr& change) const {
        auto st = volume.setattr(n, change);
        if (!st) return std::unexpected(st.error());
        return {};
    }
    Result<void> setxattr(Node n, std::string_view name, std::string_view value,
                          XattrMode mode) const {
        return volume.setxattr(n, name, value, mode);
    }
    Result<void> removexattr(Node n, std::string_view name) const {
        return volume.removexattr(n, name);
    }
};

}  // namespace

#define PACKFS_VOLUME_PATHS                                 \
    VolumeOps ops{*this, *tree_};                           \
    paths::PathApi<VolumeOps> api(ops)

Result<FileHandle> VolumeImpl::open(std::string_view path, int flags, uint32_t mode) {
    PACKFS_VOLUME_PATHS;
    return api.open(path, flags, mode);
}
Result<void> VolumeImpl::truncate(std::string_view path, uint64_t size) {
    PACKFS_VOLUME_PATHS;
    return api.truncate(path, size);
}
Result<void> VolumeImpl::mkdir(std::string_view path, uint32_t mode) {
    PACKFS_VOLUME_PATHS;
    return api.mkdir(path, mode);
}
Result<void> VolumeImpl::rmdir(std::string_view path) {
    PACKFS_VOLUME_PATHS;
    return api.rmdir(path);
}
Result<void> VolumeImpl::unlink(std::string_view path) {
    PACKFS_VOLUME_PATHS;
    return api.unlink(path);
}
Result<void> VolumeImpl::rename(std::string_view from, std::string_view to, RenameFlags flags) {
    PACKFS_VOLUME_PATHS;
    return api.rename(from, to, flags);
}
Result<void> VolumeImpl::symlink(std::string_view target, std::string_view link_path) {
    PACKFS_VOLUME_PATHS;
    return api.symlink(target, link_path);
}
Result<void> VolumeImpl::link(std::string_view existing, std::string_view new_path) {
    PACKFS_VOLUME_PATHS;
    return api.link(existing, new_path);
}
Result<void> VolumeImpl::mknod(std::string_view path, FileType type, uint32_t mode, uint64_t rdev) {
    PACKFS_VOLUME_PATHS;
    return api.mknod(path, type, mode, rdev);
}
Result<void> VolumeImpl::chmod(std::string_view path, uint32_t mode) {
    PACKFS_VOLUME_PATHS;
    return api.chmod(path, mode);
}
Result<void> VolumeImpl::chown(std::string_view path, uint32_t uid, uint32_t gid, Follow follow) {
    PACKFS_VOLUME_PATHS;
    return api.chown(path, uid, gid, follow);
}
Result<void> VolumeImpl::utimens(std::string_view path, TimeUpdate atime, TimeUpdate mtime,
                                 Follow follow) {
    PACKFS_VOLUME_PATHS;
    return api.utimens(path, atime, mtime, follow);
}
Result<void> VolumeImpl::setxattr(std::string_view path, std::string_view name,
                                  std::string_view value, XattrMode mode) {
    PACKFS_VOLUME_PATHS;
    return api.setxattr(path, name, value, mode);
}
Result<void> VolumeImpl::removexattr(std::string_view path, std::string_view name) {
    PACKFS_VOLUME_PATHS;
    return api.removexattr(path, name);
}

#undef PACKFS_VOLUME_PATHS

}  // namespace packfs::volume
