// The volume figures (volume_categories.hpp). Every volume, pack and raw directory lives in
// the session's scratch directory on the host fs; everything a run needs is made before its
// clock starts and removed after it stops, and the host fs is flushed after each teardown so
// one arm's writeback does not land in the next arm's timed part (as categories.cpp does).
#include "bench/volume_categories.hpp"

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
#include "packfs/mem.hpp"
#include "packfs/overlay.hpp"
#include "packfs/pack.hpp"
#include "packfs/volume.hpp"

namespace packfs::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kMiB = 1024 * 1024;
constexpr std::size_t kSmallReadBuffer = 4096;  // as the "read files" category
constexpr uint64_t kCreateSeed = 1;             // the seeds of categories.cpp
constexpr uint64_t kAccessSeed = 2;
constexpr uint64_t kChangeSeed = 3;             // which files an overlay changes and deletes
constexpr uint64_t kChunkBytes = 64 * 1024;     // the overlay's copy-up unit (overlay.hpp)

// The category names, shared by the groups and the targets printout.
constexpr const char* kCreatePrefix = "journaled create: ";
constexpr const char* kOverlayPrefix = "overlay over a pack: ";
constexpr const char* kCopyUpPrefix = "copy-up ";
constexpr const char* kCompactPrefix = "compaction while writing: ";
constexpr const char* kCompactOne = "compaction while writing: one compaction";
constexpr const char* kCompactPause = "compaction while writing: pause (longest)";
constexpr const char* kCompactLongest = "compaction while writing: slowest file creation";
constexpr const char* kWriterAlone = "volume (writer alone)";
constexpr const char* kWriterCompacting = "volume (writer + compactor)";
constexpr const char* kCompactAlone = "volume (compaction alone)";
constexpr const char* kPackAlone = "pack";
constexpr const char* kOverlayEmpty = "overlay (empty upper)";
constexpr const char* kOverlayChanged = "overlay (1% written + 1% deleted)";
constexpr const char* kRawCopy = "raw copy (as overlayfs)";
constexpr const char* kReplayPrefix = "journal replay: volume open, ";
constexpr const char* kReplayBackend = "volume (read-only open)";

// Pseudo-random bytes (splitmix64), as pack_categories.cpp's: incompressible, so a pack of
// them is as large as the file.
void fill_random(std::span<std::byte> out, uint64_t seed) {
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
    for (std::size_t i = 0; i < out.size(); i += 8) {
        x += 0x9E3779B97F4A7C15ull;
        uint64_t z = x;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        std::memcpy(out.data() + i, &z, std::min<std::size_t>(8, out.size() - i));
    }
}

// A short or wrong read is a failure of the operation, reported like one: the first 8 bytes
// of every file are its index (stamp()).
Result<void> check_read(const std::string& path, std::span<const std::byte> got,
                        std::size_t want_bytes, uint64_t want_stamp) {
    if (got.size() != want_bytes) return fail(EIO, "pread (short read)", path);
    uint64_t found = 0;
    std::memcpy(&found, got.data(), std::min(sizeof found, got.size()));
    if (got.size() >= sizeof found && found != want_stamp)
        return fail(EIO, "pread (wrong content)", path);
    return {};
}


Result<void> expect_entries(Target& t, const std::string& dir, std::size_t want) {
    auto n = t.list_dir(dir);
    if (!n) return std::unexpected(n.error());
    if (*n != want) {
        return fail(EIO, "readdir (wrong entry count)",
                    fmt::format("{}: {} entries, expected {}", dir, *n, want));
    }
    return {};
}

// A fresh, empty volume in its own directory under `scratch` (removed with the target).
struct VolumeTarget {
    std::shared_ptr<Volume> volume;
    std::unique_ptr<Target> target;
};

Result<VolumeTarget> open_volume_target(TempDir dir) {
    auto volume = Volume::open(dir.path());
    if (!volume) return std::unexpected(volume.error());
    VolumeTarget out;
    out.volume = *volume;
    out.target = make_backend_target(*volume, std::move(dir));
    return out;
}

Result<VolumeTarget> fresh_volume(const std::string& scratch, Durability durability) {
    auto dir = TempDir::create(scratch, "volume-");
    if (!dir) return std::unexpected(dir.error());
    VolumeInit init;
    init.durability = durability;
    if (auto ok = Volume::create(dir->path(), init); !ok) return std::unexpected(ok.error());
    return open_volume_target(std::move(*dir));
}

// --- journaled create ----------------------------------------------------------------------

enum class CreateKind { raw, raw_fsync, mem, always, batch, explicit_sync };

struct CreateArm {
    CreateKind kind;
    const char* backend;
    bool fsync_per_op;  // every file costs an fsync: the smaller count
};

constexpr CreateArm kCreateArms[] = {
    {CreateKind::raw, "raw", false},
    {CreateKind::raw_fsync, "raw+fsync", true},
    {CreateKind::mem, "mem", false},
    {CreateKind::always, "volume always", true},
    // batch on one thread has nobody to share an fsync with: one per mutation, as always.
    {CreateKind::batch, "volume batch", true},
    {CreateKind::explicit_sync, "volume explicit", false},
};

bool is_raw(CreateKind k) { return k == CreateKind::raw || k == CreateKind::raw_fsync; }

Result<VolumeTarget> make_create_target(CreateKind kind, const std::string& scratch) {
    switch (kind) {
    case CreateKind::raw:
    case CreateKind::raw_fsync: {
        auto raw = make_raw_target(scratch, kind == CreateKind::raw_fsync);
        if (!raw) return std::unexpected(raw.error());
        VolumeTarget out;
        out.target = std::move(*raw);
        return out;
    }
    case CreateKind::mem: {
        VolumeTarget out;
        out.target = make_backend_target(make_mem_backend());
        return out;
    }
    case CreateKind::always: return fresh_volume(scratch, Durability::always);
    case CreateKind::batch: return fresh_volume(scratch, Durability::batch);
    case CreateKind::explicit_sync: return fresh_volume(scratch, Durability::explicit_sync);
    }
    return fail(EINVAL, "journaled create");
}

// `threads` x `per_thread` create + write + close, thread k into its own directory "t<k>"
// (made untimed); an explicit-mode volume ends with sync() inside the timed part, so its
// figure is the cost of making the files durable, as the fsync'd arms' are. The result is
// checked: every directory lists its files, and a volume journaled at least one record per
// file.
Result<double> time_creates(VolumeTarget& vt, std::size_t threads, std::size_t per_thread,
                            std::size_t bytes, RunBudget& budget) {
    Target& t = *vt.target;
    std::vector<std::vector<std::string>> paths(threads);
    for (std::size_t k = 0; k < threads; ++k) {
        if (auto ok = t.mkdir(t.path(fmt::format("t{}", k))); !ok) return std::unexpected(ok.error());
        for (std::size_t i = 0; i < per_thread; ++i)
            paths[k].push_back(t.path(fmt::format("t{}/file-{}", k, i)));
    }
    if (vt.volume) {
        if (auto ok = vt.volume->sync(); !ok) return std::unexpected(ok.error());
    }
    const uint64_t records_before = vt.volume ? vt.volume->status().journal_records : 0;
    const bool sync_at_end =
        vt.volume && vt.volume->status().durability == Durability::explicit_sync;
    // Under a time budget each thread stops on its own; the figure counts what they all did.
    // The raw fs's files are left for the teardown to remove: each thread then also stops at
    // its share of what the budget may leave (a volume's files are its journal and pack).
    std::vector<std::size_t> done(threads, per_thread);
    const bool leaves_files = !vt.volume;
    budget.start();
    auto seconds = time_threads(threads, [&](std::size_t k) -> Result<void> {
        std::vector<std::byte> data(bytes);
        fill_random(data, 100 + k);
        for (std::size_t i = 0; i < per_thread; ++i) {
            if (i > 0 && (leaves_files ? budget.spent(i * threads) : budget.spent())) {
                done[k] = i;
                break;
            }
            stamp(data, k * per_thread + i);
            if (auto ok = t.create_file(paths[k][i], data); !ok) return ok;
        }
        return {};
    });
    if (!seconds) return seconds;
    if (sync_at_end) {
        Stopwatch clock;
        if (auto ok = vt.volume->sync(); !ok) return std::unexpected(ok.error());
        *seconds += clock.seconds();
    }
    for (std::size_t k = 0; k < threads; ++k) {
        if (auto ok = expect_entries(t, t.path(fmt::format("t{}", k)), done[k]); !ok)
            return std::unexpected(ok.error());
    }
    const std::size_t total = std::accumulate(done.begin(), done.end(), std::size_t{0});
    if (vt.volume) {
        const uint64_t records = vt.volume->status().journal_records - records_before;
        if (records < total)
            return fail(EIO, "journal (fewer records than files)",
                        fmt::format("{} records for {} files", records, total));
    }
    if (total < threads * per_thread) budget.stopped_after(total);
    return seconds;
}

// One group per thread count: every arm of it interleaved with the others. The fsync'd arms
// are compared with raw+fsync, the others with raw; raw and raw+fsync are each their own
// baseline (the report names one baseline per group and measure: the durable arms' notes
// then name raw+fsync, the others raw).
Group create_group(const Sizes& s, std::size_t threads, bool with_raw, const std::string& scratch) {
    Group group;
    group.section = kVolumeSection;
    group.per_op_ratio = true;  // the fsync'd arms create fewer files
    const std::size_t bytes = s.file_bytes;
    const std::string category = threads == 1
                                     ? fmt::format("{}1 thread", kCreatePrefix)
                                     : fmt::format("{}{} threads", kCreatePrefix, threads);
    for (const CreateArm& spec : kCreateArms) {
        if (is_raw(spec.kind) && !with_raw) continue;
        const std::size_t files = spec.fsync_per_op ? s.volume_fsync_files : s.volume_files;
        const std::size_t per_thread = std::max<std::size_t>(files / threads, 1);
        Arm arm;
        arm.category = category;
        arm.plain = category.substr(std::strlen("journaled "));  // "create" alone: not us
        arm.backend = spec.backend;
        arm.n = per_thread * threads;
        arm.bytes = arm.n * bytes;
        if (with_raw) arm.baseline = spec.fsync_per_op ? 1 : 0;  // raw+fsync, raw (declared first)
        // Every arm but mem reaches the disk: bounded by time as well as by its count.
        auto budget =
            std::make_shared<RunBudget>(spec.kind == CreateKind::mem ? 0 : s.disk_budget_s);
        if (budget->limited()) arm.budget = budget;
        arm.run_once = [kind = spec.kind, scratch, threads, per_thread, bytes,
                        budget]() -> Result<double> {
            Result<double> out;
            {
                auto vt = make_create_target(kind, scratch);
                if (!vt) return std::unexpected(vt.error());
                out = time_creates(*vt, threads, per_thread, bytes, *budget);
                vt->volume.reset();  // the target owns the volume's directory: last
            }
            settle_host_filesystem(scratch);
            return out;
        };
        group.arms.push_back(std::move(arm));
    }
    return group;
}

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

// --- compaction while writing --------------------------------------------------------------------

// A volume of `entries` files, compacted into its pack, then `changes` of them rewritten
// (in the journal): every run starts from a copy of it.
Result<TempDir> build_template_volume(std::size_t entries, std::size_t changes, std::size_t bytes,
                                      const std::string& scratch) {
    auto dir = TempDir::create(scratch, "volume-template-");
    if (!dir) return std::unexpected(dir.error());
    VolumeInit init;
    init.durability = Durability::explicit_sync;
    if (auto ok = Volume::create(dir->path(), init); !ok) return std::unexpected(ok.error());
    auto volume = Volume::open(dir->path());
    if (!volume) return std::unexpected(volume.error());
    auto t = make_backend_target(*volume);
    if (auto ok = t->mkdir("/d"); !ok) return std::unexpected(ok.error());
    std::vector<std::byte> data(bytes);
    fill_random(data, 7);
    for (std::size_t i : shuffled(entries, kCreateSeed)) {
        stamp(data, i);
        if (auto ok = t->create_file(fmt::format("/d/file-{}", i), data); !ok)
            return std::unexpected(ok.error());
    }
    if (auto st = (*volume)->compact(); !st) return std::unexpected(st.error());
    fill_random(data, 8);
    for (std::size_t i = 0; i < std::min(changes, entries); ++i) {
        auto file = (*volume)->open(fmt::format("/d/file-{}", i), O_WRONLY, 0);
        if (!file) return std::unexpected(file.error());
        stamp(data, i);
        if (auto n = (*file)->pwrite(data, 0); !n) return std::unexpected(n.error());
    }
    if (auto ok = (*volume)->sync(); !ok) return std::unexpected(ok.error());
    if ((*volume)->status().journal_records < std::min(changes, entries))
        return fail(EIO, "volume template (changes not in the journal)", dir->path());
    return std::move(*dir);
}

// A copy of the template (untimed), opened, with an empty directory /w for the writer.
Result<VolumeTarget> open_template_copy(const std::string& from, const std::string& scratch) {
    auto dir = TempDir::create(scratch, "volume-");
    if (!dir) return std::unexpected(dir.error());
    std::error_code ec;
    std::filesystem::copy(from, dir->path(), std::filesystem::copy_options::recursive, ec);
    if (ec) return fail(ec.value(), "copy volume", from);
    auto vt = open_volume_target(std::move(*dir));
    if (!vt) return vt;
    if (auto ok = vt->target->mkdir("/w"); !ok) return std::unexpected(ok.error());
    return vt;
}

struct WriterTimes {
    double seconds = 0, longest = 0;  // all the creates, and the slowest one
    std::size_t files = 0;            // how many were created
};

// Creates `paths`; then, while `until` is given and still false, more files named the same way,
// up to kMostExtraRounds times as many: a compaction that outlasts the planned creates still
// completes while the writer runs.
constexpr std::size_t kMostExtraRounds = 16;
Result<WriterTimes> write_files(Target& t, const std::vector<std::string>& paths,
                                std::size_t bytes, const std::function<bool()>& until = {}) {
    std::vector<std::byte> data(bytes);
    fill_random(data, 21);
    WriterTimes out;
    const auto start = Clock::now();
    auto last = start;
    const std::size_t most = paths.size() * (until ? kMostExtraRounds : 1);
    std::string extra;
    for (std::size_t i = 0; i < most; ++i) {
        if (i >= paths.size()) {
            if (until()) break;
            extra = fmt::format("/w/file-{}", i);
        }
        stamp(data, i);
        if (auto ok = t.create_file(i < paths.size() ? paths[i] : extra, data); !ok)
            return std::unexpected(ok.error());
        const auto now = Clock::now();
        out.longest = std::max(out.longest, std::chrono::duration<double>(now - last).count());
        last = now;
        out.files = i + 1;
    }
    out.seconds = std::chrono::duration<double>(last - start).count();
    return out;
}

struct CompactState {
    std::string scratch;
    std::optional<TempDir> template_dir;
    std::vector<std::string> paths;  // the writer's files, "/w/file-<i>"
};

// compact() back to back on another thread, from before the writer's clock starts until it
// stops; only the compactions that completed while the writer ran count.
struct Compactor {
    std::vector<CompactionStats> done;
    std::vector<Clock::time_point> ended;
    std::atomic<std::size_t> completed{0};  // done.size(), for the writer to read
    std::optional<Error> error;
    std::atomic<bool> stop{false}, started{false}, failed{false};
    std::thread thread;

    void start(const std::shared_ptr<Volume>& volume) {
        thread = std::thread([this, volume] {
            started = true;
            started.notify_one();
            while (!stop) {
                auto st = volume->compact();
                if (!st) {
                    error = st.error();
                    failed = true;
                    return;
                }
                done.push_back(*st);
                ended.push_back(Clock::now());
                ++completed;
            }
        });
        started.wait(false);
    }
    void join() {
        stop = true;
        if (thread.joinable()) thread.join();
    }
    ~Compactor() { join(); }
};

// One run: a fresh copy of the template; the writer's creates, with or without the compactor
// beside it. Measures: the creates, the slowest create, and with the compactor the median
// compaction and the longest pause among those that completed during the writes.
Result<std::vector<double>> time_writer(const CompactState& st, std::size_t bytes, bool compacting,
                                        VolumeFacts& facts) {
    auto vt = open_template_copy(st.template_dir->path(), st.scratch);
    if (!vt) return std::unexpected(vt.error());
    Compactor compactor;
    if (compacting) compactor.start(vt->volume);
    std::function<bool()> until;
    if (compacting) until = [&compactor] { return compactor.completed > 0 || compactor.failed; };
    auto times = write_files(*vt->target, st.paths, bytes, until);
    const auto writer_end = Clock::now();
    compactor.join();  // the compaction in flight at the end is not timed
    if (!times) return std::unexpected(times.error());
    if (compactor.error) return std::unexpected(*compactor.error);
    if (auto ok = expect_entries(*vt->target, "/w", times->files); !ok)
        return std::unexpected(ok.error());
    // The figure is for st.paths.size() creates; a writer that went on until a compaction
    // completed is scaled to that count.
    const double writer_seconds = times->seconds * static_cast<double>(st.paths.size()) /
                           static_cast<double>(times->files);
    std::vector<double> out{writer_seconds, times->longest};
    if (!compacting) return out;
    std::vector<double> seconds;
    double pause = 0;
    for (std::size_t i = 0; i < compactor.done.size(); ++i) {
        if (compactor.ended[i] > writer_end) break;
        seconds.push_back(compactor.done[i].seconds);
        pause = std::max(pause, compactor.done[i].pause_seconds);
    }
    facts.compactions_per_run.push_back(seconds.size());
    if (seconds.empty()) {
        return fail(EAGAIN,
                    fmt::format("compaction while writing (none completed within {}x the planned creates)",
                                kMostExtraRounds),
                    fmt::format("{} file creations", times->files));
    }
    out.push_back(summarize(seconds).median);
    out.push_back(pause);
    return out;
}

// One compaction of a fresh copy, nothing else running: its time and its pause.
Result<std::vector<double>> time_idle_compaction(const CompactState& st) {
    auto vt = open_template_copy(st.template_dir->path(), st.scratch);
    if (!vt) return std::unexpected(vt.error());
    Stopwatch clock;
    auto stats = vt->volume->compact();
    const double seconds = clock.seconds();
    if (!stats) return std::unexpected(stats.error());
    return std::vector<double>{seconds, stats->pause_seconds};
}

Group compaction_group(const Sizes& s, const std::string& scratch,
                       const std::shared_ptr<VolumeFacts>& facts) {
    auto state = std::make_shared<CompactState>();
    const std::size_t entries = s.volume_entries, writes = s.volume_writes, bytes = s.file_bytes;
    const std::size_t changes = s.volume_journal_changes;
    Group group;
    group.section = kVolumeSection;
    group.prepare = [state, entries, writes, changes, bytes, scratch]() -> Result<void> {
        auto dir = build_template_volume(entries, changes, bytes, scratch);
        if (!dir) return std::unexpected(dir.error());
        state->scratch = scratch;
        state->template_dir = std::move(*dir);
        for (std::size_t i = 0; i < writes; ++i) state->paths.push_back(fmt::format("/w/file-{}", i));
        settle_host_filesystem(scratch);
        return {};
    };
    group.finish = [state] { *state = {}; };
    // No "create" or "files" in the names and "compaction" as the plain part: a filter for the
    // main table's create category or the pack section's compact group does not select this.
    const std::string creates =
        fmt::format("{}{} file creations", kCompactPrefix, short_count(writes));
    const std::string plain = "compaction";
    auto measure = [&](const std::string& name, uint64_t n, uint64_t b) {
        return Measure{name, n, b, plain, {}, 0};
    };
    auto settled = [scratch](Result<std::vector<double>> r) {
        settle_host_filesystem(scratch);
        return r;
    };
    Arm alone;
    alone.category = creates;
    alone.backend = kWriterAlone;
    alone.measures = {measure(creates, writes, writes * bytes), measure(kCompactLongest, 1, 0)};
    alone.run_measures = [state, bytes, facts, settled] {
        return settled(time_writer(*state, bytes, false, *facts));
    };
    alone.baseline = 0;
    group.arms.push_back(std::move(alone));
    Arm with;
    with.category = creates;
    with.backend = kWriterCompacting;
    with.measures = {measure(creates, writes, writes * bytes), measure(kCompactLongest, 1, 0),
                     measure(kCompactOne, 1, 0), measure(kCompactPause, 1, 0)};
    with.run_measures = [state, bytes, facts, settled] {
        return settled(time_writer(*state, bytes, true, *facts));
    };
    with.baseline = 0;
    group.arms.push_back(std::move(with));
    Arm idle;
    idle.category = kCompactOne;
    idle.backend = kCompactAlone;
    idle.measures = {measure(kCompactOne, 1, 0), measure(kCompactPause, 1, 0)};
    idle.run_measures = [state, settled] { return settled(time_idle_compaction(*state)); };
    group.arms.push_back(std::move(idle));
    return group;
}

// --- journal replay ---------------------------------------------------------------------------

struct ReplayState {
    std::optional<TempDir> dir;  // the volume, made once for every run
};

// A volume whose journal holds `records` records and nothing compacted: 1,000 directories
// (a mkdir each), then files of `bytes` bytes in them (a create and a write each), made with
// explicit durability and one sync at the end, the volume closed.
Result<uint64_t> build_replay_volume(const std::string& dir, std::size_t records,
                                     std::size_t bytes) {
    constexpr std::size_t kDirs = 1000;
    VolumeInit init;
    init.durability = Durability::explicit_sync;
    if (auto ok = Volume::create(dir, init); !ok) return std::unexpected(ok.error());
    auto volume = Volume::open(dir);
    if (!volume) return std::unexpected(volume.error());
    Volume& v = **volume;
    const std::size_t dirs = std::min(kDirs, records);
    const std::size_t files = (records - dirs) / 2;
    for (std::size_t d = 0; d < dirs; ++d) {
        if (auto ok = v.mkdir(fmt::format("/d{}", d), 0755); !ok)
            return std::unexpected(ok.error());
    }
    std::vector<std::byte> data(bytes);
    fill_random(data, kCreateSeed);
    for (std::size_t i = 0; i < files; ++i) {
        auto file =
            v.open(fmt::format("/d{}/file-{}", i % dirs, i), O_CREAT | O_EXCL | O_WRONLY, 0644);
        if (!file) return std::unexpected(file.error());
        std::memcpy(data.data(), &i, std::min(sizeof i, data.size()));
        if (auto n = (*file)->pwrite(data, 0); !n) return std::unexpected(n.error());
    }
    if (auto ok = v.sync(); !ok) return std::unexpected(ok.error());
    return v.status().journal_records;
}

// Opening a volume replays its journal into the live tree (docs/JOURNAL.md): records per
// second of Volume::open, read-only so that every run replays the same journal.
Group replay_group(const Sizes& s, const std::string& scratch) {
    auto state = std::make_shared<ReplayState>();
    Group group;
    group.section = kVolumeSection;
    group.max_runs = 3;
    group.prepare = [state, records = s.volume_replay_records, bytes = s.file_bytes,
                     scratch]() -> Result<void> {
        auto dir = TempDir::create(scratch, "replay-");
        if (!dir) return std::unexpected(dir.error());
        auto made = build_replay_volume(dir->path(), records, bytes);
        if (!made) return std::unexpected(made.error());
        if (*made != records)  // the figure's n: one record per mkdir, create and write
            return fail(EIO, "journal replay (unexpected journal)",
                        fmt::format("{} records written for {} planned", *made, records));
        state->dir = std::move(*dir);
        settle_host_filesystem(scratch);
        return {};
    };
    group.finish = [state] { *state = {}; };
    Arm arm;
    arm.category = fmt::format("{}{} records", kReplayPrefix, short_count(s.volume_replay_records));
    arm.plain = "journal replay";
    arm.backend = kReplayBackend;
    arm.n = s.volume_replay_records;
    arm.run_once = [state, records = arm.n]() -> Result<double> {
        VolumeOptions options;
        options.read_only = true;
        Stopwatch clock;
        auto volume = Volume::open(state->dir->path(), options);
        const double seconds = clock.seconds();
        if (!volume) return std::unexpected(volume.error());
        const uint64_t replayed = (*volume)->recovery().records_replayed;
        if (replayed != records)
            return fail(EIO, "journal replay (wrong record count)",
                        fmt::format("{} replayed of {} written", replayed, records));
        return seconds;
    };
    group.arms.push_back(std::move(arm));
    return group;
}

// --- targets ------------------------------------------------------------------------------------

std::string met(bool ok) { return ok ? "met" : "MISSED"; }

double per_op(const Figure& f) { return f.n ? f.median_s / static_cast<double>(f.n) : 0; }

const Figure* find_figure(std::span<const Figure> figures, std::string_view category,
                          std::string_view backend) {
    for (const Figure& f : figures) {
        if (f.section == kVolumeSection && f.category == category && f.backend == backend) return &f;
    }
    return nullptr;
}

std::vector<std::string> categories_with(std::span<const Figure> figures, std::string_view prefix) {
    std::vector<std::string> out;
    for (const Figure& f : figures) {
        if (f.section != kVolumeSection || !f.category.starts_with(prefix)) continue;
        if (std::find(out.begin(), out.end(), f.category) == out.end()) out.push_back(f.category);
    }
    return out;
}

std::string bytes_text(uint64_t b) {
    if (b >= kMiB && b % kMiB == 0) return fmt::format("{} MiB", b / kMiB);
    if (b >= 1024 && b % 1024 == 0) return fmt::format("{} KiB", b / 1024);
    return fmt::format("{} B", b);
}

// "12.3x (4.56 us against 56.1 us per file)": how many times the baseline's time per op.
std::string times_text(const Figure& f, const Figure& base, const char* unit) {
    return fmt::format("{:.2f}x ({} against {} per {})", per_op(base) / per_op(f),
                       duration_text(per_op(f)), duration_text(per_op(base)), unit);
}

void create_targets(std::span<const Figure> figures, std::vector<std::string>& lines) {
    for (const std::string& c : categories_with(figures, kCreatePrefix)) {
        const bool threaded = !c.ends_with(" 1 thread");
        const std::string what = c.substr(std::strlen(kCreatePrefix));
        const Figure* fsync = find_figure(figures, c, "raw+fsync");
        for (const char* mode : {"volume always", "volume batch"}) {
            const Figure* f = find_figure(figures, c, mode);
            if (!f || !fsync) continue;
            const bool target = threaded && std::string_view(mode) == "volume batch";
            lines.push_back(fmt::format(
                "create, {}, {}{} raw+fsync (files/s): {}: {}", what, mode, target ? " >= 10x" : " against",
                times_text(*f, *fsync, "file"),
                target ? met(per_op(*fsync) / per_op(*f) >= 10) : "no target"));
        }
        const Figure* f = find_figure(figures, c, "volume explicit");
        const Figure* mem = find_figure(figures, c, "mem");
        if (f && mem) {
            lines.push_back(fmt::format("create, {}, volume explicit (sync at the end) >= 0.5x mem "
                                        "(files/s): {}: {}",
                                        what, times_text(*f, *mem, "file"),
                                        met(per_op(*mem) / per_op(*f) >= 0.5)));
        }
    }
}

void replay_targets(std::span<const Figure> figures, std::vector<std::string>& lines) {
    for (const std::string& c : categories_with(figures, kReplayPrefix)) {
        const Figure* f = find_figure(figures, c, kReplayBackend);
        if (!f) continue;
        lines.push_back(fmt::format("{} >= 1 M records/s: {:.2f} M/s: {}", c, f->ops_per_s / 1e6,
                                    met(f->ops_per_s >= 1e6)));
    }
}

void overlay_targets(std::span<const Figure> figures, std::vector<std::string>& lines) {
    for (const std::string& c : categories_with(figures, kOverlayPrefix)) {
        const Figure* pack = find_figure(figures, c, kPackAlone);
        const bool readdir = c.find("readdir") != std::string::npos;
        for (const char* b : {kOverlayEmpty, kOverlayChanged}) {
            const Figure* f = find_figure(figures, c, b);
            if (!f || !pack) continue;
            const double ratio = per_op(*f) / per_op(*pack);
            lines.push_back(fmt::format(
                "{}: {}{} the pack's time: {:.2f}x ({} against {} per {}): {}", c, b,
                readdir ? " against" : " <= 1.2x", ratio,
                duration_text(per_op(*f)), duration_text(per_op(*pack)),
                readdir ? "entry" : "file", readdir ? "no target" : met(ratio <= 1.2)));
        }
    }
}

void copy_up_targets(std::span<const Figure> figures, const VolumeFacts& facts,
                     std::vector<std::string>& lines) {
    for (const std::string& c : categories_with(figures, kCopyUpPrefix)) {
        const Figure* f = find_figure(figures, c, "overlay");
        if (!f) continue;
        const Figure* raw = find_figure(figures, c, kRawCopy);
        uint64_t most = 0, least = UINT64_MAX;
        for (uint64_t b : facts.copy_up_bytes) {
            most = std::max(most, b);
            least = std::min(least, b);
        }
        if (!facts.copy_up_bytes.empty()) {
            lines.push_back(fmt::format(
                "{}: copies <= one chunk ({}): the upper grew by {}{} per run{}: {}", c,
                bytes_text(kChunkBytes), bytes_text(least),
                least == most ? "" : fmt::format(" to {}", bytes_text(most)),
                raw ? fmt::format(" (raw copy: {})", bytes_text(raw->bytes)) : "",
                met(most <= kChunkBytes)));
        }
        lines.push_back(fmt::format(
            "{} < 1 ms: {} (min {}, max {}){}: {}", c, duration_text(f->median_s),
            duration_text(f->min_s), duration_text(f->max_s),
            raw ? fmt::format(", raw copy {} ({:.0f}x the overlay's time)", duration_text(raw->median_s),
                              raw->median_s / f->median_s)
                : "",
            met(f->median_s < 1e-3)));
    }
}

void compaction_targets(std::span<const Figure> figures, const VolumeFacts& facts,
                        std::vector<std::string>& lines) {
    for (const std::string& c : categories_with(figures, kCompactPrefix)) {
        if (!c.ends_with(" file creations")) continue;
        const Figure* alone = find_figure(figures, c, kWriterAlone);
        const Figure* with = find_figure(figures, c, kWriterCompacting);
        if (!alone || !with) continue;
        const double share = alone->median_s / with->median_s;
        std::vector<double> counts(facts.compactions_per_run.begin(), facts.compactions_per_run.end());
        const Summary n = summarize(counts);
        lines.push_back(fmt::format(
            "{}: throughput while compacting >= 50% of idle: {:.0f}% ({:.0f} against {:.0f} files/s; "
            "{:.0f} compactions completed per run, {:.0f}-{:.0f}): {}",
            c, share * 100, with->ops_per_s, alone->ops_per_s, n.median, n.min, n.max,
            met(share >= 0.5)));
        const Figure* l0 = find_figure(figures, kCompactLongest, kWriterAlone);
        const Figure* l1 = find_figure(figures, kCompactLongest, kWriterCompacting);
        const Figure* one_idle = find_figure(figures, kCompactOne, kCompactAlone);
        const Figure* one_busy = find_figure(figures, kCompactOne, kWriterCompacting);
        const Figure* pause_idle = find_figure(figures, kCompactPause, kCompactAlone);
        const Figure* pause_busy = find_figure(figures, kCompactPause, kWriterCompacting);
        if (one_idle && one_busy && pause_idle && pause_busy) {
            lines.push_back(fmt::format(
                "one compaction: {} alone (pause {}), {} while writing (longest pause {}): no target",
                duration_text(one_idle->median_s), duration_text(pause_idle->median_s),
                duration_text(one_busy->median_s), duration_text(pause_busy->median_s)));
        }
        if (l0 && l1) {
            lines.push_back(fmt::format("slowest file creation: {} alone, {} while compacting: no target",
                                        duration_text(l0->median_s), duration_text(l1->median_s)));
        }
    }
}

}  // namespace

std::vector<Group> volume_groups(const Sizes& s, bool with_raw, const std::string& scratch,
                                 std::shared_ptr<VolumeFacts> facts) {
    std::vector<Group> groups;
    groups.push_back(create_group(s, 1, with_raw, scratch));
    if (s.volume_threads > 1) groups.push_back(create_group(s, s.volume_threads, with_raw, scratch));
    groups.push_back(overlay_read_group(s, scratch));
    groups.push_back(copy_up_group(s, with_raw, scratch, facts));
    groups.push_back(compaction_group(s, scratch, facts));
    groups.push_back(replay_group(s, scratch));
    return groups;
}

void print_volume_targets(std::FILE* out, std::span<const Figure> figures,
                          const VolumeFacts& facts) {
    std::vector<std::string> lines;
    create_targets(figures, lines);
    overlay_targets(figures, lines);
    copy_up_targets(figures, facts, lines);
    compaction_targets(figures, facts, lines);
    replay_targets(figures, lines);
    if (lines.empty()) return;
    fmt::print(out, "\ntargets (volume, overlay):\n");
    for (const auto& l : lines) fmt::print(out, "  {}\n", l);
    std::fflush(out);
}

}  // namespace packfs::bench
