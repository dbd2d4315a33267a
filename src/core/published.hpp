// Published<T>: the current immutable version of something, handed to readers by value.
//
// A writer publishes a new version with store(); a reader takes the current one with load()
// and keeps it alive for as long as it holds the shared_ptr. Both hold a tiny mutex only for
// the pointer copy or swap: a reader never waits for a writer's work, only for another
// pointer copy, and an old version is released outside the mutex.
//
// (std::atomic<std::shared_ptr> would do the same job, but GCC 12's libstdc++ unlocks its
// internal lock bit with relaxed ordering after a load, which ThreadSanitizer rightly reports
// as a data race against a concurrent store.)
#pragma once

#include <memory>
#include <mutex>
#include <utility>

namespace packfs {

template <class T>
class Published {
public:
    explicit Published(std::shared_ptr<const T> initial) : current_(std::move(initial)) {}

    std::shared_ptr<const T> load() const {
        std::lock_guard lock(mutex_);
        return current_;
    }

    void store(std::shared_ptr<const T> next) {
        {
            std::lock_guard lock(mutex_);
            current_.swap(next);
        }
        // `next` now holds the old version; it is released here, outside the lock.
    }

private:
    mutable std::mutex mutex_;
    std::shared_ptr<const T> current_;
};

}  // namespace packfs
