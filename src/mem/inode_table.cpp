#include "mem/inode_table.hpp"

namespace packfs::mem {

InodeTable::InodeTable(uint64_t initial_limit) {
    auto* root = new Node;
    while (initial_limit > (uint64_t{1} << (kBits * (root->height + 1))) && root->height < 10)
        ++root->height;
    root_.store(root, std::memory_order_release);
}

InodeTable::~InodeTable() { free_nodes(root_.load(std::memory_order_acquire)); }

void InodeTable::free_nodes(Node* n) noexcept {
    if (n->height > 0) {
        for (auto& s : n->slots) {
            if (void* p = s.load(std::memory_order_relaxed)) free_nodes(static_cast<Node*>(p));
        }
    }
    delete n;
}

std::atomic<void*>& InodeTable::slot(uint64_t ino) {
    Node* n = root_.load(std::memory_order_acquire);
    while (ino >> (kBits * (n->height + 1))) {
        // Only the writer gets here (readers stay below the initial limit): a taller root
        // holding the old one as its first child, published whole.
        auto* taller = new Node;
        taller->height = n->height + 1;
        taller->slots[0].store(n, std::memory_order_relaxed);
        root_.store(taller, std::memory_order_release);
        n = taller;
    }
    for (;;) {
        auto& s = n->slots[(ino >> (kBits * n->height)) & kMask];
        if (n->height == 0) return s;
        void* p = s.load(std::memory_order_acquire);
        if (!p) {
            auto* fresh = new Node;
            fresh->height = n->height - 1;
            if (s.compare_exchange_strong(p, fresh, std::memory_order_acq_rel)) {
                p = fresh;
            } else {
                delete fresh;  // another thread made it first: `p` is theirs
            }
        }
        n = static_cast<Node*>(p);
    }
}

}  // namespace packfs::mem
