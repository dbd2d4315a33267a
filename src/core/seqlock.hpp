// A sequence lock over a plain struct, for one writer and any number of readers that never
// write (DESIGN §5: "a reader writes no shared cache line").
//
// The writer makes the count odd, stores the fields, makes it even again. A reader reads the
// count, copies the fields, and reads the count again: equal and even means the copy is one
// consistent state, else it copies again. Fields are copied word by word with relaxed atomic
// accesses (std::atomic_ref), so a torn copy is a discarded value, never undefined behaviour,
// and ThreadSanitizer sees atomics where it would otherwise see a race.
#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace packfs {

// Word-wise relaxed copies of a trivially copyable, 8-byte aligned struct. The copy out is
// built in an array of words, each written once, and returned as a T (no default-constructed
// T zeroed first only to be overwritten).
template <class T>
T atomic_copy(const T& shared) noexcept {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) % 8 == 0 && alignof(T) >= 8);
    auto* src = reinterpret_cast<uint64_t*>(const_cast<T*>(&shared));
    std::array<uint64_t, sizeof(T) / 8> words;
    for (std::size_t i = 0; i < words.size(); ++i)
        words[i] = std::atomic_ref<uint64_t>(src[i]).load(std::memory_order_relaxed);
    return std::bit_cast<T>(words);
}
template <class T>
void atomic_copy_in(T& shared, const T& in) noexcept {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) % 8 == 0 && alignof(T) >= 8);
    uint64_t words[sizeof(T) / 8];
    std::memcpy(words, &in, sizeof(T));
    auto* dst = reinterpret_cast<uint64_t*>(&shared);
    for (std::size_t i = 0; i < sizeof(T) / 8; ++i)
        std::atomic_ref<uint64_t>(dst[i]).store(words[i], std::memory_order_relaxed);
}

class SeqCount {
public:
    // --- the one writer ---
    void write_begin() noexcept {
        seq_.store(seq_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_release);
    }
    void write_end() noexcept { seq_.store(seq_.load(std::memory_order_relaxed) + 1, std::memory_order_release); }

    // --- readers ---
    // An even count to validate against, waiting out a writer inside its section.
    uint32_t read_begin() const noexcept {
        for (;;) {
            const uint32_t s = seq_.load(std::memory_order_acquire);
            if (!(s & 1)) return s;
#if defined(__x86_64__)
            __builtin_ia32_pause();
#endif
        }
    }
    // Whether what was read since read_begin() returned `start` is consistent.
    bool read_valid(uint32_t start) const noexcept {
        std::atomic_thread_fence(std::memory_order_acquire);
        return seq_.load(std::memory_order_relaxed) == start;
    }

private:
    std::atomic<uint32_t> seq_{0};
};

}  // namespace packfs
