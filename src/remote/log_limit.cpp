#include "remote/log_limit.hpp"

#include <fmt/format.h>

#include <mutex>
#include <string>

namespace packfs::remote {

namespace {

struct Limiter {
    LogSink sink;
    LogLimit limit;
    std::mutex mutex;
    std::chrono::steady_clock::time_point window_start{};
    unsigned passed = 0;    // lines passed in this window
    uint64_t left_out = 0;  // lines dropped since the last one that passed

    void write(std::string_view line) {
        std::string note;
        {
            std::lock_guard lock(mutex);
            const auto now = limit.now();
            if (passed == 0 || now - window_start >= limit.interval) {
                window_start = now;
                passed = 0;
            }
            if (passed >= limit.burst) {
                ++left_out;
                return;
            }
            ++passed;
            if (left_out != 0) {
                note = fmt::format("({} more line{} like these left out)", left_out,
                                   left_out == 1 ? "" : "s");
                left_out = 0;
            }
        }
        // Outside the lock: a slow sink (syslog, a file on a busy disk) holds no other thread.
        if (!note.empty()) sink(note);
        sink(line);
    }
};

}  // namespace

LogSink rate_limited(LogSink sink, LogLimit limit) {
    auto limiter = std::make_shared<Limiter>();
    limiter->sink = std::move(sink);
    limiter->limit = std::move(limit);
    return [limiter](std::string_view line) { limiter->write(line); };
}

}  // namespace packfs::remote
