// TEST ONLY. Host-side helpers for the dir backend's escape and race tests (DESIGN §7): a
// scratch directory that unmounts whatever was mounted inside it before removing it, RAII
// guards for bind mounts and the working directory, and a byte-for-byte snapshot of a host
// tree (types, modes, owners, sizes, inode numbers, mtime/ctime and where observable atime,
// contents, symlink targets, extended attributes) to prove that nothing outside a dir
// backend's root was created, changed or read.
//
// Reading without leaving a trace: the snapshot opens files and directories with O_NOATIME,
// so taking one does not move an atime. "Nothing was read" is then checked through atime:
// age_atimes() sets every atime well before its mtime, and a relatime (or strictatime) mount
// updates the atime of a file on its next read and of a directory on its next listing.
// atime_is_observable() probes whether this filesystem does that (noatime, lazytime quirks,
// or an O_NOATIME that is refused make it skip the atime part, and say so).
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace packfs::dir_test {

namespace fs = std::filesystem;

// True when the environment asks for the short sanitizer run.
inline bool sanitizer_run() {
    const char* v = std::getenv("PACKFS_SANITIZER_RUN");
    return v != nullptr && std::string_view(v) == "1";
}

// --- mounts -----------------------------------------------------------------------------

// Mount points at or below `dir`, deepest first (from /proc/self/mountinfo; octal escapes
// such as "\040" for a space are decoded).
inline std::vector<std::string> mounts_under(const fs::path& dir) {
    std::vector<std::string> found;
    std::ifstream in("/proc/self/mountinfo");
    std::string line;
    const std::string prefix = dir.string();
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        std::string id, parent, devno, root, point;
        fields >> id >> parent >> devno >> root >> point;
        std::string decoded;
        for (std::size_t i = 0; i < point.size(); ++i) {
            if (point[i] == '\\' && i + 3 < point.size()) {
                decoded += static_cast<char>(std::stoi(point.substr(i + 1, 3), nullptr, 8));
                i += 3;
            } else {
                decoded += point[i];
            }
        }
        if (decoded == prefix || decoded.starts_with(prefix + "/")) found.push_back(decoded);
    }
    std::sort(found.begin(), found.end(),
              [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
    return found;
}

// Detaches every mount at or below `dir` (lazily, so a busy one goes too). True when none is
// left.
inline bool unmount_all_under(const fs::path& dir) {
    for (int round = 0; round < 8; ++round) {
        auto points = mounts_under(dir);
        if (points.empty()) return true;
        for (const auto& p : points) ::umount2(p.c_str(), MNT_DETACH);
    }
    return mounts_under(dir).empty();
}

// Moves the process into a mount namespace of its own whose mounts do not propagate back, so
// no bind mount made by a test can outlive the process, even one killed mid-test. Must run
// while the process has one thread (call it before any test starts). False when it cannot
// (not root, no CAP_SYS_ADMIN, or seccomp): the tests that mount then skip.
inline bool enter_private_mount_namespace() {
    if (::unshare(CLONE_NEWNS) != 0) return false;
    return ::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0;
}

// A bind mount of `source` on `target`, detached when the guard goes.
class BindMount {
public:
    BindMount(const fs::path& source, const fs::path& target) : target_(target) {
        if (::mount(source.c_str(), target.c_str(), nullptr, MS_BIND | MS_REC, nullptr) == 0) {
            mounted_ = true;
        } else {
            error_ = errno;
        }
    }
    BindMount(const BindMount&) = delete;
    BindMount& operator=(const BindMount&) = delete;
    ~BindMount() { release(); }

    bool mounted() const noexcept { return mounted_; }
    int error() const noexcept { return error_; }
    // Unmounts now (before the tree below is changed or removed); true when it is gone.
    bool release() {
        if (mounted_ && ::umount2(target_.c_str(), MNT_DETACH) == 0) mounted_ = false;
        return !mounted_;
    }

private:
    fs::path target_;
    bool mounted_ = false;
    int error_ = 0;
};

// mkdtemp under $TMPDIR (or /tmp), held by its canonical path (no symlink in it, so the
// absolute symlink targets the tests plant name it exactly). On destruction, every mount left
// below it is detached first and only then is the tree removed; if a mount cannot be
// detached the tree is left in place rather than removed through the mount.
class Scratch {
public:
    Scratch() {
        const char* base = std::getenv("TMPDIR");
        std::string tmpl = std::string(base && *base ? base : "/tmp") + "/packfs-dir-esc-XXXXXX";
        if (::mkdtemp(tmpl.data()) != nullptr) path_ = fs::canonical(tmpl);
    }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    ~Scratch() {
        if (path_.empty()) return;
        if (!unmount_all_under(path_)) return;
        std::error_code ignored;
        fs::remove_all(path_, ignored);
    }
    const fs::path& path() const noexcept { return path_; }
    bool ok() const noexcept { return !path_.empty(); }
    // Mounts a fresh tmpfs (strictatime: every read shows in atime) on the scratch directory,
    // gone with it. Needs CAP_SYS_ADMIN; false otherwise.
    bool mount_tmpfs() {
        return ok() && ::mount("tmpfs", path_.c_str(), "tmpfs", MS_NOSUID | MS_STRICTATIME,
                               "mode=0755") == 0;
    }

private:
    fs::path path_;
};

// chdir() to a directory for the guard's lifetime (so /proc/self/cwd points there).
class CwdGuard {
public:
    explicit CwdGuard(const fs::path& dir) {
        saved_ = ::open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
        ok_ = saved_ >= 0 && ::chdir(dir.c_str()) == 0;
    }
    CwdGuard(const CwdGuard&) = delete;
    CwdGuard& operator=(const CwdGuard&) = delete;
    ~CwdGuard() {
        if (saved_ >= 0) {
            [[maybe_unused]] int rc = ::fchdir(saved_);
            ::close(saved_);
        }
    }
    bool ok() const noexcept { return ok_; }

private:
    int saved_ = -1;
    bool ok_ = false;
};

// An fd held open for a test (an O_PATH fd is enough to make /proc/self/fd/N a magic link).
class HeldFd {
public:
    HeldFd(const fs::path& p, int flags) : fd_(::open(p.c_str(), flags | O_CLOEXEC)) {}
    HeldFd(const HeldFd&) = delete;
    HeldFd& operator=(const HeldFd&) = delete;
    ~HeldFd() {
        if (fd_ >= 0) ::close(fd_);
    }
    int get() const noexcept { return fd_; }

private:
    int fd_;
};

// --- small host file helpers --------------------------------------------------------------

inline bool host_write(const fs::path& p, std::string_view data, mode_t mode = 0644) {
    int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0) return false;
    bool ok = ::write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size());
    ok = ::fchmod(fd, mode) == 0 && ok;
    return ::close(fd) == 0 && ok;
}

// The content of a regular file read without touching its atime; nullopt if it cannot be.
inline std::optional<std::string> host_read(const fs::path& p) {
    int fd = ::open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOATIME);
    if (fd < 0 && errno == EPERM) fd = ::open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    std::string out;
    char buf[16384];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0) {
            ::close(fd);
            return std::nullopt;
        }
        if (n == 0) break;
        out.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return out;
}

inline std::optional<struct stat> host_lstat(const fs::path& p) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) return std::nullopt;
    return st;
}

// Names in a host directory (without "." and ".."), sorted, listed without touching atime.
inline std::vector<std::string> host_names(const fs::path& dir) {
    std::vector<std::string> names;
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOATIME);
    if (fd < 0 && errno == EPERM) fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return names;
    DIR* d = ::fdopendir(fd);
    if (d == nullptr) {
        ::close(fd);
        return names;
    }
    while (dirent* e = ::readdir(d)) {
        std::string_view n = e->d_name;
        if (n != "." && n != "..") names.emplace_back(n);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    return names;
}

// --- snapshots ---------------------------------------------------------------------------

struct HostEntry {
    mode_t mode = 0;  // type and permission bits
    uid_t uid = 0;
    gid_t gid = 0;
    nlink_t nlink = 0;
    off_t size = 0;
    ino_t ino = 0;
    timespec mtime{}, ctime{}, atime{};
    std::string data;  // a regular file's bytes, or a symlink's target
    std::map<std::string, std::string> xattrs;
};

// Relative path ("." for the top) -> entry.
using HostTree = std::map<std::string, HostEntry>;

namespace detail {

inline std::map<std::string, std::string> host_xattrs(const fs::path& p) {
    std::map<std::string, std::string> out;
    ssize_t len = ::llistxattr(p.c_str(), nullptr, 0);
    if (len <= 0) return out;
    std::string names(static_cast<std::size_t>(len), '\0');
    len = ::llistxattr(p.c_str(), names.data(), names.size());
    if (len <= 0) return out;
    names.resize(static_cast<std::size_t>(len));
    for (std::size_t at = 0; at < names.size();) {
        std::string name = names.c_str() + at;
        at += name.size() + 1;
        ssize_t vlen = ::lgetxattr(p.c_str(), name.c_str(), nullptr, 0);
        std::string value(vlen > 0 ? static_cast<std::size_t>(vlen) : 0, '\0');
        if (vlen > 0) vlen = ::lgetxattr(p.c_str(), name.c_str(), value.data(), value.size());
        out[name] = vlen >= 0 ? value.substr(0, static_cast<std::size_t>(vlen)) : "<unreadable>";
    }
    return out;
}

inline void snapshot_into(const fs::path& dir, const std::string& rel, HostTree& out,
                          const std::set<std::string>& skip) {
    for (const auto& name : host_names(dir)) {
        const std::string child_rel = rel == "." ? name : rel + "/" + name;
        if (skip.contains(child_rel)) continue;
        const fs::path p = dir / name;
        auto st = host_lstat(p);
        if (!st) continue;  // raced away: the comparison reports it missing
        HostEntry e;
        e.mode = st->st_mode;
        e.uid = st->st_uid;
        e.gid = st->st_gid;
        e.nlink = st->st_nlink;
        e.size = st->st_size;
        e.ino = st->st_ino;
        e.mtime = st->st_mtim;
        e.ctime = st->st_ctim;
        e.atime = st->st_atim;
        if (S_ISREG(st->st_mode)) {
            e.data = host_read(p).value_or("<unreadable>");
        } else if (S_ISLNK(st->st_mode)) {
            std::error_code ec;
            e.data = fs::read_symlink(p, ec).string();
        }
        e.xattrs = host_xattrs(p);
        out[child_rel] = std::move(e);
        if (S_ISDIR(st->st_mode)) snapshot_into(p, child_rel, out, skip);
    }
}

inline bool same_time(const timespec& a, const timespec& b) {
    return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

inline std::string show_time(const timespec& t) {
    return fmt::format("{}.{:09}", static_cast<long long>(t.tv_sec), t.tv_nsec);
}

}  // namespace detail

// The whole tree at `top` (the top directory itself as "."), except the relative paths in
// `skip` and everything below them.
inline HostTree snapshot_host_tree(const fs::path& top, const std::set<std::string>& skip = {}) {
    HostTree out;
    if (auto st = host_lstat(top)) {
        HostEntry e;
        e.mode = st->st_mode;
        e.uid = st->st_uid;
        e.gid = st->st_gid;
        e.nlink = st->st_nlink;
        e.ino = st->st_ino;
        e.mtime = st->st_mtim;
        e.ctime = st->st_ctim;
        e.atime = st->st_atim;
        e.xattrs = detail::host_xattrs(top);
        out["."] = std::move(e);
    }
    detail::snapshot_into(top, ".", out, skip);
    return out;
}

struct TreeCompare {
    // Compare atimes of files and directories (symlinks never: reading a link's target to
    // snapshot it moves its atime).
    bool atime = false;
    // Relative paths whose atime may move (a file the test reads on purpose).
    std::set<std::string> atime_may_change;
};

// Every difference between two snapshots, one line each; empty when equal.
inline std::vector<std::string> tree_differences(const HostTree& before, const HostTree& after,
                                                 const TreeCompare& how = {}) {
    std::vector<std::string> diffs;
    for (const auto& [rel, a] : before) {
        auto it = after.find(rel);
        if (it == after.end()) {
            diffs.push_back(fmt::format("{}: removed", rel));
            continue;
        }
        const HostEntry& b = it->second;
        auto differ = [&](std::string_view what, auto x, auto y) {
            if (x != y) diffs.push_back(fmt::format("{}: {} {} -> {}", rel, what, x, y));
        };
        differ("mode", fmt::format("{:o}", a.mode), fmt::format("{:o}", b.mode));
        differ("uid", a.uid, b.uid);
        differ("gid", a.gid, b.gid);
        differ("nlink", a.nlink, b.nlink);
        differ("size", a.size, b.size);
        differ("ino", a.ino, b.ino);
        if (a.data != b.data) diffs.push_back(fmt::format("{}: contents changed", rel));
        if (a.xattrs != b.xattrs) diffs.push_back(fmt::format("{}: xattrs changed", rel));
        if (!detail::same_time(a.mtime, b.mtime)) {
            diffs.push_back(fmt::format("{}: mtime {} -> {}", rel, detail::show_time(a.mtime),
                                        detail::show_time(b.mtime)));
        }
        if (!detail::same_time(a.ctime, b.ctime)) {
            diffs.push_back(fmt::format("{}: ctime {} -> {}", rel, detail::show_time(a.ctime),
                                        detail::show_time(b.ctime)));
        }
        if (how.atime && !S_ISLNK(a.mode) && !how.atime_may_change.contains(rel) &&
            !detail::same_time(a.atime, b.atime)) {
            diffs.push_back(fmt::format("{}: atime {} -> {} (read)", rel,
                                        detail::show_time(a.atime), detail::show_time(b.atime)));
        }
    }
    for (const auto& [rel, b] : after) {
        if (!before.contains(rel)) diffs.push_back(fmt::format("{}: created", rel));
    }
    return diffs;
}

inline std::string join_lines(const std::vector<std::string>& lines, std::size_t max = 20) {
    std::string out;
    for (std::size_t i = 0; i < lines.size() && i < max; ++i) out += "\n  " + lines[i];
    if (lines.size() > max) out += fmt::format("\n  ... and {} more", lines.size() - max);
    return out;
}

// --- atime ---------------------------------------------------------------------------------

// A time well in the past (2001-09-09), older than any mtime a test makes.
inline constexpr timespec kAgedAtime{1000000000, 0};

// Sets the atime of every file and directory at or below `top` to kAgedAtime, leaving mtime.
inline void age_atimes(const fs::path& top) {
    const timespec times[2] = {kAgedAtime, {0, UTIME_OMIT}};
    ::utimensat(AT_FDCWD, top.c_str(), times, AT_SYMLINK_NOFOLLOW);
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(top, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_symlink(ec)) continue;
        ::utimensat(AT_FDCWD, it->path().c_str(), times, AT_SYMLINK_NOFOLLOW);
    }
}

// Whether reads show in atime on the filesystem holding `scratch` and O_NOATIME hides the
// snapshot's own reads: a file and a directory are aged, read and listed with O_NOATIME
// (atime must stay), then read and listed plainly (atime must move).
inline bool atime_is_observable(const fs::path& scratch) {
    const fs::path file = scratch / "atime-probe";
    const fs::path dir = scratch / "atime-probe.d";
    std::error_code ec;
    fs::create_directory(dir, ec);
    if (!host_write(file, "probe") || ec) return false;
    auto cleanup = [&] {
        fs::remove(file, ec);
        fs::remove(dir, ec);
    };
    const timespec times[2] = {kAgedAtime, {0, UTIME_OMIT}};
    ::utimensat(AT_FDCWD, file.c_str(), times, 0);
    ::utimensat(AT_FDCWD, dir.c_str(), times, 0);
    (void)host_read(file);
    (void)host_names(dir);
    auto quiet_f = host_lstat(file), quiet_d = host_lstat(dir);
    bool ok = quiet_f && quiet_d && detail::same_time(quiet_f->st_atim, kAgedAtime) &&
              detail::same_time(quiet_d->st_atim, kAgedAtime);
    if (ok) {
        char c;
        int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
        ok = fd >= 0 && ::read(fd, &c, 1) == 1;
        if (fd >= 0) ::close(fd);
        DIR* d = ::opendir(dir.c_str());
        if (d != nullptr) {
            while (::readdir(d) != nullptr) {
            }
            ::closedir(d);
        }
        auto loud_f = host_lstat(file), loud_d = host_lstat(dir);
        ok = ok && loud_f && loud_d && !detail::same_time(loud_f->st_atim, kAgedAtime) &&
             !detail::same_time(loud_d->st_atim, kAgedAtime);
    }
    cleanup();
    return ok;
}

}  // namespace packfs::dir_test
