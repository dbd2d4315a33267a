// For other layers inside the library (the pack writer): the current version of a mem
// backend's tree, read directly instead of through paths.
#pragma once

#include "mem/mem_tree.hpp"
#include "packfs/backend.hpp"

namespace packfs::mem {

// The version `backend` shows now if it is a mem backend or a mem snapshot; null otherwise.
// The version is immutable: holding it is holding a snapshot.
TreePtr version_of(Backend& backend);

}  // namespace packfs::mem
