#include "bench/settle.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace packfs::bench {
namespace {

void syncfs_now(const std::string& scratch) {
    const int fd = ::open(scratch.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    ::syncfs(fd);
    ::close(fd);
}

struct SettleState {
    std::mutex mutex;
    std::condition_variable done;
    bool flushing = false;
    double limit = 0;
    SettleCounts counts;
};

// Never destroyed: a flush still running when the program exits must find it intact.
SettleState& state() {
    static auto* s = new SettleState;
    return *s;
}

}  // namespace

void set_settle_limit(double seconds) {
    std::lock_guard lock(state().mutex);
    state().limit = seconds;
}

void settle_host_filesystem(const std::string& scratch) {
    SettleState& s = state();
    std::unique_lock lock(s.mutex);
    ++s.counts.flushes;
    if (s.limit <= 0) {
        lock.unlock();
        syncfs_now(scratch);
        return;
    }
    // A flush still running from an earlier run covers this one's writes as well as a new
    // one would start to: wait for it rather than queue another.
    if (!s.flushing) {
        s.flushing = true;
        std::thread([scratch, &s] {
            syncfs_now(scratch);
            std::lock_guard done_lock(s.mutex);
            s.flushing = false;
            s.done.notify_all();
        }).detach();
    }
    const auto limit = std::chrono::duration<double>(s.limit);
    if (!s.done.wait_for(lock, limit, [&s] { return !s.flushing; })) ++s.counts.not_waited;
}

SettleCounts settle_counts() {
    std::lock_guard lock(state().mutex);
    return state().counts;
}

}  // namespace packfs::bench
