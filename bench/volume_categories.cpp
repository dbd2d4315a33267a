// The volume figures (volume_categories.hpp): journaled create, and the targets printout (the
// overlay's are volume_overlay.cpp, compaction and replay volume_compaction.cpp). Every volume,
// pack and raw directory lives in the session's scratch directory on the host fs; everything a
// run needs is made before its clock starts and removed after it stops, and the host fs is
// flushed after each teardown so one arm's writeback does not land in the next arm's timed part
// (as categories.cpp does).
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
#include "bench/volume_bench_shared.hpp"
#include "packfs/mem.hpp"
#include "packfs/overlay.hpp"
#include "packfs/pack.hpp"
#include "packfs/volume.hpp"

namespace packfs::bench {

using namespace volume_bench;

namespace {

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
