// A tree as canonical text, so two backends' trees compare as strings: one line per object,
// sorted by path, with its type, permission bits, owner, link count (not for a directory),
// size and XXH3 of its content (a regular file), its target (a symlink), and each xattr's
// name and XXH3 of its value. Inode numbers and times are left out: the reference model
// (a mem backend given the same calls) numbers and stamps its own.
#pragma once

#include <string>
#include <string_view>

#include "packfs/backend.hpp"

namespace packfs::powercut {

Result<std::string> dump_tree(Backend& fs);

// The lines of `expected` missing from `actual` ("- ...") and the lines of `actual` not in
// `expected` ("+ ..."), at most `limit` of them; "" when equal.
std::string diff_dumps(std::string_view expected, std::string_view actual, int limit = 12);

}  // namespace packfs::powercut
