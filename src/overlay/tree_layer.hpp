// A frozen version of a mem tree (itself perhaps over a lower) as a lower: what a volume's
// live tree stands on while a compaction writes that version into a pack. Changes made during
// the compaction go into a fresh upper over this layer, so that when the pack is ready the
// switch only swaps the lower (the pack holds the same tree, with the same inode numbers)
// instead of replaying what was done meanwhile.
//
// Node ids are the inode numbers (the tree's own or its lower's), so a node found here is
// found in the pack by the same number.
#pragma once

#include "mem/lower_layer.hpp"
#include "mem/mem_tree.hpp"

namespace packfs::overlay {

mem::LowerPtr make_tree_layer(mem::TreePtr tree);

}  // namespace packfs::overlay
