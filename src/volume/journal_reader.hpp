// Recovery's reader of a journal (format: journal_format.hpp, docs/JOURNAL.md).
//
// scan_journal() checks the header, then reads the frames in order, sequentially, with pread
// through one reusable buffer (never a mapping): the buffer holds a read-ahead window and
// grows to a frame's claimed size only after the claim was checked against the maximum and
// against the file's size, so a hostile length costs nothing. Each record goes to on_record
// only after its whole frame, checksum and sequence number were checked: never half a record.
//
// The scan stops at the first bad frame: a frame header cut short, a length over the maximum
// or past the end of the file, a checksum mismatch, non-zero flags or padding, or a seq that
// is not the previous + 1 (the first must be the header's first_seq). That is not an error:
// the scan returns what it read and what it would drop (the torn or damaged tail), and the
// caller decides (recovery: truncate_journal(path, scan.valid_end), then append after it).
//
// Errors: the header is bad (EUCLEAN, with the offset, expected and found values), its
// version is newer than this reader (ENOTSUP naming both versions), the file cannot be read
// (its errno), or on_record failed (its error, returned as is).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include "packfs/error.hpp"
#include "volume/journal_format.hpp"

namespace packfs::volume {

struct JournalRecordView {
    uint64_t seq;
    uint16_t type;
    std::span<const std::byte> payload;  // valid during the on_record call only
    uint64_t offset;                     // of the record's frame in the file
};

struct JournalScan {
    JournalHeaderFields header;
    uint32_t version = 0;
    uint32_t header_size = 0;
    uint64_t file_size = 0;
    uint64_t records = 0;   // valid records read (and passed to on_record)
    uint64_t last_seq = 0;  // seq of the last valid record; header.first_seq - 1 if none
    uint64_t valid_end = 0; // offset just past the last valid frame (header_size if none)
    // What follows valid_end, all zero when nothing does. dropped_records is best effort:
    // the bad frame counts 1, and so does each frame after it reached by following length
    // fields (each must be readable, within the maximum, and end inside the file), plus 1
    // for a fragment left at the end.
    uint64_t dropped_offset = 0;
    uint64_t dropped_bytes = 0;
    uint64_t dropped_records = 0;
    std::string reason;  // why the scan stopped early ("checksum mismatch at offset 4160")

    bool clean() const noexcept { return dropped_bytes == 0; }
    uint64_t next_seq() const noexcept { return last_seq + 1; }
};

using JournalRecordFn = std::function<Result<void>(const JournalRecordView&)>;

// Where a scan may resume: the offset of a frame boundary an earlier scan of the same file
// reached (a record's offset plus its frame size) and the seq the frame there must carry.
struct JournalPosition {
    uint64_t offset = 0;
    uint64_t seq = 0;
};

// Scans from the first record, or from `from` (the header is checked either way). Resuming
// is for a reader that follows a journal as it grows (a compaction catching up): it reads
// only what is new.
Result<JournalScan> scan_journal(const std::string& path, const JournalRecordFn& on_record,
                                 std::optional<JournalPosition> from = std::nullopt);

// Cuts the journal at `valid_end` (the torn tail a scan reported) and makes that durable.
Result<void> truncate_journal(const std::string& path, uint64_t valid_end);

}  // namespace packfs::volume
