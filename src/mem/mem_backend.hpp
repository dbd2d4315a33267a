// The mem engine as a Backend over a lower (mem/lower.hpp), for the overlay (src/overlay), the
// one layer that gives the engine a lower.
#pragma once

#include <cstdint>
#include <memory>

#include "mem/lower.hpp"
#include "packfs/backend.hpp"
#include "packfs/mem.hpp"

namespace packfs::mem {

// A live mem tree over `lower` (null: a plain mem tree). New inodes are numbered from
// `next_ino` (0: just above the lower's numbers).
std::shared_ptr<Backend> make_mem_backend_over(std::shared_ptr<Lower> lower,
                                               const MemOptions& options = {},
                                               uint64_t next_ino = 0);

}  // namespace packfs::mem
