// Blocks for short-lived objects of one size (file handles) from a per-thread free list instead
// of malloc: an open + read + close of a small file in a pack is a couple of hundred
// nanoseconds, and malloc's and free's share of it was ~10%. A class uses it through its own
// operator new and delete (PACKFS_POOLED below), so FileHandle stays a plain unique_ptr.
//
// Each thread keeps at most kKept blocks; a block freed on another thread than the one that
// allocated it simply joins that thread's list (all blocks come from ::operator new), and a
// thread's list is given back to the heap when the thread ends. Under AddressSanitizer the
// pool is off, so a use after close is still reported.
#pragma once

#include <cstddef>
#include <new>

namespace packfs {

template <std::size_t Size>
class HandlePool {
public:
    static void* allocate() {
#ifndef __SANITIZE_ADDRESS__
        FreeList& list = free_list();
        if (list.count > 0) return list.blocks[--list.count];
#endif
        return ::operator new(Size);
    }
    static void release(void* block) noexcept {
#ifndef __SANITIZE_ADDRESS__
        FreeList& list = free_list();
        if (list.count < kKept) {
            list.blocks[list.count++] = block;
            return;
        }
#endif
        ::operator delete(block, Size);
    }

private:
    static constexpr std::size_t kKept = 64;
    struct FreeList {
        void* blocks[kKept];
        std::size_t count = 0;
        ~FreeList() {
            while (count > 0) ::operator delete(blocks[--count], Size);
        }
    };
    static FreeList& free_list() noexcept {
        thread_local FreeList list;
        return list;
    }
};

}  // namespace packfs

// Inside a final class T: its objects come from HandlePool<sizeof(T)>.
#define PACKFS_POOLED(T)                                                  \
    static void* operator new(std::size_t size) {                         \
        if (size != sizeof(T)) return ::operator new(size);               \
        return ::packfs::HandlePool<sizeof(T)>::allocate();               \
    }                                                                     \
    static void operator delete(void* block, std::size_t size) noexcept { \
        if (size != sizeof(T)) return ::operator delete(block, size);     \
        ::packfs::HandlePool<sizeof(T)>::release(block);                  \
    }
