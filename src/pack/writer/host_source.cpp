// A TreeSource over a host directory. Every directory below the root is opened beneath the
// root fd without following symlinks (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, or a
// component-wise O_NOFOLLOW walk where openat2 is missing), so a symlink planted in the tree
// is stored as a symlink and never read through.
#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <string>

#include "core/fd.hpp"
#include "core/host_stat.hpp"
#include "core/io.hpp"
#include "pack/writer/tree_source.hpp"
#include "packfs/path.hpp"

namespace packfs::pack {

namespace {

// "" for the root, else the path without its leading '/', for *at calls on the root fd.
const char* relative(const std::string& path) { return path.size() <= 1 ? "." : path.c_str() + 1; }

class HostReader final : public ContentReader {
public:
    explicit HostReader(Fd fd) : fd_(std::move(fd)) {}
    Result<std::size_t> read(std::span<std::byte> buf, uint64_t offset) override {
        return io::pread_full(fd_.get(), buf, offset, {});
    }
    Result<std::pair<uint64_t, uint64_t>> data_extent(uint64_t offset) override {
        const off_t begin = ::lseek(fd_.get(), static_cast<off_t>(offset), SEEK_DATA);
        if (begin < 0) {
            if (errno == ENXIO) return std::pair{UINT64_MAX, UINT64_MAX};
            if (errno == EINVAL) return std::pair{offset, UINT64_MAX};  // no SEEK_DATA here
            return fail(errno, "lseek");
        }
        const off_t end = ::lseek(fd_.get(), begin, SEEK_HOLE);
        if (end < 0) return fail(errno, "lseek");
        return std::pair{static_cast<uint64_t>(begin), static_cast<uint64_t>(end)};
    }

private:
    Fd fd_;
};

class HostSource final : public TreeSource {
public:
    HostSource(Fd root, std::string host_dir) : root_(std::move(root)), host_dir_(std::move(host_dir)) {}

    Result<SourceNode> root() override {
        struct stat st;
        if (::fstat(root_.get(), &st) != 0) return fail(errno, "build", "/");
        return source_node("", stat_from_host(st), {st.st_dev, st.st_ino});
    }

    Result<std::vector<SourceNode>> list(SourceRef ref) override {
        const std::string& dir = ref.path;
        auto fd = open_quietly(dir, O_RDONLY | O_DIRECTORY);
        if (!fd) return std::unexpected(fd.error());
        DIR* stream = ::fdopendir(fd->get());
        if (!stream) return fail(errno, "readdir", dir);
        int dir_fd = fd->release();
        std::vector<SourceNode> nodes;
        errno = 0;
        while (struct dirent* d = ::readdir(stream)) {
            std::string_view name = d->d_name;
            if (name == "." || name == "..") continue;
            struct stat st;
            if (::fstatat(dir_fd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
                int err = errno;
                ::closedir(stream);
                return fail(err, "lstat", path_join(dir, name));
            }
            nodes.push_back(source_node(std::string(name), stat_from_host(st), {st.st_dev, st.st_ino}));
            errno = 0;
        }
        int err = errno;
        ::closedir(stream);
        if (err != 0) return fail(err, "readdir", dir);
        return nodes;
    }

    Result<std::string> readlink(SourceRef ref) override {
        const std::string& path = ref.path;
        auto parent = open_beneath(std::string(path_parent(path)), O_RDONLY | O_DIRECTORY);
        if (!parent) return std::unexpected(parent.error());
        std::string name(path_basename(path));
        std::string target(4096, '\0');
        ssize_t n = ::readlinkat(parent->get(), name.c_str(), target.data(), target.size());
        if (n < 0) return fail(errno, "readlink", path);
        target.resize(static_cast<std::size_t>(n));
        return target;
    }

    Result<Xattrs> xattrs(SourceRef ref) override {
        const std::string& path = ref.path;
        // l*xattr on the host path: never follows a final symlink. Intermediate components
        // were checked to be directories by the scan.
        std::string host = host_dir_ + path;
        std::string names;
        for (;;) {
            ssize_t n = ::llistxattr(host.c_str(), nullptr, 0);
            if (n < 0) {
                if (errno == ENOTSUP) return Xattrs{};
                return fail(errno, "listxattr", path);
            }
            if (n == 0) return Xattrs{};
            names.resize(static_cast<std::size_t>(n));
            n = ::llistxattr(host.c_str(), names.data(), names.size());
            if (n >= 0) {
                names.resize(static_cast<std::size_t>(n));
                break;
            }
            if (errno != ERANGE) return fail(errno, "listxattr", path);
        }
        Xattrs out;
        for (std::size_t at = 0; at < names.size();) {
            std::string name(names.c_str() + at);
            at += name.size() + 1;
            if (name.empty()) continue;
            auto value = get(host, name, path);
            if (!value) {
                if (value.error().code() == ENODATA) continue;  // removed meanwhile
                return std::unexpected(value.error());
            }
            out.emplace_back(std::move(name), std::move(*value));
        }
        return out;
    }

    Result<std::unique_ptr<ContentReader>> open(SourceRef ref) override {
        auto fd = open_quietly(ref.path, O_RDONLY);
        if (!fd) return std::unexpected(fd.error());
        return std::make_unique<HostReader>(std::move(*fd));
    }

private:
    Result<std::string> get(const std::string& host, const std::string& name,
                            const std::string& path) {
        std::string value;
        for (;;) {
            ssize_t n = ::lgetxattr(host.c_str(), name.c_str(), nullptr, 0);
            if (n < 0) return fail(errno, "getxattr", path);
            value.resize(static_cast<std::size_t>(n));
            n = ::lgetxattr(host.c_str(), name.c_str(), value.data(), value.size());
            if (n >= 0) {
                value.resize(static_cast<std::size_t>(n));
                return value;
            }
            if (errno != ERANGE) return fail(errno, "getxattr", path);
        }
    }

    // open_beneath with O_NOATIME, so reading the file or listing the directory leaves its
    // atime alone; without it where the kernel refuses (O_NOATIME needs ownership or
    // CAP_FOWNER).
    Result<Fd> open_quietly(const std::string& path, int flags) {
        auto fd = open_beneath(path, flags | O_NOATIME);
        if (!fd && fd.error().code() == EPERM) fd = open_beneath(path, flags);
        return fd;
    }

    // Opens `path` beneath the root fd, following no symlink on the way or at the end.
    Result<Fd> open_beneath(const std::string& path, int flags) {
        flags |= O_CLOEXEC | O_NOFOLLOW;
        if (!no_openat2_) {
            struct open_how how{};
            how.flags = static_cast<uint64_t>(flags);
            how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
            long fd = ::syscall(SYS_openat2, root_.get(), relative(path), &how, sizeof how);
            if (fd >= 0) return Fd(static_cast<int>(fd));
            if (errno != ENOSYS) return fail(errno, "open", path);
            no_openat2_ = true;
        }
        // Fallback: one component at a time, each opened with O_NOFOLLOW.
        Fd dir(::dup(root_.get()));
        if (dir.get() < 0) return fail(errno, "open", path);
        PathComponents components(path);
        for (auto it = components.begin(); it != components.end();) {
            std::string name(*it);
            bool last = ++it == components.end();
            int f = last ? flags : (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            Fd next(::openat(dir.get(), name.c_str(), f));
            if (next.get() < 0) return fail(errno == ELOOP ? ELOOP : errno, "open", path);
            dir = std::move(next);
            if (last) return dir;
        }
        return dir;  // the root itself
    }

    Fd root_;
    std::string host_dir_;
    std::atomic<bool> no_openat2_{false};  // hashing threads open files concurrently
};

}  // namespace

Result<std::unique_ptr<TreeSource>> make_host_source(std::string_view host_dir) {
    std::string dir(host_dir);
    if (dir.empty()) return fail(ENOENT, "build", dir);
    Fd root(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (root.get() < 0) return fail(errno, "build", dir);
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    if (dir == "/") dir.clear();
    return std::make_unique<HostSource>(std::move(root), std::move(dir));
}

}  // namespace packfs::pack
