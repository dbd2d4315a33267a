// The checks a pack's header passes before anything else in the file is read (docs/FORMAT.md,
// "Validation"): its identity (magic, version, size, checksum, features), its fields, the
// regions (data, metadata, sums, metadata digests) against the real file size and each other,
// and the section table. After them every offset and length the header gives lies inside the
// file, so the reader can index the metadata region without checking those again.
#pragma once

#include <cstdint>
#include <string_view>

#include "pack/format/format.hpp"
#include "packfs/error.hpp"

namespace packfs::pack {

// `file_size` is the real size of the file; `path` names it in errors. EUCLEAN naming the field,
// its offset, what was expected and what was found; ENOTSUP for a newer version, an unknown
// incompatible feature or an unknown codec.
Result<void> validate_header(const Header& header, uint64_t file_size, std::string_view path);

}  // namespace packfs::pack
