// For other layers inside the library (the overlay's pack layer): the reader behind a pack
// backend, so they can walk the pack by inode instead of by path.
#pragma once

#include <memory>

#include "pack/reader.hpp"
#include "packfs/backend.hpp"

namespace packfs::pack {

// The reader of `backend` if it is a pack opened by open_pack(); null otherwise.
std::shared_ptr<const PackReader> reader_of(const Backend& backend);

}  // namespace packfs::pack
