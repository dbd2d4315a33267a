// The mem engine's arena (src/mem/arena.hpp): where it carves, what it reuses. Layout is the
// arena's reason to exist (a lookup's entry and cell on as few cache lines as their sizes
// allow, side by side in the order it reads them), so the tests pin addresses, not only counts.
#include "mem/arena.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace packfs::mem {
namespace {

uintptr_t address(const void* p) {
    return reinterpret_cast<uintptr_t>(p);
}

TEST(Arena, ObjectsMadeOneAfterAnotherSitSideBySide) {
    Arena arena;
    void* a = arena.allocate(40);
    void* b = arena.allocate(100);  // rounded up to the 8-byte grain
    void* c = arena.allocate(8);
    EXPECT_EQ(address(b), address(a) + 40);
    EXPECT_EQ(address(c), address(b) + 104);
    arena.deallocate(c, 8);
    arena.deallocate(b, 100);
    arena.deallocate(a, 40);
}

TEST(Arena, ALineAlignedObjectStartsALineAndTheGapServesASmallerOne) {
    Arena arena;
    void* a = arena.allocate(24);
    void* line = arena.allocate(160, Arena::Place::beside, Arena::Align::line);
    EXPECT_EQ(address(line) % Arena::kLine, 0u);
    EXPECT_EQ(address(line), address(a) + Arena::kLine);  // a's block starts a page
    // The 40 bytes between a and the line went to the free list of their size.
    void* small = arena.allocate(40);
    EXPECT_EQ(address(small), address(a) + 24);
    arena.deallocate(small, 40);
    arena.deallocate(line, 160);
    arena.deallocate(a, 24);
}

TEST(Arena, MemorySetAsideGoesToTheNextObjectOfItsSize) {
    Arena arena;
    void* first = arena.allocate(8);
    // An entry (64 bytes) set aside before its cell (160) is made: the entry comes out first
    // in memory, on a line of its own, and the cell starts the next line.
    arena.set_aside(64, Arena::Align::line);
    void* cell = arena.allocate(160, Arena::Place::beside, Arena::Align::line);
    void* entry = arena.allocate(64, Arena::Place::beside, Arena::Align::line);
    EXPECT_EQ(address(entry) % Arena::kLine, 0u);
    EXPECT_EQ(address(cell), address(entry) + 64);
    EXPECT_LT(address(first), address(entry));
    arena.deallocate(entry, 64);
    arena.deallocate(cell, 160);
    arena.deallocate(first, 8);
}

TEST(Arena, FreedMemoryIsReusedLastFreedFirstThenWhatOtherThreadsGaveBack) {
    Arena arena;
    void* a = arena.allocate(48);
    void* b = arena.allocate(48);
    arena.deallocate(a, 48);
    arena.deallocate(b, 48);
    EXPECT_EQ(arena.allocate(48), b);
    EXPECT_EQ(arena.allocate(48), a);
    // The writer's own list is empty now: what the reclamation thread gave back comes next.
    arena.give_back(a, 48);
    EXPECT_EQ(arena.allocate(48), a);
    arena.deallocate(a, 48);
    arena.deallocate(b, 48);
}

TEST(Arena, ObjectsLargerThanTheClassesComeFromTheHeap) {
    Arena arena;
    constexpr std::size_t kBig = Arena::kMaxObject + 1;
    void* before = arena.allocate(32);
    void* big = arena.allocate(kBig, Arena::Place::beside, Arena::Align::line);
    ASSERT_NE(big, nullptr);
    arena.set_aside(kBig);  // nothing to set aside: the heap's
    void* after = arena.allocate(32);
    // Neither the big object nor its set-aside took arena space: the small ones still sit side
    // by side, and the big one lies outside them.
    EXPECT_EQ(address(after), address(before) + 32);
    EXPECT_TRUE(address(big) + kBig <= address(before) || address(big) >= address(after) + 32);
    std::memset(big, 0xab, kBig);  // all of it is the caller's (ASan checks the bounds)
    arena.deallocate(big, kBig);
    arena.deallocate(after, 32);
    arena.deallocate(before, 32);
}

}  // namespace
}  // namespace packfs::mem
