// The volume figures of compaction while writing and of journal replay (volume_categories.hpp;
// the others are volume_categories.cpp). As there, everything a run needs is made before its
// clock starts and removed after it stops.

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
#include "bench/volume_bench_shared.hpp"

namespace packfs::bench::volume_bench {

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

}  // namespace packfs::bench::volume_bench
