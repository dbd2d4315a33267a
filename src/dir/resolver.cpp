#include "dir/resolver.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "packfs/path.hpp"

namespace packfs::dir {
namespace {

constexpr int kMaxSymlinks = 40;  // the kernel's MAXSYMLINKS
// openat2 answers EAGAIN when a rename or mount raced with a BENEATH/IN_ROOT walk; it is
// retried this many times, then the same path is resolved by the walk instead.
constexpr int kMaxRaceRetries = 1000;

uint64_t resolve_flags(Containment c) noexcept {
    switch (c) {
        case Containment::beneath: return RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
        case Containment::in_root: return RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
        case Containment::no_symlinks: return RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS;
    }
    return RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS;
}

long sys_openat2(int dir, const char* path, open_how* how) {
    return ::syscall(SYS_openat2, dir, path, how, sizeof *how);
}

// The components of `path` pushed in reverse, so pending.back() is the next one to walk.
// "." is kept, and a trailing '/' becomes a final ".", because each says the component before
// it must be a directory ("file/." and "file/" are ENOTDIR); only empty names ("//") go.
void push_components(std::vector<std::string>& pending, std::string_view path) {
    if (path.size() > 1 && path.back() == '/' && path.find_first_not_of('/') != std::string_view::npos)
        pending.emplace_back(".");
    std::size_t end = path.size();
    while (end > 0) {
        std::size_t start = path.rfind('/', end - 1);
        start = start == std::string_view::npos ? 0 : start + 1;
        std::string_view name = path.substr(start, end - start);
        if (!name.empty()) pending.emplace_back(name);
        end = start == 0 ? 0 : start - 1;
    }
}

bool all_digits(std::string_view s) noexcept {
    return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
}

// The few procfs links that are ordinary symlinks, as openat2 follows them under
// RESOLVE_NO_MAGICLINKS: /proc/self ("1234"), /proc/thread-self ("1234/task/1234") and the
// compatibility links such as /proc/mounts ("self/mounts"). Every other procfs link (fd/N,
// cwd, root, exe, ns/*, map_files/*) jumps to an object, not to its text: magic.
bool is_plain_proc_link(std::string_view target) noexcept {
    if (all_digits(target)) return true;
    if (auto slash = target.find("/task/"); slash != std::string_view::npos) {
        return all_digits(target.substr(0, slash)) && all_digits(target.substr(slash + 6));
    }
    constexpr std::string_view self = "self/";
    if (target.starts_with(self)) {
        std::string_view rest = target.substr(self.size());
        return !rest.empty() && rest.find('/') == std::string_view::npos;
    }
    return false;
}

}  // namespace

bool kernel_has_openat2() noexcept {
    static const bool has = [] {
        open_how how{};
        how.flags = O_PATH | O_CLOEXEC;
        long fd = sys_openat2(AT_FDCWD, "/", &how);
        if (fd >= 0) ::close(static_cast<int>(fd));
        return fd >= 0 || errno != ENOSYS;
    }();
    return has;
}

std::expected<PathResolver, int> PathResolver::make(Containment containment, Resolver requested) {
    switch (requested) {
        case Resolver::automatic:
            return PathResolver(containment,
                                kernel_has_openat2() ? Resolver::openat2 : Resolver::walk);
        case Resolver::openat2:
            if (!kernel_has_openat2()) return std::unexpected(ENOSYS);
            return PathResolver(containment, Resolver::openat2);
        case Resolver::walk: return PathResolver(containment, Resolver::walk);
    }
    return std::unexpected(EINVAL);
}

Opened PathResolver::open(int root, std::string_view rel, int flags, uint32_t mode) const {
    return engine_ == Resolver::walk ? open_walk(root, rel, flags, mode)
                                     : open_openat2(root, rel, flags, mode);
}

Opened PathResolver::open_openat2(int root, std::string_view rel, int flags,
                                  uint32_t mode) const {
    std::string path(rel);
    open_how how{};
    how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
    how.mode = (flags & O_CREAT) ? (mode & 07777) : 0;
    how.resolve = resolve_flags(containment_);
    for (int attempt = 0;; ++attempt) {
        long fd = sys_openat2(root, path.c_str(), &how);
        if (fd >= 0) return Fd(static_cast<int>(fd));
        if (errno == EINTR) continue;
        if (errno != EAGAIN) return std::unexpected(errno);
        // A rename storm elsewhere on the host can fail every retry (the kernel restarts a
        // walk with ".." whenever any rename happened): the walk has no such limit.
        if (attempt == kMaxRaceRetries) return open_walk(root, rel, flags, mode);
    }
}

// What openat2 does, done by hand: every component is opened O_PATH|O_NOFOLLOW relative to
// the directory fd before it, so a component swapped for a symlink is seen as the link it
// now is and resolved here, never by the kernel. ".." pops the stack of directories walked
// instead of asking the kernel for the parent, so it can never leave the root either. The
// one thing this cannot see, as no fd-based walk can, is a directory already walked being
// moved outside the root by the host while the walk runs.
Opened PathResolver::open_walk(int root, std::string_view rel, int flags, uint32_t mode) const {
    std::vector<Fd> stack;  // directories walked below the root; the root is not owned
    auto top = [&] { return stack.empty() ? root : stack.back().get(); };
    std::vector<std::string> pending;
    push_components(pending, rel);
    const bool exclusive = (flags & O_CREAT) && (flags & O_EXCL);
    const bool follow_final = !(flags & O_NOFOLLOW) && !exclusive;
    int links = 0;

    if (pending.empty()) {  // the root itself
        int fd = ::openat(root, ".", (flags & ~O_CREAT) | O_CLOEXEC);
        if (fd < 0) return std::unexpected(errno);
        return Fd(fd);
    }
    while (!pending.empty()) {
        std::string name = std::move(pending.back());
        pending.pop_back();
        const bool last = pending.empty();
        // "." names the directory we are in: nothing to walk (the name before it, not being
        // last, was already required to be a directory). Last, it is what gets opened.
        if (name == "." && !last) continue;
        if (name == "..") {
            if (stack.empty()) {
                if (containment_ != Containment::in_root) return std::unexpected(EXDEV);
            } else {
                stack.pop_back();
            }
            if (last) pending.emplace_back(".");
            continue;
        }
        if (last && (!follow_final || name == ".")) {
            int fd = ::openat(top(), name.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, mode & 07777);
            if (fd < 0) return std::unexpected(errno);
            return Fd(fd);
        }
        Fd fd(::openat(top(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
        if (!fd) {
            if (errno == ENOENT && last && (flags & O_CREAT)) {
                int created = ::openat(top(), name.c_str(), flags | O_NOFOLLOW | O_CLOEXEC,
                                       mode & 07777);
                if (created < 0) return std::unexpected(errno);
                return Fd(created);
            }
            return std::unexpected(errno);
        }
        struct stat st;
        if (::fstatat(fd.get(), "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0)
            return std::unexpected(errno);
        if (S_ISLNK(st.st_mode)) {
            if (containment_ == Containment::no_symlinks) return std::unexpected(ELOOP);
            if (++links > kMaxSymlinks) return std::unexpected(ELOOP);
            std::string target(kMaxPathLength + 1, '\0');
            ssize_t n = ::readlinkat(fd.get(), "", target.data(), target.size());
            if (n < 0) return std::unexpected(errno);
            target.resize(static_cast<std::size_t>(n));
            struct statfs fs;
            if (::fstatfs(fd.get(), &fs) == 0 && fs.f_type == PROC_SUPER_MAGIC &&
                !is_plain_proc_link(target)) {
                return std::unexpected(ELOOP);  // a magic link: its text is not where it goes
            }
            if (target.empty()) return std::unexpected(ENOENT);
            if (target.front() == '/') {
                if (containment_ != Containment::in_root) return std::unexpected(EXDEV);
                stack.clear();
            }
            push_components(pending, target);
            if (pending.empty()) pending.emplace_back(".");  // "/" alone: the root
            continue;
        }
        if (last) {
            if ((flags & O_DIRECTORY) && !S_ISDIR(st.st_mode)) return std::unexpected(ENOTDIR);
            if ((flags & O_PATH) || name == ".") return fd;
            // Reopen for real, still without following: a swap since is a failure, not a hop.
            int real = ::openat(top(), name.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, mode & 07777);
            if (real < 0) return std::unexpected(errno);
            return Fd(real);
        }
        if (!S_ISDIR(st.st_mode)) return std::unexpected(ENOTDIR);
        stack.push_back(std::move(fd));
    }
    return std::unexpected(ENOENT);  // unreachable: the last component returns
}

}  // namespace packfs::dir
