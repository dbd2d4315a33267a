// The dir backend's node calls (backend.hpp "Nodes"; docs/DIR.md "Nodes"): the passthrough
// model of libfuse's passthrough_ll. A node is an O_PATH|O_NOFOLLOW fd of its host object in
// the node table (dir_nodes.hpp); every call here is an fd-based syscall on it, or an *at call
// on a directory node's fd with one component that check_name() let through. No call builds a
// path of the tree, so trees of any depth work, and none follows a symlink: lookup opens the
// name itself (O_NOFOLLOW), so a link's node is the link, and containment holds in every mode
// by construction. The calls that can only name an object by a path (reopening it for I/O,
// truncate, link, the xattr calls) use its magic link "/proc/self/fd/N", which names the inode
// the node holds whatever its names are now (an unlinked file too), the symlink itself for a
// symlink's node.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <limits>

#include "core/checks.hpp"
#include "core/host_stat.hpp"
#include "core/io.hpp"
#include "core/rename_check.hpp"
#include "dir/dir_backend.hpp"
#include "dir/host_calls.hpp"
#include "packfs/path.hpp"

namespace packfs::dir {
namespace {

constexpr int kStatxFlags = AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW | AT_STATX_SYNC_AS_STAT;

int statx_fd(int fd, struct statx& st) noexcept {
    return ::statx(fd, "", kStatxFlags, STATX_BASIC_STATS, &st) == 0 ? 0 : errno;
}

// The object `n` holds, opened anew with `flags` (for I/O or a listing): through its magic
// link, which checks no search permission on the way; without /proc, a directory is reopened
// as "." (which needs search permission on it). On EMFILE, `nodes` makes room.
std::expected<Fd, int> reopen(const NodeRef& n, int flags, NodeTable& nodes) {
    Fd fd = nodes.open_with_room([&] { return open_through_proc(n.fd, flags); });
    if (fd) return fd;
    const int error = errno;
    if (n.is_dir() && error == ENOENT) {
        fd = nodes.open_with_room([&] { return ::openat(n.fd, ".", flags | O_CLOEXEC); });
        if (fd) return fd;
    }
    return std::unexpected(error);
}

// True when the entry `name` of the directory open as `dir` has no xattrs, asked by name without
// following it (listxattrat, Linux 6.13); false when it has some or the kernel cannot say.
bool has_no_xattrs(int dir, const char* name) noexcept {
#if defined(__x86_64__) || defined(__aarch64__)
    constexpr long kListxattrat = 465;  // one number on every architecture since Linux 5.1
    static std::atomic<bool> missing{false};
    if (missing.load(std::memory_order_relaxed)) return false;
    const long n = ::syscall(kListxattrat, dir, name, AT_SYMLINK_NOFOLLOW, nullptr, 0);
    if (n < 0 && errno == ENOSYS) missing.store(true, std::memory_order_relaxed);
    return n == 0;
#else
    (void)dir;
    (void)name;
    return false;
#endif
}

// reopen() to read (`flags` without a write), with O_NOATIME first when `no_atime`
// (DirOptions::no_atime): the kernel refuses it with EPERM to a process that neither owns the
// object nor has CAP_FOWNER, and then it is opened without.
std::expected<Fd, int> reopen_to_read(const NodeRef& n, int flags, NodeTable& nodes,
                                      bool no_atime) {
    if (no_atime) {
        auto fd = reopen(n, flags | O_NOATIME, nodes);
        if (fd || fd.error() != EPERM) return fd;
    }
    return reopen(n, flags, nodes);
}

// An O_PATH fd of the object open as `fd` (a file create() just made): through its magic link,
// or without /proc a duplicate of `fd` itself.
std::expected<Fd, int> path_fd_of(int fd) {
    int p = ::open(proc_fd_path(fd).c_str(), O_PATH | O_CLOEXEC);
    if (p < 0) p = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (p < 0) return std::unexpected(errno);
    return Fd(p);
}

// A new object (`fd`, an fd of it, of `type`), made in directory `parent` by a call with
// `mode` and `owner`: given `owner`'s uid and gid (the directory's gid where it has S_ISGID),
// then exactly `mode` (what the process umask or a chown took off put back; S_ISGID added to a
// directory made in a set-group-ID directory, as the host does). `st` is its statx after.
int settle_new(int fd, int parent, FileType type, uint32_t mode, const std::optional<Owner>& owner,
               struct statx& st) {
    if (int e = statx_fd(fd, st)) return e;
    bool parent_sgid = false;
    uint32_t parent_gid = 0;
    if (owner || type == FileType::directory) {
        struct statx ps;
        if (int e = statx_fd(parent, ps)) return e;
        parent_sgid = (ps.stx_mode & S_ISGID) != 0;
        parent_gid = ps.stx_gid;
    }
    if (owner) {
        const uint32_t gid = parent_sgid ? parent_gid : owner->gid;
        if (owner->uid != st.stx_uid || gid != st.stx_gid) {
            // Only what differs: chown to one's own uid and the group the host gave needs no
            // privilege.
            const auto uid_arg = owner->uid == st.stx_uid ? static_cast<uid_t>(-1) : owner->uid;
            const auto gid_arg = gid == st.stx_gid ? static_cast<gid_t>(-1) : gid;
            if (::fchownat(fd, "", uid_arg, gid_arg, AT_EMPTY_PATH) != 0) return errno;
            if (int e = statx_fd(fd, st)) return e;
        }
    }
    if (type == FileType::symlink) return 0;  // a link's mode is always 0777
    uint32_t wanted = mode & 07777;
    if (type == FileType::directory && parent_sgid) wanted |= S_ISGID;
    if ((st.stx_mode & 07777) == wanted) return 0;
    if (int e = chmod_fd(fd, wanted)) return e;
    return statx_fd(fd, st);
}

// Removes the entry `name` of `dir` that a failed call made (`made`), unless the name is
// something else by now.
void undo_new(int dir, const char* name, const struct statx& made) noexcept {
    struct statx now;
    if (made.stx_ino == 0 ||
        ::statx(dir, name, AT_SYMLINK_NOFOLLOW | AT_STATX_SYNC_AS_STAT, STATX_TYPE | STATX_INO,
                &now) != 0)
        return;
    if (statx_dev(now) != statx_dev(made) || now.stx_ino != made.stx_ino) return;
    ::unlinkat(dir, name, S_ISDIR(now.stx_mode) ? AT_REMOVEDIR : 0);
}

}  // namespace

// --- the table ---------------------------------------------------------------------------

Result<NodeRef> DirBackend::held(Node node, std::string_view op, std::string_view name) const {
    auto n = nodes_.find(node.id);
    if (!n) return fail(n.error(), op, name);
    return std::move(*n);
}

Result<NodeRef> DirBackend::held_dir(Node dir, std::string_view op, std::string_view name) const {
    auto n = held(dir, op, name);
    if (n && !n->is_dir()) return fail(ENOTDIR, op, name);
    return n;
}

int DirBackend::enter(const NodeRef& dir, const char* name, Entry& out) {
    // One component, never followed: a symlink's node is the link (O_PATH|O_NOFOLLOW opens
    // it), and a mount point's is what is mounted there, as any walk would cross it.
    Fd fd = nodes_.open_with_room(
        [&] { return ::openat(dir.fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC); });
    if (!fd) return errno;
    struct statx st;
    if (int e = statx_fd(fd.get(), st)) return e;
    out.stat = stat_from_statx(st);
    out.node = Node{nodes_.intern(std::move(fd), st, dir.id, name)};
    return 0;
}

// --- reads -------------------------------------------------------------------------------

Result<Entry> DirBackend::lookup(Node dir, std::string_view name) {
    if (auto ok = check_name(name, "lookup"); !ok) return std::unexpected(ok.error());
    auto d = held_dir(dir, "lookup", name);
    if (!d) return std::unexpected(d.error());
    const std::string n(name);
    Entry out;
    if (int e = enter(*d, n.c_str(), out)) return fail(e, "lookup", name);
    return out;
}

void DirBackend::forget(Node node, uint64_t count) noexcept { nodes_.forget(node.id, count); }

Result<Stat> DirBackend::getattr(Node node) {
    auto n = held(node, "getattr");
    if (!n) return std::unexpected(n.error());
    struct statx st;
    if (int e = statx_fd(n->fd, st)) return fail(e, "getattr");
    return stat_from_statx(st);
}

Result<std::vector<DirEntry>> DirBackend::list(Node dir) {
    auto d = held_dir(dir, "readdir", {});
    if (!d) return std::unexpected(d.error());
    auto fd = reopen_to_read(*d, O_RDONLY | O_DIRECTORY, nodes_, no_atime_);
    if (!fd) return fail(fd.error(), "readdir");
    std::vector<DirEntry> out;
    if (int e = read_entries(fd->get(), out)) return fail(e, "readdir");
    return out;
}

Result<std::vector<NamedEntry>> DirBackend::list_entries(Node dir) {
    auto d = held_dir(dir, "readdir", {});
    if (!d) return std::unexpected(d.error());
    auto fd = reopen_to_read(*d, O_RDONLY | O_DIRECTORY, nodes_, no_atime_);
    if (!fd) return fail(fd.error(), "readdir");
    std::vector<DirEntry> names;
    if (int e = read_entries(fd->get(), names)) return fail(e, "readdir");
    std::vector<NamedEntry> out;
    out.reserve(names.size());
    for (DirEntry& name : names) {
        struct statx st;
        if (::statx(fd->get(), name.name.c_str(), kStatxFlags & ~AT_EMPTY_PATH, STATX_BASIC_STATS,
                    &st) != 0) {
            const int error = errno;
            if (error == ENOENT) continue;  // removed since the listing
            for (const NamedEntry& e : out) forget(e.entry.node, 1);
            return fail(error, "lookup", name.name);
        }
        const Node node{nodes_.intern(Fd(), st, d->id, name.name)};
        const bool no_xattrs = has_no_xattrs(fd->get(), name.name.c_str());
        out.push_back(NamedEntry{std::move(name.name), Entry{node, stat_from_statx(st)}, no_xattrs});
    }
    return out;
}

Result<std::string> DirBackend::readlink(Node node) {
    auto n = held(node, "readlink");
    if (!n) return std::unexpected(n.error());
    if (n->type != FileType::symlink) return fail(EINVAL, "readlink");
    std::string target(kMaxPathLength + 1, '\0');
    const ssize_t got = ::readlinkat(n->fd, "", target.data(), target.size());
    if (got < 0) return fail(errno, "readlink");
    target.resize(static_cast<std::size_t>(got));
    return target;
}

Result<StatFs> DirBackend::statfs(Node node) {
    auto n = held(node, "statfs");
    if (!n) return std::unexpected(n.error());
    struct statvfs sv;
    if (::fstatvfs(n->fd, &sv) != 0) return fail(errno, "statfs");
    return statfs_from_host(sv);
}

Result<FileHandle> DirBackend::open(Node node, int flags) {
    auto n = nodes_.find_for_one_call(node.id);
    if (!n) return fail(n.error(), "open");
    const NodeRef& obj = *n;
    flags &= O_ACCMODE | O_APPEND | O_TRUNC | O_DIRECTORY;
    if ((flags & O_ACCMODE) == O_ACCMODE) return fail(EINVAL, "open");
    if (auto ok = check_open_target(obj.type, flags); !ok) return std::unexpected(ok.error());
    const bool writes = (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
    if (obj.is_dir() && writes) return fail(EISDIR, "open");
    if (read_only_ && writes) return fail(EROFS, "open");
    // The node's inode itself: never a name looked up again, so never anything but the
    // regular file or directory just checked.
    auto fd = writes ? reopen(obj, flags, nodes_) : reopen_to_read(obj, flags, nodes_, no_atime_);
    if (!fd) return fail(fd.error(), "open");
    return make_dir_file(std::move(*fd));
}

// Between two of the directory's files: the host's copy_file_range (a reflink where the host
// filesystem can, e.g. btrfs and XFS; in-kernel otherwise), looped to the end as cp does.
Result<uint64_t> DirBackend::copy_range(Node from, uint64_t offset, Node to, uint64_t to_offset,
                                        uint64_t length) {
    auto source = held(from, "copy_file_range");
    if (!source) return std::unexpected(source.error());
    auto target = held(to, "copy_file_range");
    if (!target) return std::unexpected(target.error());
    for (const NodeRef* n : {&*source, &*target}) {
        if (n->is_dir()) return fail(EISDIR, "copy_file_range");
        if (n->type != FileType::regular) return fail(EINVAL, "copy_file_range");
    }
    if (read_only_) return fail(EROFS, "copy_file_range");
    auto in_fd = reopen(*source, O_RDONLY, nodes_);
    if (!in_fd) return fail(in_fd.error(), "copy_file_range");
    auto out_fd = reopen(*target, O_WRONLY, nodes_);
    if (!out_fd) return fail(out_fd.error(), "copy_file_range");
    return io::copy_file_range_all(in_fd->get(), offset, out_fd->get(), to_offset, length, {});
}

// --- making entries --------------------------------------------------------------------

Result<Created> DirBackend::create(Node dir, std::string_view name, int flags, uint32_t mode,
                                   std::optional<Owner> owner) {
    if (auto ok = check_name(name, "create"); !ok) return std::unexpected(ok.error());
    if ((flags & O_ACCMODE) == O_ACCMODE) return fail(EINVAL, "create", name);
    auto d = held_dir(dir, "create", name);
    if (!d) return std::unexpected(d.error());
    const NodeRef& parent = *d;
    const std::string n(name);
    int last_error = ENOENT;
    // Made with O_EXCL, so a name that exists is never opened from the directory (a device's
    // open can act, a fifo's can block): it is looked up and opened as open(node) does. A
    // name removed or made by someone else between the two is tried again.
    for (int attempt = 0; attempt < 16; ++attempt) {
        if (!read_only_) {
            const int oflags =
                (flags & (O_ACCMODE | O_APPEND)) | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
            Fd file = nodes_.open_with_room(
                [&] { return ::openat(parent.fd, n.c_str(), oflags, mode & 07777); });
            if (file) {
                auto path_fd = path_fd_of(file.get());
                if (!path_fd) return fail(path_fd.error(), "create", name);
                struct statx st {};
                if (int e = settle_new(path_fd->get(), parent.fd, FileType::regular, mode, owner,
                                       st)) {
                    file.reset();
                    undo_new(parent.fd, n.c_str(), st);
                    return fail(e, "create", name);
                }
                Entry entry{Node{nodes_.intern(std::move(*path_fd), st, parent.id, name)},
                            stat_from_statx(st)};
                return Created{entry, make_dir_file(std::move(file))};
            }
            if (errno != EEXIST) return fail(errno, "create", name);
        }
        Entry existing;
        last_error = enter(parent, n.c_str(), existing);
        if (last_error == ENOENT && !read_only_) continue;  // gone again: make it
        if (last_error == ENOENT) return fail(EROFS, "create", name);
        if (last_error != 0) return fail(last_error, "create", name);
        HeldNode hold(*this, existing.node);
        if (flags & O_EXCL) return fail(EEXIST, "create", name);
        auto file = open(existing.node, flags & ~(O_CREAT | O_EXCL));
        if (!file) return std::unexpected(file.error().relabeled("create", name));
        if (flags & O_TRUNC) {
            auto st = getattr(existing.node);
            if (st) existing.stat = *st;
        }
        hold.release();
        return Created{existing, std::move(*file)};
    }
    return fail(last_error, "create", name);
}

template <class Make>
Result<Entry> DirBackend::make_node(Node dir, std::string_view name, std::string_view op,
                                    FileType type, uint32_t mode, const std::optional<Owner>& owner,
                                    Make&& make) {
    if (auto ok = check_name(name, op); !ok) return std::unexpected(ok.error());
    auto d = held_dir(dir, op, name);
    if (!d) return std::unexpected(d.error());
    if (read_only_) return fail(EROFS, op, name);
    const int parent = d->fd;
    const std::string n(name);
    if (int e = make(parent, n.c_str())) return fail(e, op, name);
    Fd fd = nodes_.open_with_room(
        [&] { return ::openat(parent, n.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC); });
    if (!fd) return fail(errno, op, name);
    struct statx st {};
    if (int e = settle_new(fd.get(), parent, type, mode, owner, st)) {
        undo_new(parent, n.c_str(), st);
        return fail(e, op, name);
    }
    return Entry{Node{nodes_.intern(std::move(fd), st, d->id, name)}, stat_from_statx(st)};
}

Result<Entry> DirBackend::mkdir(Node dir, std::string_view name, uint32_t mode,
                                std::optional<Owner> owner) {
    return make_node(dir, name, "mkdir", FileType::directory, mode, owner,
                     [&](int parent, const char* n) {
                         return result_of(::mkdirat(parent, n, mode & 07777));
                     });
}

Result<Entry> DirBackend::mknod(Node dir, std::string_view name, FileType type, uint32_t mode,
                                uint64_t rdev, std::optional<Owner> owner) {
    if (type == FileType::directory || type == FileType::symlink)
        return fail(EINVAL, "mknod", name);
    const mode_t bits = file_type_to_mode_bits(type) | (mode & 07777);
    const dev_t dev = (type == FileType::char_device || type == FileType::block_device)
                          ? static_cast<dev_t>(rdev)
                          : 0;
    return make_node(dir, name, "mknod", type, mode, owner, [&](int parent, const char* n) {
        return result_of(::mknodat(parent, n, bits, dev));
    });
}

Result<Entry> DirBackend::symlink(Node dir, std::string_view name, std::string_view target,
                                  std::optional<Owner> owner) {
    if (auto ok = check_symlink_target(target, name); !ok) return std::unexpected(ok.error());
    const std::string text(target);
    return make_node(dir, name, "symlink", FileType::symlink, 0777, owner,
                     [&](int parent, const char* n) {
                         return result_of(::symlinkat(text.c_str(), parent, n));
                     });
}

Result<Entry> DirBackend::link(Node node, Node dir, std::string_view name) {
    if (auto ok = check_name(name, "link"); !ok) return std::unexpected(ok.error());
    auto obj = held(node, "link", name);
    if (!obj) return std::unexpected(obj.error());
    auto d = held_dir(dir, "link", name);
    if (!d) return std::unexpected(d.error());
    if (read_only_) return fail(EROFS, "link", name);
    const std::string n(name);
    // The magic link followed is the node's inode (a symlink's node: the link itself); the
    // kernel answers EEXIST, then EPERM for a directory, ENOENT for an object with no name
    // left. Without /proc, AT_EMPTY_PATH (which needs CAP_DAC_READ_SEARCH).
    if (::linkat(AT_FDCWD, proc_fd_path(obj->fd).c_str(), d->fd, n.c_str(),
                 AT_SYMLINK_FOLLOW) != 0) {
        const int error = errno;
        if (error != ENOENT || ::linkat(obj->fd, "", d->fd, n.c_str(), AT_EMPTY_PATH) != 0)
            return fail(error, "link", name);
    }
    // The same object: the same node, one reference more.
    if (!nodes_.hold(node.id)) return fail(ESTALE, "link", name);
    struct statx st;
    if (int e = statx_fd(obj->fd, st)) {
        nodes_.forget(node.id, 1);
        return fail(e, "link", name);
    }
    return Entry{node, stat_from_statx(st)};
}

// --- removing and renaming -------------------------------------------------------------

// unlink and rmdir: a held node of `name` keeps its fd from before the removal (an unlinked
// object can only be reached through one), and is known by no name after it.
Result<void> DirBackend::remove_entry(Node dir, const std::string& name, int flags,
                                      std::string_view op, int dir_fd) {
    const uint64_t held_there = nodes_.removing(dir.id, name);
    if (::unlinkat(dir_fd, name.c_str(), flags) != 0) {
        const int error = errno;
        nodes_.unpin(held_there);
        return fail(error, op, name);
    }
    nodes_.removed(held_there);
    return {};
}

Result<void> DirBackend::unlink(Node dir, std::string_view name) {
    if (auto ok = check_name(name, "unlink"); !ok) return ok;
    auto d = held_dir(dir, "unlink", name);
    if (!d) return std::unexpected(d.error());
    if (read_only_) return fail(EROFS, "unlink", name);
    const std::string n(name);
    return remove_entry(dir, n, 0, "unlink", d->fd);
}

Result<void> DirBackend::rmdir(Node dir, std::string_view name) {
    if (auto ok = check_name(name, "rmdir"); !ok) return ok;
    auto d = held_dir(dir, "rmdir", name);
    if (!d) return std::unexpected(d.error());
    if (read_only_) return fail(EROFS, "rmdir", name);
    const std::string n(name);
    // A cached directory fd of it, if any, answers ENOENT from now on: the path calls then
    // find it removed and resolve again (in_parent).
    return remove_entry(dir, n, AT_REMOVEDIR, "rmdir", d->fd);
}

Result<void> DirBackend::rename(Node dir, std::string_view name, Node to_dir,
                                std::string_view to_name, RenameFlags flags) {
    if (auto ok = check_name(name, "rename"); !ok) return ok;
    if (auto ok = check_name(to_name, "rename"); !ok) return ok;
    if (!valid_rename_flags(flags)) return fail(EINVAL, "rename", name);
    auto from = held_dir(dir, "rename", name);
    if (!from) return std::unexpected(from.error());
    auto to = held_dir(to_dir, "rename", to_name);
    if (!to) return std::unexpected(to.error());
    if (read_only_) return fail(EROFS, "rename", name);
    unsigned kflags = 0;
    if (flags == RenameFlags::noreplace) kflags = RENAME_NOREPLACE;
    if (flags == RenameFlags::exchange) kflags = RENAME_EXCHANGE;
    const std::string a(name), b(to_name);
    // What the target name held may go with it: a held node of it keeps its fd from now on.
    const uint64_t replaced = flags == RenameFlags::exchange ? 0 : nodes_.removing(to_dir.id, b);
    // A directory moved is seen by the path cache through its inotify watch (IN_MOVE_SELF),
    // as a move by anyone on the host is.
    if (::renameat2(from->fd, a.c_str(), to->fd, b.c_str(), kflags) != 0) {
        const int error = errno;
        nodes_.unpin(replaced);
        return fail(error, "rename", name);
    }
    nodes_.renamed(dir.id, a, to_dir.id, b, flags == RenameFlags::exchange);
    return {};
}

// --- attributes ------------------------------------------------------------------------

Result<Stat> DirBackend::setattr(Node node, const SetAttr& change) {
    auto n = held(node, "setattr");
    if (!n) return std::unexpected(n.error());
    const NodeRef& obj = *n;
    if (change.truncate) {
        if (obj.is_dir()) return fail(EISDIR, "truncate");
        if (obj.type != FileType::regular) return fail(EINVAL, "truncate");
        if (change.size > static_cast<uint64_t>(std::numeric_limits<off_t>::max()))
            return fail(EFBIG, "truncate");
    }
    if (auto ok = check_time(change.atime); !ok) return std::unexpected(ok.error());
    if (auto ok = check_time(change.mtime); !ok) return std::unexpected(ok.error());
    if (read_only_) return fail(EROFS, "setattr");
    // The owner first: a chown clears set-ID bits that a mode in the same change sets again.
    if (change.uid != SetAttr::kKeep || change.gid != SetAttr::kKeep) {
        if (::fchownat(obj.fd, "", change.uid, change.gid, AT_EMPTY_PATH) != 0)
            return fail(errno, "chown");
    }
    if (change.mode != SetAttr::kKeep) {
        // Linux keeps no modes on symlinks (6.6 and later refuse the change; earlier ones made
        // it through /proc): refused everywhere.
        if (obj.type == FileType::symlink) return fail(EOPNOTSUPP, "chmod");
        if (int e = chmod_fd(obj.fd, change.mode)) return fail(e, "chmod");
    }
    if (change.truncate) {
        if (::truncate(proc_fd_path(obj.fd).c_str(), static_cast<off_t>(change.size)) != 0)
            return fail(errno, "truncate");
    }
    if (change.atime.kind != TimeUpdate::Kind::omit || change.mtime.kind != TimeUpdate::Kind::omit) {
        const timespec times[2] = {to_timespec(change.atime), to_timespec(change.mtime)};
        if (::utimensat(obj.fd, "", times, AT_EMPTY_PATH) != 0) return fail(errno, "utimens");
    }
    struct statx st;
    if (int e = statx_fd(obj.fd, st)) return fail(e, "setattr");
    return stat_from_statx(st);
}

// --- extended attributes: the following x*attr calls on the magic link, which lands on the
// node's object (a symlink's node: the link itself, as the l* calls would) ---------------

Result<std::string> DirBackend::getxattr(Node node, std::string_view name) {
    if (auto ok = check_xattr_name(name, "getxattr"); !ok) return std::unexpected(ok.error());
    auto n = held(node, "getxattr", name);
    if (!n) return std::unexpected(n.error());
    const std::string path = proc_fd_path(n->fd);
    const std::string key(name);
    std::string value;
    int e = read_sized(value, [&](char* buf, std::size_t size) {
        return ::getxattr(path.c_str(), key.c_str(), buf, size);
    });
    if (e) return fail(e, "getxattr", name);
    return value;
}

Result<std::vector<std::string>> DirBackend::listxattr(Node node) {
    auto n = held(node, "listxattr");
    if (!n) return std::unexpected(n.error());
    const std::string path = proc_fd_path(n->fd);
    std::string buf;
    int e = read_sized(buf, [&](char* out, std::size_t size) {
        return ::listxattr(path.c_str(), out, size);
    });
    if (e) return fail(e, "listxattr");
    return split_xattr_names(buf);
}

Result<void> DirBackend::setxattr(Node node, std::string_view name, std::string_view value,
                                  XattrMode mode) {
    if (auto ok = check_xattr_name(name, "setxattr"); !ok) return ok;
    if (auto ok = check_xattr_value(value, name); !ok) return ok;
    auto n = held(node, "setxattr", name);
    if (!n) return std::unexpected(n.error());
    if (read_only_) return fail(EROFS, "setxattr", name);
    const std::string path = proc_fd_path(n->fd);
    const std::string key(name);
    if (::setxattr(path.c_str(), key.c_str(), value.data(), value.size(), xattr_flags(mode)) != 0)
        return fail(errno, "setxattr", name);
    return {};
}

Result<void> DirBackend::removexattr(Node node, std::string_view name) {
    if (auto ok = check_xattr_name(name, "removexattr"); !ok) return ok;
    auto n = held(node, "removexattr", name);
    if (!n) return std::unexpected(n.error());
    if (read_only_) return fail(EROFS, "removexattr", name);
    const std::string path = proc_fd_path(n->fd);
    const std::string key(name);
    if (::removexattr(path.c_str(), key.c_str()) != 0) return fail(errno, "removexattr", name);
    return {};
}

}  // namespace packfs::dir
