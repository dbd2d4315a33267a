// What the pack figures' source files share (pack_categories.cpp: compaction, random reads,
// the realistic tree walk, and the targets printout; pack_scale_categories.cpp: dedup's cost
// and the million-entry pack): seeds, file and tree makers, build options and measures.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "bench/backend_target.hpp"
#include "bench/budget.hpp"
#include "bench/pack_categories.hpp"
#include "bench/report.hpp"
#include "bench/timing.hpp"
#include "packfs/pack.hpp"

namespace packfs::bench::pack_bench {

inline constexpr std::size_t kMiB = 1024 * 1024;
inline constexpr std::size_t kSmallReadBuffer = 4096;  // as the "read files" category
inline constexpr uint64_t kCreateSeed = 1;             // the seeds of categories.cpp
inline constexpr uint64_t kAccessSeed = 2;

// Pseudo-random bytes (splitmix64): incompressible, and fast enough to fill a GiB.
inline void fill_random(std::span<std::byte> out, uint64_t seed) {
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
inline void stamp_index(std::span<std::byte> data, uint64_t index) {
    std::memcpy(data.data(), &index, std::min(sizeof index, data.size()));
}

// A short or wrong read is a failure of the operation, reported like one.
inline Result<void> check_read(const std::string& path, std::span<const std::byte> got,
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
inline Result<std::vector<bool>> make_flat_files(Target& t, std::size_t files, std::size_t bytes,
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

inline std::string flat_path(std::size_t i) {
    return fmt::format("/d/file-{}", i);
}

// A tree of exactly `entries` entries, as the snapshot category's: d directories
// "/dir-<k>" of entries/d - 1 files "file-<j>" of `bytes` bytes each (stamped, unique), d the
// largest divisor of `entries` not above its square root (1M: 1,000 dirs of 999 files).
struct TreeShape {
    std::size_t dirs = 1, files_per_dir = 0;
};

inline TreeShape shape_of(std::size_t entries) {
    std::size_t dirs = static_cast<std::size_t>(std::sqrt(static_cast<double>(entries)));
    while (dirs > 1 && entries % dirs != 0) --dirs;
    dirs = std::max<std::size_t>(dirs, 1);
    return {dirs, entries / dirs - 1};
}

inline Result<void> build_tree(Backend& fs, std::size_t entries, std::size_t bytes) {
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
inline Result<uint64_t> walk_backend(Backend& fs, const std::string& dir) {
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
inline Result<uint64_t> walk_host(const std::string& dir) {
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

inline PackWriteOptions plain_options(uint32_t format = 2) {
    PackWriteOptions o;
    o.format = format;
    o.compression = Compression::none;
    return o;
}

// The pack format versions the read groups measure, and their backend labels: "pack" is the
// default format (2), "pack v1" the format older readers need.
inline constexpr std::pair<uint32_t, const char*> kReadFormats[] = {{2, "pack"}, {1, "pack v1"}};

// The figures of one build: the whole write_pack, then its phases as PackStats times them.
inline std::vector<double> build_figures(double total, const PackStats& s) {
    return {total, s.scan_seconds, s.hash_seconds, s.data_seconds, s.finish_seconds};
}

// The measures of one build arm: the whole build and its four phases.
inline std::vector<Measure> build_measures(const std::string& name, uint64_t n, uint64_t bytes,
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

// --- pack_scale_categories.cpp ---
Group dedup_group(std::size_t files, std::size_t copies, std::size_t mib,
                  const std::string& scratch);
Group big_open_group(const Sizes& s, const std::shared_ptr<BigPack>& big,
                     const std::string& scratch);
Group big_walk_group(const Sizes& s, const std::shared_ptr<BigPack>& big,
                     const std::string& scratch);

}  // namespace packfs::bench::pack_bench
