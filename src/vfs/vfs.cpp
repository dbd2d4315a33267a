// The Vfs: dispatch of every Backend operation through the mount table (see vfs.hpp for the
// semantics and mount_table.hpp for the table).
#include "packfs/vfs.hpp"

#include <xxhash.h>

#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <unordered_set>

#include "core/published.hpp"
#include "packfs/path.hpp"
#include "vfs/mount_table.hpp"

namespace packfs::vfs {
namespace {

template <class T>
Result<T> renamed(Result<T> r, std::string_view path) {
    if (!r) return std::unexpected(r.error().with_path(path));
    return r;
}

bool changes_file(int flags) {
    return (flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC));
}

// A directory that exists only because something is mounted at or below it.
Stat virtual_dir_stat(std::string_view path, Time created) {
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

// A writable handle opened through the Vfs: its writes are changes, so they share the
// change lock, and a Vfs snapshot never lands between two of them half-seen.
class LockedFile final : public File {
public:
    LockedFile(FileHandle inner, std::shared_ptr<std::shared_mutex> changes)
        : inner_(std::move(inner)), changes_(std::move(changes)) {}
    Result<std::size_t> pread(std::span<std::byte> buf, uint64_t offset) override {
        return inner_->pread(buf, offset);
    }
    Result<std::size_t> pwrite(std::span<const std::byte> data, uint64_t offset) override {
        std::shared_lock lock(*changes_);
        return inner_->pwrite(data, offset);
    }
    Result<void> truncate(uint64_t size) override {
        std::shared_lock lock(*changes_);
        return inner_->truncate(size);
    }
    Result<void> fsync(bool data_only) override { return inner_->fsync(data_only); }
    Result<Stat> fstat() override { return inner_->fstat(); }

private:
    FileHandle inner_;
    std::shared_ptr<std::shared_mutex> changes_;
};

class VfsImpl final : public Vfs {
public:
    VfsImpl(TablePtr table, bool frozen, Time created)
        : table_(std::move(table)), frozen_(frozen), created_(created) {}

    // --- the mount table ---------------------------------------------------------------
    Result<void> mount(std::string_view path, std::shared_ptr<Backend> backend,
                       MountOptions options) override {
        if (frozen_) return fail(EROFS, "mount", path);
        if (!backend) return fail(EINVAL, "mount", path);
        auto normal = NormalPath::make(path, "mount");
        if (!normal) return std::unexpected(normal.error());
        std::lock_guard lock(mount_mutex_);
        Table next = *table_.load();
        Union members;
        if (const UnionPtr* existing = next.mounts.find(normal->view())) {
            for (const Member& m : **existing) {
                if (m.backend == backend) return fail(EBUSY, "mount", path);
            }
            members = **existing;
        }
        Member m{std::move(backend), options};
        if (options.prepend) {
            members.insert(members.begin(), std::move(m));
        } else {
            members.push_back(std::move(m));
        }
        next.mounts.insert_or_assign(std::string(normal->view()),
                                     std::make_shared<const Union>(std::move(members)));
        table_.store(std::make_shared<const Table>(std::move(next)));
        return {};
    }

    Result<void> unmount(std::string_view path, const Backend* backend) override {
        if (frozen_) return fail(EROFS, "unmount", path);
        auto normal = NormalPath::make(path, "unmount");
        if (!normal) return std::unexpected(normal.error());
        std::lock_guard lock(mount_mutex_);
        Table next = *table_.load();
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
            next.mounts.erase(normal->view());
        } else {
            next.mounts.insert_or_assign(std::string(normal->view()),
                                         std::make_shared<const Union>(std::move(members)));
        }
        table_.store(std::make_shared<const Table>(std::move(next)));
        return {};
    }

    std::vector<MountInfo> mounts() const override {
        TablePtr table = table_.load();
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
    Result<void> rename(std::string_view from, std::string_view to, RenameFlags flags) override {
        return two_paths(from, to, "rename", [&](Backend& b, std::string_view f, std::string_view t) {
            return b.rename(f, t, flags);
        });
    }
    Result<void> link(std::string_view existing, std::string_view new_path) override {
        return two_paths(existing, new_path, "link",
                         [](Backend& b, std::string_view f, std::string_view t) {
                             return b.link(f, t);
                         });
    }

    Result<std::shared_ptr<Backend>> snapshot() override;
    bool read_only() const noexcept override { return frozen_; }

private:
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
        TablePtr table = table_.load();
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
        std::shared_lock changes(*change_mutex_);
        TablePtr table = table_.load();
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
        std::shared_lock changes(*change_mutex_);
        TablePtr table = table_.load();
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

    Published<Table> table_;
    std::mutex mount_mutex_;           // serialises mount and unmount
    // Changes share it; snapshot takes it alone. Shared with the writable handles this Vfs
    // opened, whose writes are changes too, and which may outlive the Vfs.
    std::shared_ptr<std::shared_mutex> change_mutex_ = std::make_shared<std::shared_mutex>();
    const bool frozen_;
    const Time created_;  // the times of virtual directories, kept by snapshots
};

Result<std::vector<DirEntry>> VfsImpl::readdir(std::string_view path) {
    auto normal = NormalPath::make(path, "readdir");
    if (!normal) return std::unexpected(normal.error());
    TablePtr table = table_.load();
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
    if (children.empty()) return out;

    // A child that is itself a mount point is listed as the mounted root (what lstat of it
    // answers); one that only leads to mounts further down is a virtual directory. A name the
    // backends also hold is covered by the mount.
    std::unordered_map<std::string, std::size_t> listed;  // only the mount children's names
    for (const std::string& name : children) listed.emplace(name, SIZE_MAX);
    for (std::size_t i = 0; i < out.size(); ++i) {
        if (auto it = listed.find(out[i].name); it != listed.end()) it->second = i;
    }
    for (std::string& name : children) {
        std::string child = path_join(normal->view(), name);
        uint64_t ino = virtual_dir_stat(child, created_).ino;
        if (const UnionPtr* mounted = table->mounts.find(child)) {
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
    return out;
}

Result<FileHandle> VfsImpl::open(std::string_view path, int flags, uint32_t mode) {
    auto normal = NormalPath::make(path, "open");
    if (!normal) return std::unexpected(normal.error());
    const bool changing = changes_file(flags);
    std::shared_lock changes(*change_mutex_, std::defer_lock);
    if (changing) changes.lock();
    TablePtr table = table_.load();
    Target t = dispatch(*table, normal->view(), normal->wants_dir());
    const bool is_virtual = normal->is_root() || has_mount_below(*table, normal->view());
    // Writable handles take the change lock for their writes (see LockedFile).
    auto wrap = [&](Result<FileHandle> r) -> Result<FileHandle> {
        if (!r) return std::unexpected(r.error().with_path(path));
        if ((flags & O_ACCMODE) == O_RDONLY) return r;
        return FileHandle(std::make_unique<LockedFile>(std::move(*r), change_mutex_));
    };
    auto open_virtual = [&]() -> Result<FileHandle> {
        if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_CREAT)) return fail(EISDIR, "open", path);
        return FileHandle(
            std::make_unique<VirtualDirFile>(virtual_dir_stat(normal->view(), created_)));
    };
    if (!t.members) {
        if (is_virtual) return open_virtual();
        return fail((flags & O_CREAT) ? EROFS : ENOENT, "open", path);
    }
    if (t.members->size() == 1) {
        const Member& only = t.members->front();
        if (changing && !only.writable() && !only.backend->read_only()) {
            // A read-only mount of a writable backend: never hand it a changing open, but
            // answer what exists first, as a read-only backend would.
            auto existing = only.backend->stat(t.inner());
            if (!existing && existing.error().code() == ENOENT && !(flags & O_CREAT) && !is_virtual)
                return fail(ENOENT, "open", path);
            if (existing && existing->type == FileType::directory &&
                (flags & O_ACCMODE) != O_RDONLY)
                return fail(EISDIR, "open", path);
            return fail(EROFS, "open", path);
        }
        auto r = only.backend->open(t.inner(), flags, mode);
        if (!r && r.error().code() == ENOENT && is_virtual) return open_virtual();
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
    if (is_virtual) return open_virtual();
    return fail(ENOENT, "open", path);
}

template <class Call>
Result<void> VfsImpl::two_paths(std::string_view from, std::string_view to, std::string_view op,
                                Call&& call) {
    auto src = NormalPath::make(from, op);
    if (!src) return std::unexpected(src.error());
    auto dst = NormalPath::make(to, op);
    if (!dst) return std::unexpected(dst.error());
    std::shared_lock changes(*change_mutex_);
    TablePtr table = table_.load();
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

Result<std::shared_ptr<Backend>> VfsImpl::snapshot() {
    // Alone: no change through this Vfs lands between two members' snapshots.
    std::unique_lock changes(*change_mutex_);
    TablePtr table = table_.load();
    Table frozen;
    for (auto it = table->mounts.begin(); it != table->mounts.end(); ++it) {
        Union members;
        for (const Member& m : *it.value()) {
            auto snap = m.backend->snapshot();
            if (!snap) return std::unexpected(snap.error().with_path(it.key()));
            MountOptions options = m.options;
            options.read_only = true;
            members.push_back(Member{std::move(*snap), options});
        }
        frozen.mounts.insert_or_assign(it.key(), std::make_shared<const Union>(std::move(members)));
    }
    return std::make_shared<VfsImpl>(std::make_shared<const Table>(std::move(frozen)), true,
                                     created_);
}

}  // namespace
}  // namespace packfs::vfs

namespace packfs {

std::shared_ptr<Vfs> Vfs::create() {
    return std::make_shared<vfs::VfsImpl>(std::make_shared<const vfs::Table>(), false,
                                          Time::now());
}

}  // namespace packfs
