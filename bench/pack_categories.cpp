// The pack figures (pack_categories.hpp). Every pack is written to the session's scratch
// directory and every source is built before the clock starts; a pack opened for reading is
// opened once, untimed, except where opening is the thing timed. Names are created in one
// pseudo-random order and visited in another (fixed seeds), as in categories.cpp.
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
#include "bench/timing.hpp"
#include "packfs/mem.hpp"
#include "packfs/pack.hpp"

namespace packfs::bench {
namespace {

constexpr std::size_t kMiB = 1024 * 1024;
constexpr std::size_t kSmallReadBuffer = 4096;  // as the "read files" category
constexpr uint64_t kCreateSeed = 1;             // the seeds of categories.cpp
constexpr uint64_t kAccessSeed = 2;

// Pseudo-random bytes (splitmix64): incompressible, and fast enough to fill a GiB.
void fill_random(std::span<std::byte> out, uint64_t seed) {
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
    std::size_t i = 0;
    auto next = [&x] {
        x += 0x9E3779B97F4A7C15ull;
        uint64_t z = x;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    };
    for (; i + 8 <= out.size(); i += 8) {
        const uint64_t z = next();
        std::memcpy(out.data() + i, &z, 8);
    }
    if (i < out.size()) {
        const uint64_t z = next();
        std::memcpy(out.data() + i, &z, out.size() - i);
    }
}

// The first 8 bytes of `data` set to `index` (fewer if shorter): no two files share content.
void stamp_index(std::span<std::byte> data, uint64_t index) {
    std::memcpy(data.data(), &index, std::min(sizeof index, data.size()));
}

// A short or wrong read is a failure of the operation, reported like one.
Result<void> check_read(const std::string& path, std::span<const std::byte> got,
                        std::size_t want_bytes, uint64_t want_stamp) {
    if (got.size() != want_bytes) return fail(EIO, "pread (short read)", path);
    uint64_t found = 0;
    std::memcpy(&found, got.data(), std::min(sizeof found, got.size()));
    const uint64_t mask =
        got.size() >= sizeof found ? ~uint64_t{0} : (uint64_t{1} << (8 * got.size())) - 1;
    if (found != (want_stamp & mask)) return fail(EIO, "pread (wrong content)", path);
    return {};
}

// "d/file-<i>" for i < files, `bytes` each, created in the create order; every file stamped
// with its index (unique) or all alike (identical). Under a `budget` (a disk-bound target)
// making them stops when it is spent or at the files its teardown may remove (budget.hpp).
// Returns which of them were made (with a budget, the first of the create order).
Result<std::vector<bool>> make_flat_files(Target& t, std::size_t files, std::size_t bytes,
                                          bool unique, RunBudget* budget = nullptr) {
    if (auto ok = t.mkdir(t.path("d")); !ok) return std::unexpected(ok.error());
    std::vector<std::byte> data(bytes);
    fill_random(data, 7);
    std::vector<bool> made(files, false);
    std::size_t count = 0;
    if (budget) {
        budget->reset();
        budget->start();
    }
    for (std::size_t i : shuffled(files, kCreateSeed)) {
        if (budget && count > 0 && budget->spent(count)) break;
        if (unique) stamp_index(data, i);
        if (auto ok = t.create_file(t.path(fmt::format("d/file-{}", i)), data); !ok)
            return std::unexpected(ok.error());
        made[i] = true;
        ++count;
    }
    if (budget && count < files) budget->stopped_after(count);
    return made;
}

std::string flat_path(std::size_t i) {
    return fmt::format("/d/file-{}", i);
}

// A tree of exactly `entries` entries, as the snapshot category's: d directories
// "/dir-<k>" of entries/d - 1 files "file-<j>" of `bytes` bytes each (stamped, unique), d the
// largest divisor of `entries` not above its square root (1M: 1,000 dirs of 999 files).
struct TreeShape {
    std::size_t dirs = 1, files_per_dir = 0;
};

TreeShape shape_of(std::size_t entries) {
    std::size_t dirs = static_cast<std::size_t>(std::sqrt(static_cast<double>(entries)));
    while (dirs > 1 && entries % dirs != 0) --dirs;
    dirs = std::max<std::size_t>(dirs, 1);
    return {dirs, entries / dirs - 1};
}

Result<void> build_tree(Backend& fs, std::size_t entries, std::size_t bytes) {
    const TreeShape shape = shape_of(entries);
    std::vector<std::byte> data(bytes);
    fill_random(data, 9);
    uint64_t index = 0;
    for (std::size_t d : shuffled(shape.dirs, kCreateSeed)) {
        const std::string dir = fmt::format("/dir-{}", d);
        if (auto ok = fs.mkdir(dir, 0755); !ok) return ok;
        for (std::size_t f = 0; f < shape.files_per_dir; ++f) {
            auto file =
                fs.open(fmt::format("{}/file-{}", dir, f), O_WRONLY | O_CREAT | O_EXCL, 0644);
            if (!file) return std::unexpected(file.error());
            stamp_index(data, index++);
            auto n = (*file)->pwrite(data, 0);
            if (!n) return std::unexpected(n.error());
        }
    }
    return {};
}

// readdir + lstat of every entry under `dir` (a Backend), recursively; returns the entries.
Result<uint64_t> walk_backend(Backend& fs, const std::string& dir) {
    auto entries = fs.readdir(dir);
    if (!entries) return std::unexpected(entries.error());
    uint64_t count = 0;
    std::string child;
    for (const DirEntry& e : *entries) {
        child.assign(dir);
        if (dir.size() > 1) child += '/';
        child += e.name;
        auto st = fs.lstat(child);
        if (!st) return std::unexpected(st.error());
        ++count;
        if (st->type == FileType::directory) {
            auto below = walk_backend(fs, child);
            if (!below) return below;
            count += *below;
        }
    }
    return count;
}

// The same through the host's syscalls: opendir/readdir/closedir and lstat of each path.
Result<uint64_t> walk_host(const std::string& dir) {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return fail(errno, "opendir", dir);
    uint64_t count = 0;
    std::string child;
    Result<uint64_t> out = uint64_t{0};
    errno = 0;
    while (const dirent* e = ::readdir(d)) {
        const char* name = e->d_name;
        if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) continue;
        child.assign(dir);
        child += '/';
        child += name;
        struct ::stat st;
        if (::lstat(child.c_str(), &st) != 0) {
            out = fail(errno, "lstat", child);
            break;
        }
        ++count;
        if (S_ISDIR(st.st_mode)) {
            auto below = walk_host(child);
            if (!below) {
                out = below;
                break;
            }
            count += *below;
        }
        errno = 0;
    }
    if (out && errno != 0) out = fail(errno, "readdir", dir);
    ::closedir(d);
    if (!out) return out;
    return count;
}

PackWriteOptions plain_options(uint32_t format = 2) {
    PackWriteOptions o;
    o.format = format;
    o.compression = Compression::none;
    return o;
}

// The pack format versions the read groups measure, and their backend labels: "pack" is the
// default format (2), "pack v1" the format older readers need.
constexpr std::pair<uint32_t, const char*> kReadFormats[] = {{2, "pack"}, {1, "pack v1"}};

// The figures of one build: the whole write_pack, then its phases as PackStats times them.
std::vector<double> build_figures(double total, const PackStats& s) {
    return {total, s.scan_seconds, s.hash_seconds, s.data_seconds, s.finish_seconds};
}

// The measures of one build arm: the whole build and its four phases.
std::vector<Measure> build_measures(const std::string& name, uint64_t n, uint64_t bytes,
                                    const std::string& scale_key, uint64_t scale) {
    std::vector<Measure> out;
    out.push_back(Measure{name, n, bytes, {}, scale_key, scale});
    for (const char* phase : {"scan", "hash+dedup", "data", "metadata+commit"}) {
        out.push_back(
            Measure{fmt::format("{}: {}", name, phase),
                    n,
                    0,
                    {},
                    scale_key.empty() ? std::string() : fmt::format("{}: {}", scale_key, phase),
                    scale});
    }
    return out;
}

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

Group random_read_group(const Sizes& s, bool with_raw, const std::string& scratch) {
    struct State {
        std::shared_ptr<PackBackend> packs[2];    // format 1, format 2
        std::unique_ptr<Target> pack_targets[2];  // the packs through the Backend contract
        std::unique_ptr<Target> raw;
        std::vector<std::string> pack_paths, raw_paths;
        std::vector<bool> raw_made;  // the raw files made within the budget
        std::shared_ptr<RunBudget> raw_setup;
    };
    auto state = std::make_shared<State>();
    const std::size_t n = s.pack_files;
    const std::size_t bytes = s.file_bytes;
    Group group;
    group.section = kPackSection;
    group.warmup_runs = 1;
    // The raw files are made once for every run, by a disk-bound setup: bounded as the main
    // table's raw arms are (20,000 files took a minute to make and remove on a busy disk).
    const double budget_s = s.disk_budget_s;
    group.prepare = [state, n, bytes, with_raw, scratch, budget_s]() -> Result<void> {
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
            state->packs[v] = *pack;
            state->pack_targets[v] = make_backend_target(*pack);
        }
        for (std::size_t i = 0; i < n; ++i) state->pack_paths.push_back(flat_path(i));
        if (with_raw) {
            auto raw = make_raw_target(scratch, false);
            if (!raw) return std::unexpected(raw.error());
            state->raw_setup = std::make_shared<RunBudget>(budget_s);
            auto made = make_flat_files(**raw, n, bytes, true, state->raw_setup.get());
            if (!made) return std::unexpected(made.error());
            state->raw_made = std::move(*made);
            for (std::size_t i = 0; i < n; ++i)
                state->raw_paths.push_back((*raw)->path(fmt::format("d/file-{}", i)));
            state->raw = std::move(*raw);
            settle_host_filesystem(scratch);
        }
        return {};
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
        view.run_once = [state, n, bytes, v]() -> Result<double> {
            const auto order = shuffled(n, kAccessSeed);
            std::string buffer;
            PackBackend& backend = *state->packs[v];
            Stopwatch clock;
            for (std::size_t i : order) {
                const std::string& path = state->pack_paths[i];
                auto got = backend.read_view(path, 0, kSmallReadBuffer, buffer);
                if (!got) return std::unexpected(got.error());
                if (auto ok = check_read(path, *got, bytes, i); !ok)
                    return std::unexpected(ok.error());
            }
            return clock.seconds();
        };
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

// --- dedup's cost during a build -----------------------------------------------------------

// `files` files of `mib` MiB of random bytes and `copies` exact copies of some of them,
// built with dedup and without; the ratio is against the build without.
Group dedup_group(std::size_t files, std::size_t copies, std::size_t mib,
                  const std::string& scratch) {
    struct State {
        std::shared_ptr<Backend> fs;
    };
    auto state = std::make_shared<State>();
    copies = std::min(copies, files);
    const uint64_t file_bytes = uint64_t{mib} * kMiB;
    const uint64_t total = (files + copies) * file_bytes;
    Group group;
    group.section = kPackSection;
    group.prepare = [state, files, copies, file_bytes]() -> Result<void> {
        auto fs = make_mem_backend();
        if (!fs) return fail(ENOTSUP, "make_mem_backend");
        for (const char* dir : {"/data", "/copies"}) {
            if (auto ok = fs->mkdir(dir, 0755); !ok) return ok;
        }
        std::vector<std::byte> chunk(kMiB);
        auto write = [&](const std::string& path, uint64_t seed) -> Result<void> {
            auto file = fs->open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
            if (!file) return std::unexpected(file.error());
            for (uint64_t at = 0; at < file_bytes; at += chunk.size()) {
                fill_random(chunk, seed * 1'000'003 + at / chunk.size());
                const std::size_t len =
                    static_cast<std::size_t>(std::min<uint64_t>(chunk.size(), file_bytes - at));
                auto n = (*file)->pwrite(std::span(chunk).first(len), at);
                if (!n) return std::unexpected(n.error());
            }
            return {};
        };
        for (std::size_t i = 0; i < files; ++i) {
            if (auto ok = write(fmt::format("/data/file-{}", i), i + 1); !ok) return ok;
        }
        // The copies are of every (files / copies)-th file, under other names.
        for (std::size_t j = 0; j < copies; ++j) {
            const std::size_t of = j * (files / std::max<std::size_t>(copies, 1));
            if (auto ok = write(fmt::format("/copies/copy-{}", j), of + 1); !ok) return ok;
        }
        state->fs = std::move(fs);
        return {};
    };
    group.finish = [state] { *state = {}; };
    const std::string size =
        total >= 1024 * kMiB
            ? fmt::format("{:.3g} GiB", static_cast<double>(total) / (1024.0 * kMiB))
            : fmt::format("{} MiB", total / kMiB);
    const std::string base = fmt::format("build {} files ({}, {} {})", files + copies, size, copies,
                                         copies == 1 ? "copy" : "copies");
    for (bool dedup : {true, false}) {
        Arm arm;
        arm.category = base + (dedup ? ", dedup" : ", no dedup");
        arm.backend = "pack";
        arm.measures = build_measures(arm.category, files + copies, total, {}, 0);
        const std::string out = scratch + "/dedup.pack";
        arm.run_measures = [state, dedup, out, scratch, file_bytes,
                            files]() -> Result<std::vector<double>> {
            PackWriteOptions o = plain_options();
            o.dedup = dedup;
            Stopwatch clock;
            auto stats = write_pack(*state->fs, out, o);
            const double seconds = clock.seconds();
            ::unlink(out.c_str());
            settle_host_filesystem(scratch);
            if (!stats) return std::unexpected(stats.error());
            if (dedup && stats->unique_bytes != files * file_bytes) {
                return fail(EIO, "write_pack (copies not deduplicated)", out);
            }
            return build_figures(seconds, *stats);
        };
        group.arms.push_back(std::move(arm));
    }
    group.baseline = 1;
    group.baseline_label = "no dedup";
    return group;
}

// --- the million-entry pack -----------------------------------------------------------------

// Built once per invocation by whichever of its groups runs first, kept in the scratch
// directory until the last one is done: the large pack, a small one of N entries of the same
// shape (the O(1) check of opening), and the mem backend the large one was built from (the
// walk's peer).
struct BigPack {
    std::string large_path, small_path;
    std::string lookup_large, lookup_small;  // one file of each
    std::shared_ptr<Backend> source;
    std::size_t entries = 0;
    PackStats built;
    double build_seconds = 0;
    bool ready = false;
};

Result<void> ensure_big_pack(BigPack& big, const Sizes& s, const std::string& scratch) {
    if (big.ready) return {};
    big.large_path = scratch + "/big.pack";
    big.small_path = scratch + "/small.pack";
    for (auto [entries, path, lookup] :
         {std::tuple{s.pack_big, &big.large_path, &big.lookup_large},
          std::tuple{s.pack_files, &big.small_path, &big.lookup_small}}) {
        auto fs = make_mem_backend();
        if (!fs) return fail(ENOTSUP, "make_mem_backend");
        if (auto ok = build_tree(*fs, entries, s.file_bytes); !ok) return ok;
        Stopwatch clock;
        auto stats = write_pack(*fs, *path, plain_options());
        if (!stats) return std::unexpected(stats.error());
        const TreeShape shape = shape_of(entries);
        *lookup = fmt::format("/dir-{}/file-{}", shape.dirs / 2, shape.files_per_dir / 2);
        if (entries == s.pack_big) {
            big.build_seconds = clock.seconds();
            big.built = *stats;
            big.source = std::move(fs);
        }
    }
    big.entries = s.pack_big;
    big.ready = true;
    return {};
}

Group big_open_group(const Sizes& s, const std::shared_ptr<BigPack>& big,
                     const std::string& scratch) {
    Group group;
    group.section = kBigPackSection;
    group.opt_in = true;
    group.max_runs = s.pack_big_runs;
    group.warmup_runs = 1;
    group.prepare = [big, s, scratch] { return ensure_big_pack(*big, s, scratch); };
    const std::size_t opens = s.pack_opens;
    auto arm = [&](std::size_t entries, bool lookup) {
        const bool large = entries == s.pack_big;
        Arm a;
        a.category = fmt::format("{}-entry pack: open + stat /{}", short_count(entries),
                                 lookup ? " + lookup" : "");
        a.plain = lookup ? "open + stat / + lookup" : "open + stat /";
        a.backend = "pack";
        a.n = opens;
        a.run_once = [big, large, lookup, opens]() -> Result<double> {
            const std::string& path = large ? big->large_path : big->small_path;
            const std::string& file = large ? big->lookup_large : big->lookup_small;
            std::vector<std::shared_ptr<PackBackend>> opened;
            opened.reserve(opens);
            Stopwatch clock;
            for (std::size_t i = 0; i < opens; ++i) {
                auto pack = open_pack(path);
                if (!pack) return std::unexpected(pack.error());
                auto root = (*pack)->stat("/");
                if (!root) return std::unexpected(root.error());
                if (lookup) {
                    auto st = (*pack)->stat(file);
                    if (!st) return std::unexpected(st.error());
                }
                opened.push_back(std::move(*pack));
            }
            const double seconds = clock.seconds();
            opened.clear();  // unmapping is not part of opening
            return seconds;
        };
        return a;
    };
    group.arms.push_back(arm(s.pack_files, false));
    group.arms.push_back(arm(s.pack_big, false));
    group.arms.push_back(arm(s.pack_big, true));
    group.baseline = 0;
    group.baseline_label = fmt::format("{}-entry pack", short_count(s.pack_files));
    return group;
}

Group big_walk_group(const Sizes& s, const std::shared_ptr<BigPack>& big,
                     const std::string& scratch) {
    struct Opened {
        std::shared_ptr<PackBackend> pack;
    };
    auto opened = std::make_shared<Opened>();
    Group group;
    group.section = kBigPackSection;
    group.opt_in = true;
    group.max_runs = s.pack_big_runs;
    group.warmup_runs = 1;  // warm: every metadata block checked once before the timed runs
    group.prepare = [big, opened, s, scratch]() -> Result<void> {
        if (auto ok = ensure_big_pack(*big, s, scratch); !ok) return ok;
        auto pack = open_pack(big->large_path);
        if (!pack) return std::unexpected(pack.error());
        opened->pack = *pack;
        return {};
    };
    group.finish = [big, opened] {
        opened->pack.reset();
        *big = {};
    };
    const std::size_t entries = s.pack_big;
    const std::string name = fmt::format("{}-entry pack: walk", short_count(entries));
    auto run = [entries, name](Backend& fs) -> Result<double> {
        Stopwatch clock;
        auto n = walk_backend(fs, "/");
        const double seconds = clock.seconds();
        if (!n) return std::unexpected(n.error());
        if (*n != entries) return fail(EIO, "walk (wrong entry count)", name);
        return seconds;
    };
    Arm pack;
    pack.category = name;
    pack.plain = "walk";
    pack.backend = "pack";
    pack.n = entries;
    pack.run_once = [opened, run] { return run(*opened->pack); };
    group.arms.push_back(std::move(pack));
    Arm mem;
    mem.category = name;
    mem.plain = "walk";
    mem.backend = "mem";
    mem.n = entries;
    mem.run_once = [big, run] { return run(*big->source); };
    group.arms.push_back(std::move(mem));
    group.baseline = 1;
    group.baseline_label = "mem";
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
