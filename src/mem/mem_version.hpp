// For other layers inside the library (the pack writer): the current version of a mem
// backend's tree, read directly instead of through paths.
#pragma once

#include <span>

#include "mem/mem_tree.hpp"
#include "packfs/backend.hpp"
#include "packfs/mem.hpp"

namespace packfs::mem {

// The version `backend` shows now if it is a plain mem backend or a mem snapshot; null
// otherwise (an overlay's tree holds only its changes). Holding it is holding a snapshot.
TreePtr version_of(Backend& backend);

// A live mem backend over `lower`: the overlay engine (DESIGN §9, mem_tree.hpp).
// New inodes are numbered from `next_ino` (0: just above the lower's numbers).
std::shared_ptr<Backend> make_mem_backend_over(LowerPtr lower, const MemOptions& options = {},
                                               uint64_t next_ino = 0);

// --- for the volume: a live mem backend (from make_mem_backend or make_mem_backend_over) ------
// The version it shows now.
TreePtr live_version(Backend& live);
// Publishes `version` (an earlier one, to undo mutations that could not be made durable, or
// one over another lower after a compaction). Inodes that open handles hold and `version`
// lacks are carried over as orphans, so every handle stays usable.
void restore_version(Backend& live, TreePtr version);
// A handle's writes and truncates, by inode number (the journal's replay has no handles).
Result<std::size_t> write_inode(Backend& live, uint64_t ino, std::span<const std::byte> data,
                                uint64_t offset, bool append);
Result<void> truncate_inode(Backend& live, uint64_t ino, uint64_t size);

}  // namespace packfs::mem
