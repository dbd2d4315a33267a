// The remote layer's log lines, rate-limited: a server that is down or sends a damaged blob
// makes every read fail, and a line per failure would bury the log (and fill a disk) in
// minutes. At most `burst` lines pass per `interval`; the rest are counted, and the next line
// that passes says how many were left out, as the kernel's printk_ratelimit does.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

namespace packfs::remote {

using LogSink = std::function<void(std::string_view)>;

struct LogLimit {
    unsigned burst = 10;
    std::chrono::steady_clock::duration interval = std::chrono::seconds(5);
    // The clock (tests set their own).
    std::function<std::chrono::steady_clock::time_point()> now = std::chrono::steady_clock::now;
};

// A sink that passes lines to `sink` within `limit`; copies share one count. Thread-safe.
LogSink rate_limited(LogSink sink, LogLimit limit = {});

}  // namespace packfs::remote
