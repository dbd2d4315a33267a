// The categories. Each body receives a fresh, empty target, does its setup, starts the
// clock only around the operations it reports, and leaves teardown to the target's
// destructor (untimed). Names are created and then visited in two different pseudo-random
// orders (fixed seeds): sorted or creation-order access would be the best case of many
// index structures, and the benchmark's data must not flatter the code (DESIGN §13).
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

namespace packfs::bench {
namespace {

constexpr std::size_t kMiB = 1024 * 1024;
constexpr std::size_t kSmallReadBuffer = 4096;  // what a program reading a small file passes
constexpr uint64_t kCreateSeed = 1;
constexpr uint64_t kAccessSeed = 2;
constexpr uint64_t kRemoveSeed = 3;
// The scaling section's runs: it is a ratio of two medians of the same backend, and at 5
// runs it would add a minute and a half to the default run.
constexpr int kScalingRuns = 3;

// Pseudo-random bytes: contents that no backend can compress or share by accident.
std::vector<std::byte> pattern(std::size_t size, uint64_t seed) {
    std::vector<std::byte> out(size);
    std::mt19937_64 rng(seed);
    for (auto& b : out) b = static_cast<std::byte>(rng());
    return out;
}

// The target's paths for "<dir>/<prefix><i>", i < n.
std::vector<std::string> numbered_paths(const Target& t, std::string_view dir,
                                        std::string_view prefix, std::size_t n) {
    std::vector<std::string> out;
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i) out.push_back(t.path(fmt::format("{}/{}{}", dir, prefix, i)));
    return out;
}

// The small files a category reads, stats, lists or removes: "d/file-<i>", `bytes` bytes each,
// file i stamped with i, made in the create order. Under a time budget (a disk-bound arm)
// making them stops when the budget is spent or at the files its teardown may remove, and the
// category works on the files made (it tells the budget its smaller count: the harness scales
// the run's time to n from it).
struct SmallFiles {
    std::vector<std::string> paths;  // indexed by i < n, made or not
    std::vector<bool> made;
    std::size_t count = 0;  // how many were made

    // shuffled(n, seed) without the files not made.
    std::vector<std::size_t> visit(uint64_t seed) const {
        std::vector<std::size_t> order = shuffled(paths.size(), seed);
        std::erase_if(order, [this](std::size_t i) { return !made[i]; });
        return order;
    }
};

Result<SmallFiles> make_small_files(Target& t, std::size_t files, std::size_t bytes,
                                    RunBudget& budget) {
    if (auto ok = t.mkdir(t.path("d")); !ok) return std::unexpected(ok.error());
    SmallFiles out{numbered_paths(t, "d", "file-", files), std::vector<bool>(files, false), 0};
    auto data = pattern(bytes, 7);
    budget.start();
    for (std::size_t i : shuffled(files, kCreateSeed)) {
        if (out.count > 0 && budget.spent(out.count)) break;
        stamp(data, i);
        if (auto ok = t.create_file(out.paths[i], data); !ok) return std::unexpected(ok.error());
        out.made[i] = true;
        ++out.count;
    }
    return out;
}

// A category over SmallFiles whose run counts `per_file` operations per file.
void count_made(const SmallFiles& files, RunBudget& budget, uint64_t per_file = 1) {
    if (files.count < files.paths.size()) budget.stopped_after(per_file * files.count);
}

// A short or wrong read is a failure of the operation, reported like one.
Result<void> check_read(const std::string& path, std::span<const std::byte> got,
                        std::size_t want_bytes, uint64_t want_stamp) {
    if (got.size() != want_bytes) return fail(EIO, "pread (short read)", path);
    uint64_t found = 0;
    std::memcpy(&found, got.data(), std::min(sizeof found, got.size()));
    const uint64_t mask = got.size() >= sizeof found ? ~uint64_t{0} : (uint64_t{1} << (8 * got.size())) - 1;
    if (found != (want_stamp & mask)) return fail(EIO, "pread (wrong content)", path);
    return {};
}

// --- 1-5: small files ------------------------------------------------------------------

Result<double> time_create(Target& t, const Sizes& s, RunBudget& budget) {
    if (auto ok = t.mkdir(t.path("d")); !ok) return std::unexpected(ok.error());
    const auto paths = numbered_paths(t, "d", "file-", s.files);
    const auto order = shuffled(s.files, kCreateSeed);
    auto data = pattern(s.file_bytes, 7);
    return time_each(order, budget, Leaves::entry, [&](std::size_t i) {
        stamp(data, i);
        return t.create_file(paths[i], data);
    });
}

Result<double> time_read(Target& t, const Sizes& s, RunBudget& budget) {
    auto files = make_small_files(t, s.files, s.file_bytes, budget);
    if (!files) return std::unexpected(files.error());
    count_made(*files, budget);
    const auto order = files->visit(kAccessSeed);
    std::vector<std::byte> buf(kSmallReadBuffer);
    Stopwatch clock;
    for (std::size_t i : order) {
        auto n = t.read_file(files->paths[i], buf);
        if (!n) return std::unexpected(n.error());
        if (auto ok = check_read(files->paths[i], std::span(buf).first(*n), s.file_bytes, i); !ok) {
            return std::unexpected(ok.error());
        }
    }
    return clock.seconds();
}

Result<double> time_stat(Target& t, const Sizes& s, RunBudget& budget) {
    auto files = make_small_files(t, s.files, s.file_bytes, budget);
    if (!files) return std::unexpected(files.error());
    count_made(*files, budget);
    const auto order = files->visit(kAccessSeed);
    Stopwatch clock;
    for (std::size_t i : order) {
        if (auto ok = t.stat(files->paths[i]); !ok) return std::unexpected(ok.error());
    }
    return clock.seconds();
}

// Two threads, each stat'ing every file once in its own order: n is 2 x files, so its ops/s
// against "stat files"'s is what a second reader adds (DESIGN §5: readers share nothing). Each
// thread first stats every file untimed: in "stat files" the one thread that made the files
// has them in its core's caches, and a second core starting cold would measure that instead.
Result<double> time_stat_two_threads(Target& t, const Sizes& s, RunBudget& budget) {
    auto files = make_small_files(t, s.files, s.file_bytes, budget);
    if (!files) return std::unexpected(files.error());
    count_made(*files, budget, 2);
    const std::vector<std::size_t> orders[2] = {files->visit(kAccessSeed),
                                                files->visit(kAccessSeed + 1)};
    auto stat_all = [&](std::size_t k) -> Result<void> {
        for (std::size_t i : orders[k]) {
            if (auto ok = t.stat(files->paths[i]); !ok) return std::unexpected(ok.error());
        }
        return {};
    };
    return time_threads(2, stat_all, stat_all);
}

Result<double> time_readdir(Target& t, const Sizes& s, RunBudget& budget) {
    auto files = make_small_files(t, s.files, s.file_bytes, budget);
    if (!files) return std::unexpected(files.error());
    count_made(*files, budget);
    const std::string dir = t.path("d");
    Stopwatch clock;
    auto n = t.list_dir(dir);
    const double seconds = clock.seconds();
    if (!n) return std::unexpected(n.error());
    if (*n != files->count) return fail(EIO, "readdir (wrong entry count)", dir);
    return seconds;
}

Result<double> time_unlink(Target& t, const Sizes& s, RunBudget& budget) {
    auto files = make_small_files(t, s.files, s.file_bytes, budget);
    if (!files) return std::unexpected(files.error());
    count_made(*files, budget);
    const auto order = files->visit(kAccessSeed);
    return time_each(order, budget, Leaves::nothing,
                     [&](std::size_t i) { return t.unlink(files->paths[i]); });
}

// --- 6: directories --------------------------------------------------------------------

Result<double> time_mkdir(Target& t, const Sizes& s, RunBudget& budget) {
    if (auto ok = t.mkdir(t.path("d")); !ok) return std::unexpected(ok.error());
    const auto paths = numbered_paths(t, "d", "dir-", s.dirs);
    const auto order = shuffled(s.dirs, kCreateSeed);
    return time_each(order, budget, Leaves::entry,
                     [&](std::size_t i) { return t.mkdir(paths[i]); });
}

// The setup's mkdirs stop at the budget as make_small_files's creates do.
Result<double> time_rmdir(Target& t, const Sizes& s, RunBudget& budget) {
    if (auto ok = t.mkdir(t.path("d")); !ok) return std::unexpected(ok.error());
    const auto paths = numbered_paths(t, "d", "dir-", s.dirs);
    std::vector<bool> made(s.dirs, false);
    std::size_t count = 0;
    budget.start();
    for (std::size_t i : shuffled(s.dirs, kCreateSeed)) {
        if (count > 0 && budget.spent(count)) break;
        if (auto ok = t.mkdir(paths[i]); !ok) return std::unexpected(ok.error());
        made[i] = true;
        ++count;
    }
    if (count < s.dirs) budget.stopped_after(count);
    auto order = shuffled(s.dirs, kAccessSeed);
    std::erase_if(order, [&](std::size_t i) { return !made[i]; });
    return time_each(order, budget, Leaves::nothing,
                     [&](std::size_t i) { return t.rmdir(paths[i]); });
}

// --- 7: large sequential files ---------------------------------------------------------

Result<double> time_write_large(Target& t, std::size_t mib) {
    const std::string path = t.path("big");
    auto chunk = pattern(kMiB, 11);
    Stopwatch clock;
    if (auto ok = t.write_large(path, chunk, uint64_t{mib} * kMiB); !ok) {
        return std::unexpected(ok.error());
    }
    return clock.seconds();
}

Result<double> time_read_large(Target& t, std::size_t mib) {
    const std::string path = t.path("big");
    auto chunk = pattern(kMiB, 11);
    if (auto ok = t.write_large(path, chunk, uint64_t{mib} * kMiB); !ok) {
        return std::unexpected(ok.error());
    }
    Stopwatch clock;
    auto n = t.read_large(path, chunk);
    const double seconds = clock.seconds();
    if (!n) return std::unexpected(n.error());
    if (*n != uint64_t{mib} * kMiB) return fail(EIO, "pread (short file)", path);
    return seconds;
}

// --- 9: concurrency --------------------------------------------------------------------

// `threads` threads, each `iterations` times: create its own file, read it back, unlink it.
// The threads are started and parked before the clock starts; the clock stops when the last
// one has finished.
Result<double> time_concurrent(Target& t, const Sizes& s, RunBudget& budget) {
    if (auto ok = t.mkdir(t.path("d")); !ok) return std::unexpected(ok.error());
    std::vector<std::vector<std::string>> paths(s.threads);
    std::vector<std::vector<std::byte>> data(s.threads);
    std::vector<std::vector<std::byte>> bufs(s.threads, std::vector<std::byte>(kSmallReadBuffer));
    for (std::size_t k = 0; k < s.threads; ++k) {
        paths[k] = numbered_paths(t, "d", fmt::format("t{}-", k), s.iterations);
        data[k] = pattern(s.file_bytes, 100 + k);
    }
    // Under a time budget each thread stops on its own; n counts what they all did.
    std::vector<std::size_t> done(s.threads, s.iterations);
    budget.start();
    auto seconds = time_threads(s.threads, [&](std::size_t k) -> Result<void> {
        for (std::size_t i = 0; i < s.iterations; ++i) {
            if (i > 0 && budget.spent()) {
                done[k] = i;
                break;
            }
            const std::string& path = paths[k][i];
            stamp(data[k], i);
            if (auto ok = t.create_file(path, data[k]); !ok) return ok;
            auto n = t.read_file(path, bufs[k]);
            if (!n) return std::unexpected(n.error());
            if (auto ok = check_read(path, std::span(bufs[k]).first(*n), s.file_bytes, i); !ok)
                return ok;
            if (auto ok = t.unlink(path); !ok) return ok;
        }
        return {};
    });
    const std::size_t total = std::accumulate(done.begin(), done.end(), std::size_t{0});
    if (total < s.threads * s.iterations) budget.stopped_after(uint64_t{3} * total);
    return seconds;
}

// --- million-entry directory ----------------------------------------------------------

// `entries` empty files in one directory: create them (open O_CREAT|O_EXCL + close, as
// `touch` does), list the directory, stat each, and unlink each, every step timed on its own
// and each visiting the names in its own pseudo-random order.
Result<std::vector<double>> time_big_dir(Target& t, std::size_t entries) {
    const std::string dir = t.path("d");
    if (auto ok = t.mkdir(dir); !ok) return std::unexpected(ok.error());
    const auto paths = numbered_paths(t, "d", "file-", entries);
    std::vector<double> out;
    {
        const auto order = shuffled(entries, kCreateSeed);
        Stopwatch clock;
        for (std::size_t i : order) {
            if (auto ok = t.create_empty(paths[i]); !ok) return std::unexpected(ok.error());
        }
        out.push_back(clock.seconds());
    }
    {
        Stopwatch clock;
        auto n = t.list_dir(dir);
        out.push_back(clock.seconds());
        if (!n) return std::unexpected(n.error());
        if (*n != entries) return fail(EIO, "readdir (wrong entry count)", dir);
    }
    {
        const auto order = shuffled(entries, kAccessSeed);
        Stopwatch clock;
        for (std::size_t i : order) {
            if (auto ok = t.stat(paths[i]); !ok) return std::unexpected(ok.error());
        }
        out.push_back(clock.seconds());
    }
    {
        const auto order = shuffled(entries, kRemoveSeed);
        Stopwatch clock;
        for (std::size_t i : order) {
            if (auto ok = t.unlink(paths[i]); !ok) return std::unexpected(ok.error());
        }
        out.push_back(clock.seconds());
    }
    return out;
}

// --- snapshot --------------------------------------------------------------------------

// A tree of exactly `entries` entries: d directories of entries/d - 1 empty files each,
// d the largest divisor of `entries` not above its square root (1M: 1,000 dirs of 999).
Result<void> build_tree(Backend& fs, std::size_t entries) {
    std::size_t dirs = static_cast<std::size_t>(std::sqrt(static_cast<double>(entries)));
    while (dirs > 1 && entries % dirs != 0) --dirs;
    dirs = std::max<std::size_t>(dirs, 1);
    const std::size_t files_per_dir = entries / dirs - 1;
    for (std::size_t d = 0; d < dirs; ++d) {
        const std::string dir = fmt::format("/dir-{}", d);
        if (auto ok = fs.mkdir(dir, 0755); !ok) return ok;
        for (std::size_t f = 0; f < files_per_dir; ++f) {
            auto file = fs.open(fmt::format("{}/file-{}", dir, f), O_WRONLY | O_CREAT | O_EXCL, 0644);
            if (!file) return std::unexpected(file.error());
        }
    }
    return {};
}

Result<double> time_snapshots(Backend& fs, std::size_t calls) {
    Stopwatch clock;
    for (std::size_t i = 0; i < calls; ++i) {
        auto snap = fs.snapshot();  // taken and released: both are part of the cost
        if (!snap) return std::unexpected(snap.error());
    }
    return clock.seconds();
}

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
