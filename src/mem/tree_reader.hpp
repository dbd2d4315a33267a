// Read-side operations on one immutable version of a mem tree: path resolution and every
// query of the Backend contract. Shared by the live backend (on the version it loads) and by
// snapshots (on their frozen version). Nothing here locks or allocates on the success path
// of a lookup.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "mem/mem_tree.hpp"
#include "packfs/backend.hpp"
#include "packfs/path.hpp"

namespace packfs::mem {

inline constexpr int kMaxSymlinkFollows = 40;  // as Linux's MAXSYMLINKS

struct Resolved {
    uint64_t ino;
    const Inode* inode;
};

// Where a new entry would go: the directory and the final name.
struct ParentAndName {
    uint64_t parent = 0;
    std::string_view borrowed;  // the name inside the caller's path, or
    std::string owned;          // a copy, when it came from a symlink's target
    std::string_view name() const noexcept { return owned.empty() ? borrowed : owned; }
};

class TreeReader {
public:
    explicit TreeReader(const Tree& tree) : tree_(tree) {}

    // Resolves a normal path to an inode, following symlinks in every component but the last,
    // and in the last when `follow_last`. Errors name `op` and `user_path`.
    Result<Resolved> resolve(std::string_view path, bool follow_last, std::string_view op,
                             std::string_view user_path) const;
    Result<Resolved> resolve(const NormalPath& path, bool follow_last, std::string_view op,
                             std::string_view user_path) const;
    // Resolves everything but the final component (which must not be the root).
    Result<ParentAndName> resolve_parent(const NormalPath& path, std::string_view op,
                                         std::string_view user_path) const;
    // The same for a symlink's target, relative to the directory `link_dir` that holds the
    // link (absolute targets start at the root).
    Result<ParentAndName> resolve_target_parent(std::string_view target, uint64_t link_dir,
                                                std::string_view op,
                                                std::string_view user_path) const;

    Result<Stat> stat(std::string_view path, bool follow, std::string_view op) const;
    Result<std::vector<DirEntry>> readdir(std::string_view path) const;
    Result<std::string> readlink(std::string_view path) const;
    Result<std::string> getxattr(std::string_view path, std::string_view name) const;
    Result<std::vector<std::string>> listxattr(std::string_view path) const;
    StatFs statfs(uint64_t capacity) const;

    const Tree& tree() const noexcept { return tree_; }

private:
    // Walks `path` from directory `start` (from the root when `path` is absolute).
    Result<Resolved> walk(std::string_view path, bool follow_last, std::string_view op,
                          std::string_view user_path, ParentAndName* parent_out,
                          uint64_t start = kRootIno) const;
    const Tree& tree_;
};

// Checks an xattr name the way Linux does: a known namespace prefix, 1..255 bytes.
Result<void> check_xattr_name(std::string_view name, std::string_view op, std::string_view path);

}  // namespace packfs::mem
