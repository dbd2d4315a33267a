// Several lowers stacked into one (overlayfs's lowerdir=top:...:bottom), for an overlay over
// more than one read-only tree. The rules are overlayfs's for lower layers: the first layer
// (from the top) that has a name decides what it is; a directory there merges with the
// directories of that name in the layers below it, down to the first layer where the name is
// not a directory (which, and everything below it, it hides). A non-directory hides every
// lower layer's entry of that name.
//
// Nodes are interned: a directory's node is the list of (layer, node) it merges, a
// non-directory's its one (layer, node). The node's id and inode number are the order in
// which the overlay first reached it, below 2^48, so hard links inside one layer stay one
// inode, and numbers never collide across layers.
#pragma once

#include <vector>

#include "mem/lower_layer.hpp"

namespace packfs::overlay {

mem::LowerPtr make_stacked_layer(std::vector<mem::LowerPtr> layers);

}  // namespace packfs::overlay
