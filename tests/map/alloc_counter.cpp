// Replaces the global operator new/delete of the map test binary with counting versions, so
// a test can prove that lookups do not allocate. In its own file so that the compiler cannot
// inline the pair and second-guess it.
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace {
std::atomic<uint64_t> g_allocations{0};
std::atomic<uint64_t> g_allocated_bytes{0};
}

uint64_t packfs_test_allocations() noexcept { return g_allocations.load(std::memory_order_relaxed); }
uint64_t packfs_test_allocated_bytes() noexcept { return g_allocated_bytes.load(std::memory_order_relaxed); }

namespace {
void* counted_malloc(std::size_t n) noexcept {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    g_allocated_bytes.fetch_add(n, std::memory_order_relaxed);
    return std::malloc(n ? n : 1);
}
}  // namespace

// Every form the library may call is replaced: one left to the runtime would pair its
// allocation with our free (ASan reports the mismatch) and escape the count.
void* operator new(std::size_t n) {
    if (void* p = counted_malloc(n)) return p;
    throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
    if (void* p = counted_malloc(n)) return p;
    throw std::bad_alloc();
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
    return counted_malloc(n);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
    return counted_malloc(n);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p) noexcept {
    std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
    std::free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
    std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
    std::free(p);
}

// The mem engine's own arena (src/mem/arena.hpp) calls this for each object it hands out: what
// a mutation allocates counts the same whether the heap or the arena serves it.
extern "C" void packfs_test_arena_allocation(std::size_t n) noexcept {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    g_allocated_bytes.fetch_add(n, std::memory_order_relaxed);
}
