// One version of a mem backend's tree (DESIGN §5, §6), and the types it is made of.
//
// Model: an inode table (ino -> immutable Inode) and directory entries keyed by (parent ino,
// name). Both are PersistentMaps, so a version is two root pointers: copying a Tree is O(1),
// and a mutation path-copies O(log n) nodes of the maps it touches. A directory rename is one
// entry erased and one inserted, whatever the size of the subtree; a hard link is a second
// entry naming the same ino; FUSE-style (parent, name) lookups map onto `entries` directly.
//
// Everything reachable from a published Tree is immutable, with one audited exception: file
// chunks may be appended to in place past their `frontier` (see file_content.hpp).
//
// A Tree may sit over a lower (lower_layer.hpp): it is then an overlay (DESIGN §9), and its own
// maps are the upper, holding only what changed. The rules, which every accessor below keeps:
// - An inode is the tree's own copy when `inodes` has it (a null pointer there is a lower inode
//   that was deleted), else the lower's node with that number. The first change of a lower
//   inode copies it up (edit_inode): metadata, target and xattrs are copied, the content is
//   referenced chunk by chunk (file_content.hpp), and a directory keeps its lower origin, whose
//   entries it goes on merging. Copying up is by inode number, so every hard link of a lower
//   file sees the copy, and no path or ancestor is involved.
// - An entry is the tree's own when `entries` has (dir, name): a DirValue with ino 0 is a
//   whiteout, hiding the lower's entry of that name. Otherwise a directory with a lower origin
//   shows its lower's entry. A directory created by the tree has no origin: re-created over a
//   deleted lower directory it is opaque by construction, and a renamed lower directory keeps
//   its origin wherever it goes, so its lower entries follow it.
// - Every non-whiteout entry of `entries` names an inode the tree holds itself.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/persistent_map.hpp"
#include "mem/file_content.hpp"
#include "mem/lower_layer.hpp"
#include "packfs/types.hpp"

namespace packfs::mem {

inline constexpr uint64_t kRootIno = 1;

// Entries are ordered by (parent, hash of name, name): one directory is one contiguous range
// (readdir is a range scan, in hash order), and a lookup compares integers at every step
// but the last instead of strings.
uint64_t name_hash(std::string_view name) noexcept;

struct DirKey {
    uint64_t parent;
    uint64_t hash;
    std::string name;
};
struct DirKeyView {
    uint64_t parent;
    uint64_t hash;
    std::string_view name;
    DirKeyView(uint64_t p, std::string_view n) noexcept : parent(p), hash(name_hash(n)), name(n) {}
    // The first key of directory `p`, for a range scan.
    static DirKeyView first_of(uint64_t p) noexcept { return DirKeyView(p, 0, {}); }

private:
    DirKeyView(uint64_t p, uint64_t h, std::string_view n) noexcept : parent(p), hash(h), name(n) {}
};
struct DirKeyLess {
    using is_transparent = void;
    template <class A, class B>
    bool operator()(const A& a, const B& b) const noexcept {
        if (a.parent != b.parent) return a.parent < b.parent;
        if (a.hash != b.hash) return a.hash < b.hash;
        return std::string_view(a.name) < std::string_view(b.name);
    }
};
struct DirValue {
    uint64_t ino;  // 0: a whiteout (only in a tree over a lower)
    FileType type;
};

using XattrMap = PersistentMap<std::string, std::string>;

struct Inode {
    uint64_t ino = 0;
    FileType type = FileType::regular;
    uint32_t mode = 0;
    uint32_t uid = 0;
    uint32_t gid = 0;
    uint64_t nlink = 0;
    uint64_t size = 0;
    uint64_t rdev = 0;
    uint64_t lower_id = 0;  // the lower node this inode was copied up from (0: none)
    Time atime, mtime, ctime;
    FileContent content;  // regular files
    std::string target;   // symlinks
    XattrMap xattrs;
};

using InodePtr = std::shared_ptr<const Inode>;
using InodeTable = PersistentMap<uint64_t, InodePtr>;
using EntryTable = PersistentMap<DirKey, DirValue, DirKeyLess>;

// One inode of a version, wherever it lives: the tree's own copy (`upper`), the lower's node
// (`lower`), or both (a copy-up keeps its origin). Valid while the version it came from lives.
struct NodeRef {
    uint64_t ino = 0;  // 0: no such node
    FileType type = FileType::regular;
    const Inode* upper = nullptr;
    LowerNode lower{};  // lower.id == 0: none
    explicit operator bool() const noexcept { return ino != 0; }
    bool is_dir() const noexcept { return type == FileType::directory; }
};

struct Tree {
    InodeTable inodes;
    EntryTable entries;
    uint64_t next_ino = kRootIno + 1;
    uint64_t bytes_used = 0;  // file bytes, for statfs
    LowerPtr lower;           // null: a plain mem tree

    // The tree's own copy of `ino` (nullptr when it has none). Lower-less trees hold every inode.
    const Inode* inode(uint64_t ino) const {
        const InodePtr* p = inodes.find(ino);
        return p ? p->get() : nullptr;
    }
    // Inode `ino`, its own copy or the lower's. Lower errors throw LowerFault.
    NodeRef node(uint64_t ino) const {
        if (const InodePtr* p = inodes.find(ino)) return own(p->get());
        if (!lower) return {};
        auto found = lower_value(lower->by_ino(ino));
        return found ? NodeRef{found->ino, found->type, nullptr, *found} : NodeRef{};
    }
    NodeRef root() const { return node(kRootIno); }
    // The root as a walk starts from it: enough to look names up in (its number and lower
    // origin), without the probe for its inode, which only an answer about the root needs
    // (complete() then makes it whole).
    NodeRef walk_root() const noexcept {
        return NodeRef{kRootIno, FileType::directory, nullptr, lower ? lower->root() : LowerNode{}};
    }
    NodeRef complete(const NodeRef& ref) const {
        return ref.upper || ref.ino != kRootIno ? ref : root();
    }
    // The entry `name` of directory `dir` (a whiteout is no entry). Lower errors throw.
    NodeRef child(const NodeRef& dir, std::string_view name) const {
        if (const DirValue* v = entries.find(DirKeyView(dir.ino, name)))
            return v->ino == 0 ? NodeRef{} : own(inode(v->ino));
        if (!dir.lower.id) return {};
        auto found = lower_value(lower->lookup(dir.lower, name));
        if (!found) return {};
        if (const InodePtr* p = inodes.find(found->ino)) return own(p->get());
        return NodeRef{found->ino, found->type, nullptr, *found};
    }
    // Whether the lower shows `name` in `dir` (before the tree's own entries are applied).
    bool lower_has(const NodeRef& dir, std::string_view name) const {
        return dir.lower.id && lower_value(lower->lookup(dir.lower, name)).has_value();
    }
    // Whether directory `dir` has any entry, merged.
    bool has_entries(const NodeRef& dir) const;

private:
    NodeRef own(const Inode* inode) const {
        if (!inode) return {};
        return NodeRef{inode->ino, inode->type, inode,
                       LowerNode{inode->ino, inode->lower_id, inode->type}};
    }
};

using TreePtr = std::shared_ptr<const Tree>;

Stat stat_of(const Inode& inode);
// The Stat of any node (a lower node's comes from its lower; errors throw LowerFault).
Stat stat_of(const Tree& tree, const NodeRef& node);
// The entries of directory `dir`, merged: its own (whiteouts left out), then the lower's that
// it does not shadow. Lower errors throw LowerFault.
std::vector<DirEntry> list_entries(const Tree& tree, const NodeRef& dir);

}  // namespace packfs::mem
