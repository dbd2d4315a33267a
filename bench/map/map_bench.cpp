// map_bench: the persistent-map candidates (B+-tree at three fanouts, treap) and std::map as
// a reference, at 20k and 1M entries. Every counter `ns_op` is nanoseconds per single map
// operation (per entry for full iteration, per 100-entry scan for scan100).
//
// Key/value shapes are the mem backend's: the inode table (uint64_t -> shared_ptr, keys
// allocated sequentially) and directory entries ({parent, name} -> {ino, type}, looked up
// through a {parent, string_view} view).
//
// "persistent" benchmarks take a snapshot (an O(1) copy) before every write and keep it until
// the next one, as a backend that publishes each version does: every write then path-copies.
// "fresh" benchmarks write to a map nobody else holds (a bulk load; nodes are changed in
// place). std::map cannot snapshot in O(1); its "persistent" rows are plain writes.
//
// Run: build-map/bench/map/map_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/persistent_btree.hpp"
#include "core/persistent_map.hpp"
#include "map/persistent_treap.hpp"

namespace {

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
};
using InodePtr = std::shared_ptr<const uint64_t>;

template <class K, class V, class C>
using BTree16 = packfs::PersistentBTree<K, V, C, 16, 16>;
template <class K, class V, class C>
using BTree32 = packfs::PersistentBTree<K, V, C, 32, 32>;
template <class K, class V, class C>
using BTree64 = packfs::PersistentBTree<K, V, C, 64, 64>;
template <class K, class V, class C>
using BTree8 = packfs::PersistentBTree<K, V, C, 8, 8>;
template <class K, class V, class C>
using BTree16x32 = packfs::PersistentBTree<K, V, C, 16, 32>;
template <class K, class V, class C>
using BTree8x32 = packfs::PersistentBTree<K, V, C, 8, 32>;
template <class K, class V, class C>
using Treap = packfs::PersistentTreap<K, V, C>;
template <class K, class V, class C>
using StdMap = std::map<K, V, C>;

template <class M>
constexpr bool kIsStd = std::is_same_v<M, std::map<typename M::key_type, typename M::mapped_type,
                                                   typename M::key_compare>>;

template <class M, class K>
const typename M::mapped_type* lookup(const M& m, const K& k) {
    if constexpr (kIsStd<M>) {
        auto it = m.find(k);
        return it == m.end() ? nullptr : &it->second;
    } else {
        return m.find(k);
    }
}
template <class M>
bool put(M& m, typename M::key_type k, typename M::mapped_type v) {
    if constexpr (kIsStd<M>) return m.insert_or_assign(std::move(k), std::move(v)).second;
    else return m.insert_or_assign(std::move(k), std::move(v));
}
template <class M, class It>
const auto& value_of(const M&, const It& it) {
    if constexpr (kIsStd<M>) return it->second;
    else return it.value();
}

void set_ns_per_op(benchmark::State& state, double ops) {
    state.counters["ns_op"] = benchmark::Counter(
        ops * 1e-9, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// Keys 0..n-1 in random order (fixed seed), and the inode value for a key.
const std::vector<uint64_t>& shuffled(std::size_t n) {
    static std::map<std::size_t, std::vector<uint64_t>> cache;
    auto& v = cache[n];
    if (v.empty()) {
        v.resize(n);
        for (std::size_t i = 0; i < n; ++i) v[i] = i;
        std::shuffle(v.begin(), v.end(), std::mt19937_64(n));
    }
    return v;
}
InodePtr inode(uint64_t k) { return std::make_shared<const uint64_t>(k); }

// The inode table with keys 0, 2, 4, ... 2(n-1) (odd keys are free for inserts), built once.
template <template <class, class, class> class Map>
const Map<uint64_t, InodePtr, std::less<>>& inode_base(std::size_t n) {
    static std::map<std::size_t, Map<uint64_t, InodePtr, std::less<>>> cache;
    auto it = cache.find(n);
    if (it == cache.end()) {
        Map<uint64_t, InodePtr, std::less<>> m;
        for (uint64_t i = 0; i < n; ++i) put(m, 2 * i, inode(2 * i));
        it = cache.emplace(n, std::move(m)).first;
    }
    return it->second;
}

DirKey dir_key(uint64_t i) {
    // ~64 entries per directory, names like a build tree's: short, shared prefixes.
    return DirKey{i / 64 + 1, "file_" + std::to_string(i * 2654435761u % 100000007)};
}
template <template <class, class, class> class Map>
const Map<DirKey, DirValue, DirKeyLess>& dir_base(std::size_t n) {
    static std::map<std::size_t, Map<DirKey, DirValue, DirKeyLess>> cache;
    auto it = cache.find(n);
    if (it == cache.end()) {
        Map<DirKey, DirValue, DirKeyLess> m;
        for (uint64_t i = 0; i < n; ++i) put(m, dir_key(2 * i), DirValue{i, 1});
        it = cache.emplace(n, std::move(m)).first;
    }
    return it->second;
}

// ---- inserts into a map nobody else holds (bulk load) ----
template <template <class, class, class> class Map>
void InsertSeqFresh(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    for (auto _ : state) {
        Map<uint64_t, InodePtr, std::less<>> m;
        for (uint64_t i = 0; i < n; ++i) put(m, i, inode(i));
        benchmark::DoNotOptimize(m);
        state.PauseTiming();
        { auto drop = std::move(m); }
        state.ResumeTiming();
    }
    set_ns_per_op(state, static_cast<double>(n) * static_cast<double>(state.iterations()));
}
template <template <class, class, class> class Map>
void InsertRandFresh(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    const auto& keys = shuffled(n);
    for (auto _ : state) {
        Map<uint64_t, InodePtr, std::less<>> m;
        for (uint64_t k : keys) put(m, k, inode(k));
        benchmark::DoNotOptimize(m);
        state.PauseTiming();
        { auto drop = std::move(m); }
        state.ResumeTiming();
    }
    set_ns_per_op(state, static_cast<double>(n) * static_cast<double>(state.iterations()));
}
template <template <class, class, class> class Map>
void BatchLoad(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    for (auto _ : state) {
        Map<uint64_t, InodePtr, std::less<>> m;
        if constexpr (!kIsStd<decltype(m)>) m.begin_batch();
        for (uint64_t i = 0; i < n; ++i) put(m, i, inode(i));
        if constexpr (!kIsStd<decltype(m)>) m.end_batch();
        benchmark::DoNotOptimize(m);
        state.PauseTiming();
        { auto drop = std::move(m); }
        state.ResumeTiming();
    }
    set_ns_per_op(state, static_cast<double>(n) * static_cast<double>(state.iterations()));
}

// ---- writes with a snapshot held across each one (publish per write) ----
constexpr std::size_t kRound = 2000;

template <template <class, class, class> class Map, bool Random>
void InsertPersistent(benchmark::State& state) {
    using M = Map<uint64_t, InodePtr, std::less<>>;
    const auto n = static_cast<std::size_t>(state.range(0));
    const M& base = inode_base<Map>(n);
    const auto& order = shuffled(n);
    std::vector<InodePtr> vals;
    std::vector<uint64_t> keys;
    for (std::size_t i = 0; i < kRound; ++i) {
        // sequential: new inode numbers past the end; random: free (odd) keys anywhere
        keys.push_back(Random ? 2 * order[i] + 1 : 2 * n + i);
        vals.push_back(inode(keys.back()));
    }
    M m = base;  // copied once: O(n) for std::map
    for (auto _ : state) {
        M snap;
        for (std::size_t i = 0; i < kRound; ++i) {
            if constexpr (!kIsStd<M>) snap = m;
            put(m, keys[i], vals[i]);
        }
        benchmark::DoNotOptimize(m);
        state.PauseTiming();
        if constexpr (kIsStd<M>) {
            for (uint64_t k : keys) m.erase(k);
        } else {
            m = base;
        }
        { auto drop = std::move(snap); }
        state.ResumeTiming();
    }
    set_ns_per_op(state, static_cast<double>(kRound) * static_cast<double>(state.iterations()));
}
template <template <class, class, class> class Map>
void InsertSeqPersistent(benchmark::State& state) {
    InsertPersistent<Map, false>(state);
}
template <template <class, class, class> class Map>
void InsertRandPersistent(benchmark::State& state) {
    InsertPersistent<Map, true>(state);
}

template <template <class, class, class> class Map>
void ErasePersistent(benchmark::State& state) {
    using M = Map<uint64_t, InodePtr, std::less<>>;
    const auto n = static_cast<std::size_t>(state.range(0));
    const M& base = inode_base<Map>(n);
    const auto& order = shuffled(n);
    M m = base;
    for (auto _ : state) {
        M snap;
        for (std::size_t i = 0; i < kRound; ++i) {
            if constexpr (!kIsStd<M>) snap = m;
            benchmark::DoNotOptimize(m.erase(2 * order[i]));
        }
        state.PauseTiming();
        if constexpr (kIsStd<M>) {
            for (std::size_t i = 0; i < kRound; ++i) put(m, 2 * order[i], inode(2 * order[i]));
        } else {
            m = base;
        }
        { auto drop = std::move(snap); }
        state.ResumeTiming();
    }
    set_ns_per_op(state, static_cast<double>(kRound) * static_cast<double>(state.iterations()));
}

// Erase every entry, random order, from a map nobody else holds.
template <template <class, class, class> class Map>
void EraseAllFresh(benchmark::State& state) {
    using M = Map<uint64_t, InodePtr, std::less<>>;
    const auto n = static_cast<std::size_t>(state.range(0));
    const auto& order = shuffled(n);
    for (auto _ : state) {
        state.PauseTiming();
        M m;
        for (uint64_t i = 0; i < n; ++i) put(m, i, inode(i));
        state.ResumeTiming();
        for (uint64_t k : order) m.erase(k);
        benchmark::DoNotOptimize(m);
    }
    set_ns_per_op(state, static_cast<double>(n) * static_cast<double>(state.iterations()));
}

// Directory-entry inserts, publish per write: the mem backend's create.
template <template <class, class, class> class Map>
void DirInsertPersistent(benchmark::State& state) {
    using M = Map<DirKey, DirValue, DirKeyLess>;
    const auto n = static_cast<std::size_t>(state.range(0));
    const M& base = dir_base<Map>(n);
    const auto& order = shuffled(n);
    std::vector<DirKey> keys;
    for (std::size_t i = 0; i < kRound; ++i) keys.push_back(dir_key(2 * order[i] + 1));
    M m = base;
    for (auto _ : state) {
        M snap;
        for (std::size_t i = 0; i < kRound; ++i) {
            if constexpr (!kIsStd<M>) snap = m;
            put(m, keys[i], DirValue{i, 1});
        }
        benchmark::DoNotOptimize(m);
        state.PauseTiming();
        if constexpr (kIsStd<M>) {
            for (const DirKey& k : keys) m.erase(k);
        } else {
            m = base;
        }
        { auto drop = std::move(snap); }
        state.ResumeTiming();
    }
    set_ns_per_op(state, static_cast<double>(kRound) * static_cast<double>(state.iterations()));
}

// ---- reads ----
template <template <class, class, class> class Map>
void LookupHit(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    const auto& m = inode_base<Map>(n);
    const auto& order = shuffled(n);
    std::size_t i = 0;
    for (auto _ : state) {
        benchmark::DoNotOptimize(lookup(m, 2 * order[i]));
        if (++i == n) i = 0;
    }
    set_ns_per_op(state, static_cast<double>(state.iterations()));
}
template <template <class, class, class> class Map>
void DirLookupHit(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    const auto& m = dir_base<Map>(n);
    const auto& order = shuffled(n);
    std::vector<DirKey> keys;
    for (std::size_t i = 0; i < std::min<std::size_t>(n, 1 << 16); ++i) keys.push_back(dir_key(2 * order[i]));
    std::size_t i = 0;
    for (auto _ : state) {
        const DirKey& k = keys[i];
        benchmark::DoNotOptimize(lookup(m, DirKeyView{k.parent, k.name}));
        if (++i == keys.size()) i = 0;
    }
    set_ns_per_op(state, static_cast<double>(state.iterations()));
}
template <template <class, class, class> class Map>
void Scan100(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    const auto& m = inode_base<Map>(n);
    const auto& order = shuffled(n);
    std::size_t i = 0;
    for (auto _ : state) {
        auto it = m.lower_bound(2 * order[i]);
        uint64_t sum = 0;
        for (int j = 0; j < 100 && it != m.end(); ++j, ++it) sum += *value_of(m, it);
        benchmark::DoNotOptimize(sum);
        if (++i == n) i = 0;
    }
    set_ns_per_op(state, static_cast<double>(state.iterations()));
}
template <template <class, class, class> class Map>
void FullIteration(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    const auto& m = inode_base<Map>(n);
    for (auto _ : state) {
        uint64_t sum = 0;
        for (auto it = m.begin(); it != m.end(); ++it) sum += *value_of(m, it);
        benchmark::DoNotOptimize(sum);
    }
    set_ns_per_op(state, static_cast<double>(n) * static_cast<double>(state.iterations()));
}
template <template <class, class, class> class Map>
void Copy(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    const auto& m = inode_base<Map>(n);
    for (auto _ : state) {
        auto c = m;
        benchmark::DoNotOptimize(c);
    }
    set_ns_per_op(state, static_cast<double>(state.iterations()));
}

#define PACKFS_MAP_BENCH(fn)                                                              \
    BENCHMARK_TEMPLATE(fn, BTree16)->Arg(20000)->Arg(1000000)->Unit(benchmark::kMicrosecond); \
    BENCHMARK_TEMPLATE(fn, BTree32)->Arg(20000)->Arg(1000000)->Unit(benchmark::kMicrosecond); \
    BENCHMARK_TEMPLATE(fn, BTree64)->Arg(20000)->Arg(1000000)->Unit(benchmark::kMicrosecond); \
    BENCHMARK_TEMPLATE(fn, BTree8)->Arg(20000)->Arg(1000000)->Unit(benchmark::kMicrosecond); \
    BENCHMARK_TEMPLATE(fn, BTree16x32)->Arg(20000)->Arg(1000000)->Unit(benchmark::kMicrosecond); \
    BENCHMARK_TEMPLATE(fn, BTree8x32)->Arg(20000)->Arg(1000000)->Unit(benchmark::kMicrosecond); \
    BENCHMARK_TEMPLATE(fn, Treap)->Arg(20000)->Arg(1000000)->Unit(benchmark::kMicrosecond); \
    BENCHMARK_TEMPLATE(fn, StdMap)->Arg(20000)->Arg(1000000)->Unit(benchmark::kMicrosecond)

PACKFS_MAP_BENCH(InsertSeqFresh);
PACKFS_MAP_BENCH(InsertRandFresh);
PACKFS_MAP_BENCH(BatchLoad);
PACKFS_MAP_BENCH(InsertSeqPersistent);
PACKFS_MAP_BENCH(InsertRandPersistent);
PACKFS_MAP_BENCH(DirInsertPersistent);
PACKFS_MAP_BENCH(ErasePersistent);
PACKFS_MAP_BENCH(EraseAllFresh);
PACKFS_MAP_BENCH(LookupHit);
PACKFS_MAP_BENCH(DirLookupHit);
PACKFS_MAP_BENCH(Scan100);
PACKFS_MAP_BENCH(FullIteration);
PACKFS_MAP_BENCH(Copy);

}  // namespace

BENCHMARK_MAIN();
