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

void* operator new(std::size_t n) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    g_allocated_bytes.fetch_add(n, std::memory_order_relaxed);
    if (void* p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
