// The shared state of a live mem backend: the published version, the writer lock, and the
// table of open files. Shared (by shared_ptr) between the backend and every File it opened,
// so a handle outlives neither its data nor the backend's lock.
//
// Concurrency protocol (DESIGN §5):
// - `current` holds the published version. Readers load it once per operation (a pointer
//   copy, see core/published.hpp) and work on that immutable Tree; they never take `writer`.
// - A mutation holds `writer`, copies the published Tree (O(1): two map roots), edits the
//   copy by path copying, and publishes it with one pointer swap. Old versions are freed by
//   reference counting when the last reader or snapshot lets go.
// - An unlinked file stays alive while handles are open on it: `open_counts` counts handles
//   per ino. A mutation that drops an inode's last link checks the count and publishes while
//   holding `open_mutex`; an opener counts itself under `open_mutex` and then re-checks that
//   the inode still exists. So either the unlink sees the opener (and keeps the inode as an
//   orphan with nlink 0), or the opener sees the unlink (and fails with ENOENT).
//   Lock order: writer, then open_mutex.
#pragma once

#include <mutex>
#include <new>
#include <unordered_map>

#include "core/published.hpp"
#include "mem/mem_tree.hpp"
#include "packfs/mem.hpp"

namespace packfs::mem {

class MemState {
public:
    // A plain mem tree (`lower` null: an empty root of its own), or an overlay over `lower`.
    explicit MemState(const MemOptions& options, LowerPtr lower = nullptr, uint64_t next_ino = 0);

    TreePtr load() const { return current_.load(); }

    // Runs `edit` on a private copy of the published tree under the writer lock and publishes
    // the copy if `edit` succeeds. With `lock_open_table`, `open_mutex` is held throughout,
    // as dropping an inode's last link requires.
    template <class Edit>
    auto mutate(Edit&& edit, bool lock_open_table = false) -> decltype(edit(std::declval<Tree&>()));

    // Publishes `version` in place of the current one, carrying over as orphans the inodes
    // open handles hold that `version` lacks (restore_version in mem_version.hpp).
    void restore(TreePtr version);

    // Counts a handle on `ino` if the inode is still in the published tree (`seen`, the
    // version the caller found it in, spares the look when nothing was published since).
    bool acquire_handle(uint64_t ino, const Tree* seen = nullptr);
    // Counts a handle while the caller holds the writer lock and knows `ino` exists.
    void acquire_handle_locked(uint64_t ino);
    // Drops a handle; the last handle of an unlinked inode frees it.
    void release_handle(uint64_t ino);
    // Whether a handle is open on `ino`. Requires open_mutex (held by mutate(..., true)).
    bool is_open_locked(uint64_t ino) const {
        return open_counts_.contains(ino);
    }

    const MemOptions& options() const noexcept { return options_; }

private:
    void publish(Tree&& next);

    MemOptions options_;
    Published<Tree> current_;
    std::mutex writer_;
    TreePtr published_;  // == current_, read by the writer without taking current_'s lock
    mutable std::mutex open_mutex_;
    std::unordered_map<uint64_t, uint32_t> open_counts_;
};

template <class Edit>
auto MemState::mutate(Edit&& edit, bool lock_open_table) -> decltype(edit(std::declval<Tree&>())) {
    std::lock_guard writer_lock(writer_);
    std::unique_lock open_lock(open_mutex_, std::defer_lock);
    if (lock_open_table) open_lock.lock();
    // Out of memory midway leaves only the private copy half-edited: it is dropped, the
    // published version is untouched, and the caller gets ENOSPC.
    try {
        Tree next = *published_;
        auto result = edit(next);
        if (result) publish(std::move(next));
        return result;
    } catch (const std::bad_alloc&) {
        return fail(ENOSPC, "write (out of memory)");
    } catch (const LowerFault& fault) {  // a lower failed while copying up or looking up
        return std::unexpected(fault.error);
    }
}

}  // namespace packfs::mem
