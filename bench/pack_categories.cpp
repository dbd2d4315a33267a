// The pack figures (pack_categories.hpp): compaction, random reads, the realistic tree walk, and
// the targets printout (dedup's cost and the million-entry pack are pack_scale_categories.cpp).
// Every pack is written to the session's scratch directory and every source is built before the
// clock starts; a pack opened for reading is opened once, untimed, except where opening is the
// thing timed. Names are created in one pseudo-random order and visited in another (fixed
// seeds), as in categories.cpp.
#include "bench/pack_categories.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <optional>
#include <random>

#include "bench/analysis.hpp"
#include "bench/backend_target.hpp"
#include "bench/budget.hpp"
#include "bench/raw_target.hpp"
#include "bench/report.hpp"
#include "bench/pack_bench_shared.hpp"
#include "bench/timing.hpp"
#include "packfs/mem.hpp"
#include "packfs/pack.hpp"

namespace packfs::bench {

using namespace pack_bench;

namespace {

// --- compact N entries ----------------------------------------------------------------

Group compact_group(const Sizes& s, const std::string& scratch) {
    struct Sources {
        std::shared_ptr<Backend> fs[2][2];  // [unique][scale 1 or 4]
    };
    auto sources = std::make_shared<Sources>();
    const std::size_t n = s.pack_files;
    const std::size_t bytes = s.file_bytes;
    Group group;
    group.section = kPackSection;
    group.prepare = [sources, n, bytes]() -> Result<void> {
        for (int unique = 0; unique < 2; ++unique) {
            for (int k = 0; k < 2; ++k) {
                auto fs = make_mem_backend();
                if (!fs) return fail(ENOTSUP, "make_mem_backend");
                auto t = make_backend_target(fs);
                if (auto ok = make_flat_files(*t, n * (k == 0 ? 1 : 4), bytes, unique == 1); !ok)
                    return std::unexpected(ok.error());
                sources->fs[unique][k] = std::move(fs);
            }
        }
        return {};
    };
    group.finish = [sources] { *sources = {}; };
    for (int unique = 0; unique < 2; ++unique) {
        for (int k = 0; k < 2; ++k) {
            const uint64_t scale = k == 0 ? 1 : 4;
            const std::size_t files = n * scale;
            const std::string kind = unique ? "unique" : "identical";
            Arm arm;
            arm.category = fmt::format("compact {} {} entries", short_count(files), kind);
            arm.backend = "pack";
            arm.measures = build_measures(arm.category, files, uint64_t{files} * bytes,
                                          fmt::format("compact {} entries", kind), scale);
            const std::string out = scratch + "/compact.pack";
            arm.run_measures = [sources, unique, k, files, bytes, out,
                                scratch]() -> Result<std::vector<double>> {
                Backend& fs = *sources->fs[unique][k];
                Stopwatch clock;
                auto stats = write_pack(fs, out, plain_options());
                const double seconds = clock.seconds();
                ::unlink(out.c_str());
                settle_host_filesystem(scratch);
                if (!stats) return std::unexpected(stats.error());
                const uint64_t want_unique = unique ? uint64_t{files} * bytes : bytes;
                if (stats->regular_files != files || stats->unique_bytes != want_unique) {
                    return fail(EIO, "write_pack (wrong file count or dedup)", out);
                }
                return build_figures(seconds, *stats);
            };
            group.arms.push_back(std::move(arm));
        }
    }
    return group;
}

// --- random-read N entries from the pack ------------------------------------------------

// What the random-read group's arms read: the packs in both formats, and the raw files.
struct RandomReadState {
    std::shared_ptr<PackBackend> packs[2];    // format 1, format 2
    std::unique_ptr<Target> pack_targets[2];  // the packs through the Backend contract
    std::unique_ptr<Target> raw;
    std::vector<std::string> pack_paths, raw_paths;
    std::vector<bool> raw_made;  // the raw files made within the budget
    std::shared_ptr<RunBudget> raw_setup;
};

// The random-read group's setup: `n` files of `bytes` packed in both formats, and (`with_raw`)
// made as raw files under a disk budget of `budget_s`.
Result<void> prepare_random_read(RandomReadState& state, std::size_t n, std::size_t bytes,
                                 bool with_raw, const std::string& scratch, double budget_s) {
    auto fs = make_mem_backend();
    if (!fs) return fail(ENOTSUP, "make_mem_backend");
    auto t = make_backend_target(fs);
    if (auto ok = make_flat_files(*t, n, bytes, true); !ok) return std::unexpected(ok.error());
    for (std::size_t v = 0; v < 2; ++v) {
        const std::string path =
            fmt::format("{}/read-v{}.pack", scratch, kReadFormats[v].first);
        auto stats = write_pack(*fs, path, plain_options(kReadFormats[v].first));
        if (!stats) return std::unexpected(stats.error());
        auto pack = open_pack(path);
        if (!pack) return std::unexpected(pack.error());
        state.packs[v] = *pack;
        state.pack_targets[v] = make_backend_target(*pack);
    }
    for (std::size_t i = 0; i < n; ++i) state.pack_paths.push_back(flat_path(i));
    if (with_raw) {
        auto raw = make_raw_target(scratch, false);
        if (!raw) return std::unexpected(raw.error());
        state.raw_setup = std::make_shared<RunBudget>(budget_s);
        auto made = make_flat_files(**raw, n, bytes, true, state.raw_setup.get());
        if (!made) return std::unexpected(made.error());
        state.raw_made = std::move(*made);
        for (std::size_t i = 0; i < n; ++i)
            state.raw_paths.push_back((*raw)->path(fmt::format("d/file-{}", i)));
        state.raw = std::move(*raw);
        settle_host_filesystem(scratch);
    }
    return {};
}

// One run of the read_view arm on the pack of format index `v`: every file's first bytes as a
// view of the mapping, in the access order.
Result<double> time_read_view(const RandomReadState& state, std::size_t n, std::size_t bytes,
                              std::size_t v) {
    const auto order = shuffled(n, kAccessSeed);
    std::string buffer;
    PackBackend& backend = *state.packs[v];
    Stopwatch clock;
    for (std::size_t i : order) {
        const std::string& path = state.pack_paths[i];
        auto got = backend.read_view(path, 0, kSmallReadBuffer, buffer);
        if (!got) return std::unexpected(got.error());
        if (auto ok = check_read(path, *got, bytes, i); !ok)
            return std::unexpected(ok.error());
    }
    return clock.seconds();
}

Group random_read_group(const Sizes& s, bool with_raw, const std::string& scratch) {
    auto state = std::make_shared<RandomReadState>();
    const std::size_t n = s.pack_files;
    const std::size_t bytes = s.file_bytes;
    Group group;
    group.section = kPackSection;
    group.warmup_runs = 1;
    // The raw files are made once for every run, by a disk-bound setup: bounded as the main
    // table's raw arms are (20,000 files took a minute to make and remove on a busy disk).
    const double budget_s = s.disk_budget_s;
    group.prepare = [state, n, bytes, with_raw, scratch, budget_s]() -> Result<void> {
        return prepare_random_read(*state, n, bytes, with_raw, scratch, budget_s);
    };
    group.finish = [state, scratch] {
        *state = {};
        for (int v = 1; v <= 2; ++v) ::unlink(fmt::format("{}/read-v{}.pack", scratch, v).c_str());
    };
    const std::string name = fmt::format("random-read {} entries", short_count(n));
    // open + pread + close, through the Backend contract (a pack) or the syscalls (raw; the
    // files its setup made).
    auto read_all = [state, n, bytes](bool raw, std::size_t version = 0) -> Result<double> {
        Target& t = raw ? *state->raw : *state->pack_targets[version];
        const std::vector<std::string>& paths = raw ? state->raw_paths : state->pack_paths;
        auto order = shuffled(n, kAccessSeed);
        if (raw) std::erase_if(order, [&](std::size_t i) { return !state->raw_made[i]; });
        std::vector<std::byte> buf(kSmallReadBuffer);
        Stopwatch clock;
        for (std::size_t i : order) {
            auto got = t.read_file(paths[i], buf);
            if (!got) return std::unexpected(got.error());
            if (auto ok = check_read(paths[i], std::span(buf).first(*got), bytes, i); !ok) {
                return std::unexpected(ok.error());
            }
        }
        return clock.seconds();
    };
    std::vector<std::size_t> view_arms;
    for (std::size_t v = 0; v < 2; ++v) {
        Arm pack;
        pack.category = name;
        pack.backend = kReadFormats[v].second;
        pack.n = n;
        pack.bytes = uint64_t{n} * bytes;
        pack.run_once = [read_all, v] { return read_all(false, v); };
        group.arms.push_back(std::move(pack));

        Arm view;
        view.category = name + ", read_view";
        view.backend = kReadFormats[v].second;
        view.n = n;
        view.bytes = uint64_t{n} * bytes;
        view.run_once = [state, n, bytes, v] { return time_read_view(*state, n, bytes, v); };
        view_arms.push_back(group.arms.size());
        group.arms.push_back(std::move(view));
    }

    if (with_raw) {
        Arm raw;
        raw.category = name;
        raw.backend = "raw";
        raw.n = n;
        raw.bytes = uint64_t{n} * bytes;
        // Cut where the setup was: the harness scales its time to n (marked *).
        auto budget = std::make_shared<RunBudget>(s.disk_budget_s);
        if (budget->limited()) raw.budget = budget;
        raw.run_once = [read_all, state, budget] {
            budget->cut_as(*state->raw_setup);
            return read_all(true);
        };
        group.baseline = group.arms.size();
        group.arms.push_back(std::move(raw));
        // The read_view rows are compared with raw's open/pread/close of the same files.
        for (std::size_t a : view_arms) group.arms[a].baseline = group.baseline;
    }
    return group;
}

// --- walk a realistic tree ----------------------------------------------------------------

// Entries under a host directory (without itself), or nullopt when it cannot be walked.
std::optional<uint64_t> count_host_tree(const std::string& dir) {
    struct ::stat st;
    if (dir.empty() || ::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return std::nullopt;
    auto n = walk_host(dir);
    if (!n) return std::nullopt;
    return *n;
}

Group walk_tree_group(const Sizes& s, bool with_raw, const std::string& scratch, uint64_t entries) {
    struct State {
        std::shared_ptr<PackBackend> packs[2];  // format 1, format 2
    };
    auto state = std::make_shared<State>();
    const std::string tree = s.pack_tree;
    Group group;
    group.section = kPackSection;
    group.warmup_runs = 1;  // warm: the dentry cache for raw, the checked blocks for the pack
    group.prepare = [state, tree, scratch]() -> Result<void> {
        for (std::size_t v = 0; v < 2; ++v) {
            const std::string path =
                fmt::format("{}/tree-v{}.pack", scratch, kReadFormats[v].first);
            auto stats = write_pack_from_host(tree, path, plain_options(kReadFormats[v].first));
            if (!stats) return std::unexpected(stats.error());
            auto pack = open_pack(path);
            if (!pack) return std::unexpected(pack.error());
            state->packs[v] = *pack;
        }
        return {};
    };
    group.finish = [state, scratch] {
        *state = {};
        for (int v = 1; v <= 2; ++v) ::unlink(fmt::format("{}/tree-v{}.pack", scratch, v).c_str());
    };
    const std::string name = fmt::format("walk {} ({}-entry tree)", tree, short_count(entries));
    auto check = [entries, tree](Result<uint64_t> n) -> Result<void> {
        if (!n) return std::unexpected(n.error());
        if (*n != entries)
            return fail(EIO, "walk (entry count changed: the tree changed during the run)", tree);
        return {};
    };
    for (std::size_t v = 0; v < 2; ++v) {
        Arm pack;
        pack.category = name;
        pack.backend = kReadFormats[v].second;
        pack.n = entries;
        pack.run_once = [state, check, v]() -> Result<double> {
            Stopwatch clock;
            auto n = walk_backend(*state->packs[v], "/");
            const double seconds = clock.seconds();
            if (auto ok = check(n); !ok) return std::unexpected(ok.error());
            return seconds;
        };
        group.arms.push_back(std::move(pack));
    }
    if (with_raw) {
        Arm raw;
        raw.category = name;
        raw.backend = "raw";
        raw.n = entries;
        raw.run_once = [tree, check]() -> Result<double> {
            Stopwatch clock;
            auto n = walk_host(tree);
            const double seconds = clock.seconds();
            if (auto ok = check(n); !ok) return std::unexpected(ok.error());
            return seconds;
        };
        group.baseline = group.arms.size();
        group.arms.push_back(std::move(raw));
    }
    return group;
}

// --- targets ------------------------------------------------------------------------------

std::string met(bool ok) {
    return ok ? "met" : "MISSED";
}

}  // namespace

std::vector<Group> pack_groups(const Sizes& s, bool with_raw, const std::string& scratch) {
    std::vector<Group> groups;
    groups.push_back(compact_group(s, scratch));
    groups.push_back(random_read_group(s, with_raw, scratch));
    if (auto entries = count_host_tree(s.pack_tree); entries && *entries > 0) {
        groups.push_back(walk_tree_group(s, with_raw, scratch, *entries));
    }
    if (s.dedup_files > 0)
        groups.push_back(dedup_group(s.dedup_files, s.dedup_copies, s.dedup_mib, scratch));
    auto big = std::make_shared<BigPack>();
    groups.push_back(big_open_group(s, big, scratch));
    groups.push_back(big_walk_group(s, big, scratch));
    if (s.dedup_large_files > 0) {
        Group large = dedup_group(s.dedup_large_files, s.dedup_large_copies, s.dedup_mib, scratch);
        large.section = kBigPackSection;
        large.opt_in = true;
        large.max_runs = s.pack_big_runs;
        for (Arm& a : large.arms) {
            for (Measure& m : a.measures)
                m.plain = m.category;  // only the section's name selects it
        }
        groups.push_back(std::move(large));
    }
    return groups;
}

void print_pack_targets(std::FILE* out, std::span<const Figure> figures) {
    std::vector<std::string> lines;
    // Compaction: 80k unique entries <= 0.03 s; O(n) from N to 4N.
    for (const Figure& f : figures) {
        if (f.backend != "pack" || f.scale != 4 || f.scale_key != "compact unique entries")
            continue;
        lines.push_back(fmt::format("{} <= 30 ms: {} ({} entries/s, {:.1f} MB/s): {}", f.category,
                                    duration_text(f.median_s), fmt::format("{:.0f}", f.ops_per_s),
                                    f.mb_per_s.value_or(0), met(f.median_s <= 0.030)));
    }
    for (const ScalingStep& st : scaling_steps(figures)) {
        if (st.backend != "pack" || !st.key.starts_with("compact") ||
            st.key.find(':') != std::string::npos)
            continue;
        lines.push_back(fmt::format("{} {} -> {}: 4N/N = {:.2f}, closest {}: O(n) {}", st.key,
                                    short_count(st.n_small), short_count(st.n_large), st.ratio,
                                    st.verdict, met(st.verdict == "O(n)")));
    }
    // Random reads: >= 10 M ops/s.
    for (const Figure& f : figures) {
        if (f.backend != "pack" || !f.category.starts_with("random-read")) continue;
        lines.push_back(
            fmt::format("{} >= 10 M ops/s: {:.2f} M ops/s ({} per op{}): {}", f.category,
                        f.ops_per_s / 1e6, duration_text(f.median_s / static_cast<double>(f.n)),
                        f.speedup ? fmt::format(", {} than raw", ratio_text(*f.speedup)) : "",
                        met(f.ops_per_s >= 10e6)));
    }
    // Opening the 1M-entry pack: < 5 ms.
    for (const Figure& f : figures) {
        if (f.section != kBigPackSection || f.category.find(": open") == std::string::npos)
            continue;
        const double per = f.median_s / static_cast<double>(f.n);
        lines.push_back(
            fmt::format("{} < 5 ms: {}: {}", f.category, duration_text(per), met(per < 0.005)));
    }
    // Walks: <= 150 ns per entry.
    for (const Figure& f : figures) {
        if (f.backend != "pack" || f.category.find("walk") == std::string::npos) continue;
        const double per = f.median_s / static_cast<double>(f.n);
        lines.push_back(fmt::format(
            "{} <= 150 ns per entry: {}{}: {}", f.category, duration_text(per),
            f.speedup ? fmt::format(" ({} than {})", ratio_text(*f.speedup), f.baseline_name) : "",
            met(per <= 150e-9)));
    }
    // Dedup: build throughput >= 1.5 GiB/s; dedup / no dedup <= 1.2.
    for (const Figure& f : figures) {
        if (f.backend != "pack" || !f.category.starts_with("build ") || f.bytes == 0) continue;
        const double gib_s = static_cast<double>(f.bytes) / (1024.0 * 1024 * 1024) / f.median_s;
        lines.push_back(
            fmt::format("{} >= 1.5 GiB/s: {:.2f} GiB/s: {}", f.category, gib_s, met(gib_s >= 1.5)));
        if (f.speedup) {
            lines.push_back(fmt::format("{}: time with dedup / without <= 1.2: {:.2f}: {}",
                                        f.category, 1 / *f.speedup, met(1 / *f.speedup <= 1.2)));
        }
    }
    if (lines.empty()) return;
    fmt::print(out, "\ntargets (issue 4, packs):\n");
    for (const auto& l : lines) fmt::print(out, "  {}\n", l);
    std::fflush(out);
}

}  // namespace packfs::bench
