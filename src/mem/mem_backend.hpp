// The mem engine as a Backend over a lower (mem/lower.hpp), for the overlay (src/overlay), the
// one layer that gives the engine a lower.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "mem/lower.hpp"
#include "packfs/backend.hpp"
#include "packfs/mem.hpp"
#include "packfs/overlay.hpp"

namespace packfs::mem {

// How an overlay makes the Lower of a Backend it is rebased onto (Overlay::rebase): an error
// when that backend cannot be one.
using LowerMaker = std::function<Result<std::shared_ptr<Lower>>(std::shared_ptr<Backend>)>;

// A live mem tree over `lower` (null: a plain mem tree). New inodes are numbered from
// `next_ino` (0: just above the lower's numbers). `rebase_onto` makes the lowers rebase()
// moves it onto (empty: it cannot be rebased).
std::shared_ptr<Overlay> make_mem_backend_over(std::shared_ptr<Lower> lower,
                                               const MemOptions& options = {},
                                               uint64_t next_ino = 0,
                                               LowerMaker rebase_onto = {});

}  // namespace packfs::mem
