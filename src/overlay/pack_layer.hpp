// A pack as an overlay's lower (DESIGN §9): the mem engine walks it one directory entry at a
// time through the reader, never by path, so the overlay's renames and whiteouts apply to the
// pack's names too. Node ids are the pack's record numbers; inode numbers are what the pack
// reports (its positions, or the numbers it keeps from the tree it was built from).
#pragma once

#include <memory>

#include "mem/lower_layer.hpp"
#include "pack/reader.hpp"

namespace packfs::overlay {

mem::LowerPtr make_pack_layer(std::shared_ptr<const pack::PackReader> reader);

}  // namespace packfs::overlay
