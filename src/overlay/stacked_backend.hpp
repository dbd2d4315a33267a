// Several read-only trees stacked into one (overlayfs's lowerdir=top:...:bottom), the lower of
// an overlay over more than one tree. The rules are overlayfs's for lower layers: the first
// layer (from the top) that has a name decides what it is; a directory there merges with the
// directories of that name in the layers below it, down to the first layer where the name is
// not a directory (which, and everything below it, it hides). A non-directory hides every
// lower layer's entry of that name.
//
// The union is the one the Vfs's mount points use too (core/union_nodes.hpp), with overlayfs's
// rules for lower layers. Nodes are interned there: a directory's node is the list of (layer,
// node) it merges, a non-directory's its one (layer, node). The node's id and inode number are
// the order in which the stack first reached it (the root is 1), below 2^48, so hard links
// inside one layer stay one inode, and numbers never collide across layers. Every layer node it
// met stays held.
#pragma once

#include <memory>
#include <vector>

#include "packfs/backend.hpp"

namespace packfs::overlay {

std::shared_ptr<Backend> make_stacked_backend(std::vector<std::shared_ptr<Backend>> layers);

}  // namespace packfs::overlay
