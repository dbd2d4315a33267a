#include "mem/arena.hpp"

#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

#if defined(__SANITIZE_ADDRESS__)
#define PACKFS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PACKFS_ASAN 1
#endif
#endif

#ifdef PACKFS_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/lsan_interface.h>
#define PACKFS_ARENA_CHECKS 1
#define PACKFS_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define PACKFS_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
// The leak checker scans the heap, not mapped blocks: heap objects the arena's objects point
// to (a chunk's 64 KiB buffer, an xattr set) would look leaked without this.
#define PACKFS_SCAN_FOR_LEAKS(p, n) __lsan_register_root_region(p, n)
#define PACKFS_STOP_SCANNING(p, n) __lsan_unregister_root_region(p, n)
#else
#define PACKFS_POISON(p, n) ((void)(p), (void)(n))
#define PACKFS_UNPOISON(p, n) ((void)(p), (void)(n))
#define PACKFS_SCAN_FOR_LEAKS(p, n) ((void)(p), (void)(n))
#define PACKFS_STOP_SCANNING(p, n) ((void)(p), (void)(n))
#endif

// A test binary may define this to count the arena's allocations with the heap's
// (tests/map/alloc_counter.cpp): what a mutation allocates is the same question either way.
extern "C" void packfs_test_arena_allocation(std::size_t bytes) noexcept __attribute__((weak));

namespace packfs::mem {

namespace {

// `bytes` of fresh memory aligned to `align` (a power of two, at least a page).
void* map_aligned(std::size_t bytes, std::size_t align) noexcept {
    // mmap's own alignment is a page: only a larger one needs the extra span trimmed.
    const std::size_t span = align > 4096 ? bytes + align : bytes;
    void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return nullptr;
    if (span == bytes) return raw;
    const auto start = reinterpret_cast<uintptr_t>(raw);
    const uintptr_t aligned = (start + align - 1) & ~(uintptr_t{align} - 1);
    if (aligned > start) munmap(raw, aligned - start);
    const uintptr_t tail = start + span - (aligned + bytes);
    if (tail) munmap(reinterpret_cast<void*>(aligned + bytes), tail);
    return reinterpret_cast<void*>(aligned);
}

// Blocks of arenas that went, kept for the next (up to kKeptBytes): a program that makes
// and drops trees (snapshots' overlays, tests, a benchmark's runs) reuses pages already
// faulted in instead of faulting fresh ones, which costs more than the objects' own work.
class BlockCache {
public:
    static constexpr std::size_t kKeptBytes = 64u << 20;

    void* take(std::size_t bytes) noexcept {
        std::lock_guard lock(mutex_);
        for (auto it = kept_.begin(); it != kept_.end(); ++it) {
            if (it->second != bytes) continue;
            void* p = it->first;
            kept_.erase(it);
            total_ -= bytes;
            return p;
        }
        return nullptr;
    }
    bool keep(void* p, std::size_t bytes) noexcept {
        std::lock_guard lock(mutex_);
        if (total_ + bytes > kKeptBytes || kept_.size() == kept_.capacity()) return false;
        kept_.emplace_back(p, bytes);
        total_ += bytes;
        return true;
    }

private:
    std::mutex mutex_;
    std::vector<std::pair<void*, std::size_t>> kept_ = [] {
        std::vector<std::pair<void*, std::size_t>> v;
        v.reserve(256);  // keep() never allocates
        return v;
    }();
    std::size_t total_ = 0;
};

// Never destroyed: an arena may go on the reclamation thread after static destructors ran.
BlockCache& block_cache() {
    static BlockCache* cache = new BlockCache;
    return *cache;
}

void* new_block(std::size_t bytes, std::size_t huge) noexcept {
    if (void* p = block_cache().take(bytes)) return p;
    void* p = map_aligned(bytes, bytes >= huge ? huge : 4096);
    if (p && bytes >= huge) madvise(p, bytes, MADV_HUGEPAGE);
    return p;
}

}  // namespace

Arena::~Arena() {
#ifdef PACKFS_ARENA_CHECKS
    const uint64_t out = allocated_ - given_back_.load(std::memory_order_acquire);
    if (out != 0) {
        std::fprintf(stderr, "packfs: mem arena destroyed with %llu objects still allocated\n",
                     static_cast<unsigned long long>(out));
        std::abort();
    }
#endif
    for (auto [p, n] : blocks_) {
        PACKFS_STOP_SCANNING(p, n);
        PACKFS_UNPOISON(p, n);
        if (!block_cache().keep(p, n)) munmap(p, n);
    }
}

void* Arena::allocate(std::size_t bytes, Place place, Align align) {
    if (bytes > kMaxObject) return ::operator new(bytes);
    if (packfs_test_arena_allocation) packfs_test_arena_allocation(bytes);
    const std::size_t c = class_of(bytes);
    FreeObject* f = free_[c];
    if (!f && returned_[c].load(std::memory_order_relaxed)) {
        f = returned_[c].exchange(nullptr, std::memory_order_acquire);
    }
    ++allocated_;
    if (!f) return carve(regions_[static_cast<int>(place)], (c + 1) * kGrain, align);
    free_[c] = f->next;
    PACKFS_UNPOISON(f, (c + 1) * kGrain);
    return f;
}

void Arena::set_aside(std::size_t bytes, Align align) {
    if (bytes > kMaxObject) return;
    const std::size_t c = class_of(bytes);
    push_free(carve(regions_[static_cast<int>(Place::beside)], (c + 1) * kGrain, align), c);
}

void* Arena::carve(Region& region, std::size_t rounded, Align align) {
    const auto skip = [&] {
        const auto at = reinterpret_cast<uintptr_t>(region.next);
        return align == Align::line ? static_cast<std::size_t>(-at & (kLine - 1)) : 0;
    };
    if (static_cast<std::size_t>(region.end - region.next) < skip() + rounded) {
        const std::size_t bytes = region.next_block_bytes;
        void* block = new_block(bytes, kHugeBlock);
        if (!block) {
            --allocated_;
            throw std::bad_alloc();
        }
        blocks_.emplace_back(block, bytes);
        PACKFS_POISON(block, bytes);
        PACKFS_SCAN_FOR_LEAKS(block, bytes);
        region.next = static_cast<std::byte*>(block);
        region.end = region.next + bytes;
        if (region.next_block_bytes < kHugeBlock) region.next_block_bytes *= 2;
    }
    if (const std::size_t gap = skip()) {
        // The bytes up to the line serve a small object later (kGrain divides them).
        PACKFS_UNPOISON(region.next, gap);
        push_free(region.next, class_of(gap));
        region.next += gap;
    }
    void* p = region.next;
    region.next += rounded;
    PACKFS_UNPOISON(p, rounded);
    return p;
}

// Puts free memory of class `c` first on its list (no object count changes).
void Arena::push_free(void* p, std::size_t c) noexcept {
    auto* f = static_cast<FreeObject*>(p);
    f->next = free_[c];
    free_[c] = f;
    PACKFS_POISON(reinterpret_cast<std::byte*>(p) + sizeof(FreeObject),
                  (c + 1) * kGrain - sizeof(FreeObject));
}

void Arena::deallocate(void* p, std::size_t bytes) noexcept {
    if (bytes > kMaxObject) {
        ::operator delete(p);
        return;
    }
    --allocated_;
    push_free(p, class_of(bytes));
}

void Arena::give_back(void* p, std::size_t bytes) noexcept {
    if (bytes > kMaxObject) {
        ::operator delete(p);
        return;
    }
    const std::size_t c = class_of(bytes);
    // Poisoned before it is pushed: once pushed, the writer may take it at once.
    PACKFS_POISON(reinterpret_cast<std::byte*>(p) + sizeof(FreeObject),
                  (c + 1) * kGrain - sizeof(FreeObject));
    given_back_.fetch_add(1, std::memory_order_relaxed);
    auto* f = static_cast<FreeObject*>(p);
    FreeObject* head = returned_[c].load(std::memory_order_relaxed);
    do {
        f->next = head;
    } while (!returned_[c].compare_exchange_weak(head, f, std::memory_order_release,
                                                 std::memory_order_relaxed));
}

}  // namespace packfs::mem
