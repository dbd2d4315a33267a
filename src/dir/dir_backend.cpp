// The dir backend: lookups, listing, open and truncate; and how a backend is made.
#include "dir/dir_backend.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <mutex>

#include <fmt/format.h>

#include "core/host_stat.hpp"
#include "core/refuse_mutations.hpp"
#include "packfs/path.hpp"

namespace packfs::dir {
namespace {

constexpr unsigned kStatxMask = STATX_BASIC_STATS;

bool is_special(FileType type) noexcept {
    return type != FileType::regular && type != FileType::directory &&
           type != FileType::symlink;
}

// This process's /proc/self/fd, open as an O_PATH directory fd: kNotOpened until first used,
// -1 where it cannot be opened (no /proc). A forked child has another fd table, so it forgets
// the parent's (pthread_atfork) and opens its own.
constexpr int kNotOpened = -2;
std::atomic<int> g_proc_fd_dir{kNotOpened};
std::mutex g_proc_fd_dir_mutex;

void forget_proc_fd_dir_in_child() noexcept {
    const int fd = g_proc_fd_dir.exchange(kNotOpened);
    if (fd >= 0) ::close(fd);
}

int proc_fd_dir() noexcept {
    const int fd = g_proc_fd_dir.load(std::memory_order_acquire);
    if (fd != kNotOpened) return fd;
    std::lock_guard lock(g_proc_fd_dir_mutex);
    static const bool registered = ::pthread_atfork(nullptr, nullptr, forget_proc_fd_dir_in_child) == 0;
    if (!registered) return -1;  // a child could not tell the fd is its parent's: never kept
    int opened = g_proc_fd_dir.load(std::memory_order_acquire);
    if (opened == kNotOpened) {
        opened = ::open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC);
        g_proc_fd_dir.store(opened < 0 ? -1 : opened, std::memory_order_release);
    }
    return opened < 0 ? -1 : opened;
}

}  // namespace

std::string proc_fd_path(int fd, std::string_view name) {
    if (name.empty()) return fmt::format("/proc/self/fd/{}", fd);
    return fmt::format("/proc/self/fd/{}/{}", fd, name);
}

int open_through_proc(int fd, int flags) {
    if (const int dir = proc_fd_dir(); dir >= 0) {
        char name[16];
        const auto end = std::to_chars(name, name + sizeof name - 1, fd).ptr;
        *end = '\0';
        return ::openat(dir, name, flags | O_CLOEXEC);
    }
    return ::open(proc_fd_path(fd).c_str(), flags | O_CLOEXEC);
}

DirBackend::DirBackend(Fd root, PathResolver resolver, const DirOptions& options)
    : read_only_(options.read_only),
      no_atime_(options.no_atime),
      root_(std::move(root)),
      resolver_(resolver),
      cache_(root_.get(), options.cache_dirs ? options.cache_capacity : 0),
      nodes_(root_.get(), options.node_fds ? options.node_fds : default_node_fds(),
             /*names=*/!options.read_only) {}

Result<Located> DirBackend::locate(std::string_view path, std::string_view op) {
    auto normal = normalize_path(path, op);
    if (!normal) return std::unexpected(normal.error());
    Located t;
    t.path = std::move(*normal);
    t.root = t.path == "/";
    t.trailing_slash = !t.root && has_trailing_slash(path);
    t.parent_length = path_parent(t.path).size();
    t.name = t.root ? std::string(".") : std::string(path_basename(t.path));
    return t;
}

std::expected<ParentDir, int> DirBackend::parent_of(const Located& t) {
    const std::string_view parent = t.parent();
    if (parent == "/") return ParentDir(root_.get());
    auto cached = cache_.lookup(parent);
    if (cached.node) return ParentDir(std::move(cached.node));
    if (cached.error != 0) return std::unexpected(cached.error);
    // Not cacheable (a symlink on the way) or no cache: resolve under the containment.
    auto fd = resolver_.open(root_.get(), parent.substr(1), O_PATH | O_DIRECTORY);
    if (!fd) return std::unexpected(fd.error());
    return ParentDir(std::move(*fd));
}

bool DirBackend::is_removed(int dir_fd) noexcept {
    struct statx st;
    return ::statx(dir_fd, "", AT_EMPTY_PATH, STATX_NLINK, &st) == 0 && st.stx_nlink == 0;
}

int DirBackend::stat_at(int dir, const char* name, int flags, Stat& out) noexcept {
    struct statx st;
    if (::statx(dir, name, flags | AT_STATX_SYNC_AS_STAT, kStatxMask, &st) != 0) return errno;
    out = stat_from_statx(st);
    return 0;
}

std::expected<Fd, int> DirBackend::open_object(const Located& t, int flags, uint32_t mode) const {
    if (t.trailing_slash) flags |= O_DIRECTORY;
    return resolver_.open(root_.get(), t.relative(), flags, mode);
}

std::expected<Fd, int> DirBackend::open_followed(const Located& t, int flags,
                                                 uint32_t mode) const {
    auto object = open_object(t, O_PATH | (flags & O_DIRECTORY));
    if (!object) {
        // A dangling link with O_CREAT creates its target, under the containment.
        if (object.error() == ENOENT && (flags & O_CREAT)) {
            if (read_only_) return std::unexpected(EROFS);
            return open_object(t, flags, mode);
        }
        return object;
    }
    Stat st;
    if (int e = stat_at(object->get(), "", AT_EMPTY_PATH, st)) return std::unexpected(e);
    if (int e = judge_open(st, flags)) return std::unexpected(e);
    const int reopen = flags & ~(O_CREAT | O_EXCL | O_NOFOLLOW);
    int fd = ::open(proc_fd_path(object->get()).c_str(), reopen | O_CLOEXEC);
    if (fd < 0) return std::unexpected(errno);
    return Fd(fd);
}

// --- metadata and names ---------------------------------------------------------------

Result<Stat> DirBackend::stat(std::string_view path) {
    auto t = locate(path, "stat");
    if (!t) return std::unexpected(t.error());
    Stat st;
    if (t->root) {
        if (int e = stat_at(root_.get(), "", AT_EMPTY_PATH, st)) return fail(e, "stat", t->path);
        return st;
    }
    if (!t->trailing_slash) {
        // One statx in the parent; only a symlink needs the walk that follows it.
        int e = in_parent(*t, [&](int dir) {
            return stat_at(dir, t->name.c_str(), AT_SYMLINK_NOFOLLOW, st);
        });
        if (e) return fail(e, "stat", t->path);
        if (st.type != FileType::symlink) return st;
    }
    auto fd = open_object(*t, O_PATH);
    if (!fd) return fail(fd.error(), "stat", t->path);
    if (int e = stat_at(fd->get(), "", AT_EMPTY_PATH, st)) return fail(e, "stat", t->path);
    return st;
}

Result<Stat> DirBackend::lstat(std::string_view path) {
    auto t = locate(path, "lstat");
    if (!t) return std::unexpected(t.error());
    // "link/" names what the link points to, as POSIX says: that is stat's walk.
    if (t->root || t->trailing_slash) return stat(t->path + (t->root ? "" : "/"));
    Stat st;
    int e = in_parent(*t, [&](int dir) {
        return stat_at(dir, t->name.c_str(), AT_SYMLINK_NOFOLLOW, st);
    });
    if (e) return fail(e, "lstat", t->path);
    return st;
}

Result<std::string> DirBackend::readlink(std::string_view path) {
    auto t = locate(path, "readlink");
    if (!t) return std::unexpected(t.error());
    if (t->root) return fail(EINVAL, "readlink", t->path);
    if (t->trailing_slash) {
        // "link/" is the directory it leads to, which is not a link.
        auto fd = open_object(*t, O_PATH);
        return fail(fd ? EINVAL : fd.error(), "readlink", t->path);
    }
    std::string target(kMaxPathLength + 1, '\0');
    ssize_t n = 0;
    int e = in_parent(*t, [&](int dir) {
        n = ::readlinkat(dir, t->name.c_str(), target.data(), target.size());
        return n < 0 ? errno : 0;
    });
    if (e) return fail(e, "readlink", t->path);
    target.resize(static_cast<std::size_t>(n));
    return target;
}

Result<std::vector<DirEntry>> DirBackend::readdir(std::string_view path) {
    auto t = locate(path, "readdir");
    if (!t) return std::unexpected(t.error());
    constexpr int kFlags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
    Fd dir;
    if (t->root) {
        dir = Fd(::openat(root_.get(), ".", kFlags));
        if (!dir) return fail(errno, "readdir", t->path);
    } else {
        bool through_link = false;
        int e = in_parent(*t, [&](int parent) {
            dir = Fd(::openat(parent, t->name.c_str(), kFlags | O_NOFOLLOW));
            if (dir) return 0;
            const int open_error = errno;
            // O_DIRECTORY|O_NOFOLLOW says ENOTDIR for a symlink too: look which it is.
            Stat st;
            if (open_error == ENOTDIR && stat_at(parent, t->name.c_str(), AT_SYMLINK_NOFOLLOW, st) == 0 &&
                st.type == FileType::symlink) {
                through_link = true;
                return 0;
            }
            return open_error;
        });
        if (e) return fail(e, "readdir", t->path);
        if (through_link) {
            auto fd = open_object(*t, kFlags);
            if (!fd) return fail(fd.error(), "readdir", t->path);
            dir = std::move(*fd);
        }
    }
    std::vector<DirEntry> out;
    if (int e = read_entries(dir.get(), out)) return fail(e, "readdir", t->path);
    return out;
}

int DirBackend::read_entries(int dir, std::vector<DirEntry>& out) {
    alignas(8) char buf[32768];
    for (;;) {
        ssize_t n = ::getdents64(dir, buf, sizeof buf);
        if (n < 0) return errno;
        if (n == 0) return 0;
        for (ssize_t at = 0; at < n;) {
            const auto* d = reinterpret_cast<const dirent64*>(buf + at);
            at += d->d_reclen;
            std::string_view name = d->d_name;
            if (name == "." || name == "..") continue;
            DirEntry entry{std::string(name), d->d_ino, FileType::regular};
            if (!file_type_from_dirent(d->d_type, entry.type)) {
                Stat st;  // a filesystem without d_type: one statx for this entry
                if (stat_at(dir, d->d_name, AT_SYMLINK_NOFOLLOW, st) == 0) entry.type = st.type;
            }
            out.push_back(std::move(entry));
        }
    }
}

Result<StatFs> DirBackend::statfs(std::string_view path) {
    auto t = locate(path, "statfs");
    if (!t) return std::unexpected(t.error());
    Fd object;
    if (!t->root) {
        auto fd = open_object(*t, O_PATH);
        if (!fd) return fail(fd.error(), "statfs", t->path);
        object = std::move(*fd);
    }
    struct statvfs sv;
    if (::fstatvfs(t->root ? root_.get() : object.get(), &sv) != 0)
        return fail(errno, "statfs", t->path);
    return statfs_from_host(sv);
}

// --- files ----------------------------------------------------------------------------

Result<FileHandle> DirBackend::open(std::string_view path, int flags, uint32_t mode) {
    auto t = locate(path, "open");
    if (!t) return std::unexpected(t.error());
    constexpr int kAllowed = O_ACCMODE | O_CREAT | O_EXCL | O_TRUNC | O_APPEND | O_NOFOLLOW |
                             O_DIRECTORY;
    flags &= kAllowed;
    if (t->trailing_slash) flags |= O_DIRECTORY;
    const bool create = flags & O_CREAT;
    const bool exclusive = create && (flags & O_EXCL);
    if (t->root) {
        if (exclusive) return fail(EEXIST, "open", t->path);
        Stat st;
        if (int e = stat_at(root_.get(), "", AT_EMPTY_PATH, st)) return fail(e, "open", t->path);
        if (int e = judge_open(st, flags)) return fail(e, "open", t->path);
        int fd = ::openat(root_.get(), ".", (flags & ~O_NOFOLLOW) | O_CLOEXEC);
        if (fd < 0) return fail(errno, "open", t->path);
        return make_dir_file(Fd(fd));
    }
    // O_NONBLOCK: a name swapped for a fifo between the look and the open must not hang us;
    // on a regular file or a directory it changes nothing.
    const int kflags = flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
    const std::string name = t->name;
    Fd fd;
    if (create && t->trailing_slash) {
        // "x/" with O_CREAT is EISDIR whatever x is, once the parent resolved (as Linux).
        int e = in_parent(*t, [](int) { return 0; });
        return fail(e ? e : EISDIR, "open", t->path);
    }
    if (exclusive && !read_only_) {
        // O_CREAT|O_EXCL never follows and only ever makes a regular file: one openat.
        int e = in_parent(*t, [&](int dir) {
            fd = Fd(::openat(dir, name.c_str(), kflags, mode & 07777));
            return fd ? 0 : errno;
        });
        if (e) return fail(e, "open", t->path);
        return make_dir_file(std::move(fd));
    }
    // Look first: a special file is never opened (a device's open can act), a symlink is
    // followed by the resolver, never by the kernel from the parent.
    Stat st;
    bool follow = false;
    int e = in_parent(*t, [&](int dir) {
        int err = stat_at(dir, name.c_str(), AT_SYMLINK_NOFOLLOW, st);
        if (err == ENOENT && create) {
            if (read_only_) return EROFS;
            fd = Fd(::openat(dir, name.c_str(), kflags, mode & 07777));
            return fd ? 0 : errno;
        }
        if (err != 0) return err;
        if (exclusive) return EEXIST;
        if (st.type == FileType::symlink && !t->trailing_slash) {
            // Linux checks O_DIRECTORY before refusing the link itself.
            if (flags & O_NOFOLLOW) return (flags & O_DIRECTORY) ? ENOTDIR : ELOOP;
            follow = true;
            return 0;
        }
        if (st.type == FileType::symlink) {  // "link/" follows, even under O_NOFOLLOW
            follow = true;
            return 0;
        }
        if (int judged = judge_open(st, flags)) return judged;
        fd = Fd(::openat(dir, name.c_str(), kflags & ~O_CREAT, 0));
        return fd ? 0 : errno;
    });
    if (e) return fail(e, "open", t->path);
    if (follow) {
        auto target = open_followed(*t, flags | O_NONBLOCK, mode);
        if (!target) return fail(target.error(), "open", t->path);
        fd = std::move(*target);
    }
    return make_dir_file(std::move(fd));
}

int DirBackend::judge_open(const Stat& st, int flags) const noexcept {
    // Linux's order (fs/namei.c do_open, may_open); then the contract's ENOTSUP for special
    // files, then a read-only backend's EROFS for what would write.
    const bool dir = st.type == FileType::directory;
    const bool writes = (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
    if ((flags & O_CREAT) && dir) return EISDIR;
    if ((flags & O_DIRECTORY) && !dir) return ENOTDIR;
    if (dir && writes) return EISDIR;
    if (is_special(st.type)) return ENOTSUP;
    if (read_only_ && writes) return EROFS;
    return 0;
}

Result<void> DirBackend::truncate(std::string_view path, uint64_t size) {
    auto t = locate(path, "truncate");
    if (!t) return std::unexpected(t.error());
    if (t->root) return fail(EISDIR, "truncate", t->path);
    Fd fd;
    Stat st;
    bool follow = t->trailing_slash;
    if (!follow) {
        int e = in_parent(*t, [&](int dir) {
            int err = stat_at(dir, t->name.c_str(), AT_SYMLINK_NOFOLLOW, st);
            if (err != 0) return err;
            if (st.type == FileType::symlink) {
                follow = true;
                return 0;
            }
            if (st.type == FileType::directory) return EISDIR;
            if (st.type != FileType::regular) return EINVAL;
            fd = Fd(::openat(dir, t->name.c_str(), O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
            return fd ? 0 : errno;
        });
        if (e) return fail(e, "truncate", t->path);
    }
    if (follow) {
        auto target = open_followed(*t, O_WRONLY | O_NONBLOCK, 0);
        if (!target) {
            const int e = target.error() == ENOTSUP ? EINVAL : target.error();
            return fail(e, "truncate", t->path);
        }
        fd = std::move(*target);
    }
    if (::ftruncate(fd.get(), static_cast<off_t>(size)) != 0) return fail(errno, "truncate", t->path);
    return {};
}

Result<std::shared_ptr<Backend>> DirBackend::snapshot() {
    // A host directory keeps no versions: a frozen copy would be a copy.
    return fail(ENOTSUP, "snapshot");
}

// --- the read-only variant and the factory -----------------------------------------------

namespace {

class ReadOnlyDirBackend final : public RefuseMutations<DirBackend> {
public:
    using RefuseMutations<DirBackend>::RefuseMutations;

    // open() is DirBackend's own: it answers what exists first, as a read-only mount does,
    // and EROFS only where it would write (judge_open).
};

}  // namespace
}  // namespace packfs::dir

namespace packfs {

using dir::DirBackend;

Result<std::shared_ptr<Backend>> open_dir_backend(const std::string& host_dir,
                                                  const DirOptions& options) {
    Fd root(::open(host_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!root) return fail(errno, "open_dir_backend", host_dir);
    auto resolver = dir::PathResolver::make(options.containment, options.resolver);
    if (!resolver) return fail(resolver.error(), "open_dir_backend", host_dir);
    if (options.read_only)
        return std::make_shared<dir::ReadOnlyDirBackend>(std::move(root), *resolver, options);
    return std::make_shared<DirBackend>(std::move(root), *resolver, options);
}

const char* containment_name(Containment c) noexcept {
    switch (c) {
        case Containment::beneath: return "beneath";
        case Containment::in_root: return "in_root";
        case Containment::no_symlinks: return "no_symlinks";
    }
    return "?";
}

const char* resolver_name(Resolver r) noexcept {
    switch (r) {
        case Resolver::automatic: return "automatic";
        case Resolver::openat2: return "openat2";
        case Resolver::walk: return "walk";
    }
    return "?";
}

}  // namespace packfs
