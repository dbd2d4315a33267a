// For other layers inside the library (the pack writer): the current version of a mem
// backend's tree, read directly instead of through paths.
#pragma once

#include "mem/mem_tree.hpp"
#include "packfs/backend.hpp"
#include "packfs/mem.hpp"

namespace packfs::mem {

// The version `backend` shows now if it is a plain mem backend or a mem snapshot; null
// otherwise (an overlay's tree holds only its changes). Holding it is holding a snapshot.
TreePtr version_of(Backend& backend);

// A live mem backend over `lower`: the overlay engine (DESIGN §9, mem_tree.hpp).
std::shared_ptr<Backend> make_mem_backend_over(LowerPtr lower, const MemOptions& options = {});

}  // namespace packfs::mem
