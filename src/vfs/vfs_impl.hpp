// The Vfs's implementation (see vfs.hpp for the semantics, mount_table.hpp for the table and
// core/union_nodes.hpp for the nodes): the node calls walk Vfs nodes (vfs_nodes.cpp); the path
// calls are walks of those node calls (vfs.cpp), as every backend's are.
#pragma once

#include <xxhash.h>

#include <mutex>
#include <optional>

#include "core/gate.hpp"
#include "core/published.hpp"
#include "packfs/path.hpp"
#include "packfs/vfs.hpp"
#include "vfs/mount_table.hpp"

namespace packfs::vfs {

inline bool changes_file(int flags) {
    return (flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC));
}

// A directory that exists only because something is mounted at or below it.
inline Stat virtual_dir_stat(std::string_view path, Time created) {
    Stat st;
    st.ino = (1ull << 63) | (XXH3_64bits(path.data(), path.size()) >> 1);
    st.type = FileType::directory;
    st.mode = 0755;
    st.nlink = 2;
    st.atime = st.mtime = st.ctime = created;
    return st;
}

class VirtualDirFile final : public File {
public:
    explicit VirtualDirFile(Stat st) : stat_(st) {}
    Result<std::size_t> pread(std::span<std::byte>, uint64_t) override { return fail(EISDIR, "read"); }
    Result<std::size_t> pwrite(std::span<const std::byte>, uint64_t) override {
        return fail(EBADF, "write");
    }
    Result<void> truncate(uint64_t) override { return fail(EINVAL, "ftruncate"); }
    Result<void> fsync(bool) override { return {}; }
    Result<Stat> fstat() override { return stat_; }

private:
    Stat stat_;
};

// A writable handle opened through the Vfs: its writes are changes, so they pass the change
// gate, and a Vfs snapshot never lands in the middle of one.
class LockedFile final : public File {
public:
    LockedFile(FileHandle inner, std::shared_ptr<Gate> changes)
        : inner_(std::move(inner)), changes_(std::move(changes)) {}
    Result<std::size_t> pread(std::span<std::byte> buf, uint64_t offset) override {
        return inner_->pread(buf, offset);
    }
    Result<std::span<const std::byte>> read_view(uint64_t offset, std::size_t length,
                                                 std::string& scratch) override {
        return inner_->read_view(offset, length, scratch);
    }
    Result<std::size_t> pwrite(std::span<const std::byte> data, uint64_t offset) override {
        Gate::Pass change(*changes_);
        return inner_->pwrite(data, offset);
    }
    Result<void> truncate(uint64_t size) override {
        Gate::Pass change(*changes_);
        return inner_->truncate(size);
    }
    Result<void> fsync(bool data_only) override { return inner_->fsync(data_only); }
    Result<Stat> fstat() override { return inner_->fstat(); }
    Result<uint64_t> seek_data(uint64_t offset, bool data) override {
        return inner_->seek_data(offset, data);
    }
    Result<void> allocate(int mode, uint64_t offset, uint64_t length) override {
        Gate::Pass change(*changes_);
        return inner_->allocate(mode, offset, length);
    }

private:
    FileHandle inner_;
    std::shared_ptr<Gate> changes_;
};

class VfsImpl final : public Vfs {
public:
    VfsImpl(TablePtr table, bool frozen, Time created, NodeTable::Counter node_ids = nullptr)
        : table_(std::move(table)), frozen_(frozen), created_(created),
          nodes_(std::move(node_ids)) {}

    // --- the mount table ---------------------------------------------------------------
    Result<void> mount(std::string_view path, std::shared_ptr<Backend> backend,
                       MountOptions options) override {
        if (frozen_) return fail(EROFS, "mount", path);
        if (!backend) return fail(EINVAL, "mount", path);
        auto normal = NormalPath::make(path, "mount");
        if (!normal) return std::unexpected(normal.error());
        std::lock_guard lock(mount_mutex_);
        Table next = *table_.owner();
        Union members;
        if (const UnionPtr* existing = next.mounts.find(normal->view())) {
            for (const Member& m : **existing) {
                if (m.backend == backend) return fail(EBUSY, "mount", path);
            }
            members = **existing;
        }
        Member m{std::move(backend), options, next_mount_id_++};
        if (options.prepend) {
            members.insert(members.begin(), std::move(m));
        } else {
            members.push_back(std::move(m));
        }
        next.put(normal->view(), std::make_shared<const Union>(std::move(members)));
        table_.store(seal(std::move(next)));
        return {};
    }

    Result<void> unmount(std::string_view path, const Backend* backend) override {
        if (frozen_) return fail(EROFS, "unmount", path);
        auto normal = NormalPath::make(path, "unmount");
        if (!normal) return std::unexpected(normal.error());
        std::lock_guard lock(mount_mutex_);
        Table next = *table_.owner();
        const UnionPtr* existing = next.mounts.find(normal->view());
        if (!existing) return fail(EINVAL, "unmount", path);
        Union members;
        bool found = backend == nullptr;
        for (const Member& m : **existing) {
            if (backend && m.backend.get() == backend) {
                found = true;
            } else if (backend) {
                members.push_back(m);
            }
        }
        if (!found) return fail(EINVAL, "unmount", path);
        if (members.empty()) {
            next.remove(normal->view());
        } else {
            next.put(normal->view(), std::make_shared<const Union>(std::move(members)));
        }
        table_.store(seal(std::move(next)));
        return {};
    }

    std::vector<MountInfo> mounts() const override {
        Published<Table>::Reader table(table_);
        std::vector<MountInfo> out;
        for (auto it = table->mounts.begin(); it != table->mounts.end(); ++it) {
            for (const Member& m : *it.value()) out.push_back({it.key(), m.backend, m.options});
        }
        return out;
    }

    // --- paths ------------------------------------------------------------------------
    // Every path call is a walk of the node calls below (the Backend defaults, core/walker.hpp),
    // as for every other backend, so a path and a walk by node (FUSE) answer alike. One shortcut
    // (vfs.cpp, alone()): when the whole namespace is one writable member mounted at "/", its
    // own path calls answer, which are a walk of its nodes from the same root.
    Result<Stat> stat(std::string_view path) override;
    Result<Stat> lstat(std::string_view path) override;
    Result<std::vector<DirEntry>> readdir(std::string_view path) override;
    Result<std::string> readlink(std::string_view path) override;
    Result<StatFs> statfs(std::string_view path) override;
    Result<FileHandle> open(std::string_view path, int flags, uint32_t mode) override;
    Result<void> truncate(std::string_view path, uint64_t size) override;
    Result<void> mkdir(std::string_view path, uint32_t mode) override;
    Result<void> rmdir(std::string_view path) override;
    Result<void> unlink(std::string_view path) override;
    Result<void> rename(std::string_view from, std::string_view to, RenameFlags flags) override;
    Result<void> symlink(std::string_view target, std::string_view link_path) override;
    Result<void> link(std::string_view existing, std::string_view new_path) override;
    Result<void> mknod(std::string_view path, FileType type, uint32_t mode,
                       uint64_t rdev) override;
    Result<void> chmod(std::string_view path, uint32_t mode) override;
    Result<void> chown(std::string_view path, uint32_t uid, uint32_t gid, Follow follow) override;
    Result<void> utimens(std::string_view path, TimeUpdate atime, TimeUpdate mtime,
                         Follow follow) override;
    Result<std::string> getxattr(std::string_view path, std::string_view name) override;
    Result<void> setxattr(std::string_view path, std::string_view name, std::string_view value,
                          XattrMode mode) override;
    Result<std::vector<std::string>> listxattr(std::string_view path) override;
    Result<void> removexattr(std::string_view path, std::string_view name) override;

    Result<std::shared_ptr<Backend>> snapshot() override;
    bool read_only() const noexcept override { return frozen_; }

    // --- nodes (vfs_nodes.cpp; docs/VFS.md "Nodes") ------------------------------------
    Result<Entry> lookup(Node dir, std::string_view name) override;
    void forget(Node node, uint64_t count) noexcept override;
    Result<Stat> getattr(Node node) override;
    Result<std::vector<DirEntry>> list(Node dir) override;
    Result<std::string> readlink(Node node) override;
    Result<StatFs> statfs(Node node) override;
    Result<FileHandle> open(Node node, int flags) override;
    Result<Created> create(Node dir, std::string_view name, int flags, uint32_t mode,
                           std::optional<Owner> owner) override;
    Result<Entry> mkdir(Node dir, std::string_view name, uint32_t mode,
                        std::optional<Owner> owner) override;
    Result<Entry> mknod(Node dir, std::string_view name, FileType type, uint32_t mode,
                        uint64_t rdev, std::optional<Owner> owner) override;
    Result<Entry> symlink(Node dir, std::string_view name, std::string_view target,
                          std::optional<Owner> owner) override;
    Result<Entry> link(Node node, Node dir, std::string_view name) override;
    Result<void> unlink(Node dir, std::string_view name) override;
    Result<void> rmdir(Node dir, std::string_view name) override;
    Result<void> rename(Node dir, std::string_view name, Node to_dir, std::string_view to_name,
                        RenameFlags flags) override;
    Result<Stat> setattr(Node node, const SetAttr& change) override;
    Result<uint64_t> copy_range(Node from, uint64_t offset, Node to, uint64_t to_offset,
                                uint64_t length) override;
    Result<std::string> getxattr(Node node, std::string_view name) override;
    Result<std::vector<std::string>> listxattr(Node node) override;
    Result<void> setxattr(Node node, std::string_view name, std::string_view value,
                          XattrMode mode) override;
    Result<void> removexattr(Node node, std::string_view name) override;

    // --- the node calls on descriptions (vfs_nodes.cpp) ----------------------------------
    // Each node call is one of these on the description of its node(s), made under the change
    // gate (for a change) and one version of the table; the path calls' walk (vfs.cpp) makes
    // the same calls on descriptions it holds itself, so paths and nodes answer alike.
    // A node made: its description (one member reference per part, to intern or give back),
    // its attributes, and for create() the handle opened on it.
    struct Made {
        NodeDesc desc;
        Stat stat;
        FileHandle file;
    };
    Result<Made> lookup_in(const Table& table, const NodeDesc& dir, std::string_view name) const;
    Result<Stat> getattr_of(const NodeDesc& desc) const;
    Result<std::vector<DirEntry>> list_of(const Table& table, const NodeDesc& dir) const;
    Result<std::string> readlink_of(const NodeDesc& desc) const;
    Result<StatFs> statfs_of(const NodeDesc& desc) const;
    Result<std::string> getxattr_of(const NodeDesc& desc, std::string_view name) const;
    Result<std::vector<std::string>> listxattr_of(const NodeDesc& desc) const;
    Result<FileHandle> open_of(const NodeDesc& desc, int flags);  // passes the gate itself
    Result<Made> create_in(const Table& table, const NodeDesc& dir, std::string_view name,
                           int flags, uint32_t mode, std::optional<Owner> owner);
    Result<Made> mkdir_in(const Table& table, const NodeDesc& dir, std::string_view name,
                          uint32_t mode, std::optional<Owner> owner);
    Result<Made> mknod_in(const Table& table, const NodeDesc& dir, std::string_view name,
                          FileType type, uint32_t mode, uint64_t rdev,
                          std::optional<Owner> owner);
    Result<Made> symlink_in(const Table& table, const NodeDesc& dir, std::string_view name,
                            std::string_view target, std::optional<Owner> owner);
    Result<Made> link_in(const Table& table, const NodeDesc& source, const NodeDesc& dir,
                         std::string_view name);
    Result<void> remove_in(const Table& table, const NodeDesc& dir, std::string_view name,
                           bool is_dir);
    Result<void> rename_in(const Table& table, const NodeDesc& src, std::string_view name,
                           const NodeDesc& dst, std::string_view to_name, RenameFlags flags);
    // The checks of a rename that do not depend on what the names hold (EBUSY for a mount
    // point, EXDEV across mounts, EROFS on a read-only one), for the path calls' walk to make
    // before it looks at the entries (core/path_api.hpp), as Linux judges the mounts first.
    Result<void> may_rename_in(const Table& table, const NodeDesc& src, std::string_view name,
                               const NodeDesc& dst, std::string_view to_name) const;
    Result<Stat> setattr_of(const NodeDesc& desc, const SetAttr& change);
    Result<void> setxattr_of(const NodeDesc& desc, std::string_view name, std::string_view value,
                             XattrMode mode);
    Result<void> removexattr_of(const NodeDesc& desc, std::string_view name);

    // What the path calls' walk needs besides (vfs.cpp).
    Published<Table>& table() noexcept { return table_; }
    Gate& change_gate() noexcept { return *change_gate_; }

private:
    // Where a rename by node is made: the part holding the source, and the part of the target
    // directory in the same mount (or why it cannot be made there).
    struct RenameParts {
        const Part* from;
        const Part* to;
    };
    Result<RenameParts> rename_parts(const Table& table, const NodeDesc& src,
                                     std::string_view name, const NodeDesc& dst,
                                     std::string_view to_name) const;
    // What a node is: the root as the table describes it, any other from the node table;
    // ESTALE for an id not held.
    Result<DescPtr> describe(Node node, const Table& table, std::string_view op) const;
    Result<DescPtr> describe(Node node, std::string_view op) const;
    // `made` interned: its node id (one reference) and attributes.
    Entry interned(Made made);
    // A new entry `name` made in one part of a directory (mkdir, mknod, symlink): `make` gets
    // the table and the directory's description.
    template <class Make>
    Result<Entry> make_node(Node dir, std::string_view name, std::string_view op, Make&& make);
    template <class Make>
    Result<Made> make_in(const Table& table, const NodeDesc& dir, std::string_view name,
                         std::string_view op, Make&& make);
    Result<void> remove_node(Node dir, std::string_view name, bool is_dir);
    // The entries of `dir` that lead to mounts (`children`, from mount_children()), added to
    // the members' listing `out` as directories, over the members' entries of those names.
    void add_mount_children(const Table& table, std::string_view dir,
                            std::vector<std::string> children, std::vector<DirEntry>& out) const;

    // The path calls' shortcut: `call` made on the member that is the whole namespace (see
    // vfs.cpp), or `walk` (the walk by node) when the table is anything else.
    template <class Call, class Walk>
    auto alone(bool changes, Call&& call, Walk&& walk) -> decltype(walk());

    Published<Table> table_;  // readers through a Published::Reader
    std::mutex mount_mutex_;  // serialises mount and unmount: the table's writer
    // Changes pass through it; snapshot closes it (core/gate.hpp). Shared with the writable
    // handles this Vfs opened, whose writes are changes too, and which may outlive the Vfs.
    std::shared_ptr<Gate> change_gate_ = std::make_shared<Gate>();
    const bool frozen_;
    const Time created_;  // the times of virtual directories, kept by snapshots
    uint64_t next_mount_id_ = 1;  // Member::id (under mount_mutex_)
    NodeTable nodes_;             // every node held, but the root
};

}  // namespace packfs::vfs
