#include "pack/reader/decompress_ahead.hpp"

#include <pthread.h>

#include <algorithm>
#include <utility>

namespace packfs::pack {

namespace {

// Fork safety. A thread inflating a block holds locks (the cache's shard, the buffer and zstd
// context pools) that a child process would inherit held. So a fork waits until no thread of any
// pack is inflating, and none starts until it is done (the gate below, held across the fork);
// the child counts the fork, which tells objects made before it that their thread is not there.
std::atomic<uint64_t> g_forks{0};

struct Gate {
    std::mutex mu;
    std::condition_variable cv;
    int inflating = 0;  // threads inflating now
    bool forking = false;
    Gate* parent = nullptr;  // in a child: the parent's, left as it was (still reachable)
};
// Never destroyed, and replaced in a child: threads of the parent may have been waiting on its
// condition variable at the fork, and destroying one with waiters (as exit() would) waits for
// them forever.
Gate* g_gate = new Gate;

void before_fork() noexcept {
    std::unique_lock lock(g_gate->mu);
    g_gate->forking = true;
    g_gate->cv.wait(lock, [] { return g_gate->inflating == 0; });
    lock.release();  // held across the fork
}

void after_fork_in_parent() noexcept {
    g_gate->forking = false;
    g_gate->mu.unlock();
    g_gate->cv.notify_all();
}

void after_fork_in_child() noexcept {
    g_forks.fetch_add(1, std::memory_order_relaxed);
    Gate* fresh = new Gate;
    fresh->parent = g_gate;  // held and perhaps waited on: left as it is
    g_gate = fresh;
}

uint64_t fork_count() noexcept {
    static const bool registered = [] {
        ::pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
        return true;
    }();
    (void)registered;
    return g_forks.load(std::memory_order_relaxed);
}

// Inflating, counted under the gate (waits while a fork is under way).
struct Inflating {
    Gate& gate = *g_gate;
    Inflating() {
        std::unique_lock lock(gate.mu);
        gate.cv.wait(lock, [&] { return !gate.forking; });
        ++gate.inflating;
    }
    ~Inflating() {
        {
            std::lock_guard lock(gate.mu);
            --gate.inflating;
        }
        gate.cv.notify_all();
    }
    Inflating(const Inflating&) = delete;
    Inflating& operator=(const Inflating&) = delete;
};

// What objects made before a fork leave in the child (their thread, their mutex and condition
// variable): never destroyed, and reachable from here, so that a leak checker does not take
// them for leaks.
struct Left {
    void* thread;
    void* sync;
    Left* next;
};
std::atomic<Left*> g_left{nullptr};

void leave(void* thread, void* sync) {
    auto* left = new Left{thread, sync, g_left.load(std::memory_order_relaxed)};
    while (!g_left.compare_exchange_weak(left->next, left, std::memory_order_release,
                                         std::memory_order_relaxed)) {
    }
}

}  // namespace

DecompressAhead::DecompressAhead(std::function<bool(uint64_t)> inflate, uint32_t block_size,
                                 uint64_t count)
    : inflate_(std::move(inflate)),
      count_(count),
      run_steps_(static_cast<uint32_t>(std::max<uint64_t>(2, kRunBytes / block_size))),
      ahead_(std::max<uint64_t>(1, kAheadBytes / block_size)),
      forks_(fork_count()) {}

DecompressAhead::~DecompressAhead() {
    if (!thread_) return;
    if (forked()) {
        // The parent's thread is not in this process: never joined, and what it may have been
        // waiting on is left as it is.
        leave(thread_.release(), sync_.release());
        return;
    }
    thread_->request_stop();
    thread_->join();
}

bool DecompressAhead::forked() const noexcept {
    return fork_count() != forks_;
}

void DecompressAhead::at(uint64_t index) {
    const uint64_t before = last_.exchange(index, std::memory_order_relaxed);
    if (before == index) return;  // another read in the same block
    const bool step = before != kNone && before + 1 == index;
    const uint32_t in_a_row = step ? steps_.fetch_add(1, std::memory_order_relaxed) + 1 : 0;
    if (!step) steps_.store(0, std::memory_order_relaxed);
    if (in_a_row < run_steps_ || index + 1 >= count_ || forked()) return;
    const uint64_t until = std::min(count_, index + 1 + ahead_);
    bool wake = false;
    {
        std::lock_guard lock(sync_->mu);
        // Not behind the reader; the range of a reader elsewhere is replaced.
        if (next_ < index + 1 || next_ > until) next_ = index + 1;
        until_ = until;
        wake = idle_ && next_ < until_;
        if (wake && !thread_)
            thread_ = std::make_unique<std::jthread>([this](std::stop_token s) { run(s); });
    }
    if (wake) sync_->cv.notify_all();
}

bool DecompressAhead::wait_for(uint64_t index) {
    if (forked()) return false;
    std::unique_lock lock(sync_->mu);
    if (busy_ != index) return false;
    sync_->cv.wait(lock, [&] { return busy_ != index; });
    return true;
}

void DecompressAhead::run(std::stop_token stop) {
    std::unique_lock lock(sync_->mu);
    while (true) {
        idle_ = true;
        sync_->cv.wait(lock, stop, [&] { return next_ < until_; });
        if (stop.stop_requested()) return;
        idle_ = false;
        while (next_ < until_ && !stop.stop_requested()) {
            const uint64_t index = next_++;
            busy_ = index;
            lock.unlock();
            {
                const Inflating gate;
                if (inflate_(index)) inflated_.fetch_add(1, std::memory_order_relaxed);
            }
            lock.lock();
            busy_ = kNone;
            sync_->cv.notify_all();  // a reader waiting for it (no system call when none waits)
        }
    }
}

DecompressAhead::Stats DecompressAhead::stats() const noexcept {
    return Stats{inflated_.load(std::memory_order_relaxed)};
}

}  // namespace packfs::pack
