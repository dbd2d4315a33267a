// HugePageAllocator: large allocations are 2 MiB aligned (what huge pages need) and hold what
// is written; small ones come from the heap; vectors grow and shrink through both.
#include "core/huge_pages.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

namespace packfs {
namespace {

TEST(HugePageAllocator, LargeBlocksAreAlignedAndHoldTheirBytes) {
    HugePageAllocator<uint64_t> alloc;
    const std::size_t n = (5u << 20) / sizeof(uint64_t) + 3;  // over 4 MiB, not a multiple
    uint64_t* p = alloc.allocate(n);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % (2u << 20), 0u);
    for (std::size_t i = 0; i < n; ++i) p[i] = i * 7;
    for (std::size_t i = 0; i < n; i += 4099) EXPECT_EQ(p[i], i * 7);
    alloc.deallocate(p, n);
    uint64_t* small = alloc.allocate(10);
    small[9] = 1;
    alloc.deallocate(small, 10);
}

TEST(HugePageAllocator, AVectorGrowsAcrossTheThresholdAndKeepsItsElements) {
    std::vector<uint32_t, HugePageAllocator<uint32_t>> v;
    for (uint32_t i = 0; i < 3'000'000; ++i) v.push_back(i);  // 12 MB: several reallocations
    EXPECT_EQ(std::accumulate(v.begin(), v.end(), uint64_t{0}), uint64_t{2999999} * 3000000 / 2);
    v.resize(10);
    v.shrink_to_fit();
    EXPECT_EQ(v.back(), 9u);
}

}  // namespace
}  // namespace packfs
