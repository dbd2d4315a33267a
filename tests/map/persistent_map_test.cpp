// PersistentMap and both candidate structures (B+-tree, treap) against std::map.
//
// Model-based: long random sequences of insert/overwrite/erase/lookup/lower_bound/
// upper_bound/find_mutable/iteration applied to the persistent map and to a std::map, every
// result compared; snapshots (copies) taken at random points, held while the map goes on
// changing, and re-verified at the end against the std::map copied at the same moment;
// batch mode toggled at random, including copies taken in the middle of a batch. Plus edge
// cases, a no-allocation check for lookups, and a reader/writer thread test (label tsan).
// PACKFS_SANITIZER_RUN=1 divides the op counts by 5.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/persistent_btree.hpp"
#include "core/persistent_map.hpp"
#include "map/persistent_treap.hpp"

// Counts calls of the global operator new (alloc_counter.cpp): lookups must not allocate.
uint64_t packfs_test_allocations() noexcept;

namespace {

std::size_t scaled(std::size_t n) {
    const char* s = std::getenv("PACKFS_SANITIZER_RUN");
    return s && std::string_view(s) == "1" ? n / 5 : n;
}

// ---- key kinds ----
struct DirKey {
    uint64_t parent;
    std::string name;
};
struct DirKeyView {
    uint64_t parent;
    std::string_view name;
};
struct DirKeyLess {
    using is_transparent = void;
    template <class A, class B>
    bool operator()(const A& a, const B& b) const noexcept {
        if (a.parent != b.parent) return a.parent < b.parent;
        return std::string_view(a.name) < std::string_view(b.name);
    }
};
struct DirValue {
    uint64_t ino;
    uint8_t type;
    bool operator==(const DirValue&) const = default;
};

using IntVal = std::shared_ptr<const uint64_t>;  // refcounted values, like the inode table

bool same(const IntVal& a, const IntVal& b) { return a && b && *a == *b; }
bool same(const DirValue& a, const DirValue& b) { return a == b; }
bool same(const std::string& a, const std::string& b) { return a == b; }
bool same_key(uint64_t a, uint64_t b) { return a == b; }
bool same_key(const DirKey& a, const DirKey& b) { return a.parent == b.parent && a.name == b.name; }
bool same_key(const std::string& a, const std::string& b) { return a == b; }

// Each key kind: the key, value, comparator, a heterogeneous view, and generators.
struct IntKeys {
    using K = uint64_t;
    using V = IntVal;
    using C = std::less<>;
    static uint64_t view(uint64_t k) { return k; }
    static K key(std::mt19937_64& rng, uint64_t space) {
        // half clustered near a moving sequential frontier, half uniform
        return rng() % 2 ? rng() % space : space / 2 + rng() % 64;
    }
    static V value(std::mt19937_64& rng) { return std::make_shared<const uint64_t>(rng() % 1000); }
    static void mutate(V& v) { v = std::make_shared<const uint64_t>(*v + 1); }
};
struct DirKeys {
    using K = DirKey;
    using V = DirValue;
    using C = DirKeyLess;
    static DirKeyView view(const DirKey& k) { return {k.parent, k.name}; }
    static K key(std::mt19937_64& rng, uint64_t space) {
        uint64_t n = rng() % space;
        std::string name = "f" + std::to_string(n / 37);
        if (n % 11 == 0) name += "-a-rather-long-name-beyond-sso";
        return DirKey{n % 37, std::move(name)};
    }
    static V value(std::mt19937_64& rng) { return DirValue{rng() % 100000, static_cast<uint8_t>(rng() % 7)}; }
    static void mutate(V& v) { ++v.ino; }
};
struct StringKeys {
    using K = std::string;
    using V = std::string;
    using C = std::less<>;
    static std::string_view view(const std::string& k) { return k; }
    static K key(std::mt19937_64& rng, uint64_t space) {
        uint64_t n = rng() % space;
        return (n % 3 ? "/mnt/" : "user.") + std::to_string(n * 2654435761u % 1000003);
    }
    static V value(std::mt19937_64& rng) { return std::string(rng() % 24, 'v'); }
    static void mutate(V& v) { v += 'x'; }
};

// ---- implementations under test ----
struct BTree32 {
    template <class K, class V, class C>
    using Map = packfs::PersistentBTree<K, V, C, 32, 32>;
};
struct BTreeTiny {  // minimal fanout: deep trees, a split or merge every few operations
    template <class K, class V, class C>
    using Map = packfs::PersistentBTree<K, V, C, 4, 8>;
};
struct Treap {
    template <class K, class V, class C>
    using Map = packfs::PersistentTreap<K, V, C>;
};
struct Chosen {
    template <class K, class V, class C>
    using Map = packfs::PersistentMap<K, V, C>;
};

template <class Impl, class Kind>
using MapOf = typename Impl::template Map<typename Kind::K, typename Kind::V, typename Kind::C>;

template <class Kind, class M>
void expect_equal(const M& m, const std::map<typename Kind::K, typename Kind::V, typename Kind::C>& ref,
                  const char* what) {
    ASSERT_EQ(m.size(), ref.size()) << what;
    ASSERT_EQ(m.empty(), ref.empty()) << what;
    ASSERT_TRUE(m.check_invariants()) << what;
    auto it = m.begin();
    for (const auto& [k, v] : ref) {
        ASSERT_FALSE(it == m.end()) << what << ": iteration ended early";
        ASSERT_TRUE(same_key(it.key(), k)) << what << ": iteration order";
        ASSERT_TRUE(same(it.value(), v)) << what << ": iterated value";
        const auto* p = m.find(Kind::view(k));
        ASSERT_NE(p, nullptr) << what;
        ASSERT_TRUE(same(*p, v)) << what;
        ++it;
    }
    ASSERT_TRUE(it == m.end()) << what << ": iteration too long";
}

template <class Impl, class Kind>
void run_model(uint64_t seed, std::size_t ops, uint64_t space) {
    using M = MapOf<Impl, Kind>;
    using Ref = std::map<typename Kind::K, typename Kind::V, typename Kind::C>;
    std::mt19937_64 rng(seed);
    M m;
    Ref ref;
    struct Snap {
        M map;
        Ref ref;
    };
    std::vector<Snap> snaps;
    bool in_batch = false;
    for (std::size_t step = 0; step < ops; ++step) {
        // Alternate growth and shrink phases so the tree also goes down to (nearly) nothing.
        const bool shrinking = (step / 20000) % 2 == 1;
        const unsigned r = static_cast<unsigned>(rng() % 100);
        auto k = Kind::key(rng, space);
        if (r < (shrinking ? 10u : 35u)) {
            auto v = Kind::value(rng);
            bool fresh = ref.insert_or_assign(k, v).second;
            ASSERT_EQ(m.insert_or_assign(k, v), fresh) << "insert at step " << step;
        } else if (r < 50) {
            if (shrinking && !ref.empty() && rng() % 2) k = std::next(ref.begin(), static_cast<long>(rng() % ref.size()))->first;
            bool had = ref.erase(k) == 1;
            ASSERT_EQ(m.erase(Kind::view(k)), had) << "erase at step " << step;
        } else if (r < 75) {
            const auto* p = m.find(Kind::view(k));
            auto it = ref.find(k);
            ASSERT_EQ(p != nullptr, it != ref.end()) << "find at step " << step;
            if (p) {
                ASSERT_TRUE(same(*p, it->second)) << "find value at step " << step;
            }
            ASSERT_EQ(m.contains(Kind::view(k)), it != ref.end());
        } else if (r < 85 || r == 86) {
            auto it = r == 86 ? m.upper_bound(Kind::view(k)) : m.lower_bound(Kind::view(k));
            auto rit = r == 86 ? ref.upper_bound(k) : ref.lower_bound(k);
            for (int i = 0; i < 8; ++i, ++it, ++rit) {
                ASSERT_EQ(it == m.end(), rit == ref.end()) << "bound at step " << step;
                if (rit == ref.end()) break;
                ASSERT_TRUE(same_key(it.key(), rit->first)) << "bound key at step " << step;
                ASSERT_TRUE(same(it.value(), rit->second)) << "bound value at step " << step;
            }
        } else if (r == 85) {
            // Snapshot, possibly in the middle of a batch (which the copy ends).
            if (snaps.size() < 12) snaps.push_back(Snap{m, ref});
            else snaps[rng() % snaps.size()] = Snap{m, ref};
        } else if (r == 87) {
            if (in_batch) m.end_batch();
            else m.begin_batch();
            in_batch = !in_batch;
        } else if (r < 92) {
            auto it = ref.find(k);
            if (rng() % 2) {
                auto* p = m.find_mutable(Kind::view(k));
                ASSERT_EQ(p != nullptr, it != ref.end()) << "find_mutable at step " << step;
                if (p) {
                    Kind::mutate(*p);
                    Kind::mutate(it->second);
                }
            } else {
                bool done = m.update(Kind::view(k), [](typename Kind::V& v) { Kind::mutate(v); });
                ASSERT_EQ(done, it != ref.end()) << "update at step " << step;
                if (it != ref.end()) Kind::mutate(it->second);
            }
        } else if (r < 94 && !snaps.empty()) {
            // Mutate a snapshot too: versions branch, and each must stay independent.
            Snap& s = snaps[rng() % snaps.size()];
            auto v = Kind::value(rng);
            ASSERT_EQ(s.map.insert_or_assign(k, v), s.ref.insert_or_assign(k, v).second);
            auto k2 = Kind::key(rng, space);
            ASSERT_EQ(s.map.erase(Kind::view(k2)), s.ref.erase(k2) == 1);
        } else {
            ASSERT_EQ(m.size(), ref.size()) << "size at step " << step;
        }
        if (step % 4999 == 0) {
            ASSERT_NO_FATAL_FAILURE(expect_equal<Kind>(m, ref, "map"));
            if (!snaps.empty()) {
                const Snap& s = snaps[rng() % snaps.size()];
                ASSERT_NO_FATAL_FAILURE(expect_equal<Kind>(s.map, s.ref, "snapshot mid-run"));
            }
        }
    }
    if (in_batch) m.end_batch();
    ASSERT_NO_FATAL_FAILURE(expect_equal<Kind>(m, ref, "final map"));
    for (const Snap& s : snaps) ASSERT_NO_FATAL_FAILURE(expect_equal<Kind>(s.map, s.ref, "final snapshot"));
}

template <class Impl>
class PersistentMapTest : public ::testing::Test {};
using Impls = ::testing::Types<BTree32, BTreeTiny, Treap, Chosen>;
class ImplNames {
public:
    template <class T>
    static std::string GetName(int) {
        if (std::is_same_v<T, BTree32>) return "BTree32";
        if (std::is_same_v<T, BTreeTiny>) return "BTreeTiny";
        if (std::is_same_v<T, Treap>) return "Treap";
        return "PersistentMap";
    }
};
TYPED_TEST_SUITE(PersistentMapTest, Impls, ImplNames);

TYPED_TEST(PersistentMapTest, RandomOpsWithIntKeysMatchStdMap) {
    run_model<TypeParam, IntKeys>(1, scaled(200000), 6000);
}
TYPED_TEST(PersistentMapTest, RandomOpsWithDirectoryKeysMatchStdMap) {
    run_model<TypeParam, DirKeys>(2, scaled(200000), 5000);
}
TYPED_TEST(PersistentMapTest, RandomOpsWithStringKeysMatchStdMap) {
    run_model<TypeParam, StringKeys>(3, scaled(200000), 3000);
}
TYPED_TEST(PersistentMapTest, RandomOpsOnSmallKeySpaceMatchStdMap) {
    // Few distinct keys: the map keeps emptying and refilling, the root keeps changing kind.
    run_model<TypeParam, IntKeys>(4, scaled(100000), 40);
}

TYPED_TEST(PersistentMapTest, EmptyMap) {
    MapOf<TypeParam, IntKeys> m;
    EXPECT_EQ(m.size(), 0u);
    EXPECT_TRUE(m.empty());
    EXPECT_EQ(m.find(uint64_t{7}), nullptr);
    EXPECT_FALSE(m.contains(uint64_t{7}));
    EXPECT_TRUE(m.begin() == m.end());
    EXPECT_TRUE(m.lower_bound(uint64_t{0}) == m.end());
    EXPECT_TRUE(m.upper_bound(uint64_t{0}) == m.end());
    EXPECT_FALSE(m.erase(uint64_t{7}));
    EXPECT_EQ(m.find_mutable(uint64_t{7}), nullptr);
    EXPECT_TRUE(m.check_invariants());
    auto copy = m;
    EXPECT_TRUE(copy.empty());
}

TYPED_TEST(PersistentMapTest, EraseMissingKeyLeavesMapAndSnapshotsAlone) {
    MapOf<TypeParam, IntKeys> m;
    for (uint64_t i = 0; i < 1000; i += 2) m.insert_or_assign(i, std::make_shared<const uint64_t>(i));
    auto snap = m;
    for (uint64_t i = 1; i < 1000; i += 2) EXPECT_FALSE(m.erase(i));
    EXPECT_FALSE(m.erase(uint64_t{5000}));
    EXPECT_EQ(m.size(), 500u);
    EXPECT_EQ(snap.size(), 500u);
    EXPECT_TRUE(m.check_invariants());
}

TYPED_TEST(PersistentMapTest, EraseEverythingThenRefill) {
    MapOf<TypeParam, IntKeys> m;
    const uint64_t n = 5000;
    for (uint64_t i = 0; i < n; ++i) EXPECT_TRUE(m.insert_or_assign(i, std::make_shared<const uint64_t>(i)));
    auto full = m;
    std::vector<uint64_t> order(n);
    for (uint64_t i = 0; i < n; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), std::mt19937_64(9));
    for (std::size_t i = 0; i < order.size(); ++i) {
        ASSERT_TRUE(m.erase(order[i]));
        ASSERT_FALSE(m.erase(order[i]));
        if (i % 512 == 0) {
            ASSERT_TRUE(m.check_invariants());
        }
    }
    EXPECT_TRUE(m.empty());
    EXPECT_TRUE(m.begin() == m.end());
    EXPECT_TRUE(m.check_invariants());
    EXPECT_EQ(full.size(), n);
    uint64_t expect = 0;
    for (auto it = full.begin(); it != full.end(); ++it, ++expect) ASSERT_EQ(*it.value(), expect);
    EXPECT_EQ(expect, n);
    EXPECT_TRUE(m.insert_or_assign(uint64_t{3}, std::make_shared<const uint64_t>(3)));
    EXPECT_EQ(m.size(), 1u);
}

TYPED_TEST(PersistentMapTest, IterationIsInKeyOrderAndBoundsWork) {
    MapOf<TypeParam, StringKeys> m;
    std::vector<std::string> keys = {"b", "a", "d", "c", "aa", "", "zz", "ab"};
    for (const auto& k : keys) m.insert_or_assign(k, k + "!");
    std::sort(keys.begin(), keys.end());
    std::size_t i = 0;
    for (auto it = m.begin(); it != m.end(); ++it, ++i) {
        ASSERT_LT(i, keys.size());
        EXPECT_EQ(it.key(), keys[i]);
        EXPECT_EQ(it.value(), keys[i] + "!");
    }
    EXPECT_EQ(i, keys.size());
    EXPECT_EQ(m.lower_bound(std::string_view("ab")).key(), "ab");
    EXPECT_EQ(m.upper_bound(std::string_view("ab")).key(), "b");
    EXPECT_EQ(m.lower_bound(std::string_view("ac")).key(), "b");
    EXPECT_EQ(m.lower_bound(std::string_view("")).key(), "");
    EXPECT_TRUE(m.lower_bound(std::string_view("zzz")) == m.end());  // past the end
    EXPECT_TRUE(m.upper_bound(std::string_view("zz")) == m.end());
    EXPECT_FALSE(m.insert_or_assign("a", "again"));
    EXPECT_EQ(*m.find(std::string_view("a")), "again");
}

TYPED_TEST(PersistentMapTest, SnapshotIsIndependentInBothDirections) {
    MapOf<TypeParam, DirKeys> m;
    for (uint64_t i = 0; i < 3000; ++i) m.insert_or_assign(DirKey{i % 7, "n" + std::to_string(i)}, DirValue{i, 1});
    auto snap = m;
    m.begin_batch();
    for (uint64_t i = 0; i < 3000; i += 3) m.erase(DirKeyView{i % 7, "n" + std::to_string(i)});
    auto mid = m;  // a copy in the middle of a batch
    m.insert_or_assign(DirKey{99, "new"}, DirValue{1, 2});
    m.end_batch();
    snap.insert_or_assign(DirKey{100, "only-in-snap"}, DirValue{5, 5});
    EXPECT_EQ(snap.size(), 3001u);
    EXPECT_EQ(mid.size(), 2000u);
    EXPECT_EQ(m.size(), 2001u);
    EXPECT_EQ(mid.find(DirKeyView{99, "new"}), nullptr);
    EXPECT_EQ(m.find(DirKeyView{100, "only-in-snap"}), nullptr);
    EXPECT_NE(snap.find(DirKeyView{0, "n0"}), nullptr);
    EXPECT_EQ(m.find(DirKeyView{0, "n0"}), nullptr);
    // Directory listing: one contiguous range per parent.
    std::size_t in_dir3 = 0;
    for (auto it = snap.lower_bound(DirKeyView{3, ""}); it != snap.end() && it.key().parent == 3; ++it) ++in_dir3;
    EXPECT_EQ(in_dir3, 3000u / 7 + (3000 % 7 > 3 ? 1 : 0));
    EXPECT_TRUE(m.check_invariants() && mid.check_invariants() && snap.check_invariants());
}

TYPED_TEST(PersistentMapTest, LookupsDoNotAllocate) {
    MapOf<TypeParam, DirKeys> m;
    for (uint64_t i = 0; i < 20000; ++i) m.insert_or_assign(DirKey{i % 100, "file" + std::to_string(i)}, DirValue{i, 0});
    const auto before = packfs_test_allocations();
    std::size_t hits = 0, seen = 0;
    for (uint64_t i = 0; i < 20000; i += 7) {
        const std::string name = "file" + std::to_string(i);  // SSO: no allocation
        hits += m.find(DirKeyView{i % 100, name}) != nullptr;
        auto it = m.lower_bound(DirKeyView{i % 100, name});
        for (int j = 0; j < 10 && it != m.end(); ++j, ++it) ++seen;
    }
    for (auto it = m.begin(); it != m.end(); ++it) ++seen;
    EXPECT_EQ(packfs_test_allocations(), before);
    EXPECT_EQ(hits, (20000u + 6) / 7);
    EXPECT_GT(seen, 20000u);
}

// Readers look up and iterate published versions while one writer mutates its own copy
// and publishes it. Every version keeps: the values other than key 1's sum to zero (key 0
// holds minus the sum of the rest), its size equals the count stored under key 1 plus 2,
// and it is sorted.
TYPED_TEST(PersistentMapTest, ReadersSeeConsistentVersionsWhileWriterPublishes) {
    using M = typename TypeParam::template Map<uint64_t, int64_t, std::less<>>;
    const std::size_t writes = scaled(30000);
    std::mutex mu;
    std::shared_ptr<const M> published;
    auto publish = [&](const M& m) {
        auto p = std::make_shared<const M>(m);
        std::lock_guard lock(mu);
        published = std::move(p);
    };
    auto current = [&] {
        std::lock_guard lock(mu);
        return published;
    };
    M m;
    m.insert_or_assign(0, 0);
    m.insert_or_assign(1, 0);
    publish(m);
    std::atomic<bool> done{false};
    std::atomic<uint64_t> versions_checked{0};
    std::atomic<int> failures{0};
    auto reader = [&](uint64_t seed) {
        std::mt19937_64 rng(seed);
        while (!done.load(std::memory_order_acquire)) {
            std::shared_ptr<const M> v = current();
            M copy = *v;  // readers also copy: concurrent count traffic on shared nodes
            int64_t sum = 0;
            std::size_t n = 0;
            uint64_t prev = 0;
            for (auto it = copy.begin(); it != copy.end(); ++it, ++n) {
                if (n > 0 && it.key() <= prev) failures.fetch_add(1);
                prev = it.key();
                if (it.key() != 1) sum += it.value();
            }
            const int64_t* count = copy.find(uint64_t{1});
            if (sum != 0 || !count || static_cast<std::size_t>(*count) + 2 != n || n != copy.size())
                failures.fetch_add(1);
            for (int i = 0; i < 50; ++i) {
                uint64_t k = 2 + rng() % 4000;
                const int64_t* p = v->find(k);
                auto it = v->lower_bound(k);
                if (p && (it == v->end() || it.key() != k || it.value() != *p)) failures.fetch_add(1);
                if (!p && it != v->end() && it.key() == k) failures.fetch_add(1);
            }
            versions_checked.fetch_add(1, std::memory_order_relaxed);
        }
    };
    std::vector<std::thread> readers;
    for (uint64_t i = 0; i < 3; ++i) readers.emplace_back(reader, 100 + i);
    std::mt19937_64 rng(42);
    int64_t total = 0;
    int64_t count = 0;
    for (std::size_t w = 0; w < writes; ++w) {
        if (w % 500 == 0) m.begin_batch();
        uint64_t k = 2 + rng() % 4000;
        const int64_t* old = m.find(k);
        if (old && rng() % 3 == 0) {
            total -= *old;
            m.erase(k);
            --count;
        } else {
            int64_t v = static_cast<int64_t>(rng() % 1000) - 500;
            if (old) total -= *old;
            else ++count;
            total += v;
            m.insert_or_assign(k, v);
        }
        m.insert_or_assign(0, -total);
        m.insert_or_assign(1, count);
        if (w % 500 == 499) m.end_batch();
        if (w % 3 == 0) publish(m);  // the copy ends any batch
    }
    publish(m);
    while (versions_checked.load() < 20) std::this_thread::yield();
    done.store(true, std::memory_order_release);
    for (auto& t : readers) t.join();
    EXPECT_EQ(failures.load(), 0);
    EXPECT_GT(versions_checked.load(), 0u);
    EXPECT_TRUE(m.check_invariants());
}

}  // namespace
