// The mem engine's own memory for its small hot objects (DESIGN §6): cells, versions, directory
// entries and trie nodes, which every lookup and stat walks through.
//
// Why not the heap. A stat follows a trie slot, an entry and a cell: three dependent loads,
// each a cache miss when the tree is larger than the cache. With the general heap those
// objects sit between file contents, handles and strings, so the lines a lookup needs are
// spread over several times more pages (TLB misses, more DRAM traffic), and under churn the
// heap's own work dominates: the reclamation thread frees what the writer allocated, and every
// such free takes the heap arena's lock against the writer (docs/MEM.md, "Memory"). Here the
// objects are packed together in blocks of their own (from 2 MiB on, huge-page aligned and
// advised, so a large tree's metadata costs few TLB entries), and freed objects go back on
// per-size lists the writer reuses: a free after a grace period is one push, by the
// reclamation thread, onto a lock-free list the writer takes whole when its own runs dry.
//
// Threads. allocate/deallocate belong to the writer (under the engine's lock, or with nobody
// else running); give_back is for any thread (the reclamation thread). Objects larger than
// kMaxObject come from the heap.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>
#include <vector>

#include "core/rcu.hpp"

namespace packfs::mem {

// The bytes an object of the arena's takes: its type's size, unless an overload for a type of
// variable length (a directory entry with its name) says otherwise.
template <class T>
std::size_t arena_size(const T&) noexcept {
    return sizeof(T);
}

class Arena {
public:
    static constexpr std::size_t kGrain = 8;
    static constexpr std::size_t kMaxObject = 512;

    Arena() = default;
    ~Arena();
    Arena(const Arena&) = delete;
    Arena& operator=(const Arena&) = delete;

    // Where fresh memory for an object is carved: `beside` what was made just before it (a
    // file's cell, entry and chunk, used together), or `apart`, among the objects every lookup
    // shares (trie nodes), which then stay dense in few lines and pages.
    enum class Place : uint8_t { beside, apart };
    // Fresh memory for an object a lookup reads (a cell, an entry) starts a cache line, so the
    // object takes as few lines as its size allows. (Reused memory keeps wherever it was.)
    enum class Align : uint8_t { any, line };
    static constexpr std::size_t kLine = 64;

    // --- the writer ---
    void* allocate(std::size_t bytes, Place place = Place::beside, Align align = Align::any);
    void deallocate(void* p, std::size_t bytes) noexcept;
    // Carves fresh memory for an object of `bytes` now and puts it first in line for the next
    // allocation of that size: how a caller lays out side by side two objects it has to make
    // in the other order (a new file's entry before its cell, the order a lookup reads them).
    void set_aside(std::size_t bytes, Align align = Align::any);
    template <class T, class... Args>
    T* make(Args&&... args) {
        return new (allocate(sizeof(T))) T(std::forward<Args>(args)...);
    }
    template <class T, class... Args>
    T* make_apart(Args&&... args) {
        return new (allocate(sizeof(T), Place::apart)) T(std::forward<Args>(args)...);
    }
    template <class T>
    void destroy(T* p) noexcept {
        const std::size_t n = arena_size(*p);
        p->~T();
        deallocate(p, n);
    }

    // --- any thread: an object whose grace period ended ---
    void give_back(void* p, std::size_t bytes) noexcept;

private:
    struct FreeObject {
        FreeObject* next;
    };
    static constexpr std::size_t kClasses = kMaxObject / kGrain;
    // Blocks double from 64 KiB (a small tree stays small) to 2 MiB, one huge page each.
    static constexpr std::size_t kFirstBlock = 64u << 10;
    static constexpr std::size_t kHugeBlock = 2u << 20;
    static std::size_t class_of(std::size_t bytes) noexcept {
        return (bytes + kGrain - 1) / kGrain - 1;
    }
    // A block being carved: its unused part, and the size of the next one.
    struct Region {
        std::byte* next = nullptr;
        std::byte* end = nullptr;
        std::size_t next_block_bytes = kFirstBlock;
    };
    void* carve(Region& region, std::size_t rounded, Align align);
    void push_free(void* p, std::size_t c) noexcept;

    FreeObject* free_[kClasses] = {};
    std::atomic<FreeObject*> returned_[kClasses] = {};
    Region regions_[2];  // by Place
    std::vector<std::pair<void*, std::size_t>> blocks_;
    // Objects out: the writer's count, less what came back through give_back (a sanitizer
    // build reports a leak when the arena goes with objects still out).
    uint64_t allocated_ = 0;
    std::atomic<uint64_t> given_back_{0};
};

// Retires an object of the arena that is the context of `reclaimer` (the engine's): after the
// grace period the reclamation thread destroys it and gives its memory back.
template <class T>
void retire_in_arena(rcu::Reclaimer& reclaimer, T* p) {
    if (!p) return;
    reclaimer.add(
        p,
        [](void* q, void* arena) noexcept {
            auto* t = static_cast<T*>(q);
            const std::size_t n = arena_size(*t);
            t->~T();
            static_cast<Arena*>(arena)->give_back(q, n);
        },
        arena_size(*p));
}

}  // namespace packfs::mem
