// PersistentBTree's node surgery (persistent_btree.hpp; included by it, at its end, and by
// nothing else): splitting a full child before an insert descends into it, topping up a child
// at its minimum before an erase descends into it (borrowing from a sibling or merging with
// one), and the invariant check. Every step works on nodes the write already owns exclusively
// (the path-copying rule of the header comment there).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace packfs {

template <class K, class V, class Compare, std::size_t LeafCap, std::size_t InnerCap>
void PersistentBTree<K, V, Compare, LeafCap, InnerCap>::split_child(Inner* in, uint32_t i) {
    Node* c = in->child[i];
    Node* right;
    if (c->leaf) {
        Leaf* l = static_cast<Leaf*>(c);
        auto r = std::make_unique<Leaf>();
        const uint32_t keep = LeafCap / 2, moved = l->count - keep;
        K sep(l->keys()[keep]);
        relocate(l->keys() + keep, moved, r->keys());
        relocate(l->vals() + keep, moved, r->vals());
        l->count = static_cast<uint16_t>(keep);
        r->count = static_cast<uint16_t>(moved);
        insert_at(in->keys(), in->nkeys(), i, std::move(sep));
        right = r.release();
    } else {
        Inner* l = static_cast<Inner*>(c);
        auto r = new Inner;
        const uint32_t keep = InnerCap / 2, moved = l->count - keep;
        // left keeps children [0, keep) and keys [0, keep-1); key keep-1 goes up.
        relocate(l->keys() + keep, moved - 1, r->keys());
        std::copy_n(l->child + keep, moved, r->child);
        insert_at(in->keys(), in->nkeys(), i, std::move(l->keys()[keep - 1]));
        std::destroy_at(l->keys() + keep - 1);
        l->count = static_cast<uint16_t>(keep);
        r->count = static_cast<uint16_t>(moved);
        right = r;
    }
    insert_at(in->child, in->count, i + 1, right);
    ++in->count;
}

template <class K, class V, class Compare, std::size_t LeafCap, std::size_t InnerCap>
auto PersistentBTree<K, V, Compare, LeafCap, InnerCap>::fix_child(Inner* in, uint32_t i) -> Node* {
    Node* c = in->child[i];
    const uint32_t min = min_count(c);
    if (i > 0 && in->child[i - 1]->count > min) {
        borrow_left(in, i, own(in->child[i - 1]), c);
        return c;
    }
    if (i + 1 < in->count && in->child[i + 1]->count > min) {
        borrow_right(in, i, c, own(in->child[i + 1]));
        return c;
    }
    if (i > 0) {
        Node* l = own(in->child[i - 1]);
        merge_right_into(in, i - 1);
        return l;
    }
    merge_right_into(in, i);
    return c;
}

template <class K, class V, class Compare, std::size_t LeafCap, std::size_t InnerCap>
void PersistentBTree<K, V, Compare, LeafCap, InnerCap>::borrow_left(
    Inner* in, uint32_t i, Node* ln, Node* cn) {
    if (cn->leaf) {
        Leaf* l = static_cast<Leaf*>(ln);
        Leaf* c = static_cast<Leaf*>(cn);
        const uint32_t last = l->count - 1u;
        insert_at(c->keys(), c->count, 0, std::move(l->keys()[last]));
        insert_at(c->vals(), c->count, 0, std::move(l->vals()[last]));
        std::destroy_at(l->keys() + last);
        std::destroy_at(l->vals() + last);
        --l->count;
        ++c->count;
        in->keys()[i - 1] = c->keys()[0];
    } else {
        Inner* l = static_cast<Inner*>(ln);
        Inner* c = static_cast<Inner*>(cn);
        insert_at(c->keys(), c->nkeys(), 0, std::move(in->keys()[i - 1]));
        insert_at(c->child, c->count, 0, l->child[l->count - 1]);
        ++c->count;
        const uint32_t lk = l->nkeys() - 1u;
        in->keys()[i - 1] = std::move(l->keys()[lk]);
        std::destroy_at(l->keys() + lk);
        --l->count;
    }
}

template <class K, class V, class Compare, std::size_t LeafCap, std::size_t InnerCap>
void PersistentBTree<K, V, Compare, LeafCap, InnerCap>::borrow_right(
    Inner* in, uint32_t i, Node* cn, Node* rn) {
    if (cn->leaf) {
        Leaf* c = static_cast<Leaf*>(cn);
        Leaf* r = static_cast<Leaf*>(rn);
        std::construct_at(c->keys() + c->count, std::move(r->keys()[0]));
        std::construct_at(c->vals() + c->count, std::move(r->vals()[0]));
        ++c->count;
        erase_at(r->keys(), r->count, 0);
        erase_at(r->vals(), r->count, 0);
        --r->count;
        in->keys()[i] = r->keys()[0];
    } else {
        Inner* c = static_cast<Inner*>(cn);
        Inner* r = static_cast<Inner*>(rn);
        std::construct_at(c->keys() + c->nkeys(), std::move(in->keys()[i]));
        c->child[c->count] = r->child[0];
        ++c->count;
        in->keys()[i] = std::move(r->keys()[0]);
        erase_at(r->keys(), r->nkeys(), 0);
        std::copy(r->child + 1, r->child + r->count, r->child);
        --r->count;
    }
}

template <class K, class V, class Compare, std::size_t LeafCap, std::size_t InnerCap>
void PersistentBTree<K, V, Compare, LeafCap, InnerCap>::merge_right_into(Inner* in, uint32_t j) {
    Node* dn = in->child[j];
    Node* sn = in->child[j + 1];
    const bool steal = sn->refs.load(std::memory_order_acquire) == 1;
    if (dn->leaf) {
        Leaf* d = static_cast<Leaf*>(dn);
        Leaf* s = static_cast<Leaf*>(sn);
        if (steal) {
            relocate(s->keys(), s->count, d->keys() + d->count);
            relocate(s->vals(), s->count, d->vals() + d->count);
        } else {
            std::uninitialized_copy_n(s->keys(), s->count, d->keys() + d->count);
            try {
                std::uninitialized_copy_n(s->vals(), s->count, d->vals() + d->count);
            } catch (...) {
                std::destroy_n(d->keys() + d->count, s->count);
                throw;
            }
        }
        d->count = static_cast<uint16_t>(d->count + s->count);
    } else {
        Inner* d = static_cast<Inner*>(dn);
        Inner* s = static_cast<Inner*>(sn);
        const uint32_t dk = d->nkeys();
        if (steal) {
            relocate(s->keys(), s->nkeys(), d->keys() + dk + 1);
        } else {
            std::uninitialized_copy_n(s->keys(), s->nkeys(), d->keys() + dk + 1);
            for (uint32_t k = 0; k < s->count; ++k) retain(s->child[k]);
        }
        std::construct_at(d->keys() + dk, std::move(in->keys()[j]));
        std::copy_n(s->child, s->count, d->child + d->count);
        d->count = static_cast<uint16_t>(d->count + s->count);
    }
    erase_at(in->keys(), in->nkeys(), j);
    std::copy(in->child + j + 2, in->child + in->count, in->child + j + 1);
    --in->count;
    if (steal) {
        // Its entries now live in d; free the shell without touching them again.
        if (sn->leaf) delete static_cast<Leaf*>(sn);
        else delete static_cast<Inner*>(sn);
    } else {
        release(sn);
    }
}

template <class K, class V, class Compare, std::size_t LeafCap, std::size_t InnerCap>
bool PersistentBTree<K, V, Compare, LeafCap, InnerCap>::check_node(
    const Node* n, const K* lo, const K* hi, int depth, int& leaf_depth, std::size_t& count, bool is_root) const {
    if (n->refs.load(std::memory_order_acquire) == 0) return false;
    auto in_range = [&](const K& k) {
        return (!lo || !cmp_(k, *lo)) && (!hi || cmp_(k, *hi));
    };
    if (n->leaf) {
        const Leaf* l = static_cast<const Leaf*>(n);
        if (l->count == 0 || l->count > LeafCap) return false;
        if (!is_root && l->count < kMinLeaf) return false;
        if (leaf_depth < 0) leaf_depth = depth;
        if (leaf_depth != depth) return false;
        for (uint32_t i = 0; i < l->count; ++i) {
            if (!in_range(l->keys()[i])) return false;
            if (i > 0 && !cmp_(l->keys()[i - 1], l->keys()[i])) return false;
        }
        count += l->count;
        return true;
    }
    const Inner* in = static_cast<const Inner*>(n);
    if (in->count < 2 || in->count > InnerCap) return false;
    if (!is_root && in->count < kMinInner) return false;
    if (depth + 1 >= static_cast<int>(kMaxDepth)) return false;
    for (uint32_t i = 0; i < in->nkeys(); ++i) {
        if (!in_range(in->keys()[i])) return false;
        if (i > 0 && !cmp_(in->keys()[i - 1], in->keys()[i])) return false;
    }
    for (uint32_t i = 0; i < in->count; ++i) {
        const K* clo = i == 0 ? lo : &in->keys()[i - 1];
        const K* chi = i + 1 == in->count ? hi : &in->keys()[i];
        if (!check_node(in->child[i], clo, chi, depth + 1, leaf_depth, count, false)) return false;
    }
    return true;
}

}  // namespace packfs
