// The volume figures of an overlay over a pack: reads (stat, read, readdir) and the copy-up of
// one byte of a large lower file (volume_categories.hpp; the others are volume_categories.cpp
// and volume_compaction.cpp). As there, everything a run needs is made before its clock starts
// and removed after it stops.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <numeric>
#include <optional>
#include <thread>

#include "bench/backend_target.hpp"
#include "bench/raw_target.hpp"
#include "bench/report.hpp"
#include "bench/stats.hpp"
#include "bench/timing.hpp"
#include "bench/volume_bench_shared.hpp"
#include "packfs/mem.hpp"
#include "packfs/overlay.hpp"
#include "packfs/pack.hpp"
#include "packfs/volume.hpp"

namespace packfs::bench::volume_bench {

// --- overlay over a pack: stat, read, readdir ------------------------------------------------

// One arm's view: the backend, and the files it holds in the order they are visited.
struct Layer {
    std::unique_ptr<Target> target;
    std::vector<std::string> paths;
    std::vector<uint64_t> stamps;  // each path's index (its content's first 8 bytes)
};

struct OverlayState {
    std::shared_ptr<PackBackend> pack;
    Layer layers[3];  // the pack, an overlay with an empty upper, one with changes
};

Result<std::shared_ptr<PackBackend>> build_flat_pack(std::size_t files, std::size_t bytes,
                                                     const std::string& path) {
    {
        auto fs = make_mem_backend();
        if (auto ok = fs->mkdir("/d", 0755); !ok) return std::unexpected(ok.error());
        auto t = make_backend_target(fs);
        std::vector<std::byte> data(bytes);
        fill_random(data, 7);
        for (std::size_t i : shuffled(files, kCreateSeed)) {
            stamp(data, i);
            if (auto ok = t->create_file(fmt::format("/d/file-{}", i), data); !ok)
                return std::unexpected(ok.error());
        }
        PackWriteOptions o;
        o.compression = Compression::none;
        if (auto stats = write_pack(*fs, path, o); !stats) return std::unexpected(stats.error());
    }
    auto pack = open_pack(path);
    if (!pack) return std::unexpected(pack.error());
    return *pack;
}

// Over `overlay`: rewrites 1% of the files (new content, same index stamp, so the read check
// still holds: each a copy-up) and deletes another 1% (whiteouts); returns which were deleted.
Result<std::vector<bool>> change_overlay(Backend& overlay, std::size_t files, std::size_t bytes) {
    const std::size_t each = std::max<std::size_t>(files / 100, 1);
    const auto order = shuffled(files, kChangeSeed);
    std::vector<bool> deleted(files, false);
    std::vector<std::byte> data(bytes);
    fill_random(data, 11);
    for (std::size_t j = 0; j < 2 * each && j < order.size(); ++j) {
        const std::size_t i = order[j];
        const std::string path = fmt::format("/d/file-{}", i);
        if (j >= each) {
            if (auto ok = overlay.unlink(path); !ok) return std::unexpected(ok.error());
            deleted[i] = true;
            continue;
        }
        auto file = overlay.open(path, O_WRONLY, 0);
        if (!file) return std::unexpected(file.error());
        stamp(data, i);
        if (auto n = (*file)->pwrite(data, 0); !n) return std::unexpected(n.error());
    }
    // Did the changes take? A deleted file is gone, a written one reads the new bytes.
    if (overlay.stat(fmt::format("/d/file-{}", order[each])))
        return fail(EIO, "unlink (file still there)", fmt::format("/d/file-{}", order[each]));
    auto written = read_file(overlay, fmt::format("/d/file-{}", order[0]));
    if (!written) return std::unexpected(written.error());
    stamp(data, order[0]);
    if (written->size() != bytes || std::memcmp(written->data(), data.data(), bytes) != 0)
        return fail(EIO, "pwrite (overlay kept the lower's bytes)", fmt::format("/d/file-{}", order[0]));
    return deleted;
}

void fill_layer(Layer& layer, std::shared_ptr<Backend> fs, std::size_t files,
                const std::vector<bool>& deleted) {
    layer.target = make_backend_target(std::move(fs));
    for (std::size_t i : shuffled(files, kAccessSeed)) {
        if (!deleted.empty() && deleted[i]) continue;
        layer.paths.push_back(fmt::format("/d/file-{}", i));
        layer.stamps.push_back(i);
    }
}

Result<void> prepare_overlays(OverlayState& st, std::size_t files, std::size_t bytes,
                              const std::string& pack_path) {
    auto pack = build_flat_pack(files, bytes, pack_path);
    if (!pack) return std::unexpected(pack.error());
    st.pack = *pack;
    auto empty = make_overlay(st.pack);
    if (!empty) return std::unexpected(empty.error());
    auto changed = make_overlay(st.pack);
    if (!changed) return std::unexpected(changed.error());
    auto deleted = change_overlay(**changed, files, bytes);
    if (!deleted) return std::unexpected(deleted.error());
    fill_layer(st.layers[0], st.pack, files, {});
    fill_layer(st.layers[1], *empty, files, {});
    fill_layer(st.layers[2], *changed, files, *deleted);
    return {};
}

// One run on one layer: stat every file, then open + pread + close every file (checked),
// then `readdirs` listings of the directory; one time each.
Result<std::vector<double>> time_layer(Layer& layer, std::size_t bytes, std::size_t readdirs) {
    Target& t = *layer.target;
    std::vector<double> out;
    {
        Stopwatch clock;
        for (const std::string& p : layer.paths) {
            if (auto ok = t.stat(p); !ok) return std::unexpected(ok.error());
        }
        out.push_back(clock.seconds());
    }
    {
        std::vector<std::byte> buf(kSmallReadBuffer);
        Stopwatch clock;
        for (std::size_t i = 0; i < layer.paths.size(); ++i) {
            auto n = t.read_file(layer.paths[i], buf);
            if (!n) return std::unexpected(n.error());
            if (auto ok = check_read(layer.paths[i], std::span(buf).first(*n), bytes,
                                     layer.stamps[i]);
                !ok)
                return std::unexpected(ok.error());
        }
        out.push_back(clock.seconds());
    }
    {
        Stopwatch clock;
        for (std::size_t r = 0; r < readdirs; ++r) {
            if (auto ok = expect_entries(t, "/d", layer.paths.size()); !ok)
                return std::unexpected(ok.error());
        }
        out.push_back(clock.seconds());
    }
    return out;
}

Group overlay_read_group(const Sizes& s, const std::string& scratch) {
    auto state = std::make_shared<OverlayState>();
    const std::size_t files = s.volume_pack_files, bytes = s.file_bytes;
    const std::size_t readdirs = std::max<std::size_t>(s.volume_readdirs, 1);
    const std::string pack_path = scratch + "/overlay.pack";
    Group group;
    group.section = kVolumeSection;
    group.per_op_ratio = true;  // the changed overlay holds 1% fewer files
    group.warmup_runs = 1;
    group.prepare = [state, files, bytes, pack_path] {
        return prepare_overlays(*state, files, bytes, pack_path);
    };
    group.finish = [state, pack_path] {
        *state = {};
        ::unlink(pack_path.c_str());
    };
    const std::size_t changed_files = files - std::min(std::max<std::size_t>(files / 100, 1), files);
    const char* backends[] = {kPackAlone, kOverlayEmpty, kOverlayChanged};
    const std::string count = short_count(files);
    for (std::size_t i = 0; i < 3; ++i) {
        const uint64_t n = i == 2 ? changed_files : files;
        Arm arm;
        arm.category = fmt::format("{}{}", kOverlayPrefix, "files");  // a label
        arm.backend = backends[i];
        const std::string stat = fmt::format("stat {} files", count);
        const std::string read = fmt::format("open+pread+close {} files", count);
        const std::string list = fmt::format("readdir {} entries x{}", count, readdirs);
        arm.measures = {
            Measure{kOverlayPrefix + stat, n, 0, stat, {}, 0},
            Measure{kOverlayPrefix + read, n, n * bytes, read, {}, 0},
            Measure{kOverlayPrefix + list, n * readdirs, 0, list, {}, 0},
        };
        arm.run_measures = [state, i, bytes, readdirs] {
            return time_layer(state->layers[i], bytes, readdirs);
        };
        group.arms.push_back(std::move(arm));
    }
    group.baseline = 0;
    return group;
}

// --- copy-up of one byte of a large lower file --------------------------------------------------

struct CopyUpState {
    std::shared_ptr<PackBackend> pack;  // holds /big
    std::string lower_host, upper_host;  // the raw copy's source and destination
    uint64_t size = 0;
    std::byte middle{};  // the byte at size / 2; each run writes its complement there
    std::vector<std::byte> buffer;  // the raw copy's 1 MiB buffer
};

Result<void> write_host_file(const std::string& path, std::span<const std::byte> data,
                             uint64_t at) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return fail(errno, "open", path);
    const ssize_t n = ::pwrite(fd, data.data(), data.size(), static_cast<off_t>(at));
    const int err = errno;
    ::close(fd);
    if (n != static_cast<ssize_t>(data.size())) return fail(n < 0 ? err : EIO, "pwrite", path);
    return {};
}

// The same `size` random bytes as /big in a pack and as a host file (the raw copy's lower).
Result<void> prepare_copy_up(CopyUpState& st, uint64_t size, const std::string& scratch) {
    const std::string pack_path = scratch + "/copy-up.pack";
    st.lower_host = scratch + "/copy-up-lower";
    st.upper_host = scratch + "/copy-up-upper";
    st.size = size;
    st.buffer.resize(kMiB);
    {
        auto fs = make_mem_backend();
        auto file = fs->open("/big", O_WRONLY | O_CREAT | O_EXCL, 0644);
        if (!file) return std::unexpected(file.error());
        for (uint64_t at = 0; at < size; at += kMiB) {
            const std::size_t len = static_cast<std::size_t>(std::min<uint64_t>(kMiB, size - at));
            auto chunk = std::span(st.buffer).first(len);
            fill_random(chunk, 1'000 + at / kMiB);
            if (at <= size / 2 && size / 2 < at + len) st.middle = chunk[size / 2 - at];
            auto n = (*file)->pwrite(chunk, at);
            if (!n) return std::unexpected(n.error());
            if (auto ok = write_host_file(st.lower_host, chunk, at); !ok) return ok;
        }
        file->reset();
        PackWriteOptions o;
        o.compression = Compression::none;
        if (auto stats = write_pack(*fs, pack_path, o); !stats) return std::unexpected(stats.error());
    }
    auto pack = open_pack(pack_path);
    ::unlink(pack_path.c_str());  // the mapping keeps it
    if (!pack) return std::unexpected(pack.error());
    st.pack = *pack;
    settle_host_filesystem(scratch);
    return {};
}

// A fresh overlay (untimed); open(O_RDWR) + pwrite of one byte in the middle + close (timed);
// the upper's growth from statfs (untimed) goes to `facts`, the byte is read back.
Result<double> time_overlay_copy_up(CopyUpState& st, VolumeFacts& facts) {
    OverlayOptions o;
    o.capacity_bytes = uint64_t{1} << 40;  // fixed, so blocks_free moves by the upper only
    auto fs = make_overlay(st.pack, o);
    if (!fs) return std::unexpected(fs.error());
    auto before = (*fs)->statfs("/");
    if (!before) return std::unexpected(before.error());
    const std::byte changed = ~st.middle;
    Stopwatch clock;
    {
        auto file = (*fs)->open("/big", O_RDWR, 0);
        if (!file) return std::unexpected(file.error());
        auto n = (*file)->pwrite(std::span(&changed, 1), st.size / 2);
        if (!n) return std::unexpected(n.error());
    }
    const double seconds = clock.seconds();
    auto after = (*fs)->statfs("/");
    if (!after) return std::unexpected(after.error());
    const uint64_t freed_blocks =
        before->blocks_free > after->blocks_free ? before->blocks_free - after->blocks_free : 0;
    facts.copy_up_bytes.push_back(freed_blocks * after->block_size);
    auto file = (*fs)->open("/big", O_RDONLY, 0);
    if (!file) return std::unexpected(file.error());
    std::byte got{};
    auto n = (*file)->pread(std::span(&got, 1), st.size / 2);
    auto size = (*file)->fstat();
    if (!n || *n != 1 || got != changed || !size || size->size != st.size)
        return fail(EIO, "copy-up (byte or size wrong after the write)", "/big");
    return seconds;
}

// What overlayfs does on a disk (without its fsync of the copy, so a lower bound): read the
// whole lower file and write it into a new upper file, then write the byte.
Result<double> time_raw_copy_up(CopyUpState& st, const std::string& scratch) {
    const std::byte changed = ~st.middle;
    Result<double> out;
    Stopwatch clock;
    const int in = ::open(st.lower_host.c_str(), O_RDONLY | O_CLOEXEC);
    const int up = ::open(st.upper_host.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (in < 0 || up < 0) {
        out = fail(errno, "open", in < 0 ? st.lower_host : st.upper_host);
    } else {
        uint64_t copied = 0;
        for (;;) {
            const ssize_t n = ::read(in, st.buffer.data(), st.buffer.size());
            if (n <= 0) {
                if (n < 0) out = fail(errno, "read", st.lower_host);
                break;
            }
            if (::write(up, st.buffer.data(), static_cast<std::size_t>(n)) != n) {
                out = fail(errno ? errno : EIO, "write", st.upper_host);
                break;
            }
            copied += static_cast<uint64_t>(n);
        }
        if (out && ::pwrite(up, &changed, 1, static_cast<off_t>(st.size / 2)) != 1)
            out = fail(errno, "pwrite", st.upper_host);
        if (out && copied != st.size) out = fail(EIO, "read (short copy)", st.lower_host);
    }
    if (in >= 0) ::close(in);
    if (up >= 0) ::close(up);
    const double seconds = clock.seconds();
    struct ::stat sb {};
    if (out && (::stat(st.upper_host.c_str(), &sb) != 0 || static_cast<uint64_t>(sb.st_size) != st.size))
        out = fail(EIO, "copy (wrong size)", st.upper_host);
    ::unlink(st.upper_host.c_str());
    settle_host_filesystem(scratch);
    if (!out) return out;
    return seconds;
}

Group copy_up_group(const Sizes& s, bool with_raw, const std::string& scratch,
                    const std::shared_ptr<VolumeFacts>& facts) {
    auto state = std::make_shared<CopyUpState>();
    const uint64_t size = uint64_t{s.volume_copy_up_mib} * kMiB;
    Group group;
    group.section = kVolumeSection;
    group.warmup_runs = 1;  // one byte: a cold first run would be a fifth of the figures
    group.prepare = [state, size, scratch] { return prepare_copy_up(*state, size, scratch); };
    group.finish = [state] {
        ::unlink(state->lower_host.c_str());
        *state = {};
    };
    const std::string category =
        fmt::format("{}1 byte of a {} MB lower file", kCopyUpPrefix, s.volume_copy_up_mib);
    Arm overlay;
    overlay.category = category;
    overlay.plain = category.substr(std::strlen(kCopyUpPrefix));
    overlay.backend = "overlay";
    overlay.n = 1;
    overlay.run_once = [state, facts] { return time_overlay_copy_up(*state, *facts); };
    group.arms.push_back(std::move(overlay));
    if (with_raw) {
        Arm raw;
        raw.category = category;
        raw.plain = category.substr(std::strlen(kCopyUpPrefix));
        raw.backend = kRawCopy;
        raw.n = 1;
        raw.bytes = size;
        raw.run_once = [state, scratch] { return time_raw_copy_up(*state, scratch); };
        group.baseline = group.arms.size();
        group.arms.push_back(std::move(raw));
    }
    return group;
}

}  // namespace packfs::bench::volume_bench
