// TEST ONLY. The reference model for model-based tests (DESIGN §14): an obviously-correct,
// deliberately slow, in-memory filesystem that states the POSIX semantics of the Backend
// contract (DESIGN §4, include/packfs/backend.hpp) in the plainest code we could write.
//
// Independence is the point: nothing here shares code with any backend. Inodes live in a
// std::map keyed by a model inode number, file contents are std::strings, a directory is a
// std::map<name, ino>. Every operation returns either its result or the errno it must fail
// with. Where POSIX leaves the choice open, the model follows Linux (so that the model can be
// validated against the kernel through the host backend), and names the other acceptable
// code through `alternative_errno()`.
//
// Resolution rules the model encodes:
// - The API path is normalised lexically first (packfs::normalize_path), exactly as a backend
//   does at its edge; a trailing '/' (has_trailing_slash) requires a directory and makes the
//   final symlink be followed, as on Linux.
// - Symlinks in intermediate components are followed; their targets are resolved physically
//   (".." in a target goes to the real parent of the directory reached so far). A relative
//   target is taken from the directory holding the link. More than 40 follows is ELOOP.
// - Inodes are reference-counted by directory entries (nlink) and by open handles; an inode is
//   freed only when both are gone, so an unlinked file stays usable through its handles.
// - A read-only model (a snapshot's copy) answers every mutation with EROFS.
//
// Copying a ReferenceModel is a deep copy: that is how a snapshot's expected state is kept.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "packfs/backend.hpp"
#include "packfs/error.hpp"
#include "packfs/types.hpp"

namespace packfs::model {

inline constexpr int kMaxSymlinkFollows = 40;
inline constexpr uint64_t kRootIno = 1;

// What the model knows about an inode's metadata. Times are known only after utimens set
// them explicitly and nothing has touched them since; otherwise they are not compared.
struct ModelStat {
    uint64_t ino = 0;  // the model's own inode number (compare relations, not values)
    FileType type = FileType::regular;
    uint32_t mode = 0;
    uint32_t uid = 0;
    uint32_t gid = 0;
    uint64_t nlink = 0;
    uint64_t size = 0;  // not defined for directories (host sizes differ); see has_size
    bool has_size = true;
    uint64_t rdev = 0;
    std::optional<Time> atime;
    std::optional<Time> mtime;
};

struct ModelOptions {
    uint32_t root_mode = 0755;
    uint32_t uid = 0;  // owner of the root and of every new inode
    uint32_t gid = 0;
    // Linux's rule for "user." xattrs: only regular files and directories carry them; on
    // anything else a write is EPERM and a read ENODATA. Off: every type carries xattrs.
    bool linux_user_xattrs = false;
};

class ReferenceModel {
public:
    explicit ReferenceModel(const ModelOptions& options = {});

    // --- the Backend operations, with the model's answers ----------------------------------
    Result<ModelStat> stat(std::string_view path);
    Result<ModelStat> lstat(std::string_view path);
    // Sorted by name.
    Result<std::vector<std::pair<std::string, FileType>>> readdir(std::string_view path);
    Result<std::string> readlink(std::string_view path);

    // Returns a handle id (the model's; the driver maps it to the backend's FileHandle).
    Result<int> open(std::string_view path, int flags, uint32_t mode);
    Result<void> close(int handle);
    Result<std::string> pread(int handle, uint64_t offset, uint64_t length);
    Result<std::size_t> pwrite(int handle, uint64_t offset, std::string_view data);
    // copy_file_range(2) between two handles: the bytes copied (clipped at the source's end).
    Result<uint64_t> copy_range(int from, uint64_t offset, int to, uint64_t to_offset,
                                uint64_t length);
    Result<void> ftruncate(int handle, uint64_t size);
    Result<ModelStat> fstat(int handle);

    Result<void> truncate(std::string_view path, uint64_t size);
    Result<void> mkdir(std::string_view path, uint32_t mode);
    Result<void> rmdir(std::string_view path);
    Result<void> unlink(std::string_view path);
    Result<void> rename(std::string_view from, std::string_view to, RenameFlags flags);
    Result<void> symlink(std::string_view target, std::string_view link_path);
    Result<void> link(std::string_view existing, std::string_view new_path);
    Result<void> mknod(std::string_view path, FileType type, uint32_t mode, uint64_t rdev);
    Result<void> chmod(std::string_view path, uint32_t mode);
    Result<void> chown(std::string_view path, uint32_t uid, uint32_t gid, Follow follow);
    Result<void> utimens(std::string_view path, TimeUpdate atime, TimeUpdate mtime,
                         Follow follow);
    Result<std::string> getxattr(std::string_view path, std::string_view name);
    Result<void> setxattr(std::string_view path, std::string_view name, std::string_view value,
                          XattrMode mode);
    Result<std::vector<std::string>> listxattr(std::string_view path);  // sorted
    Result<void> removexattr(std::string_view path, std::string_view name);

    // After a failed operation: a second errno that is just as correct (0 when there is none),
    // e.g. EBADF for ftruncate on a read-only handle where Linux says EINVAL.
    int alternative_errno() const noexcept { return alt_errno_; }

    // --- state, for generators and comparators ---------------------------------------------
    // A deep copy that answers EROFS to every mutation and holds no handles.
    ReferenceModel frozen_copy() const;
    bool read_only() const noexcept { return read_only_; }
    // For asking "what would this mutation have failed with, were it allowed?" of a copy.
    void set_read_only(bool read_only) noexcept { read_only_ = read_only; }

    struct Entry {
        std::string path;
        FileType type;
        uint64_t ino;
    };
    // Every path reachable from the root without following symlinks, the root included,
    // in depth-first sorted order.
    std::vector<Entry> entries() const;

    // Everything the model defines about the inode behind one entry.
    struct NodeView {
        ModelStat stat;
        std::string content;  // regular: data; symlink: target
        std::map<std::string, std::string> xattrs;
    };
    NodeView view(uint64_t ino) const;

    struct HandleInfo {
        int id;
        uint64_t ino;
        bool readable;
        bool writable;
        bool append;
        bool unlinked;  // nlink == 0: only reachable through handles now
        FileType type;
    };
    std::vector<HandleInfo> handles() const;
    bool inode_alive(uint64_t ino) const { return nodes_.contains(ino); }

private:
    struct Node {
        FileType type = FileType::regular;
        uint32_t mode = 0;
        uint32_t uid = 0;
        uint32_t gid = 0;
        uint64_t links = 0;   // directory entries naming this inode
        uint64_t parent = 0;  // directories only: the one parent (0 once removed)
        uint64_t rdev = 0;
        std::string data;     // regular content or symlink target
        std::map<std::string, uint64_t> children;
        std::map<std::string, std::string> xattrs;
        std::optional<Time> atime, mtime;
        int open_count = 0;
    };
    struct Handle {
        uint64_t ino;
        bool readable, writable, append;
    };
    // Where a path leads: the directory holding the final name, the name, and the inode it
    // names (nullopt when absent).
    struct Lookup {
        uint64_t parent = 0;
        std::string name;
        std::optional<uint64_t> ino;
        bool trailing_slash = false;
    };

    Result<Lookup> resolve(std::string_view path, bool follow_final, std::string_view op);
    // Walks `components` from `start`; `links` counts symlink follows over the whole walk.
    Result<Lookup> walk(uint64_t start, std::vector<std::string> components, bool follow_final,
                        int& links, std::string_view op);
    Result<uint64_t> resolve_existing(std::string_view path, bool follow_final,
                                      std::string_view op);
    Result<void> check_writable(std::string_view op);
    // EPERM (write) / ENODATA (read) where linux_user_xattrs forbids xattrs on the inode.
    int xattr_refusal(uint64_t ino, bool write) const;

    ModelStat make_stat(uint64_t ino) const;
    uint64_t new_node(FileType type, uint32_t mode);
    void add_entry(uint64_t dir, const std::string& name, uint64_t ino);
    void remove_entry(uint64_t dir, const std::string& name);
    void maybe_free(uint64_t ino);
    bool is_ancestor_or_self(uint64_t ancestor, uint64_t dir) const;
    void touch_dir(uint64_t dir);
    void set_size(Node& node, uint64_t size);
    Node& node(uint64_t ino) { return nodes_.at(ino); }
    const Node& node(uint64_t ino) const { return nodes_.at(ino); }

    ModelOptions options_;
    std::map<uint64_t, Node> nodes_;
    std::map<int, Handle> handles_;
    uint64_t next_ino_ = kRootIno + 1;
    int next_handle_ = 1;
    bool read_only_ = false;
    int alt_errno_ = 0;
};

}  // namespace packfs::model
