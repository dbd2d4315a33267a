// The pack figures of dedup's cost during a build and of the million-entry pack
// (pack_categories.hpp; the others are pack_categories.cpp). As there, every source is built
// before the clock starts.
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

#include "bench/pack_bench_shared.hpp"

namespace packfs::bench::pack_bench {

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

}  // namespace packfs::bench::pack_bench
