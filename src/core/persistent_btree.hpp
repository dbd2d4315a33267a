// PersistentBTree<K, V, Compare, LeafCap, InnerCap>: a persistent (path-copying) B+-tree.
//
// This is the structure behind PersistentMap (persistent_map.hpp holds the API contract;
// docs/PERSISTENT_MAP.md the measurements that chose it). It is a value type: a map is one
// root pointer and a size, so copying it is O(1) and the copy is an independent version.
//
// STRUCTURE
// - Leaves hold up to LeafCap sorted (key, value) pairs in two parallel arrays. Inner nodes
//   hold up to InnerCap children and InnerCap-1 separator keys: every key in child i is
//   < sep[i] <= every key in child i+1. A separator is a copy of a key that was the first key
//   of child i+1 when it was made; after erases it may name a key that no longer exists,
//   which keeps the ordering property and so is harmless. There are no sibling links (a
//   persistent tree cannot have them: one write would have to copy every leaf), so an
//   iterator carries its root-to-leaf path.
// - Every node but the root holds at least half its capacity; all leaves are at the same
//   depth. With capacities of 16 (PersistentMap's) a tree of 20k entries is 4 levels deep
//   and one of 1M entries 6-7.
// - Insertion splits full nodes on the way down and erasure tops up half-full nodes on the
//   way down (borrowing from or merging with a sibling), so both are one root-to-leaf pass
//   that never has to walk back up.
//
// PATH COPYING (why a write costs O(log n) nodes)
// A write descends from the root to one leaf. Before it changes a node it makes the node
// exclusively its own: a node whose reference count is 1 and whose parent is exclusively
// ours can be reached from this map only, so it is changed in place; any other node is
// cloned (the clone takes a reference to each child, or copies each value) and the clone
// replaces it in the (already exclusive) parent, which drops its reference to the original.
// A write therefore clones at most the nodes on one root-to-leaf path plus, when it splits,
// borrows or merges, one sibling per level: O(depth) = O(log n) nodes, each O(capacity).
// Every node off that path is shared, untouched, with every other version.
//
// RECLAMATION AND CONCURRENCY
// Each node carries an atomic reference count: the number of parents (nodes or maps) that
// point at it. Copying a map increments the root's count; destroying a map or replacing a
// node decrements it (acq_rel), and the thread that takes a count to zero destroys the node
// and releases its children. So a node is freed exactly when the last version that can
// reach it is gone, never earlier, whatever thread drops it. A node reachable from more
// than one version is never written (its count is > 1, so a writer clones it), hence
// readers of one copy never block, and are never disturbed by, a writer of another copy;
// lookups take no lock and do not touch the counts at all. The count 1 test is sound
// because only a holder of a reference can raise a count: if this map holds the only path
// to a node, no other thread can obtain one while we look.
//
// TRANSIENT (BATCH) MUTATION
// The exclusive-path rule above is the edit token: a node created (or cloned) by this map is
// exclusively owned until the map is copied, so a run of writes changes it in place instead
// of copying a path per entry. begin_batch()/end_batch() mark such a run for readers of the
// code; the tree behaves identically with or without them. Copying the map ends any batch
// in effect: the copy raises the root's count, so the next write path-copies again.
//
// Iterators and pointers returned by find() stay valid until the map they came from is next
// mutated or destroyed (as with std::vector); iterate a copy to mutate while iterating.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace packfs {

template <class K, class V, class Compare = std::less<>, std::size_t LeafCap = 16,
          std::size_t InnerCap = 16>
class PersistentBTree {
    static_assert(LeafCap >= 4 && LeafCap % 2 == 0 && LeafCap <= 4096, "LeafCap: even, 4..4096");
    static_assert(InnerCap >= 8 && InnerCap % 2 == 0 && InnerCap <= 4096,
                  "InnerCap: even, 8..4096");
    static_assert(std::is_nothrow_move_constructible_v<K> && std::is_nothrow_move_assignable_v<K>,
                  "keys must move without throwing");
    static_assert(std::is_nothrow_move_constructible_v<V> && std::is_nothrow_move_assignable_v<V>,
                  "values must move without throwing");

    static constexpr uint32_t kMinLeaf = LeafCap / 2;
    static constexpr uint32_t kMinInner = InnerCap / 2;

    static constexpr std::size_t floor_log2(std::size_t x) {
        std::size_t r = 0;
        while (x > 1) {
            x >>= 1;
            ++r;
        }
        return r;
    }
    // Inner levels a tree of at most 2^48 entries can have: every non-root inner node has at
    // least InnerCap/2 children.
    static constexpr std::size_t kMaxDepth = 48 / floor_log2(kMinInner) + 2;

    struct Node {
        explicit Node(bool is_leaf) noexcept : leaf(is_leaf) {}
        mutable std::atomic<uint32_t> refs{1};
        uint16_t count = 0;  // leaf: entries; inner: children
        bool leaf;
    };
    struct Leaf : Node {
        Leaf() noexcept : Node(true) {}
        K* keys() noexcept { return std::launder(reinterpret_cast<K*>(kbuf)); }
        const K* keys() const noexcept { return std::launder(reinterpret_cast<const K*>(kbuf)); }
        V* vals() noexcept { return std::launder(reinterpret_cast<V*>(vbuf)); }
        const V* vals() const noexcept { return std::launder(reinterpret_cast<const V*>(vbuf)); }
        alignas(K) std::byte kbuf[sizeof(K) * LeafCap];
        alignas(V) std::byte vbuf[sizeof(V) * LeafCap];
    };
    struct Inner : Node {
        Inner() noexcept : Node(false) {}
        uint32_t nkeys() const noexcept { return this->count ? this->count - 1u : 0u; }
        K* keys() noexcept { return std::launder(reinterpret_cast<K*>(kbuf)); }
        const K* keys() const noexcept { return std::launder(reinterpret_cast<const K*>(kbuf)); }
        alignas(K) std::byte kbuf[sizeof(K) * (InnerCap - 1)];
        Node* child[InnerCap];
    };

public:
    using key_type = K;
    using mapped_type = V;
    using key_compare = Compare;
    static constexpr std::size_t leaf_capacity = LeafCap;
    static constexpr std::size_t inner_capacity = InnerCap;

    class const_iterator {
    public:
        const_iterator() = default;
        const K& key() const noexcept { return leaf_->keys()[idx_]; }
        const V& value() const noexcept { return leaf_->vals()[idx_]; }
        const_iterator& operator++() noexcept {
            if (++idx_ < leaf_->count) return *this;
            next_leaf();
            return *this;
        }
        bool operator==(const const_iterator& o) const noexcept {
            return leaf_ == o.leaf_ && idx_ == o.idx_;
        }

    private:
        friend class PersistentBTree;
        struct Frame {
            const Inner* node;
            uint32_t idx;
        };
        // Descends to the leftmost leaf under n.
        void descend_first(const Node* n) noexcept {
            while (!n->leaf) {
                const Inner* in = static_cast<const Inner*>(n);
                path_[depth_++] = Frame{in, 0};
                n = in->child[0];
            }
            leaf_ = static_cast<const Leaf*>(n);
            idx_ = 0;
        }
        void next_leaf() noexcept {
            while (depth_ > 0) {
                Frame& f = path_[depth_ - 1];
                if (f.idx + 1 < f.node->count) {
                    ++f.idx;
                    descend_first(f.node->child[f.idx]);
                    return;
                }
                --depth_;
            }
            leaf_ = nullptr;
            idx_ = 0;
        }
        const Leaf* leaf_ = nullptr;
        uint32_t idx_ = 0;
        uint32_t depth_ = 0;
        Frame path_[kMaxDepth];
    };

    PersistentBTree() noexcept = default;
    explicit PersistentBTree(const Compare& cmp) noexcept(
        std::is_nothrow_copy_constructible_v<Compare>)
        : cmp_(cmp) {}
    PersistentBTree(const PersistentBTree& o) noexcept : root_(o.root_), size_(o.size_), cmp_(o.cmp_) {
        if (root_) root_->refs.fetch_add(1, std::memory_order_relaxed);
    }
    PersistentBTree(PersistentBTree&& o) noexcept
        : root_(std::exchange(o.root_, nullptr)), size_(std::exchange(o.size_, 0)), cmp_(o.cmp_) {}
    PersistentBTree& operator=(const PersistentBTree& o) noexcept {
        PersistentBTree tmp(o);
        swap(tmp);
        return *this;
    }
    PersistentBTree& operator=(PersistentBTree&& o) noexcept {
        PersistentBTree tmp(std::move(o));
        swap(tmp);
        return *this;
    }
    ~PersistentBTree() {
        if (root_) release(root_);
    }
    void swap(PersistentBTree& o) noexcept {
        std::swap(root_, o.root_);
        std::swap(size_, o.size_);
        std::swap(cmp_, o.cmp_);
    }

    std::size_t size() const noexcept { return size_; }
    bool empty() const noexcept { return size_ == 0; }
    void clear() noexcept { PersistentBTree().swap(*this); }

    template <class Key>
    const V* find(const Key& key) const noexcept {
        const Node* n = root_;
        if (!n) return nullptr;
        while (!n->leaf) {
            const Inner* in = static_cast<const Inner*>(n);
            n = in->child[route(in, key)];
        }
        const Leaf* l = static_cast<const Leaf*>(n);
        uint32_t i = lower_index(l->keys(), l->count, key);
        if (i < l->count && !cmp_(key, l->keys()[i])) return &l->vals()[i];
        return nullptr;
    }
    template <class Key>
    bool contains(const Key& key) const noexcept {
        return find(key) != nullptr;
    }

    const_iterator begin() const noexcept {
        const_iterator it;
        if (root_) it.descend_first(root_);
        return it;
    }
    const_iterator end() const noexcept { return const_iterator(); }
    // First entry whose key is not less than `key`.
    template <class Key>
    const_iterator lower_bound(const Key& key) const noexcept {
        return bound<false>(key);
    }
    // First entry whose key is greater than `key`.
    template <class Key>
    const_iterator upper_bound(const Key& key) const noexcept {
        return bound<true>(key);
    }

    // Inserts or replaces; returns true when the key was new.
    bool insert_or_assign(K key, V value) {
        if (!root_) {
            Leaf* l = new Leaf;
            std::construct_at(l->keys(), std::move(key));
            std::construct_at(l->vals(), std::move(value));
            l->count = 1;
            root_ = l;
            size_ = 1;
            return true;
        }
        Node* n = own(root_);
        if (full(n)) {
            Inner* r = new Inner;
            r->child[0] = n;
            r->count = 1;
            root_ = r;
            split_child(r, 0);
            n = r;
        }
        while (!n->leaf) {
            Inner* in = static_cast<Inner*>(n);
            uint32_t i = route(in, key);
            Node* c = own(in->child[i]);
            if (full(c)) {
                split_child(in, i);
                if (!cmp_(key, in->keys()[i])) ++i;
                c = in->child[i];
            }
            n = c;
        }
        Leaf* l = static_cast<Leaf*>(n);
        uint32_t i = lower_index(l->keys(), l->count, key);
        if (i < l->count && !cmp_(key, l->keys()[i])) {
            l->vals()[i] = std::move(value);
            return false;
        }
        insert_at(l->keys(), l->count, i, std::move(key));
        insert_at(l->vals(), l->count, i, std::move(value));
        ++l->count;
        ++size_;
        return true;
    }

    // Removes the key; returns whether it was there. A missing key copies nothing.
    template <class Key>
    bool erase(const Key& key) {
        if (!contains(key)) return false;
        Node* n = own(root_);
        while (!n->leaf) {
            Inner* in = static_cast<Inner*>(n);
            uint32_t i = route(in, key);
            Node* c = own(in->child[i]);
            if (c->count <= min_count(c)) c = fix_child(in, i);
            n = c;
        }
        Leaf* l = static_cast<Leaf*>(n);
        uint32_t i = lower_index(l->keys(), l->count, key);
        erase_at(l->keys(), l->count, i);
        erase_at(l->vals(), l->count, i);
        --l->count;
        --size_;
        // The root is exclusively ours now: shrink it when it is down to one child or empty.
        while (root_ && !root_->leaf && root_->count == 1) {
            Inner* r = static_cast<Inner*>(root_);
            root_ = r->child[0];
            r->count = 0;
            delete r;
        }
        if (root_ && root_->leaf && root_->count == 0) {
            delete static_cast<Leaf*>(root_);
            root_ = nullptr;
        }
        return true;
    }

    // A pointer to the value of `key` that this map alone owns (its path is copied first if
    // shared), or nullptr when absent. Valid until the next mutation or copy of this map.
    template <class Key>
    V* find_mutable(const Key& key) {
        if (!contains(key)) return nullptr;
        Node* n = own(root_);
        while (!n->leaf) {
            Inner* in = static_cast<Inner*>(n);
            n = own(in->child[route(in, key)]);
        }
        Leaf* l = static_cast<Leaf*>(n);
        return &l->vals()[lower_index(l->keys(), l->count, key)];
    }
    // Calls fn(V&) on the value of `key` in place (after copying its path if shared);
    // returns false, calling nothing, when the key is absent.
    template <class Key, class Fn>
    bool update(const Key& key, Fn&& fn) {
        V* v = find_mutable(key);
        if (!v) return false;
        std::forward<Fn>(fn)(*v);
        return true;
    }

    void begin_batch() noexcept {}
    void end_batch() noexcept {}

    // Debug aid for tests, O(n): checks ordering, occupancy, uniform depth, the size, and
    // that every reference count is at least 1. Returns false on the first violation.
    bool check_invariants() const {
        if (!root_) return size_ == 0;
        std::size_t count = 0;
        int leaf_depth = -1;
        return check_node(root_, nullptr, nullptr, 0, leaf_depth, count, true) && count == size_;
    }

private:
    static bool full(const Node* n) noexcept {
        return n->count == (n->leaf ? LeafCap : InnerCap);
    }
    static uint32_t min_count(const Node* n) noexcept { return n->leaf ? kMinLeaf : kMinInner; }

    // Keys whose comparison is one instruction are searched branch-free: the comparison
    // feeds an add, not a jump, so a node search does not pay a misprediction per halving
    // (most of its cost with such keys; measured 2x on uint64_t keys). Other keys (strings)
    // branch anyway inside their comparison, and a plain binary search measured faster.
    static constexpr bool kBranchFree = std::is_arithmetic_v<K> || std::is_pointer_v<K>;

    // First index i in a[0, n) with !(a[i] < key).
    template <class Key>
    uint32_t lower_index(const K* a, uint32_t n, const Key& key) const noexcept {
        uint32_t lo = 0;
        if constexpr (kBranchFree) {
            if (n == 0) return 0;
            while (n > 1) {
                const uint32_t half = n / 2;
                lo += static_cast<uint32_t>(cmp_(a[lo + half - 1], key)) * half;
                n -= half;
            }
            return lo + static_cast<uint32_t>(cmp_(a[lo], key));
        } else {
            while (n > 0) {
                const uint32_t half = n / 2;
                if (cmp_(a[lo + half], key)) {
                    lo += half + 1;
                    n -= half + 1;
                } else {
                    n = half;
                }
            }
            return lo;
        }
    }
    // First index i in a[0, n) with key < a[i].
    template <class Key>
    uint32_t upper_index(const K* a, uint32_t n, const Key& key) const noexcept {
        uint32_t lo = 0;
        if constexpr (kBranchFree) {
            if (n == 0) return 0;
            while (n > 1) {
                const uint32_t half = n / 2;
                lo += static_cast<uint32_t>(!cmp_(key, a[lo + half - 1])) * half;
                n -= half;
            }
            return lo + static_cast<uint32_t>(!cmp_(key, a[lo]));
        } else {
            while (n > 0) {
                const uint32_t half = n / 2;
                if (!cmp_(key, a[lo + half])) {
                    lo += half + 1;
                    n -= half + 1;
                } else {
                    n = half;
                }
            }
            return lo;
        }
    }
    // The child of `in` whose range holds `key`.
    template <class Key>
    uint32_t route(const Inner* in, const Key& key) const noexcept {
        return upper_index(in->keys(), in->nkeys(), key);
    }

    template <bool Upper, class Key>
    const_iterator bound(const Key& key) const noexcept {
        const_iterator it;
        const Node* n = root_;
        if (!n) return it;
        while (!n->leaf) {
            const Inner* in = static_cast<const Inner*>(n);
            uint32_t i = route(in, key);
            it.path_[it.depth_++] = typename const_iterator::Frame{in, i};
            n = in->child[i];
        }
        const Leaf* l = static_cast<const Leaf*>(n);
        it.leaf_ = l;
        it.idx_ = Upper ? upper_index(l->keys(), l->count, key) : lower_index(l->keys(), l->count, key);
        if (it.idx_ == l->count) it.next_leaf();
        return it;
    }

    // ---- reference counting ----
    static void retain(const Node* n) noexcept { n->refs.fetch_add(1, std::memory_order_relaxed); }
    static void release(Node* n) noexcept {
        // A count of 1 seen by the holder of that one reference cannot change under us.
        if (n->refs.load(std::memory_order_acquire) != 1 &&
            n->refs.fetch_sub(1, std::memory_order_acq_rel) != 1)
            return;
        destroy(n);
    }
    static void destroy(Node* n) noexcept {
        if (n->leaf) {
            Leaf* l = static_cast<Leaf*>(n);
            std::destroy_n(l->keys(), l->count);
            std::destroy_n(l->vals(), l->count);
            delete l;
        } else {
            Inner* in = static_cast<Inner*>(n);
            std::destroy_n(in->keys(), in->nkeys());
            prefetch_children(in);
            for (uint32_t i = 0; i < in->count; ++i) release(in->child[i]);
            delete in;
        }
    }

    // Cloning or freeing an inner node touches the count of every child, one locked
    // instruction each; those cannot overlap their cache misses, so fetch the lines first.
    static void prefetch_children(const Inner* in) noexcept {
        for (uint32_t i = 0; i < in->count; ++i) __builtin_prefetch(in->child[i], 1, 3);
    }

    static Node* clone(const Node* n) {
        if (n->leaf) {
            const Leaf* s = static_cast<const Leaf*>(n);
            auto d = std::make_unique<Leaf>();
            std::uninitialized_copy_n(s->keys(), s->count, d->keys());
            try {
                std::uninitialized_copy_n(s->vals(), s->count, d->vals());
            } catch (...) {
                std::destroy_n(d->keys(), s->count);
                throw;
            }
            d->count = s->count;
            return d.release();
        }
        const Inner* s = static_cast<const Inner*>(n);
        auto d = std::make_unique<Inner>();
        prefetch_children(s);
        std::uninitialized_copy_n(s->keys(), s->nkeys(), d->keys());
        for (uint32_t i = 0; i < s->count; ++i) {
            d->child[i] = s->child[i];
            retain(s->child[i]);
        }
        d->count = s->count;
        return d.release();
    }

    // Makes the node in `slot` exclusively this map's, cloning it when shared. Precondition:
    // the node that holds `slot` is exclusively this map's (or `slot` is root_).
    static Node* own(Node*& slot) {
        Node* n = slot;
        if (n->refs.load(std::memory_order_acquire) == 1) return n;
        Node* c = clone(n);
        slot = c;
        release(n);
        return c;
    }

    // ---- array helpers over constructed prefixes a[0, n) ----
    template <class T, class U>
    static void insert_at(T* a, uint32_t n, uint32_t i, U&& v) noexcept {
        if (i == n) {
            std::construct_at(a + n, std::forward<U>(v));
            return;
        }
        std::construct_at(a + n, std::move(a[n - 1]));
        std::move_backward(a + i, a + n - 1, a + n);
        a[i] = std::forward<U>(v);
    }
    template <class T>
    static void erase_at(T* a, uint32_t n, uint32_t i) noexcept {
        std::move(a + i + 1, a + n, a + i);
        std::destroy_at(a + n - 1);
    }
    // Moves a[0, n) into uninitialized d[0, n) and destroys the sources.
    template <class T>
    static void relocate(T* a, uint32_t n, T* d) noexcept {
        std::uninitialized_move_n(a, n, d);
        std::destroy_n(a, n);
    }

    // Splits the full, exclusively owned child i of `in` (not full) in two halves.
    void split_child(Inner* in, uint32_t i);

    // Child i of `in` (exclusively owned, at its minimum) gets one entry more, from a sibling
    // or by merging with one. Returns the node that now holds child i's range.
    Node* fix_child(Inner* in, uint32_t i);

    void borrow_left(Inner* in, uint32_t i, Node* ln, Node* cn);

    void borrow_right(Inner* in, uint32_t i, Node* cn, Node* rn);

    // Appends child j+1 of `in` to child j (exclusively owned) and removes child j+1 and
    // separator j from `in`. Child j+1 is moved from when exclusively owned, else copied.
    void merge_right_into(Inner* in, uint32_t j);

    bool check_node(const Node* n, const K* lo, const K* hi, int depth, int& leaf_depth,
                    std::size_t& count, bool is_root) const;

    Node* root_ = nullptr;
    std::size_t size_ = 0;
    [[no_unique_address]] Compare cmp_{};
};

}  // namespace packfs

// The rebalancing steps and the invariant check, defined out of the class.
#include "core/persistent_btree_nodes.hpp"
