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
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/persistent_map.hpp"
#include "mem/file_content.hpp"
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
    uint64_t ino;
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
    uint64_t parent = 0;  // directories only: the one directory that holds it
    Time atime, mtime, ctime;
    FileContent content;  // regular files
    std::string target;   // symlinks
    XattrMap xattrs;
};

using InodePtr = std::shared_ptr<const Inode>;
using InodeTable = PersistentMap<uint64_t, InodePtr>;
using EntryTable = PersistentMap<DirKey, DirValue, DirKeyLess>;

struct Tree {
    InodeTable inodes;
    EntryTable entries;
    uint64_t next_ino = kRootIno + 1;
    uint64_t bytes_used = 0;  // file bytes, for statfs

    const Inode* inode(uint64_t ino) const {
        const InodePtr* p = inodes.find(ino);
        return p ? p->get() : nullptr;
    }
    const DirValue* entry(uint64_t parent, std::string_view name) const {
        return entries.find(DirKeyView(parent, name));
    }
    bool has_entries(uint64_t dir) const {
        auto it = entries.lower_bound(DirKeyView::first_of(dir));
        return it != entries.end() && it.key().parent == dir;
    }
};

using TreePtr = std::shared_ptr<const Tree>;

Stat stat_of(const Inode& inode);

}  // namespace packfs::mem
