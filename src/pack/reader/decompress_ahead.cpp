#include "pack/reader/decompress_ahead.hpp"

#include <algorithm>
#include <utility>

namespace packfs::pack {

DecompressAhead::DecompressAhead(std::function<bool(uint64_t)> inflate, uint32_t block_size,
                                 uint64_t count)
    : inflate_(std::move(inflate)),
      count_(count),
      run_steps_(static_cast<uint32_t>(std::max<uint64_t>(2, kRunBytes / block_size))),
      ahead_(std::max<uint64_t>(1, kAheadBytes / block_size)) {}

DecompressAhead::~DecompressAhead() {
    if (thread_.joinable()) {
        thread_.request_stop();
        thread_.join();
    }
}

void DecompressAhead::at(uint64_t index) {
    const uint64_t before = last_.exchange(index, std::memory_order_relaxed);
    if (before == index) return;  // another read in the same block
    const bool step = before != kNone && before + 1 == index;
    const uint32_t in_a_row = step ? steps_.fetch_add(1, std::memory_order_relaxed) + 1 : 0;
    if (!step) steps_.store(0, std::memory_order_relaxed);
    if (in_a_row < run_steps_ || index + 1 >= count_) return;
    const uint64_t until = std::min(count_, index + 1 + ahead_);
    bool wake = false;
    {
        std::lock_guard lock(mu_);
        // Not behind the reader; the range of a reader elsewhere is replaced.
        if (next_ < index + 1 || next_ > until) next_ = index + 1;
        until_ = until;
        wake = idle_ && next_ < until_;
        if (wake && !thread_.joinable())
            thread_ = std::jthread([this](std::stop_token s) { run(s); });
    }
    if (wake) cv_.notify_all();
}

bool DecompressAhead::wait_for(uint64_t index) {
    std::unique_lock lock(mu_);
    if (busy_ != index) return false;
    waits_.fetch_add(1, std::memory_order_relaxed);
    cv_.wait(lock, [&] { return busy_ != index; });
    return true;
}

void DecompressAhead::run(std::stop_token stop) {
    std::unique_lock lock(mu_);
    while (true) {
        idle_ = true;
        cv_.wait(lock, stop, [&] { return next_ < until_; });
        if (stop.stop_requested()) return;
        idle_ = false;
        while (next_ < until_ && !stop.stop_requested()) {
            const uint64_t index = next_++;
            busy_ = index;
            lock.unlock();
            if (inflate_(index)) inflated_.fetch_add(1, std::memory_order_relaxed);
            lock.lock();
            busy_ = kNone;
            cv_.notify_all();  // a reader waiting for it (no system call when none waits)
        }
    }
}

DecompressAhead::Stats DecompressAhead::stats() const noexcept {
    return Stats{inflated_.load(std::memory_order_relaxed), waits_.load(std::memory_order_relaxed)};
}

}  // namespace packfs::pack
