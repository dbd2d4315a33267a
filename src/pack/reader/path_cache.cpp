// The per-thread cache of path prefixes to directories (path_cache.hpp): a direct-mapped
// table, each slot holding its prefix's bytes for the exact compare.
#include "pack/reader/path_cache.hpp"

#include <array>
#include <atomic>
#include <string>

#include "core/name_hash.hpp"

namespace packfs::pack::path_cache {

namespace {

// 256 directories per thread: a walk or a burst of reads stays in a few at a time; a slot is a
// cache line or two, so the table stays in L2.
constexpr std::size_t kSlots = 256;

struct Slot {
    uint64_t owner = 0;  // 0: empty
    uint64_t hash = 0;
    InodeView dir{};
    std::string prefix;
};

struct Table {
    std::array<Slot, kSlots> slots;
};

Table& table() {
    thread_local Table t;
    return t;
}

std::atomic<uint64_t> next_owner{1};

}  // namespace

uint64_t new_owner() noexcept {
    return next_owner.fetch_add(1, std::memory_order_relaxed);
}

bool find(uint64_t owner, std::string_view prefix, InodeView& out) noexcept {
    const uint64_t hash = xxh3_name(prefix);
    const Slot& s = table().slots[hash % kSlots];
    if (s.owner != owner || s.hash != hash || s.prefix != prefix) return false;
    out = s.dir;
    return true;
}

void remember(uint64_t owner, std::string_view prefix, const InodeView& dir) {
    const uint64_t hash = xxh3_name(prefix);
    Slot& s = table().slots[hash % kSlots];
    s.owner = owner;
    s.hash = hash;
    s.dir = dir;
    s.prefix.assign(prefix);
}

}  // namespace packfs::pack::path_cache
