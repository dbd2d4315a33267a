// The mem backend (DESIGN §6): a complete in-memory filesystem with O(1) snapshots.
//
// One writer at a time changes the tree (a lock); readers never wait for it nor write a shared
// cache line (RCU read sections, docs/MEM.md). A snapshot is a generation number: O(1) to
// take, frozen, contents included; the writer keeps the old state of what it changes after it.
#pragma once

#include <cstdint>
#include <memory>

#include "packfs/backend.hpp"
#include "packfs/export.hpp"

namespace packfs {

struct MemOptions {
    // Owner and times of the root directory.
    uint32_t root_mode = 0755;
    uint32_t uid = 0;
    uint32_t gid = 0;
    // statfs reports this capacity; 0 reports the host's physical memory.
    uint64_t capacity_bytes = 0;
};

// A new, empty, writable mem backend.
PACKFS_API std::shared_ptr<Backend> make_mem_backend(const MemOptions& options = {});

}  // namespace packfs
