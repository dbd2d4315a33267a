// The mem engine as a Backend over a lower, for the layers built on it inside the library: the
// overlay (overlay.cpp) and the volume.
#pragma once

#include <cstdint>
#include <memory>

#include "packfs/backend.hpp"
#include "packfs/mem.hpp"

namespace packfs::mem {

// A live mem tree over `lower` (read-only from then on; null: a plain mem tree). New inodes
// are numbered from `next_ino` (0: just above the lower's numbers).
std::shared_ptr<Backend> make_mem_backend_over(std::shared_ptr<Backend> lower,
                                               const MemOptions& options = {},
                                               uint64_t next_ino = 0);

}  // namespace packfs::mem
