// Read-side operations on one immutable version of a mem tree: path resolution and every
// query of the Backend contract. Shared by the live backend (on the version it loads) and by
// snapshots (on their frozen version). Nothing here locks or allocates on the success path
// of a lookup in a plain mem tree. Over a lower (an overlay), a walk asks the lower one
// component at a time (mem_tree.hpp), and a lower's error is returned as the operation's.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "mem/mem_tree.hpp"
#include "packfs/backend.hpp"
#include "packfs/path.hpp"

namespace packfs::mem {

inline constexpr int kMaxSymlinkFollows = 40;  // as Linux's MAXSYMLINKS

// The directories a walk stands in, from the root down (the root first): ".." in a symlink's
// target pops one, and a rename checks against it that a directory does not move into its own
// subtree. A lower directory has no parent pointer, so the walk's own record is the authority.
class DirStack {
public:
    DirStack() = default;
    DirStack(const DirStack& other) { *this = other; }
    DirStack& operator=(const DirStack& other) {
        size_ = 0;
        spill_.clear();
        for (std::size_t i = 0; i < other.size_; ++i) push(other.at(i));
        return *this;
    }

    void push(const NodeRef& node) {
        if (size_ < kInline) {
            inline_[size_].node = node;
        } else {
            spill_.push_back(node);
        }
        ++size_;
    }
    void pop() noexcept {
        if (size_ > kInline) spill_.pop_back();
        --size_;
    }
    void reset(const NodeRef& root) {
        size_ = 0;
        spill_.clear();
        push(root);
    }
    const NodeRef& back() const noexcept { return at(size_ - 1); }
    const NodeRef& at(std::size_t i) const noexcept {
        return i < kInline ? inline_[i].node : spill_[i - kInline];
    }
    std::size_t size() const noexcept { return size_; }
    bool contains(uint64_t ino) const noexcept {
        for (std::size_t i = 0; i < size_; ++i)
            if (at(i).ino == ino) return true;
        return false;
    }

private:
    static constexpr std::size_t kInline = 12;
    union Slot {
        Slot() {}  // left uninitialised: a walk must not pay for zeroing slots it never uses
        NodeRef node;
    };
    Slot inline_[kInline];
    std::size_t size_ = 0;
    std::vector<NodeRef> spill_;
};

// Where a new entry would go: the directory and the final name.
struct ParentAndName {
    uint64_t parent = 0;        // the directory's ino
    NodeRef dir;                // the directory
    DirStack stack;             // the root ... dir
    std::string_view borrowed;  // the name inside the caller's path, or
    std::string owned;          // a copy, when it came from a symlink's target
    std::string_view name() const noexcept { return owned.empty() ? borrowed : owned; }
};

class TreeReader {
public:
    explicit TreeReader(const Tree& tree) : tree_(tree) {}

    // Resolves a normal path to a node, following symlinks in every component but the last,
    // and in the last when `follow_last`. Errors name `op` and `user_path`.
    Result<NodeRef> resolve(std::string_view path, bool follow_last, std::string_view op,
                            std::string_view user_path) const;
    Result<NodeRef> resolve(const NormalPath& path, bool follow_last, std::string_view op,
                            std::string_view user_path) const;
    // Resolves everything but the final component (which must not be the root).
    Result<ParentAndName> resolve_parent(const NormalPath& path, std::string_view op,
                                         std::string_view user_path) const;
    // The same for a symlink's target, relative to the directory `link_dir` that holds the
    // link (absolute targets start at the root).
    Result<ParentAndName> resolve_target_parent(std::string_view target,
                                                const ParentAndName& link_dir,
                                                std::string_view op,
                                                std::string_view user_path) const;

    Result<Stat> stat(std::string_view path, bool follow, std::string_view op) const;
    Result<std::vector<DirEntry>> readdir(std::string_view path) const;
    Result<std::string> readlink(std::string_view path) const;
    Result<std::string> getxattr(std::string_view path, std::string_view name) const;
    Result<std::vector<std::string>> listxattr(std::string_view path) const;
    StatFs statfs(uint64_t capacity) const;

    // A symlink's target (lower errors throw LowerFault).
    std::string target_of(const NodeRef& link) const;

    const Tree& tree() const noexcept { return tree_; }

private:
    // Walks `path` from the root, or from the end of `start` when `path` is relative and
    // `start` is given. Lower errors throw LowerFault.
    Result<NodeRef> walk(std::string_view path, bool follow_last, std::string_view op,
                         std::string_view user_path, ParentAndName* parent_out,
                         const DirStack* start = nullptr) const;
    const Tree& tree_;
};

// Checks an xattr name the way Linux does: a known namespace prefix, 1..255 bytes.
Result<void> check_xattr_name(std::string_view name, std::string_view op, std::string_view path);

// Runs `body` (returning Result<T>), turning a lower's failure into the operation's error.
template <class Body>
auto guard_lower(std::string_view path, Body&& body) -> decltype(body()) {
    try {
        return body();
    } catch (const LowerFault& fault) {
        return std::unexpected(fault.error.with_path(path));
    }
}

}  // namespace packfs::mem
