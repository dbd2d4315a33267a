// Decompression ahead of a sequential reader of a compressed pack (DataReader): once reads have
// stepped from stream block to stream block over kRunBytes (two steps at least), the blocks of
// the next kAheadBytes are decompressed into the block cache on a thread of its own while the
// reader is busy with the one it has (its reply, the kernel, the next request). A read of every
// file in walk order steps so, and a FUSE reader keeps one request in flight, so otherwise one
// CPU inflates while the other waits.
//
// One thread per pack, started at the first run; it works through its range without a wake-up
// per block. A reader that misses the block being inflated ahead waits for it instead of
// inflating it twice. Reads that jump about (random small files, 8 readers at once) seldom make
// such a run: a small file that straddles blocks is shorter than kRunBytes.
//
// A fork (Python's multiprocessing makes children so) waits until no such thread is inflating a
// block, so that none of the locks inflating takes is held in the child. In the child the object
// does nothing (its thread is not there: reads inflate their own blocks) and is never joined.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace packfs::pack {

class DecompressAhead {
public:
    static constexpr uint64_t kRunBytes = 128 * 1024;
    static constexpr uint64_t kAheadBytes = 256 * 1024;

    // `inflate(index)` puts block `index` in the cache; false when it did nothing (the block
    // was there, is stored raw, or failed: the reader meets the failure and reports it).
    // Blocks are `block_size` bytes of the stream, `count` of them.
    DecompressAhead(std::function<bool(uint64_t)> inflate, uint32_t block_size, uint64_t count);
    ~DecompressAhead();  // stops the thread; a block it is inflating is finished first
    DecompressAhead(const DecompressAhead&) = delete;
    DecompressAhead& operator=(const DecompressAhead&) = delete;

    // A read is at block `index`: within a run of steps from each block to the next, the
    // blocks after it up to kAheadBytes are queued.
    void at(uint64_t index);
    // Waits while block `index` is being inflated ahead; true if it waited (the block is then
    // in the cache, unless inflating it failed or it was evicted at once).
    bool wait_for(uint64_t index);

    struct Stats {
        uint64_t inflated = 0;  // blocks this thread inflated
    };
    Stats stats() const noexcept;

private:
    static constexpr uint64_t kNone = ~uint64_t{0};
    void run(std::stop_token stop);
    // This process forked since the object was made (it is the child).
    bool forked() const noexcept;

    std::function<bool(uint64_t)> inflate_;
    uint64_t count_;
    uint32_t run_steps_;                 // steps in a row that make a run
    uint64_t ahead_;                     // blocks inflated ahead of the reader
    std::atomic<uint64_t> last_{kNone};  // the block the last read was at
    std::atomic<uint32_t> steps_{0};     // steps in a row to it from the block before
    // On the heap: a child process leaves them be (a condition variable the parent's thread
    // waited on at the fork cannot be destroyed there: it would wait for that thread forever).
    struct Sync {
        std::mutex mu;
        std::condition_variable_any cv;
    };
    std::unique_ptr<Sync> sync_ = std::make_unique<Sync>();
    uint64_t next_ = 0, until_ = 0;  // the blocks left to inflate: [next_, until_)
    uint64_t busy_ = kNone;          // the block being inflated
    bool idle_ = true;               // the thread waits for work (or has not started)
    std::atomic<uint64_t> inflated_{0};
    uint64_t forks_;                        // the process's fork count when made
    std::unique_ptr<std::jthread> thread_;  // last: stopped and joined before the rest goes
};

}  // namespace packfs::pack
