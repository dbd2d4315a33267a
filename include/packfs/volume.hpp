// The volume (DESIGN §10): a directory holding a pack, the journal of every change made since
// the pack was written, and a manifest naming both. Opened, it is a writable Backend: the
// pack is the overlay's lower (overlay.hpp), the journal is replayed into the upper, and every
// change is appended to the journal before it is acknowledged as durable. Compaction writes
// the live tree into a fresh pack while readers and writers go on, then switches to it.
//
// The durability contract (docs/VOLUME.md says it in full; the crash tests check it):
// - explicit (the default, a disk filesystem's contract: ext4's data=ordered, commit=5): a
//             mutation is durable once a later sync() (or File::fsync on any handle of the
//             volume) returns, or at the latest one commit interval (5 s) after it returned;
//             until then a crash may lose it, never half of it. Concurrent syncs share one
//             fdatasync.
// - batch:    every mutation is durable when it returns (as `mount -o sync`); concurrent
//             mutations share one fdatasync (group commit), so many threads cost about one
//             fsync per batch.
// - always:   every mutation is durable when it returns (its own write + fdatasync).
// In every mode: after a crash at any instant, reopening gives exactly the state of some
// prefix of the mutations, which contains every mutation acknowledged as durable.
// A mutation that fails (a full disk, an I/O error) changes nothing, and the volume stays
// usable for the next one.
//
// Inode numbers are the volume's own and survive compaction (packs written by compaction keep
// them), so handles, st_ino and a FUSE mount's node ids stay valid while the volume is open.
// One process at a time opens a volume read-write (an advisory lock on DIR/LOCK).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "packfs/backend.hpp"
#include "packfs/export.hpp"
#include "packfs/pack.hpp"

namespace packfs {

enum class Durability : uint8_t { always, batch, explicit_sync };

PACKFS_API const char* durability_name(Durability d) noexcept;  // "always", "batch", "explicit"
PACKFS_API std::optional<Durability> durability_from_name(std::string_view name) noexcept;

// What opening found in the journal and dropped: a torn or damaged tail (never half a record).
struct RecoveryReport {
    uint64_t records_replayed = 0;
    uint64_t dropped_records = 0;  // best effort, see docs/JOURNAL.md
    uint64_t dropped_bytes = 0;
    uint64_t dropped_offset = 0;   // where the valid journal ended
    std::string reason;            // why the scan stopped ("checksum mismatch at offset 4160")
    bool clean() const noexcept { return dropped_bytes == 0; }
};

struct CompactionStats {
    uint64_t generation = 0;        // the new one
    uint64_t records_carried = 0;   // records made during the compaction, moved to the new journal
    double seconds = 0;             // whole compaction
    double pause_seconds = 0;       // writers were blocked this long (the switch)
    // Built over the volume's previous pack (packs cut into chunks: VolumeOptions::pack
    // .chunk_size), writing about what changed; else written whole.
    bool incremental = false;
    PackStats pack;
};

struct VolumeStatus {
    std::string path;
    uint64_t generation = 0;
    Durability durability = Durability::batch;
    uint64_t pack_bytes = 0;
    uint64_t journal_bytes = 0;
    uint64_t journal_records = 0;   // since the last compaction (this generation)
    uint64_t next_ino = 0;
    std::string pack_digest;
    std::string created;            // ISO 8601, UTC
    std::string last_compaction;    // ISO 8601, UTC; empty if never
    double last_compaction_seconds = 0;
    RecoveryReport recovery;        // what the last open dropped
};

struct VolumeInit {
    // Where the first pack's tree comes from: a pack file, a host directory, or nothing (an
    // empty volume). At most one of the two.
    std::string from_pack;
    std::string from_dir;
    // Recorded in the volume; each open may override it (VolumeOptions::durability).
    Durability durability = Durability::explicit_sync;
    PackWriteOptions pack;  // for from_dir and for compactions
};

struct VolumeOptions {
    // Overrides the durability mode the volume was created with, for this open only.
    std::optional<Durability> durability;
    // Every mutation answers EROFS; nothing in DIR is changed, the lock is not taken, and a
    // torn journal tail is skipped but not cut off.
    bool read_only = false;
    // Compact on its own (in a background thread) once the journal passes this many bytes, at
    // the first pause of the writers (1 s without a mutation) or past 4 times this, and when
    // the volume is closed past it; 0: only when asked.
    uint64_t auto_compact_journal_bytes = 0;
    // ... and, when non-zero, once it is also at least this many times the pack's current
    // size: at 1, the old pack a compaction rewrites is never larger than what was journaled
    // since the last one, so it writes at most about twice that, however large the pack grows.
    // The threshold bounds what a reopen replays and what the daemon holds in memory.
    double auto_compact_pack_ratio = 0;
    // Explicit mode: everything appended is made durable at least this often, by a background
    // thread (as ext4's commit=, and with its default): a crash loses at most the last
    // interval's changes, not all since the last fsync. 0: only fsync and sync() do. Other
    // modes are durable at each call already.
    std::chrono::milliseconds commit_interval{5000};
    // How compactions write their packs (keep_inode_numbers is always on). With a chunk_size,
    // compactions are incremental: each pack built over the one before (CompactionStats::
    // incremental), a chain of at most 8 packs, the next then written whole.
    PackWriteOptions pack;
};

class PACKFS_API Volume : public Backend {
public:
    using Backend::open;  // a file in the volume: volume->open("/a", O_RDWR)

    // Makes a new volume in `dir` (created if missing; an existing one must be empty).
    static Result<void> create(const std::string& dir, const VolumeInit& init);
    // Opens the volume in `dir`: maps its pack and replays its journal (recovery()).
    static Result<std::shared_ptr<Volume>> open(const std::string& dir,
                                                const VolumeOptions& options = {});

    // Makes every mutation so far durable (whatever the mode).
    virtual Result<void> sync() = 0;
    // Writes the live tree into a fresh pack and starts a new journal generation; readers
    // and writers go on meanwhile.
    virtual Result<CompactionStats> compact() = 0;
    virtual VolumeStatus status() const = 0;
    virtual const RecoveryReport& recovery() const noexcept = 0;
};

// What `packfs volume check` reports: the pack verified, the journal scanned and replayed into
// a scratch copy (nothing in DIR is changed), and what recovery would drop.
struct VolumeCheck {
    VerifyReport pack;
    RecoveryReport journal;
    std::string replay_error;  // a record that does not apply (a damaged or foreign journal)
    bool ok() const noexcept { return pack.ok() && journal.clean() && replay_error.empty(); }
};
PACKFS_API Result<VolumeCheck> check_volume(const std::string& dir);

// Whether `dir` looks like a volume (it holds a manifest), for the CLI's SOURCE detection.
PACKFS_API bool is_volume_dir(const std::string& dir);

}  // namespace packfs
