// The mem engine's inode table (DESIGN §6): inode number -> Cell, dense, as a 64-way radix tree
// of slots. A lookup is one slot per level (4 levels cover 16 M inodes; the upper ones stay in
// cache), with no hashing and no comparison.
//
// The table is the live tree's only: it is not versioned (cells are, cell.hpp), so a snapshot
// reads the same slots and finds each cell's state for its generation. Slots change by single
// atomic stores (the writer) and compare-and-swap (a reader installing a stub for a lower inode
// it holds, engine.cpp); intermediate nodes are made the same way, by whoever needs them first.
// Nodes are never freed while the table lives, so a reader needs no protection to walk them;
// what a slot points to is the cells', protected by RCU.
#pragma once

#include <atomic>
#include <cstdint>

#include "mem/cell.hpp"

namespace packfs::mem {

class InodeTable {
public:
    // Tall enough at once for every number below `initial_limit` (a lower's numbers: readers
    // install stubs below it, and only the writer makes the tree taller).
    explicit InodeTable(uint64_t initial_limit);
    ~InodeTable();
    InodeTable(const InodeTable&) = delete;
    InodeTable& operator=(const InodeTable&) = delete;

    // The cell of `ino`, or nullptr.
    Cell* find(uint64_t ino) const noexcept {
        const Node* n = root_.load(std::memory_order_acquire);
        if (ino >> (kBits * (n->height + 1))) return nullptr;
        for (;;) {
            void* p = n->slots[(ino >> (kBits * n->height)) & kMask].load(std::memory_order_acquire);
            if (n->height == 0) return static_cast<Cell*>(p);
            if (!p) return nullptr;
            n = static_cast<const Node*>(p);
        }
    }

    // The slot of `ino`, made (with the nodes above it) if missing. Any thread, for numbers the
    // table is tall enough for; the writer also for larger ones (it grows the table).
    std::atomic<void*>& slot(uint64_t ino);

    // Calls fn(Cell*) for every cell (the writer, or nobody else running).
    template <class Fn>
    void each(Fn&& fn) const {
        each_in(root_.load(std::memory_order_acquire), fn);
    }

private:
    static constexpr int kBits = 6;
    static constexpr uint64_t kMask = (1u << kBits) - 1;
    struct Node {
        uint32_t height = 0;  // 0: slots are cells
        std::atomic<void*> slots[1u << kBits] = {};
    };

    template <class Fn>
    static void each_in(const Node* n, Fn& fn) {
        for (const auto& s : n->slots) {
            void* p = s.load(std::memory_order_acquire);
            if (!p) continue;
            if (n->height == 0) {
                fn(static_cast<Cell*>(p));
            } else {
                each_in(static_cast<const Node*>(p), fn);
            }
        }
    }
    static void free_nodes(Node* n) noexcept;

    std::atomic<Node*> root_;
};

}  // namespace packfs::mem
