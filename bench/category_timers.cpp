// The categories' timed operations (category_timers.hpp). Each body receives a fresh, empty
// target, does its setup, starts the clock only around the operations it reports, and leaves
// teardown to the target's destructor (untimed). Names are created and then visited in two
// different pseudo-random orders (fixed seeds): sorted or creation-order access would be the
// best case of many index structures, and the benchmark's data must not flatter the code
// (DESIGN §13).
#include "bench/category_timers.hpp"

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

namespace packfs::bench::category_timers {


constexpr std::size_t kSmallReadBuffer = 4096;  // what a program reading a small file passes
constexpr uint64_t kCreateSeed = 1;
constexpr uint64_t kAccessSeed = 2;
constexpr uint64_t kRemoveSeed = 3;

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

}  // namespace packfs::bench::category_timers
