// The name hash of a version 2 dirent (format.hpp): the low 32 bits of the name's XXH3-64.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/name_hash.hpp"

namespace packfs::pack {

inline uint32_t name_hash(std::string_view name) noexcept {
    return static_cast<uint32_t>(xxh3_name(name));
}

}  // namespace packfs::pack
