// The overlay's live tree (packfs/overlay.hpp): the mem engine's live tree (mem/live_tree.hpp)
// over a Lower (mem/lower.hpp; a LowerView of a Backend, lower_view.hpp), with the calls that
// only an overlay has: freeze and rebase onto a new lower, checkpoint and rollback.
#pragma once

#include <functional>
#include <memory>

#include "mem/lower.hpp"
#include "packfs/mem.hpp"
#include "packfs/overlay.hpp"

namespace packfs::overlay {

// How an overlay makes the Lower of a Backend it is rebased onto (Overlay::rebase): an error
// when that backend cannot be one.
using LowerMaker = std::function<Result<std::shared_ptr<mem::Lower>>(std::shared_ptr<Backend>)>;

// A live overlay over `lower`. New inodes are numbered from `next_ino` (0: just above the
// lower's numbers). `rebase_onto` makes the lowers rebase() moves it onto (empty: it cannot be
// rebased).
std::shared_ptr<Overlay> make_overlay_backend(std::shared_ptr<mem::Lower> lower,
                                              const MemOptions& options, uint64_t next_ino,
                                              LowerMaker rebase_onto = {});

}  // namespace packfs::overlay
