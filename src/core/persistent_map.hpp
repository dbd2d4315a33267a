// PersistentMap<K, V, Compare>: the one persistent ordered map of PackFS (DESIGN §5).
//
// API CONTRACT (every user in the tree relies on exactly this):
// - A value type. Copying a map is O(1) and yields an independent version: later mutations
//   of either copy are invisible to the other. That copy is the snapshot.
// - Mutations (insert_or_assign, erase, find_mutable, update) change only `this` map,
//   copying O(log n) nodes.
// - Lookups (find, contains, lower_bound, upper_bound, iteration) never allocate and take no
//   lock; heterogeneous lookup through a transparent Compare.
// - A `const` map may be read from any number of threads at once while another thread
//   mutates a different copy of it. Node lifetimes are reference counted (atomic).
// - begin_batch()/end_batch(): between them, nodes this map created since begin_batch are
//   mutated in place (transient), so a bulk load does not copy a path per entry. Copying the
//   map ends the batch. (In this implementation every write already mutates in place the
//   nodes only this map can reach, so the markers cost nothing and change nothing.)
// - Iterators and the pointers find() returns stay valid until the map they came from is
//   next mutated or destroyed. To mutate while iterating, iterate a copy.
//
// Members: size, empty, clear, swap, find, contains, begin, end, lower_bound, upper_bound,
// insert_or_assign (true when the key was new), erase (whether it was there),
// find_mutable (V* into this map alone, nullptr when absent), update(key, fn(V&)),
// begin_batch, end_batch, check_invariants (tests). const_iterator: key(), value(), ++, ==.
//
// THE STRUCTURE (chosen by measurement, docs/PERSISTENT_MAP.md): a persistent B+-tree,
// PersistentBTree in persistent_btree.hpp, whose header comment is the full argument.
// - Wide nodes: leaves of sorted (key, value) arrays, inner nodes of separator keys and child
//   pointers, 16 of each; 4 levels at 20k entries, 6-7 at a million. A write descends once from the root and
//   clones (path-copies) only the nodes on its root-to-leaf path that another version can
//   still reach, plus at most one sibling per level when it splits or merges: O(log n).
// - Reclamation: every node has an atomic reference count, one per parent (node or map).
//   Copying a map increments the root's count; dropping a version decrements, and whoever
//   takes a count to zero frees that node and releases its children. A node is freed only
//   when the last version referencing it is gone, whichever thread drops it.
// - Concurrency: a node reachable from more than one version (count > 1) is never written;
//   a writer clones it instead. Readers take no lock and do not touch counts, so readers of
//   one copy never block, or see a change made through, a writer of another copy. A node
//   with count 1 under an exclusively owned parent is reachable from this map only and is
//   changed in place; that is what makes a run of writes (a batch) cheap.
// The alternative measured, PersistentTreap (persistent_treap.hpp), has the same API.
#pragma once

#include <functional>

#include "core/persistent_btree.hpp"

namespace packfs {

// Fanout 16 for leaves and inner nodes: the cheapest path copy (a write publishes a version
// per mutation, DESIGN §5) at lookups within ~15% of fanout 32/64; see the table in
// docs/PERSISTENT_MAP.md.
template <class K, class V, class Compare = std::less<>>
using PersistentMap = PersistentBTree<K, V, Compare, 16, 16>;

}  // namespace packfs
