// The categories (categories.hpp): the groups of arms over the timed operations of
// category_timers.cpp, each run on a fresh target torn down (untimed) before the next. Names
// are created and then visited in two different pseudo-random orders (fixed seeds): sorted or
// creation-order access would be the best case of many index structures, and the benchmark's
// data must not flatter the code (DESIGN §13).
#include "bench/categories.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <memory>
#include <numeric>
#include <optional>
#include <random>

#include "bench/budget.hpp"
#include "bench/timing.hpp"
#include "bench/vfs_categories.hpp"

#include "bench/category_timers.hpp"

namespace packfs::bench {

using namespace category_timers;

namespace {

// --- groups ----------------------------------------------------------------------------

// A run's body gets its arm's budget (unlimited for arms not bounded by time).
using Body = std::function<Result<double>(Target&, RunBudget&)>;

using MultiBody = std::function<Result<std::vector<double>>(Target&)>;

// One run on a fresh target from `adapter`; the target is torn down (untimed) and the host
// filesystem settled before the next run.
template <class T, class F>
std::function<Result<T>()> fresh_run(const BackendAdapter& adapter, const std::string& scratch,
                                     F body) {
    return [make = adapter.make, scratch, body = std::move(body)]() -> Result<T> {
        Result<T> out;
        {
            auto target = make(scratch);
            if (!target) return std::unexpected(target.error());
            out = body(**target);
        }
        settle_host_filesystem(scratch);
        return out;
    };
}

// `budget_s` > 0 bounds the runs of an arm on host storage by time as well as by n (the
// in-memory arms are never slowed by a disk, and keep their whole count).
Arm make_arm(std::string category, const BackendAdapter& adapter, const std::string& scratch,
             uint64_t n, uint64_t bytes, Body body, double budget_s = 0) {
    Arm arm;
    arm.category = std::move(category);
    arm.backend = std::string(adapter.name);
    arm.n = n;
    arm.bytes = bytes;
    auto budget = std::make_shared<RunBudget>(adapter.on_disk ? budget_s : 0);
    if (budget->limited()) arm.budget = budget;
    arm.run_once = fresh_run<double>(
        adapter, scratch, [budget, body = std::move(body)](Target& t) { return body(t, *budget); });
    return arm;
}

// One category on every adapter it applies to: subjects and the raw baseline always, the
// fsync'd baseline only where `durable` (creating files, writing large ones).
Group compare(const std::string& category, std::span<const BackendAdapter* const> adapters,
              const std::string& scratch, bool durable, uint64_t n, uint64_t bytes,
              const Body& body, double budget_s) {
    Group group;
    for (const BackendAdapter* a : adapters) {
        if (a->role == AdapterRole::durable && !durable) continue;
        if (a->role == AdapterRole::baseline) group.baseline = group.arms.size();
        group.arms.push_back(make_arm(category, *a, scratch, n, bytes, body, budget_s));
    }
    return group;
}

// snapshot() on a small and a large tree of the same backend, interleaved; the ratio of the
// large tree's time to the small tree's is the O(1) check. The trees are built once (the
// calls do not change them) and freed when the group is done.
Group snapshot_group(const Sizes& s, const BackendAdapter& adapter, const std::string& scratch) {
    struct Trees {
        std::unique_ptr<Target> small, large;
    };
    auto trees = std::make_shared<Trees>();
    Group group;
    group.prepare = [trees, &adapter, scratch, s]() -> Result<void> {
        for (auto [slot, entries] : {std::pair{&trees->small, s.snapshot_small},
                                     std::pair{&trees->large, s.snapshot_large}}) {
            auto target = adapter.make(scratch);
            if (!target) return std::unexpected(target.error());
            if (auto ok = build_tree(*(*target)->backend(), entries); !ok) return ok;
            *slot = std::move(*target);
        }
        return {};
    };
    group.finish = [trees] { *trees = {}; };
    for (auto [which, entries] : {std::pair{0, s.snapshot_small}, std::pair{1, s.snapshot_large}}) {
        Arm arm;
        arm.category = fmt::format("snapshot {}-entry tree", short_count(entries));
        arm.backend = std::string(adapter.name);
        arm.n = s.snapshot_calls;
        arm.run_once = [trees, which, calls = s.snapshot_calls]() -> Result<double> {
            Target& t = which == 0 ? *trees->small : *trees->large;
            return time_snapshots(*t.backend(), calls);
        };
        group.arms.push_back(std::move(arm));
    }
    group.baseline = 0;
    group.baseline_label = fmt::format("{} tree", short_count(s.snapshot_small));
    return group;
}

// The scaling check of one category: its body at scales 1, 4 (and 16) of its size N on
// every PackFS backend (the raw fs's own scaling is ext4's, and would cost minutes here; the
// dir backend's, mostly ext4's too, only with `on_disk`), all interleaved in one group. Not
// bounded by time: a run cut short would time the first N of 4N, not 4N. Named "<key> @N", "<key>
// @4N", "<key> @16N".
Group scaling_group(const std::string& key, std::span<const BackendAdapter* const> adapters,
                    const std::string& scratch, std::initializer_list<uint64_t> scales,
                    const std::function<uint64_t(uint64_t)>& n_at,
                    const std::function<uint64_t(uint64_t)>& bytes_at,
                    const std::function<Body(uint64_t)>& body_at, bool on_disk) {
    Group group;
    group.section = kScalingSection;
    group.max_runs = kScalingRuns;
    for (const BackendAdapter* a : adapters) {
        if (a->role != AdapterRole::subject || (a->on_disk && !on_disk)) continue;
        for (uint64_t scale : scales) {
            Arm arm = make_arm(fmt::format("{} @{}N", key, scale == 1 ? std::string() : fmt::format("{}", scale)),
                               *a, scratch, n_at(scale), bytes_at(scale), body_at(scale));
            arm.plain = key;
            arm.scale_key = key;
            arm.scale = scale;
            group.arms.push_back(std::move(arm));
        }
    }
    return group;
}

void add_scaling_groups(std::vector<Group>& groups, const Sizes& s,
                        std::span<const BackendAdapter* const> adapters, const std::string& scratch) {
    auto files_at = [s](uint64_t k) {
        Sizes t = s;
        t.files = s.files * k;
        return t;
    };
    auto dirs_at = [s](uint64_t k) {
        Sizes t = s;
        t.dirs = s.dirs * k;
        return t;
    };
    auto iterations_at = [s](uint64_t k) {
        Sizes t = s;
        t.iterations = s.iterations * k;
        return t;
    };
    auto add = [&](const std::string& key, std::initializer_list<uint64_t> scales,
                   std::function<uint64_t(uint64_t)> n_at,
                   std::function<uint64_t(uint64_t)> bytes_at,
                   std::function<Body(uint64_t)> body_at) {
        Group g = scaling_group(key, adapters, scratch, scales, n_at, bytes_at, body_at,
                                s.scaling_on_disk);
        if (!g.arms.empty()) groups.push_back(std::move(g));
    };
    const auto files_n = [s](uint64_t k) -> uint64_t { return s.files * k; };
    const auto files_bytes = [s](uint64_t k) -> uint64_t { return s.files * k * s.file_bytes; };
    const auto no_bytes = [](uint64_t) -> uint64_t { return 0; };
    add("create files", {1, 4}, files_n, files_bytes, [=](uint64_t k) -> Body {
        return [t = files_at(k)](Target& x, RunBudget& b) { return time_create(x, t, b); };
    });
    add("read files", {1, 4}, files_n, files_bytes, [=](uint64_t k) -> Body {
        return [t = files_at(k)](Target& x, RunBudget& b) { return time_read(x, t, b); };
    });
    add("stat files", {1, 4, 16}, files_n, no_bytes, [=](uint64_t k) -> Body {
        return [t = files_at(k)](Target& x, RunBudget& b) { return time_stat(x, t, b); };
    });
    add("readdir", {1, 4, 16}, files_n, no_bytes, [=](uint64_t k) -> Body {
        return [t = files_at(k)](Target& x, RunBudget& b) { return time_readdir(x, t, b); };
    });
    add("unlink files", {1, 4}, files_n, no_bytes, [=](uint64_t k) -> Body {
        return [t = files_at(k)](Target& x, RunBudget& b) { return time_unlink(x, t, b); };
    });
    const auto dirs_n = [s](uint64_t k) -> uint64_t { return s.dirs * k; };
    add("mkdir", {1, 4, 16}, dirs_n, no_bytes, [=](uint64_t k) -> Body {
        return [t = dirs_at(k)](Target& x, RunBudget& b) { return time_mkdir(x, t, b); };
    });
    add("rmdir", {1, 4, 16}, dirs_n, no_bytes, [=](uint64_t k) -> Body {
        return [t = dirs_at(k)](Target& x, RunBudget& b) { return time_rmdir(x, t, b); };
    });
    const std::size_t mib = s.scaling_mib;
    const auto mib_n = [mib](uint64_t k) -> uint64_t { return mib * k; };
    const auto mib_bytes = [mib](uint64_t k) -> uint64_t { return mib * k * kMiB; };
    add("write large", {1, 4, 16}, mib_n, mib_bytes, [=](uint64_t k) -> Body {
        return [m = mib * k](Target& x, RunBudget&) { return time_write_large(x, m); };
    });
    add("read large", {1, 4, 16}, mib_n, mib_bytes, [=](uint64_t k) -> Body {
        return [m = mib * k](Target& x, RunBudget&) { return time_read_large(x, m); };
    });
    add(
        "concurrent create+read+unlink", {1, 4},
        [s](uint64_t k) -> uint64_t { return uint64_t{s.threads} * s.iterations * k * 3; },
        no_bytes,
        [=](uint64_t k) -> Body {
            return [t = iterations_at(k)](Target& x, RunBudget& b) {
                return time_concurrent(x, t, b);
            };
        });
}

// The million-entry directory: every PackFS backend and the raw fs at big_dir / 4 and
// big_dir entries, interleaved in one group; each arm's ratio is against the raw fs at the
// same size. Four figures per arm: create, list, stat all, remove all.
Group big_dir_group(const Sizes& s, std::span<const BackendAdapter* const> adapters,
                    const std::string& scratch) {
    Group group;
    group.section = kBigDirSection;
    group.opt_in = !s.big_dir_default;
    group.max_runs = s.big_dir_runs;
    static constexpr std::array<const char*, 4> kSteps{"create", "list", "stat all", "remove all"};
    for (uint64_t scale : {uint64_t{1}, uint64_t{4}}) {
        const std::size_t entries = s.big_dir / 4 * scale;
        const std::size_t first = group.arms.size();
        std::optional<std::size_t> raw;
        for (const BackendAdapter* a : adapters) {
            if (a->role == AdapterRole::durable) continue;
            if (a->role == AdapterRole::baseline) raw = group.arms.size();
            Arm arm;
            arm.category = fmt::format("{}-entry dir", short_count(entries));
            arm.backend = std::string(a->name);
            for (const char* step : kSteps) {
                Measure m;
                m.category = fmt::format("{}-entry dir: {}", short_count(entries), step);
                m.n = entries;
                m.plain = step;
                m.scale_key = fmt::format("entry dir: {}", step);
                m.scale = scale;
                arm.measures.push_back(std::move(m));
            }
            arm.run_measures = fresh_run<std::vector<double>>(
                *a, scratch, MultiBody([entries](Target& t) { return time_big_dir(t, entries); }));
            group.arms.push_back(std::move(arm));
        }
        for (std::size_t i = first; i < group.arms.size(); ++i) group.arms[i].baseline = raw;
    }
    return group;
}

}  // namespace

std::string short_count(std::size_t n) {
    if (n >= 1'000'000 && n % 100'000 == 0) return fmt::format("{:g}M", static_cast<double>(n) / 1e6);
    if (n >= 1'000 && n % 100 == 0) return fmt::format("{:g}k", static_cast<double>(n) / 1e3);
    return fmt::format("{}", n);
}

std::vector<Group> make_groups(const Sizes& s, std::span<const BackendAdapter* const> adapters,
                               const std::string& scratch) {
    std::vector<Group> groups;
    const uint64_t small_bytes = uint64_t{s.files} * s.file_bytes;
    auto add = [&](const std::string& category, bool durable, uint64_t n, uint64_t bytes,
                   const Body& body) {
        groups.push_back(
            compare(category, adapters, scratch, durable, n, bytes, body, s.disk_budget_s));
    };
    add("create files", true, s.files, small_bytes,
        [s](Target& t, RunBudget& b) { return time_create(t, s, b); });
    add("read files", false, s.files, small_bytes,
        [s](Target& t, RunBudget& b) { return time_read(t, s, b); });
    add("stat files", false, s.files, 0,
        [s](Target& t, RunBudget& b) { return time_stat(t, s, b); });
    add("stat files, 2 threads", false, 2 * s.files, 0,
        [s](Target& t, RunBudget& b) { return time_stat_two_threads(t, s, b); });
    add("readdir", false, s.files, 0,
        [s](Target& t, RunBudget& b) { return time_readdir(t, s, b); });
    add("unlink files", false, s.files, 0,
        [s](Target& t, RunBudget& b) { return time_unlink(t, s, b); });
    add("mkdir", false, s.dirs, 0, [s](Target& t, RunBudget& b) { return time_mkdir(t, s, b); });
    add("rmdir", false, s.dirs, 0, [s](Target& t, RunBudget& b) { return time_rmdir(t, s, b); });
    for (std::size_t mib : s.large_mib) {
        const uint64_t bytes = uint64_t{mib} * kMiB;
        add(fmt::format("write {}MB", mib), true, mib, bytes,
            [mib](Target& t, RunBudget&) { return time_write_large(t, mib); });
        add(fmt::format("read {}MB", mib), false, mib, bytes,
            [mib](Target& t, RunBudget&) { return time_read_large(t, mib); });
    }
    add("concurrent create+read+unlink", false, uint64_t{s.threads} * s.iterations * 3, 0,
        [s](Target& t, RunBudget& b) { return time_concurrent(t, s, b); });
    for (const BackendAdapter* a : adapters) {
        if (a->snapshots) groups.push_back(snapshot_group(s, *a, scratch));
    }
    for (const BackendAdapter* a : adapters) {
        if (a->name == "vfs") {
            for (Group& g : mount_table_groups(s)) groups.push_back(std::move(g));
        }
    }
    add_scaling_groups(groups, s, adapters, scratch);
    Group big = big_dir_group(s, adapters, scratch);
    if (!big.arms.empty()) groups.push_back(std::move(big));
    return groups;
}

}  // namespace packfs::bench
