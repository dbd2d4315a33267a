// Any Backend as an overlay's lower (DESIGN §9): a host directory through the dir backend, a
// mem snapshot, a Vfs. Nodes are the paths the overlay reached in it, interned: a node's id
// (and the inode number the overlay reports for it) is the order in which the overlay first
// met that path, so numbers are stable for the life of the layer, not across processes. For a
// pack, use the pack layer (pack_layer.hpp), which walks the pack's own index.
//
// The backend must not change while the overlay uses it (as with Linux overlayfs, a lower
// changed underneath gives unspecified, never unsafe, results).
#pragma once

#include <memory>

#include "mem/lower_layer.hpp"
#include "packfs/backend.hpp"

namespace packfs::overlay {

// Inode numbers of this layer stay below this; the overlay numbers its own inodes above it.
inline constexpr uint64_t kBackendLayerInoLimit = 1ull << 48;

mem::LowerPtr make_backend_layer(std::shared_ptr<Backend> backend);

}  // namespace packfs::overlay
