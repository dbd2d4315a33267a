// A frozen generation of a mem tree as a read-only Backend (LiveTree::snapshot).
#pragma once

#include <memory>

#include "mem/engine.hpp"
#include "packfs/backend.hpp"

namespace packfs::mem {

// The snapshot `info` (taken with Engine::take_snapshot, under the writer lock) as a Backend;
// it drops the snapshot when it and its last file go.
std::shared_ptr<Backend> make_snapshot_backend(std::shared_ptr<Engine> engine,
                                               Engine::SnapshotInfo info);

}  // namespace packfs::mem
