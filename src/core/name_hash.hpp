// The hash of a file name both the mem engine's tries and version 2 packs' dirents key by:
// XXH3-64 (seed 0) of its bytes, inlined (xxHash's XXH_INLINE_ALL), since names are short and a
// call into the shared library costs as much as the hash.
#pragma once

#include <cstdint>
#include <string_view>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace packfs {

inline uint64_t xxh3_name(std::string_view name) noexcept {
    return XXH3_64bits(name.data(), name.size());
}

}  // namespace packfs
