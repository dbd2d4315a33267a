// Compaction (DESIGN §10, volume_impl.hpp): the tree at one instant written into a fresh pack
// while readers and writers go on, then a new journal generation holding only the records made
// since that instant, the tree moved onto the new pack (Overlay::rebase: what it changed up to
// the instant is handed to the pack, what it changed since stays), and the manifest switched.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "core/io.hpp"
#include "volume/volume_impl.hpp"

namespace packfs::volume {
namespace {

// The longest chain of packs an incremental compaction builds: the current pack and the packs
// it was built over. At this length the next compaction writes its pack whole.
constexpr std::size_t kMaxChain = 8;

// Copies the frames of the journal at `path` with seq > `after` into `to`, reading from
// `resume` (moved past every frame read). `last` is the last seq copied.
Result<void> carry_records(const std::string& path, uint64_t after, JournalWriter& to,
                           uint64_t& last, std::optional<JournalPosition>& resume) {
    auto scan = scan_journal(
        path,
        [&](const JournalRecordView& view) -> Result<void> {
            resume = JournalPosition{view.offset + journal_frame_size(view.payload.size()),
                                     view.seq + 1};
            if (view.seq <= after) return {};
            auto copied = to.append(view.type, view.payload);
            if (!copied) return std::unexpected(copied.error());
            last = view.seq;
            return {};
        },
        resume);
    if (!scan) return std::unexpected(scan.error());
    return {};
}

// Step 3's passes without the lock: the old journal's records after `copied` into `writer`,
// following it as writers add (copying is far faster than writers add: at most four passes,
// fewer once a pass copies fewer than 256 records).
Result<void> catch_up(const std::string& old_journal, JournalWriter& old_writer,
                      JournalWriter& writer, uint64_t& copied,
                      std::optional<JournalPosition>& resume) {
    for (int pass = 0; pass < 4; ++pass) {
        if (auto ok = old_writer.sync(); !ok) return std::unexpected(ok.error());
        const uint64_t before_pass = copied;
        if (auto ok = carry_records(old_journal, copied, writer, copied, resume); !ok) return ok;
        if (copied - before_pass < 256) break;
    }
    return io::step("compact.caught_up");
}

// Nothing of a failed compaction may stay behind.
struct Cleanup {
    std::string pack, journal;
    bool armed = true;
    ~Cleanup() {
        if (!armed) return;
        (void)io::unlink(pack, "pack");
        (void)io::unlink(journal, "journal");
    }
};

}  // namespace

Result<void> VolumeImpl::write_manifest_locked(const Manifest& next, bool& keep_files) {
    auto switched = write_manifest(dir_, next);
    if (switched) {
        keep_files = true;
        return {};
    }
    // Before the rename the old manifest stands; after it, the new one may or may not be
    // durable: only the old files can serve both cases, so nothing may change any more.
    struct stat st {};
    const bool renamed =
        ::stat(join(dir_, std::string(kManifestName) + ".tmp").c_str(), &st) != 0;
    if (renamed) {
        keep_files = true;
        broken_ = true;
    }
    return switched;
}

Result<CompactionStats> VolumeImpl::compact() {
    if (options_.read_only) return fail(EROFS, "compact", dir_);
    std::lock_guard one_at_a_time(compact_mu_);
    const auto t0 = std::chrono::steady_clock::now();
    CompactionStats stats;

    // 1. For an instant, under the lock: the tree to write, and where the journal stands.
    std::shared_ptr<Backend> snap;
    uint64_t snapshot_seq = 0, generation = 0, recoveries = 0, instant = 0;
    std::shared_ptr<JournalWriter> old_writer;
    {
        auto lock = lock_for_compaction();
        if (broken_) return fail(EIO, "compact", dir_);
        auto s = tree_->freeze();
        if (!s) return std::unexpected(s.error());
        snap = std::move(s->tree);
        instant = s->generation;
        snapshot_seq = writer_->last_seq();
        generation = manifest_.generation + 1;
        old_writer = writer_;
        recoveries = recoveries_;
    }
    const uint64_t next_ino = snap->inode_numbering().limit;
    const std::string pack_name = pack_file_name(generation);
    const std::string journal_name = journal_file_name(generation);
    const std::string pack_path = join(dir_, pack_name), journal_path = join(dir_, journal_name);
    Cleanup cleanup{pack_path, journal_path};

    // 2. The pack, while readers and writers go on (the snapshot is frozen).
    if (auto ok = io::step("compact.before_pack"); !ok) return std::unexpected(ok.error());
    PackWriteOptions pack_options = options_.pack;
    pack_options.keep_inode_numbers = true;
    pack_options.times = PackTimes::all;  // stat answers the same before and after
    pack_options.clamp_time.reset();
    // Incremental (packs cut into chunks: VolumeOptions::pack.chunk_size): the new pack is
    // built over the current one, whose contents and chunks it references, so it writes about
    // what changed; every kMaxChain compactions one is written whole, and the chain goes.
    const std::string current_pack = join(dir_, manifest_.pack);
    if (pack_options.chunk_size != 0 && pack_options.format >= 2) {
        const auto chain = pack_bases(current_pack);
        if (chain && chain->size() + 1 < kMaxChain) pack_options.bases = {current_pack};
    }
    stats.incremental = !pack_options.bases.empty();
    auto written = write_pack(*snap, pack_path, pack_options);
    if (!written) return std::unexpected(written.error());
    stats.pack = *written;
    snap.reset();  // (the rebase needs it gone: what only it saw is the pack's now)
    if (auto ok = io::step("compact.after_pack"); !ok) return std::unexpected(ok.error());
    auto fresh = open_volume_pack(pack_path);
    if (!fresh) return std::unexpected(fresh.error());

    // 3. The new journal: the records made since the instant of step 1, copied frame by frame
    //    (the tree has them already). First what is there, without the lock.
    Manifest next = manifest_;
    next.generation = generation;
    next.pack = pack_name;
    next.journal = journal_name;
    next.first_seq = snapshot_seq + 1;
    next.next_ino = next_ino;
    next.pack_digest = fresh->digest;
    auto new_writer =
        JournalWriter::create(journal_path, {generation, snapshot_seq + 1, manifest_.volume_id},
                              durability_);
    if (!new_writer) return std::unexpected(new_writer.error());
    std::shared_ptr<JournalWriter> writer = std::move(*new_writer);
    hook_writer(*writer);
    uint64_t copied = snapshot_seq;
    const std::string old_journal = join(dir_, manifest_.journal);
    std::optional<JournalPosition> resume;
    if (auto ok = catch_up(old_journal, *old_writer, *writer, copied, resume); !ok)
        return std::unexpected(ok.error());

    // 4. The switch, with writers held: the last records, the tree onto the new pack, the
    //    manifest. (Before the manifest: a rebase that fails has changed nothing; one that
    //    worked reads as the old pack did, so a manifest that then fails leaves a volume that
    //    reads the same, its tree over a pack file the cleanup unlinks and it keeps open.)
    const auto pause_start = std::chrono::steady_clock::now();
    auto lock = lock_for_compaction();
    if (writer_ != old_writer || broken_) return fail(EIO, "compact", dir_);
    if (auto ok = writer_->sync(); !ok) return std::unexpected(ok.error());
    if (recoveries_ != recoveries)  // records it copied may have been discarded since
        return fail(EAGAIN, "compact (the journal failed meanwhile; try again)", dir_);
    if (auto ok = carry_records(old_journal, copied, *writer, copied, resume); !ok)
        return std::unexpected(ok.error());
    if (copied != writer_->last_seq()) return fail(EIO, "compact (journal copy incomplete)", dir_);
    if (auto ok = writer->sync(); !ok) return std::unexpected(ok.error());
    if (auto ok = io::step("compact.journal_written"); !ok) return std::unexpected(ok.error());
    // Every record of the old journal is durable now: no checkpoint is needed, and none may
    // outlive the old lower (a rollback cannot cross a rebase).
    checkpoints_.clear();
    if (auto ok = tree_->rebase(fresh->lower, instant); !ok)
        return std::unexpected(ok.error());
    next.last_compaction = utc_now_iso8601();
    next.last_compaction_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    bool keep_files = false;
    auto switched = write_manifest_locked(next, keep_files);
    cleanup.armed = !keep_files;
    if (!switched) return std::unexpected(switched.error());
    // The packs the new one names stay; the others go: the old one when its last reader goes
    // (an old snapshot, say), any other of an old chain at once (a reader that has it open
    // keeps reading it).
    const std::vector<std::string> keep = pack_bases(pack_path).value_or(std::vector<std::string>{});
    const bool old_is_base =
        std::find(keep.begin(), keep.end(), manifest_.pack) != keep.end();
    if (!old_is_base) pack_.lease->retire = true;
    for (const std::string& name : pack_bases(current_pack).value_or(std::vector<std::string>{})) {
        if (std::find(keep.begin(), keep.end(), name) == keep.end())
            (void)io::unlink(join(dir_, name), "pack");
    }
    pack_ = std::move(*fresh);
    const std::string retired_journal = old_journal;
    writer_ = writer;
    recovered_epochs_.clear();  // the new writer numbers its epochs from 0
    append_epoch_ = 0;
    manifest_ = next;
    stats.records_carried = copied - snapshot_seq;
    journal_records_ = stats.records_carried;
    journal_bytes_ = writer_->file_bytes();
    lock.unlock();
    (void)io::unlink(retired_journal, "journal");
    (void)io::fsync_dir(dir_, "volume directory");
    const auto t1 = std::chrono::steady_clock::now();
    stats.generation = generation;
    stats.pause_seconds = std::chrono::duration<double>(t1 - pause_start).count();
    stats.seconds = std::chrono::duration<double>(t1 - t0).count();
    return stats;
}

uint64_t VolumeImpl::auto_compaction_threshold_locked() const {
    if (options_.auto_compact_journal_bytes == 0) return 0;
    // A ratio of 0 (or less) makes the pack's part 0.
    const double by_pack = options_.auto_compact_pack_ratio * static_cast<double>(pack_.bytes);
    return std::max(options_.auto_compact_journal_bytes,
                    static_cast<uint64_t>(std::max(by_pack, 0.0)));
}

bool VolumeImpl::auto_compaction_due_locked() const {
    const uint64_t threshold = auto_compaction_threshold_locked();
    return threshold != 0 && journal_bytes_ >= threshold;
}

void VolumeImpl::note_mutation() noexcept {
    last_mutation_.store(std::chrono::steady_clock::now().time_since_epoch().count(),
                         std::memory_order_relaxed);
}

// Past the threshold, a compaction waits for the writers to pause (kAutoQuiet with no
// mutation), so a burst (an unpack, a copy) is not slowed by a compaction that would then have
// to carry and replay everything the burst writes meanwhile; past kAutoForce times the
// threshold it starts anyway, which bounds what a reopen replays and what the tree holds.
bool VolumeImpl::auto_compaction_may_start() const {
    const auto quiet_since =
        std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(
            last_mutation_.load(std::memory_order_relaxed)));
    if (std::chrono::steady_clock::now() - quiet_since >= kAutoQuiet) return true;
    std::lock_guard state(mu_);
    return journal_bytes_ >= kAutoForce * auto_compaction_threshold_locked();
}

void VolumeImpl::start_auto_compaction() {
    if (options_.auto_compact_journal_bytes == 0) return;
    // A journal already past the threshold when the volume opens (a crash during a compaction
    // leaves what was written meanwhile too; a smaller threshold this time) is compacted at
    // once, not at the next write: the next open then replays little.
    {
        std::lock_guard state(mu_);
        auto_wanted_ = auto_compaction_due_locked();
    }
    Background& b = auto_compactor_;
    b.thread = std::thread([this, &b] {
        std::unique_lock lock(b.mu);
        for (;;) {
            b.cv.wait(lock, [&] { return b.stopping || auto_wanted_; });
            if (b.stopping) return;
            auto_wanted_ = false;
            lock.unlock();
            // Writes made while the last compaction ran asked again; the journal they went to
            // may be short now.
            const bool due = [&] {
                std::lock_guard state(mu_);
                return auto_compaction_due_locked();
            }();
            if (!due) {
                lock.lock();
                continue;
            }
            if (!auto_compaction_may_start()) {
                lock.lock();
                b.cv.wait_for(lock, kAutoQuiet / 4, [&] { return b.stopping; });
                auto_wanted_ = true;  // look again
                continue;
            }
            auto done = compact();
            lock.lock();
            // A failed compaction is retried only after more has been written, and not at once.
            if (!done) b.cv.wait_for(lock, std::chrono::seconds(1), [&] { return b.stopping; });
        }
    });
}

void VolumeImpl::Background::stop() {
    if (!thread.joinable()) return;
    {
        std::lock_guard lock(mu);
        stopping = true;
    }
    cv.notify_all();
    thread.join();
}

}  // namespace packfs::volume
