// The journal's writer (format: journal_format.hpp, docs/JOURNAL.md; DESIGN §10).
//
// The volume calls append() under its own lock, so records are numbered in the order the
// operations were applied; append() frames the record into a coalescing buffer and returns a
// ticket (epoch, seq). When the record is durable depends on the Durability mode:
//
//   always         append() itself writes the record and fdatasyncs it (one fsync per record,
//                  under the caller's lock) and fails if either fails.
//   batch          wait_durable(ticket), called after the volume's lock is released, blocks
//                  until the record is durable. Group commit, leader/follower: a waiter that
//                  finds no flush in progress becomes the leader, takes everything buffered so
//                  far, writes it with ONE pwrite and ONE fdatasync outside the writer's
//                  mutex (appends go on into a fresh buffer meanwhile), then publishes the new
//                  durable seq and wakes everyone; waiters that arrive during a flush sleep on
//                  the condition variable and are batched into the next one.
//   explicit_sync  nothing is durable before sync(). append() writes the buffer out (no
//                  fsync) once it passes kFlushBytes, and once kSyncBytes were written since
//                  the last sync it asks for a sync (set_sync_due: the volume's commit thread
//                  makes it, off the mutation path) or, with no one to ask, syncs by itself, so
//                  memory stays bounded; wait_durable() is a no-op. sync() is a group commit as
//                  in batch mode: the leader takes every pending byte and writes and fdatasyncs
//                  them outside the writer's mutex while appends go on into a fresh buffer, and
//                  concurrent sync()s wait for it (or lead the next flush) instead of each
//                  paying an fdatasync: many threads that each fsync share one.
//
// Failure, always and batch. When the write or fdatasync of a batch fails, that batch and
// every record appended after it are DISCARDED: the writer truncates the file back to the last
// durable offset (and fdatasyncs that), drops them from the buffer, bumps its epoch and turns
// failed. Every waiter whose ticket is in the discarded range gets the error; a ticket from
// before the failure is judged against that failure's first discarded seq, so it can never be
// mistaken for a later record with the same seq. While failed, append() returns the error.
// The volume rolls its state back to before first_discarded_seq() and calls resume(): the
// writer is ok again and the next record gets seq first_discarded_seq(). If the truncate
// itself fails, the file may hold a discarded record: the writer stays failed for good
// (append answers EIO) and the volume must refuse mutations until it is reopened (recovery
// then decides from the file).
//
// Failure, explicit_sync. A failed write keeps the records pending: the file is truncated back
// to the last fully written offset (so a retry never leaves a torn frame in the middle) and
// the next sync() or buffer flush retries; sync() returns the error of the flush it led (a
// sync() that waited for a failed flush leads one of its own). A failed fdatasync makes every
// byte written since the last good sync suspect (Linux may drop dirty pages after a failed
// fsync): they are all kept in memory until a sync succeeds, and the retry rewrites them from
// the last durable offset. Past kMaxPendingBytes pending, append() waits for a flush under way,
// or with none under way makes one itself, and refuses with ENOSPC only when that flush fails
// (while the disk keeps failing).
//
// Records must not be dropped without sync(): the destructor does no I/O.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/fd.hpp"
#include "packfs/error.hpp"
#include "packfs/volume.hpp"
#include "volume/journal_format.hpp"
#include "volume/journal_reader.hpp"

namespace packfs::volume {

using Durability = packfs::Durability;  // include/packfs/volume.hpp

struct JournalTicket {
    uint64_t epoch;
    uint64_t seq;
};

class JournalWriter {
public:
    static constexpr std::size_t kFlushBytes = 1 << 20;        // explicit: write out past this
    static constexpr std::size_t kSyncBytes = 16 << 20;        // explicit: self-sync past this
    static constexpr std::size_t kMaxPendingBytes = 64 << 20;  // explicit: ENOSPC past this

    // A new journal: O_CREAT|O_EXCL, the header written and fdatasynced, then the directory
    // fsynced. header.first_seq must be >= 1.
    static Result<std::unique_ptr<JournalWriter>> create(const std::string& path,
                                                         const JournalHeaderFields& header,
                                                         Durability durability);
    // After recovery: appends at scan.valid_end (the file must be exactly that long: the
    // caller truncated the torn tail), next seq = scan.last_seq + 1.
    static Result<std::unique_ptr<JournalWriter>> open_append(const std::string& path,
                                                              const JournalScan& scan,
                                                              Durability durability);

    JournalWriter(const JournalWriter&) = delete;
    JournalWriter& operator=(const JournalWriter&) = delete;
    ~JournalWriter() = default;

    // Frames one record (payload <= kMaxJournalPayload) and returns its ticket; see above.
    Result<JournalTicket> append(uint16_t type, std::span<const std::byte> payload);
    // explicit_sync: makes room in the pending bytes for the next append (under kMaxPendingBytes
    // once more, flushing as append would: ENOSPC when that fails), so that append cannot
    // fail: a caller that must not change anything it cannot journal asks first (the volume,
    // under its lock). The bound is then passed by at most that one record. Other modes: only
    // whether the writer takes appends at all.
    Result<void> make_room();
    // batch: blocks until the ticket's record is durable (or discarded: its error).
    // always: at once. explicit_sync: no-op, success.
    Result<void> wait_durable(JournalTicket ticket);
    // Everything appended so far written and fdatasynced, in any mode.
    Result<void> sync();

    // explicit_sync: `notify` is called (with the writer's mutex held: it must only wake
    // someone, never call the writer) once kSyncBytes were written since the last sync, and
    // that someone calls sync(); without it append() syncs by itself at that point.
    void set_sync_due(std::function<void()> notify);

    // After a failure (always, batch): the first seq that was discarded.
    uint64_t first_discarded_seq() const;
    // Called by the volume, under its lock, after rolling back: ok again, next seq =
    // first_discarded_seq(). EIO if the writer failed for good.
    Result<void> resume();

    Durability durability() const noexcept { return durability_; }
    uint64_t durable_seq() const;
    uint64_t last_seq() const;
    uint64_t file_bytes() const;  // bytes written to the file so far (durable or not)
    uint64_t fsync_count() const;

private:
    JournalWriter(Fd fd, std::string path, Durability durability, uint64_t end, uint64_t last_seq);

    // Each *_locked function runs with mu_ held.
    Result<void> write_and_sync_locked();           // always: the buffer, then fdatasync
    // explicit: until `frame` more bytes fit under kMaxPendingBytes (see make_room).
    Result<void> make_room_locked(std::unique_lock<std::mutex>& lock, std::size_t frame);
    void discard_locked(const Error& error);        // always, batch: the failure protocol
    Result<void> explicit_write_locked();           // explicit: pending bytes not yet written
    // explicit: leads one flush of every pending byte (write, then fdatasync), with the mutex
    // released meanwhile; the result of that flush.
    Result<void> explicit_flush(std::unique_lock<std::mutex>& lock);
    // explicit: until everything appended before the call is durable, or a flush it led failed.
    Result<void> explicit_group_sync(std::unique_lock<std::mutex>& lock);
    Result<void> batch_sync(std::unique_lock<std::mutex>& lock, JournalTicket ticket);

    // A failure that ended an epoch: tickets of that epoch from first_discarded on get error.
    struct EpochEnd {
        uint64_t first_discarded;
        Error error;
    };

    mutable std::mutex mu_;
    mutable std::condition_variable flushed_;
    Fd fd_;
    const std::string path_;
    const Durability durability_;

    std::vector<std::byte> buffer_;   // framed records after durable_end_ (see .cpp)
    std::vector<std::byte> spare_;    // batch, explicit: the leader's buffer, kept for reuse
    uint64_t next_seq_;
    uint64_t durable_seq_;
    uint64_t durable_end_;            // file offset up to which the file is durable
    uint64_t written_end_;            // file offset up to which bytes are written
    std::size_t buffer_written_ = 0;  // explicit: leading bytes of buffer_ already written
    std::size_t retry_at_ = 0;        // explicit: buffer size at which to retry a write
    bool flushing_ = false;           // batch, explicit: a leader is writing
    std::function<void()> sync_due_;  // explicit: who syncs once kSyncBytes are written
    bool sync_asked_ = false;         // explicit: sync_due_ called since the last flush
    bool room_made_ = false;          // explicit: make_room() made room for the next append
    uint64_t epoch_ = 0;
    std::vector<EpochEnd> epoch_ends_;  // index: epoch
    std::optional<Error> failed_;       // always, batch: set until resume()
    bool broken_ = false;               // the truncate after a failure failed
    uint64_t first_discarded_ = 0;
    uint64_t fsyncs_ = 0;
};

}  // namespace packfs::volume
