// The mem backend (DESIGN §6): a complete in-memory filesystem with O(1) snapshots.
//
// Every version of the tree is immutable and shared structurally with its neighbours;
// mutations are serialised by one writer lock and publish the next version with one pointer
// swap, so readers never wait and a snapshot is one pointer copy.
#pragma once

#include <cstdint>
#include <memory>

#include "packfs/backend.hpp"

namespace packfs {

struct MemOptions {
    // Owner and times of the root directory.
    uint32_t root_mode = 0755;
    uint32_t uid = 0;
    uint32_t gid = 0;
    // statfs reports this capacity; 0 reports the host's free memory.
    uint64_t capacity_bytes = 0;
};

// A new, empty, writable mem backend.
std::shared_ptr<Backend> make_mem_backend(const MemOptions& options = {});

}  // namespace packfs
