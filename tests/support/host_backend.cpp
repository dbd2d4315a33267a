// TEST ONLY: see host_backend.hpp. Plain syscalls on the parent directory of each path, with
// the parent (and every path that must follow a final symlink) resolved by openat2 with
// RESOLVE_IN_ROOT so that the host root plays the part of "/".
#include "support/host_backend.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>

#include "core/fd.hpp"
#include "core/host_stat.hpp"
#include "core/io.hpp"
#include "packfs/path.hpp"
#include "support/path_only_backend.hpp"

namespace packfs::testing {
namespace {

std::unexpected<Error> errno_error(std::string_view op, std::string_view path) {
    return fail(errno, op, path);
}

// /proc/self/fd/N[/name]: names an fd (or an entry of a directory fd) by path, for the
// syscalls that only take paths (l*xattr, truncate, chmod, utimensat on O_PATH fds).
std::string proc_path(int fd, std::string_view name = {}) {
    if (name.empty()) return fmt::format("/proc/self/fd/{}", fd);
    return fmt::format("/proc/self/fd/{}/{}", fd, name);
}

// A normalised virtual path split for the *at syscalls.
struct Target {
    std::string path;    // normal form, "/a/b"
    std::string parent;  // normal form of the parent, "/" for the root and top-level entries
    std::string name;    // final component, "." for the root; with a '/' appended when the
                         // caller wrote a trailing slash, so the kernel demands a directory
    bool root = false;
    bool trailing_slash = false;

    // The path relative to the root, as openat2 takes it ("." for the root).
    std::string relative() const {
        std::string rel = root ? std::string(".") : path.substr(1);
        if (trailing_slash && !root) rel += '/';
        return rel;
    }
};

class HostFile final : public File {
public:
    explicit HostFile(Fd fd) : fd_(std::move(fd)) {}

    Result<std::size_t> pread(std::span<std::byte> buf, uint64_t offset) override {
        ssize_t n;
        do {
            n = ::pread(fd_.get(), buf.data(), buf.size(), static_cast<off_t>(offset));
        } while (n < 0 && errno == EINTR);
        if (n < 0) return errno_error("pread", {});
        return static_cast<std::size_t>(n);
    }

    Result<std::size_t> pwrite(std::span<const std::byte> data, uint64_t offset) override {
        // At least one call, so a write of no bytes still answers for the descriptor (EBADF).
        std::size_t done = 0;
        do {
            ssize_t n = ::pwrite(fd_.get(), data.data() + done, data.size() - done,
                                 static_cast<off_t>(offset + done));
            if (n < 0) {
                if (errno == EINTR) continue;
                return errno_error("pwrite", {});
            }
            done += static_cast<std::size_t>(n);
        } while (done < data.size());
        return done;
    }

    Result<void> truncate(uint64_t size) override {
        if (::ftruncate(fd_.get(), static_cast<off_t>(size)) != 0)
            return errno_error("truncate", {});
        return {};
    }

    Result<void> fsync(bool data_only) override {
        int rc = data_only ? ::fdatasync(fd_.get()) : ::fsync(fd_.get());
        if (rc != 0) return errno_error("fsync", {});
        return {};
    }

    Result<Stat> fstat() override {
        struct stat st{};
        if (::fstat(fd_.get(), &st) != 0) return errno_error("fstat", {});
        return stat_from_host(st);
    }

    Result<void> allocate(int mode, uint64_t offset, uint64_t length) override {
        if (::fallocate(fd_.get(), mode, static_cast<off_t>(offset), static_cast<off_t>(length)) !=
            0)
            return errno_error("fallocate", {});
        return {};
    }

    // The file is a host file: its bytes are where they are (for host_copy_file_range).
    std::optional<HostBytes> host_bytes(uint64_t offset, std::size_t length) override {
        struct stat st {};
        if (::fstat(fd_.get(), &st) != 0) return std::nullopt;
        const auto size = static_cast<uint64_t>(st.st_size);
        return HostBytes{fd_.get(), offset,
                         offset >= size
                             ? 0
                             : static_cast<std::size_t>(std::min<uint64_t>(length, size - offset))};
    }

    Result<uint64_t> seek_data(uint64_t offset, bool data) override {
        const off_t at =
            ::lseek(fd_.get(), static_cast<off_t>(offset), data ? SEEK_DATA : SEEK_HOLE);
        if (at < 0) return errno_error("lseek", {});
        return static_cast<uint64_t>(at);
    }

private:
    Fd fd_;
};

class HostBackend final : public test_support::PathOnlyBackend {
public:
    explicit HostBackend(Fd root) : root_(std::move(root)) {}

    Result<Stat> stat(std::string_view path) override {
        auto t = target(path, "stat");
        if (!t) return std::unexpected(t.error());
        auto fd = open_path(*t, O_PATH, "stat");
        if (!fd) return std::unexpected(fd.error());
        struct stat st{};
        if (::fstat(fd->get(), &st) != 0) return errno_error("stat", t->path);
        return stat_from_host(st);
    }

    Result<Stat> lstat(std::string_view path) override {
        auto t = target(path, "lstat");
        if (!t) return std::unexpected(t.error());
        // With a trailing slash POSIX follows a final symlink; let stat() resolve it in root.
        if (t->trailing_slash) return stat(path);
        auto dir = open_parent(*t, "lstat");
        if (!dir) return std::unexpected(dir.error());
        struct stat st{};
        if (::fstatat(dir->get(), t->name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
            return errno_error("lstat", t->path);
        return stat_from_host(st);
    }

    Result<std::vector<DirEntry>> readdir(std::string_view path) override {
        auto t = target(path, "readdir");
        if (!t) return std::unexpected(t.error());
        auto fd = open_path(*t, O_RDONLY | O_DIRECTORY, "readdir");
        if (!fd) return std::unexpected(fd.error());
        DIR* dir = ::fdopendir(fd->get());
        if (dir == nullptr) return errno_error("readdir", t->path);
        fd->release();
        std::vector<DirEntry> out;
        for (;;) {
            errno = 0;
            const dirent* e = ::readdir(dir);
            if (e == nullptr) break;
            std::string_view name = e->d_name;
            if (name == "." || name == "..") continue;
            DirEntry entry{std::string(name), e->d_ino, FileType::regular};
            struct stat st{};
            if (::fstatat(::dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
                file_type_from_mode_bits(st.st_mode, entry.type);
            }
            out.push_back(std::move(entry));
        }
        int err = errno;
        ::closedir(dir);
        if (err != 0) return fail(err, "readdir", t->path);
        return out;
    }

    Result<std::string> readlink(std::string_view path) override {
        auto t = target(path, "readlink");
        if (!t) return std::unexpected(t.error());
        auto dir = open_parent(*t, "readlink");
        if (!dir) return std::unexpected(dir.error());
        std::string buf(4096, '\0');
        ssize_t n = ::readlinkat(dir->get(), t->name.c_str(), buf.data(), buf.size());
        if (n < 0) return errno_error("readlink", t->path);
        buf.resize(static_cast<std::size_t>(n));
        return buf;
    }

    Result<StatFs> statfs(std::string_view path) override {
        auto t = target(path, "statfs");
        if (!t) return std::unexpected(t.error());
        auto fd = open_path(*t, O_PATH, "statfs");
        if (!fd) return std::unexpected(fd.error());
        struct statvfs sv{};
        if (::fstatvfs(fd->get(), &sv) != 0) return errno_error("statfs", t->path);
        return statfs_from_host(sv);
    }

    Result<FileHandle> open(std::string_view path, int flags, uint32_t mode) override {
        auto t = target(path, "open");
        if (!t) return std::unexpected(t.error());
        // The contract: special files are listed, never opened (the kernel would block on a
        // fifo). Look before opening for real.
        // O_CREAT|O_EXCL on an existing entry is EEXIST whatever it is: the kernel says so.
        bool exclusive = (flags & O_CREAT) != 0 && (flags & O_EXCL) != 0;
        if (auto probe = open_path(*t, O_PATH | (flags & O_NOFOLLOW), "open"); probe && !exclusive) {
            struct stat st{};
            if (::fstat(probe->get(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) &&
                !S_ISLNK(st.st_mode))
                return fail(ENOTSUP, "open", t->path);
        }
        auto fd = open_path(*t, flags, "open", mode);
        if (!fd) return std::unexpected(fd.error());
        return FileHandle(std::make_unique<HostFile>(std::move(*fd)));
    }

    Result<void> truncate(std::string_view path, uint64_t size) override {
        auto t = target(path, "truncate");
        if (!t) return std::unexpected(t.error());
        auto fd = open_path(*t, O_PATH, "truncate");
        if (!fd) return std::unexpected(fd.error());
        struct stat st{};
        if (::fstat(fd->get(), &st) != 0) return errno_error("truncate", t->path);
        if (S_ISDIR(st.st_mode)) return fail(EISDIR, "truncate", t->path);
        if (!S_ISREG(st.st_mode)) return fail(EINVAL, "truncate", t->path);
        if (::truncate(proc_path(fd->get()).c_str(), static_cast<off_t>(size)) != 0)
            return errno_error("truncate", t->path);
        return {};
    }

    Result<void> mkdir(std::string_view path, uint32_t mode) override {
        return at_call(path, "mkdir", [&](int dir, const char* name) {
            return ::mkdirat(dir, name, mode);
        });
    }

    Result<void> rmdir(std::string_view path) override {
        auto t = target(path, "rmdir");
        if (!t) return std::unexpected(t.error());
        if (t->root) return fail(EBUSY, "rmdir", t->path);  // as rmdir("/") answers
        return at_call(*t, "rmdir", [&](int dir, const char* name) {
            return ::unlinkat(dir, name, AT_REMOVEDIR);
        });
    }

    Result<void> unlink(std::string_view path) override {
        return at_call(path, "unlink", [&](int dir, const char* name) {
            return ::unlinkat(dir, name, 0);
        });
    }

    Result<void> rename(std::string_view from, std::string_view to, RenameFlags flags) override {
        auto a = target(from, "rename");
        if (!a) return std::unexpected(a.error());
        auto b = target(to, "rename");
        if (!b) return std::unexpected(b.error());
        if (a->root || b->root) return fail(EBUSY, "rename", a->root ? a->path : b->path);
        auto da = open_parent(*a, "rename");
        if (!da) return std::unexpected(da.error());
        auto db = open_parent(*b, "rename");
        if (!db) return std::unexpected(db.error());
        unsigned kflags = 0;
        if (flags == RenameFlags::noreplace) kflags = RENAME_NOREPLACE;
        if (flags == RenameFlags::exchange) kflags = RENAME_EXCHANGE;
        if (::renameat2(da->get(), a->name.c_str(), db->get(), b->name.c_str(), kflags) != 0)
            return errno_error("rename", a->path);
        return {};
    }

    Result<void> symlink(std::string_view link_target, std::string_view link_path) override {
        if (link_target.find('\0') != std::string_view::npos)
            return fail(EINVAL, "symlink", link_path);
        std::string target_copy(link_target);
        return at_call(link_path, "symlink", [&](int dir, const char* name) {
            return ::symlinkat(target_copy.c_str(), dir, name);
        });
    }

    Result<void> link(std::string_view existing, std::string_view new_path) override {
        auto a = target(existing, "link");
        if (!a) return std::unexpected(a.error());
        auto b = target(new_path, "link");
        if (!b) return std::unexpected(b.error());
        auto da = open_parent(*a, "link");
        if (!da) return std::unexpected(da.error());
        auto db = open_parent(*b, "link");
        if (!db) return std::unexpected(db.error());
        if (::linkat(da->get(), a->name.c_str(), db->get(), b->name.c_str(), 0) != 0)
            return errno_error("link", a->path);
        return {};
    }

    Result<void> mknod(std::string_view path, FileType type, uint32_t mode,
                       uint64_t rdev) override {
        if (type == FileType::directory || type == FileType::symlink)
            return fail(EINVAL, "mknod", path);
        mode_t bits = file_type_to_mode_bits(type) | (mode & 07777);
        return at_call(path, "mknod", [&](int dir, const char* name) {
            return ::mknodat(dir, name, bits, static_cast<dev_t>(rdev));
        });
    }

    Result<void> chmod(std::string_view path, uint32_t mode) override {
        auto t = target(path, "chmod");
        if (!t) return std::unexpected(t.error());
        auto fd = open_path(*t, O_PATH, "chmod");
        if (!fd) return std::unexpected(fd.error());
        if (::chmod(proc_path(fd->get()).c_str(), mode & 07777) != 0)
            return errno_error("chmod", t->path);
        return {};
    }

    Result<void> chown(std::string_view path, uint32_t uid, uint32_t gid,
                       Follow follow) override {
        auto t = target(path, "chown");
        if (!t) return std::unexpected(t.error());
        if (follow == Follow::yes || t->trailing_slash) {
            auto fd = open_path(*t, O_PATH, "chown");
            if (!fd) return std::unexpected(fd.error());
            if (::fchownat(fd->get(), "", uid, gid, AT_EMPTY_PATH) != 0)
                return errno_error("chown", t->path);
            return {};
        }
        return at_call(*t, "chown", [&](int dir, const char* name) {
            return ::fchownat(dir, name, uid, gid, AT_SYMLINK_NOFOLLOW);
        });
    }

    Result<void> utimens(std::string_view path, TimeUpdate atime, TimeUpdate mtime,
                         Follow follow) override {
        auto t = target(path, "utimens");
        if (!t) return std::unexpected(t.error());
        const timespec times[2] = {to_timespec(atime), to_timespec(mtime)};
        if (follow == Follow::yes || t->trailing_slash) {
            auto fd = open_path(*t, O_PATH, "utimens");
            if (!fd) return std::unexpected(fd.error());
            if (::utimensat(AT_FDCWD, proc_path(fd->get()).c_str(), times, 0) != 0)
                return errno_error("utimens", t->path);
            return {};
        }
        return at_call(*t, "utimens", [&](int dir, const char* name) {
            return ::utimensat(dir, name, times, AT_SYMLINK_NOFOLLOW);
        });
    }

    Result<std::string> getxattr(std::string_view path, std::string_view name) override {
        auto t = target(path, "getxattr");
        if (!t) return std::unexpected(t.error());
        auto dir = open_parent(*t, "getxattr");
        if (!dir) return std::unexpected(dir.error());
        std::string p = proc_path(dir->get(), t->name);
        std::string key(name);
        for (;;) {
            ssize_t size = ::lgetxattr(p.c_str(), key.c_str(), nullptr, 0);
            if (size < 0) return errno_error("getxattr", t->path);
            std::string value(static_cast<std::size_t>(size), '\0');
            ssize_t n = ::lgetxattr(p.c_str(), key.c_str(), value.data(), value.size());
            if (n < 0 && errno == ERANGE) continue;  // grew in between
            if (n < 0) return errno_error("getxattr", t->path);
            value.resize(static_cast<std::size_t>(n));
            return value;
        }
    }

    Result<void> setxattr(std::string_view path, std::string_view name, std::string_view value,
                          XattrMode mode) override {
        auto t = target(path, "setxattr");
        if (!t) return std::unexpected(t.error());
        auto dir = open_parent(*t, "setxattr");
        if (!dir) return std::unexpected(dir.error());
        int kflags = mode == XattrMode::create    ? XATTR_CREATE
                     : mode == XattrMode::replace ? XATTR_REPLACE
                                                  : 0;
        std::string key(name);
        if (::lsetxattr(proc_path(dir->get(), t->name).c_str(), key.c_str(), value.data(),
                        value.size(), kflags) != 0)
            return errno_error("setxattr", t->path);
        return {};
    }

    Result<std::vector<std::string>> listxattr(std::string_view path) override {
        auto t = target(path, "listxattr");
        if (!t) return std::unexpected(t.error());
        auto dir = open_parent(*t, "listxattr");
        if (!dir) return std::unexpected(dir.error());
        std::string p = proc_path(dir->get(), t->name);
        for (;;) {
            ssize_t size = ::llistxattr(p.c_str(), nullptr, 0);
            if (size < 0) return errno_error("listxattr", t->path);
            std::string buf(static_cast<std::size_t>(size), '\0');
            ssize_t n = ::llistxattr(p.c_str(), buf.data(), buf.size());
            if (n < 0 && errno == ERANGE) continue;
            if (n < 0) return errno_error("listxattr", t->path);
            std::vector<std::string> names;
            std::size_t start = 0;
            while (start < static_cast<std::size_t>(n)) {
                std::size_t end = buf.find('\0', start);
                if (end == std::string::npos || end > static_cast<std::size_t>(n))
                    end = static_cast<std::size_t>(n);
                names.emplace_back(buf.substr(start, end - start));
                start = end + 1;
            }
            return names;
        }
    }

    Result<void> removexattr(std::string_view path, std::string_view name) override {
        auto t = target(path, "removexattr");
        if (!t) return std::unexpected(t.error());
        auto dir = open_parent(*t, "removexattr");
        if (!dir) return std::unexpected(dir.error());
        std::string key(name);
        if (::lremovexattr(proc_path(dir->get(), t->name).c_str(), key.c_str()) != 0)
            return errno_error("removexattr", t->path);
        return {};
    }

    Result<std::shared_ptr<Backend>> snapshot() override { return fail(ENOTSUP, "snapshot"); }

    bool read_only() const noexcept override { return false; }

private:
    static timespec to_timespec(const TimeUpdate& u) {
        switch (u.kind) {
            case TimeUpdate::Kind::omit: return timespec{0, UTIME_OMIT};
            case TimeUpdate::Kind::now: return timespec{0, UTIME_NOW};
            case TimeUpdate::Kind::set: break;
        }
        return timespec{static_cast<time_t>(u.time.sec), static_cast<long>(u.time.nsec)};
    }

    static Result<Target> target(std::string_view path, std::string_view op) {
        auto norm = normalize_path(path, op);
        if (!norm) return std::unexpected(norm.error());
        Target t;
        t.path = std::move(*norm);
        t.root = t.path == "/";
        t.trailing_slash = has_trailing_slash(path) && !t.root;
        t.parent = std::string(path_parent(t.path));
        t.name = t.root ? std::string(".") : std::string(path_basename(t.path));
        if (t.trailing_slash) t.name += '/';
        return t;
    }

    // openat2 under the root: symlinks (absolute or with "..") resolve as if the root were "/".
    Result<Fd> open_rel(const std::string& rel, int flags, uint32_t mode, std::string_view op,
                        std::string_view vpath) const {
        open_how how{};
        how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
        how.mode = (flags & O_CREAT) ? (mode & 07777) : 0;
        how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
        long fd;
        do {
            fd = ::syscall(SYS_openat2, root_.get(), rel.c_str(), &how, sizeof how);
        } while (fd < 0 && (errno == EINTR || errno == EAGAIN));
        if (fd < 0) return errno_error(op, vpath);
        return Fd(static_cast<int>(fd));
    }

    Result<Fd> open_path(const Target& t, int flags, std::string_view op,
                         uint32_t mode = 0) const {
        return open_rel(t.relative(), flags, mode, op, t.path);
    }

    Result<Fd> open_parent(const Target& t, std::string_view op) const {
        std::string rel = t.parent == "/" ? std::string(".") : t.parent.substr(1);
        return open_rel(rel, O_PATH | O_DIRECTORY, 0, op, t.path);
    }

    template <class Fn>
    Result<void> at_call(const Target& t, std::string_view op, Fn&& fn) const {
        auto dir = open_parent(t, op);
        if (!dir) return std::unexpected(dir.error());
        if (fn(dir->get(), t.name.c_str()) != 0) return errno_error(op, t.path);
        return {};
    }

    template <class Fn>
    Result<void> at_call(std::string_view path, std::string_view op, Fn&& fn) const {
        auto t = target(path, op);
        if (!t) return std::unexpected(t.error());
        return at_call(*t, op, std::forward<Fn>(fn));
    }

    Fd root_;
};

}  // namespace

std::shared_ptr<Backend> make_host_backend(const std::string& root_dir) {
    int fd = ::open(root_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return nullptr;
    return std::make_shared<HostBackend>(Fd(fd));
}

std::shared_ptr<Backend> make_temp_host_backend() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = fmt::format("{}/packfs-host-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (::mkdtemp(pattern.data()) == nullptr) return nullptr;
    std::string dir = pattern;
    std::shared_ptr<Backend> inner = make_host_backend(dir);
    if (!inner) {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
        return nullptr;
    }
    Backend* raw = inner.get();
    return std::shared_ptr<Backend>(raw, [inner = std::move(inner), dir](Backend*) mutable {
        inner.reset();
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    });
}

Result<uint64_t> host_copy_file_range(File& from, uint64_t offset, File& to, uint64_t to_offset,
                                      uint64_t length) {
    const auto in = from.host_bytes(offset, 0), out = to.host_bytes(to_offset, 0);
    if (!in || !out) return copy_bytes(from, offset, to, to_offset, length);
    return io::copy_file_range_all(in->fd, offset, out->fd, to_offset, length, {});
}

}  // namespace packfs::testing
