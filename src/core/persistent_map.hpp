// PersistentMap<K, V, Compare>: the one persistent ordered map of PackFS (DESIGN §5).
//
// API CONTRACT (every user in the tree relies on exactly this):
// - A value type. Copying a map is O(1) and yields an independent version: later mutations
//   of either copy are invisible to the other. That copy is the snapshot.
// - Mutations (insert_or_assign, erase) change only `this` map, copying O(log n) nodes.
// - Lookups never allocate; heterogeneous lookup through a transparent Compare.
// - A `const` map may be read from any number of threads at once while another thread
//   mutates a different copy of it. Node lifetimes are reference counted (atomic).
// - begin_batch()/end_batch(): between them, nodes this map created since begin_batch are
//   mutated in place (transient), so a bulk load does not copy a path per entry. Copying the
//   map ends the batch.
//
// THIS FILE IS A PLACEHOLDER implementation (copy-on-write std::map: O(n) per mutation)
// that keeps the contract so the rest of the tree builds; it is replaced by the real
// structure chosen by measurement (see docs/PERSISTENT_MAP.md).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <utility>

namespace packfs {

template <class K, class V, class Compare = std::less<>>
class PersistentMap {
    using Impl = std::map<K, V, Compare>;

public:
    using key_type = K;
    using mapped_type = V;

    class const_iterator {
    public:
        const_iterator() = default;
        const K& key() const { return it_->first; }
        const V& value() const { return it_->second; }
        const_iterator& operator++() {
            ++it_;
            return *this;
        }
        bool operator==(const const_iterator& o) const { return it_ == o.it_; }

    private:
        friend class PersistentMap;
        explicit const_iterator(typename Impl::const_iterator it) : it_(it) {}
        typename Impl::const_iterator it_{};
    };

    PersistentMap() : impl_(std::make_shared<Impl>()) {}

    std::size_t size() const noexcept { return impl_->size(); }
    bool empty() const noexcept { return impl_->empty(); }

    template <class Key>
    const V* find(const Key& key) const {
        auto it = impl_->find(key);
        return it == impl_->end() ? nullptr : &it->second;
    }
    template <class Key>
    bool contains(const Key& key) const {
        return find(key) != nullptr;
    }

    const_iterator begin() const { return const_iterator(impl_->begin()); }
    const_iterator end() const { return const_iterator(impl_->end()); }
    // First entry whose key is not less than `key`.
    template <class Key>
    const_iterator lower_bound(const Key& key) const {
        return const_iterator(impl_->lower_bound(key));
    }

    // Inserts or replaces; returns true when the key was new.
    bool insert_or_assign(K key, V value) {
        own();
        return impl_->insert_or_assign(std::move(key), std::move(value)).second;
    }
    // Removes the key; returns whether it was there.
    template <class Key>
    bool erase(const Key& key) {
        if (!contains(key)) return false;
        own();
        auto it = impl_->find(key);
        impl_->erase(it);
        return true;
    }

    void begin_batch() {}
    void end_batch() {}

private:
    void own() {
        if (impl_.use_count() != 1) impl_ = std::make_shared<Impl>(*impl_);
    }
    std::shared_ptr<Impl> impl_;
};

}  // namespace packfs
