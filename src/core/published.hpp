// Published<T>: the current immutable version of something (the Vfs's mount table), read by
// many threads without a shared reference count, replaced now and then by one writer.
//
// Readers use hazard pointers: a Reader publishes the version it reads in its thread's own
// record (one store, on a line no other reader writes) and checks that it is still current; a
// writer that replaces the version waits until no record names the old one, then releases it.
// So a reader writes no shared cache line (two threads walking one Vfs share nothing), and a
// store() returns with the old version gone, along with what only it owned (an unmounted
// member): unmount, then reopen the member's files, just works. The wait is for the readers
// already inside an operation on the old version, not for a grace period of every thread.
//
// RCU read sections (rcu.hpp) would serve readers as cheaply, but a writer that must see the
// old version released waits for a grace period of every reader thread, and a preempted reader
// stretches that to milliseconds; hazard pointers wait only for the readers of this version.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <utility>

#include "core/hazard.hpp"

namespace packfs {

template <class T>
class Published {
public:
    explicit Published(std::shared_ptr<const T> initial)
        : owner_(std::move(initial)), current_(owner_.get()) {}

    // The current version, protected while the Reader lives (a stack object of one thread).
    class Reader {
    public:
        explicit Reader(const Published& source) : record_(hazard::mine()) {
            for (;;) {
                const T* p = source.current_.load(std::memory_order_seq_cst);
                slot_ = hazard::hold(record_, p);
                if (slot_ < 0) {
                    // Slots all taken (Vfs inside Vfs, many deep): own a reference instead.
                    std::lock_guard lock(source.writer_);
                    pinned_ = source.owner_;
                    version_ = pinned_.get();
                    return;
                }
                // Still current after the hazard became visible: a writer replacing it now
                // will see the hazard and wait.
                if (source.current_.load(std::memory_order_seq_cst) == p) {
                    version_ = p;
                    return;
                }
                hazard::drop(record_, slot_);
            }
        }
        ~Reader() {
            if (slot_ >= 0) hazard::drop(record_, slot_);
        }
        Reader(const Reader&) = delete;
        Reader& operator=(const Reader&) = delete;

        const T* operator->() const noexcept { return version_; }
        const T& operator*() const noexcept { return *version_; }

    private:
        hazard::Record& record_;
        int slot_ = -1;
        const T* version_ = nullptr;
        std::shared_ptr<const T> pinned_;
    };

    // --- the writer ---
    // The current version as an owner (for work that outlives a Reader: a snapshot).
    std::shared_ptr<const T> owner() const {
        std::lock_guard lock(writer_);
        return owner_;
    }
    // Publishes `next`; returns once no reader holds the version it replaced, which is then
    // released. Never from a thread that holds a Reader of this Published.
    void store(std::shared_ptr<const T> next) {
        std::shared_ptr<const T> old;
        {
            std::lock_guard lock(writer_);
            current_.store(next.get(), std::memory_order_seq_cst);
            old = std::exchange(owner_, std::move(next));
        }
        hazard::wait_unused(old.get());
    }

private:
    mutable std::mutex writer_;  // owner_ (readers take it only when out of hazard slots)
    std::shared_ptr<const T> owner_;
    std::atomic<const T*> current_;
};

}  // namespace packfs
