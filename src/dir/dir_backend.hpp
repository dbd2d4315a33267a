// The dir backend's class (include/packfs/dir.hpp for what it promises; docs/DIR.md for the
// syscalls each operation makes). Its parts: dir_backend.cpp (lookups, reads, open),
// dir_namespace.cpp (creating, removing and renaming names), dir_attributes.cpp (modes,
// owners, times, xattrs), dir_file.cpp (the open-file handle); and the node calls,
// dir_node_calls.cpp, over the node table of dir_nodes.hpp (fd-based, never a path).
#pragma once

#include <expected>
#include <memory>
#include <string>
#include <string_view>

#include "core/fd.hpp"
#include "dir/dir_cache.hpp"
#include "dir/dir_nodes.hpp"
#include "dir/resolver.hpp"
#include "packfs/backend.hpp"
#include "packfs/dir.hpp"

namespace packfs::dir {

// A virtual path split for the *at calls on its parent directory.
struct Located {
    std::string path;         // normal form: "/a/b", "/" for the root
    std::size_t parent_length = 1;  // of `path`'s parent: parent()
    std::string name;               // "b"; "." for the root
    bool root = false;
    bool trailing_slash = false;  // the caller wrote "b/": b must be (or lead to) a directory

    // "/a" for "/a/b"; "/" for a top-level name and the root. (A length, not a view, so a
    // Located can be moved: a short `path` lives inside the string object itself.)
    std::string_view parent() const noexcept { return std::string_view(path).substr(0, parent_length); }
    // `path` relative to the root fd, as the resolver takes it: "a/b", "." for the root.
    const char* relative() const noexcept { return root ? "." : path.c_str() + 1; }
    // The final name with the caller's '/' kept, for the calls where the kernel judges a
    // trailing slash itself without following anything (rmdir, unlink, rename, creation).
    std::string name_as_written() const { return trailing_slash ? name + '/' : name; }
};

// The directory an *at call runs in: the root (borrowed), a cached directory (shared), or
// one resolved for this call alone (owned).
class ParentDir {
public:
    explicit ParentDir(int borrowed) noexcept : fd_(borrowed) {}
    explicit ParentDir(DirCache::NodePtr node) noexcept
        : node_(std::move(node)), fd_(node_->fd.get()) {}
    explicit ParentDir(Fd owned) noexcept : owned_(std::move(owned)), fd_(owned_.get()) {}
    int get() const noexcept { return fd_; }
    bool cached() const noexcept { return node_ != nullptr; }

private:
    DirCache::NodePtr node_;
    Fd owned_;
    int fd_;
};

class DirBackend : public Backend {
public:
    DirBackend(Fd root, PathResolver resolver, const DirOptions& options);

    // --- nodes (dir_node_calls.cpp): a node holds an O_PATH fd of its object (dir_nodes.hpp);
    // every call is one or a few fd-based syscalls, and no lookup ever follows a symlink ---
    Result<Entry> lookup(Node dir, std::string_view name) override;
    void forget(Node node, uint64_t count) noexcept override;
    Result<Stat> getattr(Node node) override;
    Result<std::vector<DirEntry>> list(Node dir) override;
    // One listing, and each entry stated by name in it (statx, never following): its node
    // interned without an fd, opened from the directory when first used.
    Result<std::vector<NamedEntry>> list_entries(Node dir) override;
    Result<std::string> readlink(Node node) override;
    Result<StatFs> statfs(Node node) override;
    Result<FileHandle> open(Node node, int flags) override;
    Result<uint64_t> copy_range(Node from, uint64_t offset, Node to, uint64_t to_offset,
                                uint64_t length) override;
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
    Result<std::string> getxattr(Node node, std::string_view name) override;
    Result<std::vector<std::string>> listxattr(Node node) override;
    Result<void> setxattr(Node node, std::string_view name, std::string_view value,
                          XattrMode mode) override;
    Result<void> removexattr(Node node, std::string_view name) override;

    // --- paths ---

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
    Result<void> mknod(std::string_view path, FileType type, uint32_t mode, uint64_t rdev) override;

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
    bool read_only() const noexcept override { return false; }

protected:
    static Result<Located> locate(std::string_view path, std::string_view op);

    // The parent directory of `t` (not the root), from the cache or resolved now.
    std::expected<ParentDir, int> parent_of(const Located& t);

    // Runs `call(dirfd)` (answering 0 or an errno) in the parent of `t`. A cached parent that
    // answers ENOENT may have been removed by the host since it was cached: if its link count
    // is 0, it is forgotten and the call runs once more in a freshly resolved parent.
    template <class Call>
    int in_parent(const Located& t, Call&& call) {
        for (int attempt = 0;; ++attempt) {
            auto dir = parent_of(t);
            if (!dir) return dir.error();
            const int error = call(dir->get());
            if (error == ENOENT && dir->cached() && attempt == 0 && is_removed(dir->get())) {
                cache_.forget(t.parent());
                continue;
            }
            return error;
        }
    }

    // in_parent for the two-path calls (rename, link): `call(from_dir, to_dir)`. The error
    // names the path whose parent failed, or `a` for the call's own error.
    struct PairError {
        int code = 0;
        const Located* at = nullptr;
    };
    template <class Call>
    PairError in_parents(const Located& a, const Located& b, Call&& call) {
        for (int attempt = 0;; ++attempt) {
            auto da = parent_of(a);
            if (!da) return {da.error(), &a};
            auto db = parent_of(b);
            if (!db) return {db.error(), &b};
            const int error = call(da->get(), db->get());
            if (error != ENOENT || attempt > 0) return {error, &a};
            bool stale = false;
            for (auto [dir, located] : {std::pair{&*da, &a}, std::pair{&*db, &b}}) {
                if (dir->cached() && is_removed(dir->get())) {
                    cache_.forget(located->parent());
                    stale = true;
                }
            }
            if (!stale) return {error, &a};
        }
    }

    // The final object of `t` itself, symlinks followed under the containment: `flags` as
    // open(2) takes them (O_PATH for a handle to act through), O_DIRECTORY added for a
    // trailing slash.
    std::expected<Fd, int> open_object(const Located& t, int flags, uint32_t mode = 0) const;
    // open_object for real I/O through a final symlink: the target is opened O_PATH and its
    // type checked first (a special file is ENOTSUP and is never opened), then reopened with
    // `flags` through /proc/self/fd, so the checked inode is the one opened.
    std::expected<Fd, int> open_followed(const Located& t, int flags, uint32_t mode) const;

    // Runs `call(path, follow)` for an xattr call on `t`: the l* form on
    // "/proc/self/fd/<parent>/<name>", or (root, trailing slash) the following form on the
    // object's own fd path. Answers 0 or an errno.
    template <class Call>
    int with_xattr_path(const Located& t, Call&& call);

    // chown and utimens on the final object of `t` (see dir_attributes.cpp).
    template <class At, class OnFd>
    Result<void> on_final(const Located& t, Follow follow, std::string_view op, At&& at,
                          OnFd&& on_fd);

    // What open() answers for an existing object of `st`'s type with `flags`, before opening
    // it: 0 to go ahead, or the errno Linux gives first (then ENOTSUP, EROFS).
    int judge_open(const Stat& st, int flags) const noexcept;

    // The held node `node` with an fd to act through (ESTALE when it is not held or its object
    // is gone), and one that must be a directory (ENOTDIR), for the call `op` on `name`.
    Result<NodeRef> held(Node node, std::string_view op, std::string_view name = {}) const;
    Result<NodeRef> held_dir(Node dir, std::string_view op, std::string_view name) const;
    // The entry `name` of directory `dir` opened O_PATH|O_NOFOLLOW, stated and interned (one
    // reference) into `out`; 0 or errno.
    int enter(const NodeRef& dir, const char* name, Entry& out);
    // unlink (flags 0) and rmdir (AT_REMOVEDIR) of `name` in `dir` (open as `dir_fd`).
    Result<void> remove_entry(Node dir, const std::string& name, int flags, std::string_view op,
                              int dir_fd);
    // mkdir, mknod and symlink: `make(dir_fd, name)` (0 or errno) makes the entry, which is
    // then given its owner and exact mode (settle_new in dir_node_calls.cpp) and interned.
    template <class Make>
    Result<Entry> make_node(Node dir, std::string_view name, std::string_view op, FileType type,
                            uint32_t mode, const std::optional<Owner>& owner, Make&& make);

    // getdents64 of the directory open as `dir` into `out` (without "." and ".."); 0 or errno.
    static int read_entries(int dir, std::vector<DirEntry>& out);
    static bool is_removed(int dir_fd) noexcept;
    // lstat of `name` in `dir` into `out`; 0 or errno.
    static int stat_at(int dir, const char* name, int flags, Stat& out) noexcept;

    const bool read_only_;  // open() answers EROFS for writes (mutations: RefuseMutations)
    const bool no_atime_;   // DirOptions::no_atime
    Fd root_;
    PathResolver resolver_;
    DirCache cache_;
    mutable NodeTable nodes_;
};

// A File over a host fd.
FileHandle make_dir_file(Fd fd);

// "/proc/self/fd/N" or "/proc/self/fd/N/name": names an fd (or an entry of a directory fd)
// for the calls that only take paths (the l*xattr family).
std::string proc_fd_path(int fd, std::string_view name = {});

// The object open as `fd` opened anew with `flags` (O_CLOEXEC added) through its magic link:
// "N" in this process's /proc/self/fd, a directory fd kept open (one component to walk where
// the whole path has four; a forked child opens its own), or the whole path where that cannot
// be opened. -1 with errno on failure, as open(2).
int open_through_proc(int fd, int flags);

}  // namespace packfs::dir
