// st_blocks of contents that lie partly in hole blocks of a compressed pack, remembered once
// computed. In a raw pack the blocks section gives a content's bytes outside holes at once (a
// raw block is stored in as many bytes as it holds, a hole in none); in a compressed one only
// a walk of the content's blocks tells, so stat of a large sparse file would walk them every
// time. This table keeps each walk's result.
//
// Bounded and lock-free: 4096 slots of one atomic word each (32 KiB), direct-mapped by content
// index. A word holds the index's high bits (its tag, + 1 so that 0 is an empty slot) and the
// count; a count too large for the word (a file over 4 PiB) is not kept. Two contents that
// share a slot evict each other, and the loser is walked again: never a wrong answer, since a
// word is read and written whole.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>

namespace packfs::pack {

class AllocatedCache {
public:
    AllocatedCache() : slots_(std::make_unique<std::atomic<uint64_t>[]>(kSlots)) {}

    // The count kept for content `index` (< 2^32), if any.
    std::optional<uint64_t> find(uint64_t index) const noexcept {
        const uint64_t word = slots_[index % kSlots].load(std::memory_order_relaxed);
        if (word >> kCountBits != tag_of(index)) return std::nullopt;
        return word & kCountMask;
    }
    void insert(uint64_t index, uint64_t count) noexcept {
        if (count > kCountMask || index >> 32 != 0) return;
        slots_[index % kSlots].store(tag_of(index) << kCountBits | count,
                                     std::memory_order_relaxed);
    }

private:
    static constexpr unsigned kSlotBits = 12;
    static constexpr uint64_t kSlots = uint64_t{1} << kSlotBits;
    // 2^32 indexes over 2^12 slots: a tag of 20 bits, + 1, fits 21; the count has the rest.
    static constexpr unsigned kCountBits = 64 - 21;
    static constexpr uint64_t kCountMask = (uint64_t{1} << kCountBits) - 1;
    static uint64_t tag_of(uint64_t index) noexcept { return (index >> kSlotBits) + 1; }

    std::unique_ptr<std::atomic<uint64_t>[]> slots_;
};

}  // namespace packfs::pack
