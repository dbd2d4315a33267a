// Ways for the pack's own tests to reach inside a build or an open: replace a hash to force
// collisions, shrink a budget to make workers wait. Internal (not installed, not in the public
// API or ABI): a program sees only packfs/pack.hpp, whose write_pack and open_pack are these
// entry points with no hooks.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>

#include "packfs/pack.hpp"

namespace packfs::pack {

struct WriteHooks {
    // Replaces the XXH3-128 dedup hash (e.g. a constant, to force collisions). With it, every
    // file is held in memory for the comparison, and a file read twice is not checked against
    // its first hash.
    std::function<std::array<uint64_t, 2>(std::span<const std::byte>)> dedup_hash;
    // Replaces the v2 dirents' name hash (a constant makes every name collide); the pack is then
    // readable only by a reader opened with the same hook (OpenHooks::name_hash).
    uint32_t (*name_hash)(std::string_view) = nullptr;
    // The bytes the hashing may hold ahead of the writer (0: the 64 MiB default), so a few
    // files can fill it and make the workers wait for room.
    uint64_t hold_budget = 0;
};

struct OpenHooks {
    // The name hash a v2 pack was written with (WriteHooks::name_hash).
    uint32_t (*name_hash)(std::string_view) = nullptr;
};

// write_pack (packfs/pack.hpp) with hooks.
Result<PackStats> write_pack_with_hooks(Backend& source, std::string_view out_path,
                                        const PackWriteOptions& options, const WriteHooks& hooks,
                                        std::string_view root = "/");

// open_pack (packfs/pack.hpp) with hooks.
Result<std::shared_ptr<PackBackend>> open_pack_with_hooks(std::string_view pack_path,
                                                          const PackOpenOptions& options,
                                                          const OpenHooks& hooks);

}  // namespace packfs::pack
