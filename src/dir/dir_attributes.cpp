// The dir backend: modes, owners, times and extended attributes. The ones that follow a
// final symlink act in the parent when the name is not a link, and otherwise on an O_PATH fd
// of the target that the resolver opened under the containment; the kernel is never asked
// to follow a final link from the parent.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>

#include "dir/dir_backend.hpp"
#include "dir/host_calls.hpp"

#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452  // Linux 6.6; the same number on every architecture
#endif

namespace packfs::dir {

int chmod_fd(int fd, uint32_t mode) noexcept {
    if (::syscall(SYS_fchmodat2, fd, "", mode & 07777, AT_EMPTY_PATH) == 0) return 0;
    if (errno != ENOSYS && errno != EINVAL) return errno;
    return result_of(::chmod(proc_fd_path(fd).c_str(), mode & 07777));
}

Result<void> DirBackend::chmod(std::string_view path, uint32_t mode) {
    auto t = locate(path, "chmod");
    if (!t) return std::unexpected(t.error());
    if (t->root) {
        if (int e = chmod_fd(root_.get(), mode)) return fail(e, "chmod", t->path);
        return {};
    }
    if (!t->trailing_slash) {
        // fchmodat2 with AT_SYMLINK_NOFOLLOW changes a non-link in one call and refuses a
        // link (EOPNOTSUPP: Linux has no link modes), which is the cue to follow it.
        int e = in_parent(*t, [&](int dir) {
            if (::syscall(SYS_fchmodat2, dir, t->name.c_str(), mode & 07777, AT_SYMLINK_NOFOLLOW) == 0)
                return 0;
            if (errno != ENOSYS) return errno;
            // Before Linux 6.6: look at what the name is through an O_PATH fd of it.
            Fd fd(::openat(dir, t->name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
            if (!fd) return errno;
            Stat st;
            if (int err = stat_at(fd.get(), "", AT_EMPTY_PATH, st)) return err;
            if (st.type == FileType::symlink) return EOPNOTSUPP;
            return chmod_fd(fd.get(), mode);
        });
        if (e == 0) return {};
        if (e != EOPNOTSUPP) return fail(e, "chmod", t->path);
    }
    auto fd = open_object(*t, O_PATH);
    if (!fd) return fail(fd.error(), "chmod", t->path);
    if (int e = chmod_fd(fd->get(), mode)) return fail(e, "chmod", t->path);
    return {};
}

// chown and utimens: `at(dir, name)` acts on the name itself in its parent (AT_SYMLINK_NOFOLLOW),
// `on_fd(fd)` on an O_PATH fd (AT_EMPTY_PATH). A link that must be followed is followed by the
// resolver, under the containment; a name swapped for a link after the look gets the link
// changed, never what it points to.
template <class At, class OnFd>
Result<void> DirBackend::on_final(const Located& t, Follow follow, std::string_view op, At&& at,
                                  OnFd&& on_fd) {
    int e = 0;
    if (t.root) {
        e = on_fd(root_.get());
    } else {
        bool through_link = t.trailing_slash;
        if (!through_link) {
            e = in_parent(t, [&](int dir) {
                if (follow == Follow::yes) {
                    Stat st;
                    if (int err = stat_at(dir, t.name.c_str(), AT_SYMLINK_NOFOLLOW, st)) return err;
                    through_link = st.type == FileType::symlink;
                    if (through_link) return 0;
                }
                return at(dir, t.name.c_str());
            });
        }
        if (e == 0 && through_link) {
            auto fd = open_object(t, O_PATH);
            e = fd ? on_fd(fd->get()) : fd.error();
        }
    }
    if (e) return fail(e, op, t.path);
    return {};
}

Result<void> DirBackend::chown(std::string_view path, uint32_t uid, uint32_t gid, Follow follow) {
    auto t = locate(path, "chown");
    if (!t) return std::unexpected(t.error());
    return on_final(
        *t, follow, "chown",
        [&](int dir, const char* name) {
            return result_of(::fchownat(dir, name, uid, gid, AT_SYMLINK_NOFOLLOW));
        },
        [&](int fd) { return result_of(::fchownat(fd, "", uid, gid, AT_EMPTY_PATH)); });
}

Result<void> DirBackend::utimens(std::string_view path, TimeUpdate atime, TimeUpdate mtime,
                                 Follow follow) {
    auto t = locate(path, "utimens");
    if (!t) return std::unexpected(t.error());
    if (atime.kind == TimeUpdate::Kind::omit && mtime.kind == TimeUpdate::Kind::omit) {
        // utimensat(2) returns 0 for two UTIME_OMITs without looking the path up; the
        // contract looks: a missing path is ENOENT whatever the times say.
        const std::string as_written = t->path + (t->trailing_slash ? "/" : "");
        auto st = follow == Follow::yes ? stat(as_written) : lstat(as_written);
        if (!st) return fail(st.error().code(), "utimens", t->path);
        return {};
    }
    const timespec times[2] = {to_timespec(atime), to_timespec(mtime)};
    return on_final(
        *t, follow, "utimens",
        [&](int dir, const char* name) {
            return result_of(::utimensat(dir, name, times, AT_SYMLINK_NOFOLLOW));
        },
        [&](int fd) { return result_of(::utimensat(fd, "", times, AT_EMPTY_PATH)); });
}

// --- extended attributes ---------------------------------------------------------------
// Never through a final link (the contract's l*xattr semantics): the l* calls on
// "/proc/self/fd/<parent>/<name>", where only the parent's magic link is followed. A
// trailing slash follows, as it does for the kernel: the call then runs on the target's fd.

template <class Call>
auto DirBackend::with_xattr_path(const Located& t, Call&& call) -> int {
    if (t.root) return call(proc_fd_path(root_.get()), true);
    if (t.trailing_slash) {
        auto fd = open_object(t, O_PATH);
        if (!fd) return fd.error();
        return call(proc_fd_path(fd->get()), true);
    }
    return in_parent(t, [&](int dir) { return call(proc_fd_path(dir, t.name), false); });
}

Result<std::string> DirBackend::getxattr(std::string_view path, std::string_view name) {
    auto t = locate(path, "getxattr");
    if (!t) return std::unexpected(t.error());
    const std::string key(name);
    std::string value;
    int e = with_xattr_path(*t, [&](const std::string& p, bool follow) {
        auto get = follow ? ::getxattr : ::lgetxattr;
        return read_sized(value, [&](char* buf, std::size_t size) {
            return get(p.c_str(), key.c_str(), buf, size);
        });
    });
    if (e) return fail(e, "getxattr", t->path);
    return value;
}

Result<void> DirBackend::setxattr(std::string_view path, std::string_view name,
                                  std::string_view value, XattrMode mode) {
    auto t = locate(path, "setxattr");
    if (!t) return std::unexpected(t.error());
    const std::string key(name);
    int e = with_xattr_path(*t, [&](const std::string& p, bool follow) {
        auto set = follow ? ::setxattr : ::lsetxattr;
        return result_of(set(p.c_str(), key.c_str(), value.data(), value.size(), xattr_flags(mode)));
    });
    if (e) return fail(e, "setxattr", t->path);
    return {};
}

Result<std::vector<std::string>> DirBackend::listxattr(std::string_view path) {
    auto t = locate(path, "listxattr");
    if (!t) return std::unexpected(t.error());
    std::string buf;
    int e = with_xattr_path(*t, [&](const std::string& p, bool follow) {
        auto list = follow ? ::listxattr : ::llistxattr;
        return read_sized(buf, [&](char* out, std::size_t size) {
            return list(p.c_str(), out, size);
        });
    });
    if (e) return fail(e, "listxattr", t->path);
    return split_xattr_names(buf);
}

Result<void> DirBackend::removexattr(std::string_view path, std::string_view name) {
    auto t = locate(path, "removexattr");
    if (!t) return std::unexpected(t.error());
    const std::string key(name);
    int e = with_xattr_path(*t, [&](const std::string& p, bool follow) {
        auto remove = follow ? ::removexattr : ::lremovexattr;
        return result_of(remove(p.c_str(), key.c_str()));
    });
    if (e) return fail(e, "removexattr", t->path);
    return {};
}

}  // namespace packfs::dir
