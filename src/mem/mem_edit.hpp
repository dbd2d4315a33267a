// Writer-side edits of a private (unpublished) Tree copy: small steps that the live mem
// backend's mutations are composed of. Each keeps the tree's invariants: nlink counts,
// whiteouts over lower entries, bytes_used. Over a lower, a lower's failure throws LowerFault
// (caught by MemState::mutate, which then publishes nothing).
#pragma once

#include <memory>
#include <string_view>

#include "mem/mem_tree.hpp"

namespace packfs::mem {

// The tree's own copy of a lower node: metadata, target and xattrs copied, the content
// referenced (it stays in the lower until a chunk is changed). Lower errors throw LowerFault.
std::shared_ptr<Inode> copy_up(const LowerLayer& lower, const LowerNode& node);

// A private copy of inode `ino`, already installed in `tree`, to edit in place. A lower inode
// is copied up first (metadata, target and xattrs copied; content referenced by chunk).
Inode& edit_inode(Tree& tree, uint64_t ino);

// A fresh inode of `type`, installed in `tree` with nlink 0 and all times `now`.
Inode& new_inode(Tree& tree, FileType type, uint32_t mode, Time now);

// Adds the entry parent/name -> ino (the name must be free, or a whiteout).
void add_entry(Tree& tree, uint64_t parent, std::string_view name, uint64_t ino, FileType type);

// Removes the entry `name` of `dir`: erased, or a whiteout where the lower has that name.
void remove_entry(Tree& tree, const NodeRef& dir, std::string_view name);

// mtime = ctime = now, as a change to a directory's entries requires.
void touch_dir(Tree& tree, uint64_t dir, Time now);

// Removes one link to `ino` (its entry already gone). At nlink 0 the inode is erased, unless
// `keep_orphan` (a handle is open on it), in which case it stays, unreachable, with nlink 0.
void drop_link(Tree& tree, uint64_t ino, Time now, bool keep_orphan);

// Erases inode `ino` for good (a lower inode is marked deleted, so its number stays dead).
void forget_inode(Tree& tree, uint64_t ino);

}  // namespace packfs::mem
