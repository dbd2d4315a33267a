// Decompression ahead of a sequential reader of a compressed pack (DataReader): when reads step
// from one stream block to the next, the block after is decompressed into the block cache on a
// thread of its own while the reader is busy with the one it has (its reply, the kernel, the
// next request). A read of every file in walk order is such a step from block to block, and a
// FUSE reader keeps one request in flight, so otherwise one CPU inflates while the other waits.
//
// One block ahead, one thread per pack, started at the first step. A reader that misses the
// block being decompressed ahead waits for it instead of inflating it twice. Reads that jump
// about (random small files, 8 readers at once) make few steps and so cost little here.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

namespace packfs::pack {

class DecompressAhead {
public:
    // `inflate(index)` puts block `index` in the cache; false when it did nothing (the block
    // was there, is stored raw, or failed: the reader meets the failure and reports it).
    explicit DecompressAhead(std::function<bool(uint64_t)> inflate);
    ~DecompressAhead();  // stops the thread; a block it is inflating is finished first
    DecompressAhead(const DecompressAhead&) = delete;
    DecompressAhead& operator=(const DecompressAhead&) = delete;

    // A read is at block `index` of `count`: a step from the block before queues the next.
    void at(uint64_t index, uint64_t count);
    // Waits while block `index` is being inflated ahead; true if it waited (the block is then
    // in the cache, unless inflating it failed or it was evicted at once).
    bool wait_for(uint64_t index);

    struct Stats {
        uint64_t inflated = 0;  // blocks this thread inflated
        uint64_t waits = 0;     // readers that waited for one
    };
    Stats stats() const noexcept;

private:
    static constexpr uint64_t kNone = ~uint64_t{0};
    void run(std::stop_token stop);

    std::function<bool(uint64_t)> inflate_;
    std::atomic<uint64_t> last_{kNone};  // the block the last read was at
    std::mutex mu_;
    std::condition_variable_any cv_;
    uint64_t queued_ = kNone;  // the next block to inflate
    uint64_t busy_ = kNone;    // the block being inflated
    std::atomic<uint64_t> inflated_{0}, waits_{0};
    std::jthread thread_;  // last: stopped and joined before the rest goes
};

}  // namespace packfs::pack
