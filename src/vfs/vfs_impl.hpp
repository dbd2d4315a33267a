// The Vfs's implementation (see vfs.hpp for the semantics, mount_table.hpp for the table and
// node_table.hpp for the nodes): the path calls dispatch through the mount table to each
// member's own path calls (vfs.cpp); the node calls walk Vfs nodes (vfs_nodes.cpp).
#pragma once

#include <xxhash.h>

#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "core/gate.hpp"
#include "core/published.hpp"
#include "packfs/path.hpp"
#include "packfs/vfs.hpp"
#include "vfs/mount_table.hpp"

namespace packfs::vfs {

template <class T>
Result<T> renamed(Result<T> r, std::string_view path) {
    if (!r) return std::unexpected(r.error().with_path(path));
    return r;
}

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

    // --- queries -----------------------------------------------------------------------
    Result<Stat> stat(std::string_view path) override {
        return query<Stat>(path, "stat", [](Backend& b, std::string_view p) { return b.stat(p); });
    }
    Result<Stat> lstat(std::string_view path) override {
        return query<Stat>(path, "lstat", [](Backend& b, std::string_view p) { return b.lstat(p); });
    }
    Result<std::string> readlink(std::string_view path) override {
        return query<std::string>(path, "readlink",
                                  [](Backend& b, std::string_view p) { return b.readlink(p); });
    }
    Result<StatFs> statfs(std::string_view path) override {
        return query<StatFs>(path, "statfs",
                             [](Backend& b, std::string_view p) { return b.statfs(p); });
    }
    Result<std::string> getxattr(std::string_view path, std::string_view name) override {
        return query<std::string>(path, "getxattr", [&](Backend& b, std::string_view p) {
            return b.getxattr(p, name);
        });
    }
    Result<std::vector<std::string>> listxattr(std::string_view path) override {
        return query<std::vector<std::string>>(
            path, "listxattr", [](Backend& b, std::string_view p) { return b.listxattr(p); });
    }

    Result<std::vector<DirEntry>> readdir(std::string_view path) override;
    Result<FileHandle> open(std::string_view path, int flags, uint32_t mode) override;

    // --- changes to existing entries -----------------------------------------------------
    Result<void> truncate(std::string_view path, uint64_t size) override {
        return change(path, "truncate", true,
                      [&](Backend& b, std::string_view p) { return b.truncate(p, size); });
    }
    Result<void> rmdir(std::string_view path) override {
        return change(path, "rmdir", false, [](Backend& b, std::string_view p) { return b.rmdir(p); });
    }
    Result<void> unlink(std::string_view path) override {
        return change(path, "unlink", false,
                      [](Backend& b, std::string_view p) { return b.unlink(p); });
    }
    Result<void> chmod(std::string_view path, uint32_t mode) override {
        return change(path, "chmod", true,
                      [&](Backend& b, std::string_view p) { return b.chmod(p, mode); });
    }
    Result<void> chown(std::string_view path, uint32_t uid, uint32_t gid, Follow follow) override {
        return change(path, "chown", follow == Follow::yes, [&](Backend& b, std::string_view p) {
            return b.chown(p, uid, gid, follow);
        });
    }
    Result<void> utimens(std::string_view path, TimeUpdate atime, TimeUpdate mtime,
                         Follow follow) override {
        return change(path, "utimens", follow == Follow::yes, [&](Backend& b, std::string_view p) {
            return b.utimens(p, atime, mtime, follow);
        });
    }
    Result<void> setxattr(std::string_view path, std::string_view name, std::string_view value,
                          XattrMode mode) override {
        return change(path, "setxattr", false, [&](Backend& b, std::string_view p) {
            return b.setxattr(p, name, value, mode);
        });
    }
    Result<void> removexattr(std::string_view path, std::string_view name) override {
        return change(path, "removexattr", false,
                      [&](Backend& b, std::string_view p) { return b.removexattr(p, name); });
    }

    // --- creations ---------------------------------------------------------------------
    Result<void> mkdir(std::string_view path, uint32_t mode) override {
        return create(path, "mkdir", [&](Backend& b, std::string_view p) { return b.mkdir(p, mode); });
    }
    Result<void> symlink(std::string_view target, std::string_view link_path) override {
        // The target is judged first, as symlink(2) does: a union where a read-only member
        // holds the name would otherwise answer EEXIST for an empty target.
        if (auto ok = check_symlink_target(target, link_path); !ok) return ok;
        return create(link_path, "symlink",
                      [&](Backend& b, std::string_view p) { return b.symlink(target, p); });
    }
    Result<void> mknod(std::string_view path, FileType type, uint32_t mode,
                       uint64_t rdev) override {
        // As mknod(2): the type is checked before the path is looked at.
        if (type == FileType::directory || type == FileType::symlink)
            return fail(EINVAL, "mknod", path);
        return create(path, "mknod",
                      [&](Backend& b, std::string_view p) { return b.mknod(p, type, mode, rdev); });
    }

    // --- two paths ---------------------------------------------------------------------
    Result<void> rename(std::string_view from, std::string_view to, RenameFlags flags) override;
    Result<void> link(std::string_view existing, std::string_view new_path) override;

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

private:
    // What a node is: the root as the table describes it, any other from the node table;
    // ESTALE for an id not held.
    Result<DescPtr> describe(Node node, const Table& table, std::string_view op) const;
    Result<DescPtr> describe(Node node, std::string_view op) const;
    // A new entry `name` made in one part of a directory (mkdir, mknod, symlink).
    template <class Make>
    Result<Entry> make_node(Node dir, std::string_view name, std::string_view op, Make&& make);
    Result<void> remove_node(Node dir, std::string_view name, bool is_dir);
    // The entries of `dir` that lead to mounts (`children`, from mount_children()), added to
    // the members' listing `out` as directories, over the members' entries of those names.
    void add_mount_children(const Table& table, std::string_view dir,
                            std::vector<std::string> children, std::vector<DirEntry>& out) const;

    // The member that serves `inner`: the first whose stat (or lstat) answers anything but
    // ENOENT. It holds the path, or its own lookup fails otherwise (ELOOP, ENOTDIR), and then
    // the operation itself, made there, reports that failure in the member's own order.
    // Null when every member answers ENOENT.
    Result<const Member*> holder(const Union& members, std::string_view inner, bool follow) {
        if (members.size() == 1) return &members.front();
        for (const Member& m : members) {
            auto st = follow ? m.backend->stat(inner) : m.backend->lstat(inner);
            if (st || st.error().code() != ENOENT) return &m;
        }
        return nullptr;
    }

    // A read: the first member that has the path answers; a directory that exists only
    // because of mounts below it answers as an empty, virtual directory.
    template <class T, class Call>
    Result<T> query(std::string_view path, std::string_view op, Call&& call) {
        auto normal = NormalPath::make(path, op);
        if (!normal) return std::unexpected(normal.error());
        Published<Table>::Reader table(table_);
        Target t = dispatch(*table, normal->view(), normal->wants_dir());
        if (t.members) {
            for (const Member& m : *t.members) {
                Result<T> r = call(*m.backend, t.inner());
                if (r || r.error().code() != ENOENT) return renamed(std::move(r), path);
            }
        }
        if (normal->is_root() || has_mount_below(*table, normal->view())) {
            if constexpr (std::is_same_v<T, Stat>) {
                return virtual_dir_stat(normal->view(), created_);
            } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
                return T{};
            } else if constexpr (std::is_same_v<T, StatFs>) {
                return StatFs{};
            } else if (op == "readlink") {
                return fail(EINVAL, op, path);
            } else {
                return fail(ENODATA, op, path);
            }
        }
        return fail(ENOENT, op, path);
    }

    // A change to an existing entry: made in the member that holds it, EROFS if that member
    // is read-only.
    template <class Call>
    Result<void> change(std::string_view path, std::string_view op, bool follow, Call&& call) {
        auto normal = NormalPath::make(path, op);
        if (!normal) return std::unexpected(normal.error());
        Gate::Pass changes(*change_gate_);
        Published<Table>::Reader table(table_);
        Target t = dispatch(*table, normal->view(), normal->wants_dir());
        if (!t.members) {
            if (normal->is_root() || has_mount_below(*table, normal->view()))
                return fail(EROFS, op, path);
            return fail(ENOENT, op, path);
        }
        auto found = holder(*t.members, t.inner_path, follow);
        if (!found) return std::unexpected(found.error().with_path(path));
        const Member* m = *found;
        if (!m) {
            if (has_mount_below(*table, normal->view())) return fail(EROFS, op, path);
            return fail(ENOENT, op, path);
        }
        if (!m->writable()) return fail(EROFS, op, path);
        return renamed(call(*m->backend, t.inner()), path);
    }

    // A new entry: EEXIST if any member (or a mount) has the name, else made in the first
    // writable member.
    template <class Call>
    Result<void> create(std::string_view path, std::string_view op, Call&& call) {
        auto normal = NormalPath::make(path, op);
        if (!normal) return std::unexpected(normal.error());
        Gate::Pass changes(*change_gate_);
        Published<Table>::Reader table(table_);
        Target t = dispatch(*table, normal->view(), normal->wants_dir());
        if (normal->view() == t.mount_path || normal->is_root() ||
            has_mount_below(*table, normal->view()))
            return fail(EEXIST, op, path);
        if (!t.members) return fail(EROFS, op, path);
        const Member* target = nullptr;
        if (t.members->size() == 1) {
            target = &t.members->front();
        } else {
            auto found = holder(*t.members, t.inner_path, false);
            if (!found) return std::unexpected(found.error().with_path(path));
            if (*found && !(*found)->writable()) {
                // A read-only member serves the name: it exists there (EEXIST), or looking it
                // up failed there, and a read-only member can make nothing (EROFS).
                return fail((*found)->backend->lstat(t.inner_path) ? EEXIST : EROFS, op, path);
            }
            target = *found ? *found : first_writable(*t.members);
        }
        if (!target || !target->writable()) return fail(EROFS, op, path);
        return renamed(call(*target->backend, t.inner()), path);
    }

    static const Member* first_writable(const Union& members) {
        for (const Member& m : members) {
            if (m.writable()) return &m;
        }
        return nullptr;
    }

    template <class Call>
    Result<void> two_paths(std::string_view from, std::string_view to, std::string_view op,
                           Call&& call);

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
