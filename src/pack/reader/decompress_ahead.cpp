#include "pack/reader/decompress_ahead.hpp"

#include <utility>

namespace packfs::pack {

DecompressAhead::DecompressAhead(std::function<bool(uint64_t)> inflate)
    : inflate_(std::move(inflate)) {}

DecompressAhead::~DecompressAhead() {
    if (thread_.joinable()) {
        thread_.request_stop();
        thread_.join();
    }
}

void DecompressAhead::at(uint64_t index, uint64_t count) {
    const uint64_t before = last_.exchange(index, std::memory_order_relaxed);
    if (before == kNone || before + 1 != index || index + 1 >= count) return;
    {
        std::lock_guard lock(mu_);
        if (busy_ == index + 1 || queued_ == index + 1) return;
        queued_ = index + 1;  // a step elsewhere meanwhile replaces what was queued
        if (!thread_.joinable()) thread_ = std::jthread([this](std::stop_token s) { run(s); });
    }
    cv_.notify_all();
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
        cv_.wait(lock, stop, [&] { return queued_ != kNone; });
        if (stop.stop_requested()) return;
        const uint64_t index = std::exchange(queued_, kNone);
        busy_ = index;
        lock.unlock();
        if (inflate_(index)) inflated_.fetch_add(1, std::memory_order_relaxed);
        lock.lock();
        busy_ = kNone;
        cv_.notify_all();  // readers waiting for it
    }
}

DecompressAhead::Stats DecompressAhead::stats() const noexcept {
    return Stats{inflated_.load(std::memory_order_relaxed), waits_.load(std::memory_order_relaxed)};
}

}  // namespace packfs::pack
