// An allocator for a build's large tables (the scanned inodes and dirents, the planned
// contents, the metadata region): an allocation of
// 4 MiB or more is mapped on its own and advised MADV_HUGEPAGE, so the kernel can back it with
// 2 MiB pages: one fault per 2 MiB instead of 512. Fresh anonymous memory is what a build of
// many small files spends much of its time faulting in (12 us per 4 KiB fault on the machine
// docs/BENCH.md was measured on); smaller allocations go to the heap as usual.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

namespace packfs {

template <class T>
struct HugePageAllocator {
    using value_type = T;
    static constexpr std::size_t kHuge = std::size_t{2} << 20;
    static constexpr std::size_t kMin = std::size_t{4} << 20;

    HugePageAllocator() = default;
    template <class U>
    HugePageAllocator(const HugePageAllocator<U>&) noexcept {}

    T* allocate(std::size_t n) {
        const std::size_t bytes = n * sizeof(T);
        if (bytes < kMin) return std::allocator<T>().allocate(n);
        // Mapped 2 MiB more than asked and trimmed to a 2 MiB boundary, which huge pages need.
        const std::size_t length = round_up(bytes);
        void* raw = ::mmap(nullptr, length + kHuge, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (raw == MAP_FAILED) throw std::bad_alloc();
        const auto begin = reinterpret_cast<uintptr_t>(raw);
        const uintptr_t aligned = (begin + kHuge - 1) & ~(kHuge - 1);
        if (aligned > begin) ::munmap(raw, aligned - begin);
        if (const uintptr_t tail = begin + length + kHuge - (aligned + length); tail > 0)
            ::munmap(reinterpret_cast<void*>(aligned + length), tail);
        ::madvise(reinterpret_cast<void*>(aligned), length, MADV_HUGEPAGE);  // a hint
        return reinterpret_cast<T*>(aligned);
    }
    void deallocate(T* p, std::size_t n) noexcept {
        const std::size_t bytes = n * sizeof(T);
        if (bytes < kMin) return std::allocator<T>().deallocate(p, n);
        ::munmap(p, round_up(bytes));
    }
    template <class U>
    bool operator==(const HugePageAllocator<U>&) const noexcept {
        return true;
    }

private:
    static std::size_t round_up(std::size_t bytes) { return (bytes + kHuge - 1) & ~(kHuge - 1); }
};

}  // namespace packfs
