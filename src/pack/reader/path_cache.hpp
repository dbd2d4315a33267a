// The directories that plain path prefixes name in packs, remembered per thread, so resolving
// "/a/b/c/name" again (the next file of a directory, a walk's lstat of each entry, a deep path
// read twice) costs one hash of "/a/b/c", one compare and the lookup of "name", whatever the
// depth. A pack never changes, so an entry is never stale: it is keyed by the pack's id (never
// reused) and the prefix's exact bytes, and only prefixes the walker's fast try resolved are
// kept (every component a directory that is simply there: no symlink, "." or ".."), so a hit
// answers exactly what the walk would. Per thread: no lock, no atomic, no sharing of lines.
#pragma once

#include <cstdint>
#include <string_view>

#include "pack/reader/meta_reader.hpp"

namespace packfs::pack::path_cache {

// A new id for a pack opened now (ids are never reused while the process lives).
uint64_t new_owner() noexcept;

// The directory `prefix` (a path without a trailing '/', not "/") named when the same thread
// last resolved it in the pack `owner`, into `out`; false when this thread does not remember.
bool find(uint64_t owner, std::string_view prefix, InodeView& out) noexcept;

// Remembers that `prefix` names `dir` in the pack `owner`, replacing what its slot held.
void remember(uint64_t owner, std::string_view prefix, const InodeView& dir);

}  // namespace packfs::pack::path_cache
