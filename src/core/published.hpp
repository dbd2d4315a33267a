// Published<T>: the current immutable version of something, handed to readers by value.
//
// A writer publishes a new version with store(); a reader takes the current one with load()
// and keeps it alive for as long as it holds the shared_ptr. Both hold a tiny spin lock only
// for the pointer copy or swap (a few nanoseconds; a sleeping mutex costs more than that when
// eight threads meet on it): a reader never waits for a writer's work, only for another
// pointer copy, and an old version is released outside the lock.
//
// (std::atomic<std::shared_ptr> would do the same job, but GCC 12's libstdc++ unlocks its
// internal lock bit with relaxed ordering after a load, which ThreadSanitizer rightly reports
// as a data race against a concurrent store.)
#pragma once

#include <atomic>
#include <memory>
#include <thread>
#include <utility>

namespace packfs {

template <class T>
class Published {
public:
    explicit Published(std::shared_ptr<const T> initial) : current_(std::move(initial)) {}

    std::shared_ptr<const T> load() const {
        lock();
        std::shared_ptr<const T> copy = current_;
        unlock();
        return copy;
    }

    void store(std::shared_ptr<const T> next) {
        lock();
        current_.swap(next);
        unlock();
        // `next` now holds the old version; it is released here, outside the lock.
    }

private:
    void lock() const noexcept {
        for (int spins = 0; busy_.test_and_set(std::memory_order_acquire); ++spins) {
            if (spins > 64) std::this_thread::yield();  // the holder was preempted
        }
    }
    void unlock() const noexcept { busy_.clear(std::memory_order_release); }

    mutable std::atomic_flag busy_ = ATOMIC_FLAG_INIT;
    std::shared_ptr<const T> current_;
};

}  // namespace packfs
