// Writer-side edits of a private (unpublished) Tree copy: small steps that the live mem
// backend's mutations are composed of. Each keeps the tree's invariants: nlink counts,
// directory parent links, bytes_used.
#pragma once

#include <memory>
#include <string_view>

#include "mem/mem_tree.hpp"

namespace packfs::mem {

// A private copy of inode `ino`, already installed in `tree`, to edit in place.
Inode& edit_inode(Tree& tree, uint64_t ino);

// A fresh inode of `type`, installed in `tree` with nlink 0 and all times `now`.
Inode& new_inode(Tree& tree, FileType type, uint32_t mode, Time now);

// Adds the entry parent/name -> ino (the name must be free).
void add_entry(Tree& tree, uint64_t parent, std::string_view name, uint64_t ino, FileType type);

// mtime = ctime = now, as a change to a directory's entries requires.
void touch_dir(Tree& tree, uint64_t dir, Time now);

// Removes one link to `ino` (its entry already gone). At nlink 0 the inode is erased, unless
// `keep_orphan` (a handle is open on it), in which case it stays, unreachable, with nlink 0.
void drop_link(Tree& tree, uint64_t ino, Time now, bool keep_orphan);

}  // namespace packfs::mem
