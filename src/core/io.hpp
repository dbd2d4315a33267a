// The durable-write primitives: every write, fsync, truncate and rename that PackFS relies on
// for durability (pack files, the journal, the manifest) goes through these, so that tests
// can inject faults where the kernel would give them.
//
// Each call retries EINTR, loops over short writes, never crashes, and answers failure as an
// Error whose op is the system call ("write", "fdatasync", ...) and whose path is `what`
// (a name for the file or the step, chosen by the caller: never shown to a Vfs user as is).
//
// Fault injection (tests only): set_fault_hook() installs one process-wide hook. Before each
// real call the hook is asked (op, what); 0 lets the call go ahead, any other value is an
// errno the call then fails with WITHOUT doing the I/O. For IoOp::write the hook may answer
// kShortWrite: the first half of the bytes are written for real and the call fails with
// ENOSPC (a torn write, exactly what a full disk gives). With no hook set the cost is one
// relaxed atomic load per call. The hook runs on the thread doing the I/O, with no PackFS
// lock of this file held; it may block, count, or raise(SIGKILL) to simulate a crash.
//
// step(name) is a named failpoint in a multi-step protocol (e.g. "compact.after_pack_fsync"):
// it does no I/O; it asks the hook (IoOp::step) and fails with its errno, so the caller
// aborts the protocol there.
//
// Recording (tests only): set_recorder() installs one process-wide recorder that is told of
// every call here that changes what a disk holds, after it took effect: a file made by
// create_file (and a truncation by its O_TRUNC), unlink, the bytes each write put where,
// ftruncate, fdatasync/fsync, rename, fsync_dir. A power-cut test replays that log on a model
// of a disk (tests/volume/powercut/). Reads, copy_file_range and step() are not recorded, nor
// is anything a call did not do (a refused or failed call records nothing; a write that
// failed part way records the bytes it wrote). While a recorder is installed, each recorded
// call holds one process-wide mutex across its system call and the recorder, so the log's
// order is the order the kernel saw the calls in (an fsync recorded after a write covers it).
// The recorder runs with that mutex held: it must not call these functions. With no recorder
// and no hook, the cost is the same one relaxed atomic load per call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "core/fd.hpp"
#include "packfs/error.hpp"

namespace packfs::io {

enum class IoOp : uint8_t { write, fsync, truncate, rename, fsync_dir, step };

// A hook's answer for IoOp::write: write half, then fail with ENOSPC.
inline constexpr int kShortWrite = -1;

using FaultHook = std::function<int(IoOp op, std::string_view what)>;

// Installs (or, with an empty hook, removes) the process-wide fault hook. Safe to call while
// other threads do I/O: a call already past its hook check finishes with the old hook.
void set_fault_hook(FaultHook hook);

// Writes all of `data` at `offset` (pwrite).
Result<void> pwrite_all(int fd, std::span<const std::byte> data, uint64_t offset,
                        std::string_view what);
// Writes all of `data` at the descriptor's current position (write).
Result<void> write_all(int fd, std::span<const std::byte> data, std::string_view what);
// Reads up to out.size() bytes at `offset` (pread, EINTR retried, short reads looped): the
// count, fewer only at the end of the file. Reads are not hooked.
Result<std::size_t> pread_full(int fd, std::span<std::byte> out, uint64_t offset,
                               std::string_view what);
// copy_file_range(2) of [in_offset, in_offset + length) of `in_fd` to `out_fd` at `out_offset`,
// looped as cp does (one call may copy less; EINTR retried) until `length` or the source's end,
// with at least one call (so a copy of nothing still answers EBADF, EISDIR, ...): the count
// copied. EFBIG for offsets past off_t. Not hooked.
Result<uint64_t> copy_file_range_all(int in_fd, uint64_t in_offset, int out_fd, uint64_t out_offset,
                                     uint64_t length, std::string_view what);
// Both fdatasync and fsync count as IoOp::fsync for the hook.
Result<void> fdatasync(int fd, std::string_view what);
Result<void> fsync(int fd, std::string_view what);
Result<void> ftruncate(int fd, uint64_t size, std::string_view what);
Result<void> rename(const std::string& from, const std::string& to, std::string_view what);
// Opens `dir` and fsyncs it, so that entries created, renamed or removed in it are durable.
Result<void> fsync_dir(const std::string& dir, std::string_view what);
// A named failpoint; see above.
Result<void> step(std::string_view name);

// open(path, flags | O_CLOEXEC, mode), EINTR retried, for a call whose flags include O_CREAT:
// the one way PackFS makes a file whose durability matters (packs, journals, the manifest), so
// that the recorder sees it. Not asked of the fault hook (the fault tests count the calls
// above). Fails with op "open".
Result<Fd> create_file(const std::string& path, int flags, uint32_t mode, std::string_view what);
// unlink(path); recorded, not hooked, as create_file. Fails with op "unlink".
Result<void> unlink(const std::string& path, std::string_view what);

// ---- recording (tests only; see the top of this file) ----------------------------------------

enum class IoEventKind : uint8_t { create, unlink, write, truncate, fsync, rename, fsync_dir };

// One recorded call. Paths are absolute, with the directory's symlinks resolved, so the same
// file always has the same name: for a call on a descriptor, the descriptor's path
// (/proc/self/fd) when the call was made. The views are valid only during the recorder's call.
struct IoEvent {
    IoEventKind kind = IoEventKind::write;
    std::string_view path;            // the file; fsync_dir: the directory; rename: the source
    std::string_view to;              // rename: the destination
    uint64_t ino = 0;                 // create, write, truncate, fsync: the file's inode number
    uint64_t offset = 0;              // write: where the bytes went; truncate: the new size
    std::span<const std::byte> data;  // write: the bytes
    bool data_only = false;           // fsync: it was an fdatasync
};

using Recorder = std::function<void(const IoEvent& event)>;

// Installs (or, with an empty recorder, removes) the process-wide recorder, once no recorded
// call is under way: after it returns, no call reports to the recorder it replaced.
void set_recorder(Recorder recorder);

}  // namespace packfs::io
