// PersistentTreap<K, V, Compare>: a persistent (path-copying) treap.
//
// The alternative to PersistentBTree that was measured against it (docs/PERSISTENT_MAP.md),
// kept for that benchmark and the map tests, not part of the library;
// it offers the same API (see persistent_map.hpp for the contract). The earlier C PackFS
// indexed its upper layer with a persistent treap: expected O(log n) depth whatever the
// insertion order (sorted inode numbers included), O(1) expected rotations per update, and
// no rebalancing cascade on delete.
//
// STRUCTURE
// A binary search tree on keys that is also a max-heap on a per-node priority. Priorities
// are deterministic: a 64-bit mix of a per-map insertion counter (copies of a map carry the
// counter), so a given sequence of operations always builds the same tree. Insertion finds
// the first node on the search path whose priority is below the new one, splits that
// subtree by the key and hangs the halves under the new node; erasure replaces the node by
// the merge of its two subtrees. Both touch only the search path (insert) or the search
// path plus the inner spines of the two subtrees (erase): expected O(log n) nodes.
//
// PATH COPYING, RECLAMATION, CONCURRENCY, TRANSIENT MUTATION
// Exactly as in persistent_btree.hpp: atomic per-node reference counts; a write changes a
// node in place only when this map holds the only path to it (count 1 all the way down
// from the root), and clones it otherwise; the thread that drops a count to zero frees the
// node. begin_batch()/end_batch() are markers; copying the map ends a batch.
//
// Iterators and pointers from find() stay valid until the map is next mutated or destroyed.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

namespace packfs {

template <class K, class V, class Compare = std::less<>>
class PersistentTreap {
    struct Node {
        template <class KK, class VV>
        Node(uint32_t p, KK&& k, VV&& v) : prio(p), key(std::forward<KK>(k)), val(std::forward<VV>(v)) {}
        mutable std::atomic<uint32_t> refs{1};
        uint32_t prio;
        Node* left = nullptr;
        Node* right = nullptr;
        K key;
        V val;
    };

    // An iterator's stack of nodes whose in-order visit is pending. Expected depth is
    // ~2 ln n (about 28 at 1M entries); deeper paths, vanishingly rare, spill to the heap.
    class Stack {
    public:
        void push(const Node* n) {
            if (n_ < kInline) inline_[n_] = n;
            else more_.push_back(n);
            ++n_;
        }
        const Node* top() const noexcept {
            return n_ == 0 ? nullptr : n_ <= kInline ? inline_[n_ - 1] : more_.back();
        }
        void pop() noexcept {
            if (n_ > kInline) more_.pop_back();
            --n_;
        }
        bool empty() const noexcept { return n_ == 0; }

    private:
        static constexpr uint32_t kInline = 48;
        uint32_t n_ = 0;
        const Node* inline_[kInline];
        std::vector<const Node*> more_;
    };

public:
    using key_type = K;
    using mapped_type = V;
    using key_compare = Compare;

    class const_iterator {
    public:
        const_iterator() = default;
        const K& key() const noexcept { return stack_.top()->key; }
        const V& value() const noexcept { return stack_.top()->val; }
        const_iterator& operator++() {
            const Node* n = stack_.top();
            stack_.pop();
            push_left_spine(n->right);
            return *this;
        }
        bool operator==(const const_iterator& o) const noexcept {
            return stack_.top() == o.stack_.top();
        }

    private:
        friend class PersistentTreap;
        void push_left_spine(const Node* n) {
            for (; n; n = n->left) stack_.push(n);
        }
        Stack stack_;
    };

    PersistentTreap() noexcept = default;
    explicit PersistentTreap(const Compare& cmp) : cmp_(cmp) {}
    PersistentTreap(const PersistentTreap& o) noexcept
        : root_(o.root_), size_(o.size_), seq_(o.seq_), cmp_(o.cmp_) {
        if (root_) root_->refs.fetch_add(1, std::memory_order_relaxed);
    }
    PersistentTreap(PersistentTreap&& o) noexcept
        : root_(std::exchange(o.root_, nullptr)),
          size_(std::exchange(o.size_, 0)),
          seq_(o.seq_),
          cmp_(o.cmp_) {}
    PersistentTreap& operator=(const PersistentTreap& o) noexcept {
        PersistentTreap tmp(o);
        swap(tmp);
        return *this;
    }
    PersistentTreap& operator=(PersistentTreap&& o) noexcept {
        PersistentTreap tmp(std::move(o));
        swap(tmp);
        return *this;
    }
    ~PersistentTreap() { release(root_); }
    void swap(PersistentTreap& o) noexcept {
        std::swap(root_, o.root_);
        std::swap(size_, o.size_);
        std::swap(seq_, o.seq_);
        std::swap(cmp_, o.cmp_);
    }

    std::size_t size() const noexcept { return size_; }
    bool empty() const noexcept { return size_ == 0; }
    void clear() noexcept { PersistentTreap().swap(*this); }

    template <class Key>
    const V* find(const Key& key) const noexcept {
        const Node* n = root_;
        while (n) {
            if (cmp_(key, n->key)) n = n->left;
            else if (cmp_(n->key, key)) n = n->right;
            else return &n->val;
        }
        return nullptr;
    }
    template <class Key>
    bool contains(const Key& key) const noexcept {
        return find(key) != nullptr;
    }

    const_iterator begin() const {
        const_iterator it;
        it.push_left_spine(root_);
        return it;
    }
    const_iterator end() const noexcept { return const_iterator(); }
    // First entry whose key is not less than `key`.
    template <class Key>
    const_iterator lower_bound(const Key& key) const {
        const_iterator it;
        for (const Node* n = root_; n;) {
            if (cmp_(n->key, key)) {
                n = n->right;
            } else {
                it.stack_.push(n);
                n = n->left;
            }
        }
        return it;
    }
    // First entry whose key is greater than `key`.
    template <class Key>
    const_iterator upper_bound(const Key& key) const {
        const_iterator it;
        for (const Node* n = root_; n;) {
            if (!cmp_(key, n->key)) {
                n = n->right;
            } else {
                it.stack_.push(n);
                n = n->left;
            }
        }
        return it;
    }

    // Inserts or replaces; returns true when the key was new.
    bool insert_or_assign(K key, V value) {
        const uint32_t prio = priority(seq_);
        Node** slot = &root_;
        Node** at = nullptr;  // where the new node goes: first node with a lower priority
        while (*slot) {
            Node* n = own(*slot);
            if (!at && n->prio < prio) at = slot;
            if (cmp_(key, n->key)) {
                slot = &n->left;
            } else if (cmp_(n->key, key)) {
                slot = &n->right;
            } else {
                n->val = std::move(value);
                return false;
            }
        }
        if (!at) at = slot;
        Node* nn = new Node(prio, std::move(key), std::move(value));
        // Split the subtree at `at` by the key; its search path is exclusively ours now.
        Node* sub = *at;
        Node** lo = &nn->left;
        Node** hi = &nn->right;
        while (sub) {
            if (cmp_(nn->key, sub->key)) {
                *hi = sub;
                hi = &sub->left;
                sub = sub->left;
            } else {
                *lo = sub;
                lo = &sub->right;
                sub = sub->right;
            }
        }
        *lo = nullptr;
        *hi = nullptr;
        *at = nn;
        ++seq_;
        ++size_;
        return true;
    }

    // Removes the key; returns whether it was there. A missing key copies nothing.
    template <class Key>
    bool erase(const Key& key) {
        if (!contains(key)) return false;
        Node** slot = &root_;
        for (;;) {
            Node* n = *slot;
            if (cmp_(key, n->key)) {
                slot = &own(*slot)->left;
            } else if (cmp_(n->key, key)) {
                slot = &own(*slot)->right;
            } else {
                break;
            }
        }
        Node* x = *slot;
        Node* a = x->left;
        Node* b = x->right;
        if (x->refs.load(std::memory_order_acquire) == 1) {
            x->left = x->right = nullptr;  // we take over its references to a and b
            delete x;
        } else {
            if (a) retain(a);
            if (b) retain(b);
            release(x);
        }
        // Merge a and b (both owned references) into *slot along their inner spines.
        Node** out = slot;
        while (a && b) {
            if (a->prio > b->prio) {
                a = own_ref(a);
                *out = a;
                out = &a->right;
                a = a->right;
            } else {
                b = own_ref(b);
                *out = b;
                out = &b->left;
                b = b->left;
            }
        }
        *out = a ? a : b;
        --size_;
        return true;
    }

    // A pointer to the value of `key` that this map alone owns (its path is copied first if
    // shared), or nullptr when absent. Valid until the next mutation or copy of this map.
    template <class Key>
    V* find_mutable(const Key& key) {
        if (!contains(key)) return nullptr;
        Node** slot = &root_;
        for (;;) {
            Node* n = own(*slot);
            if (cmp_(key, n->key)) slot = &n->left;
            else if (cmp_(n->key, key)) slot = &n->right;
            else return &n->val;
        }
    }
    template <class Key, class Fn>
    bool update(const Key& key, Fn&& fn) {
        V* v = find_mutable(key);
        if (!v) return false;
        std::forward<Fn>(fn)(*v);
        return true;
    }

    void begin_batch() noexcept {}
    void end_batch() noexcept {}

    // Debug aid for tests, O(n): ordering, heap order, size, live reference counts.
    bool check_invariants() const {
        std::size_t count = 0;
        return check_node(root_, nullptr, nullptr, count) && count == size_;
    }

private:
    static uint32_t priority(uint64_t x) noexcept {
        // splitmix64 finaliser
        x += 0x9e3779b97f4a7c15ull;
        x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
        x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
        return static_cast<uint32_t>((x ^ (x >> 31)) >> 32);
    }

    static void retain(const Node* n) noexcept { n->refs.fetch_add(1, std::memory_order_relaxed); }
    static void release(Node* n) noexcept {
        while (n) {
            if (n->refs.load(std::memory_order_acquire) != 1 &&
                n->refs.fetch_sub(1, std::memory_order_acq_rel) != 1)
                return;
            // Recurse into one side, loop on the other: depth stays the tree's height.
            release(n->left);
            Node* next = n->right;
            delete n;
            n = next;
        }
    }
    // Takes an owned reference and returns an owned reference to an exclusively owned node.
    static Node* own_ref(Node* n) {
        if (n->refs.load(std::memory_order_acquire) == 1) return n;
        Node* c = new Node(n->prio, n->key, n->val);
        c->left = n->left;
        c->right = n->right;
        if (c->left) retain(c->left);
        if (c->right) retain(c->right);
        release(n);
        return c;
    }
    // Makes the node in `slot` exclusively this map's (the holder of `slot` already is).
    static Node* own(Node*& slot) {
        Node* n = slot;
        if (n->refs.load(std::memory_order_acquire) == 1) return n;
        Node* c = new Node(n->prio, n->key, n->val);
        c->left = n->left;
        c->right = n->right;
        if (c->left) retain(c->left);
        if (c->right) retain(c->right);
        slot = c;
        release(n);
        return c;
    }

    bool check_node(const Node* n, const K* lo, const K* hi, std::size_t& count) const {
        if (!n) return true;
        if (n->refs.load(std::memory_order_acquire) == 0) return false;
        if (lo && !cmp_(*lo, n->key)) return false;
        if (hi && !cmp_(n->key, *hi)) return false;
        if (n->left && n->left->prio > n->prio) return false;
        if (n->right && n->right->prio > n->prio) return false;
        ++count;
        return check_node(n->left, lo, &n->key, count) && check_node(n->right, &n->key, hi, count);
    }

    Node* root_ = nullptr;
    std::size_t size_ = 0;
    uint64_t seq_ = 0;
    [[no_unique_address]] Compare cmp_{};
};

}  // namespace packfs
