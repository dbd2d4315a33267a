// The remote log's rate limit (src/remote/log_limit.hpp): a burst passes, the rest of the
// interval is counted, and the next line that passes says how many were left out.
#include "remote/log_limit.hpp"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace packfs::remote {
namespace {

using namespace std::chrono_literals;

struct Captured {
    std::vector<std::string> lines;
    std::chrono::steady_clock::time_point clock{};
    LogSink sink(unsigned burst) {
        return rate_limited([this](std::string_view line) { lines.emplace_back(line); },
                            LogLimit{burst, 5s, [this] { return clock; }});
    }
};

TEST(LogLimit, ABurstPassesTheRestIsCountedAndSaidWithTheNextLineThatPasses) {
    Captured c;
    auto log = c.sink(3);
    for (int i = 0; i < 100; ++i) log("line " + std::to_string(i));
    EXPECT_EQ(c.lines, (std::vector<std::string>{"line 0", "line 1", "line 2"}));
    c.clock += 4s;  // the same interval: still left out
    log("line 100");
    EXPECT_EQ(c.lines.size(), 3u);
    c.clock += 1s;  // a new interval
    log("line 101");
    log("line 102");
    EXPECT_EQ(c.lines, (std::vector<std::string>{"line 0", "line 1", "line 2",
                                                 "(98 more lines like these left out)", "line 101",
                                                 "line 102"}));
    c.clock += 10s;
    log("line 103");  // nothing left out since: no note
    EXPECT_EQ(c.lines.back(), "line 103");
    EXPECT_EQ(c.lines.size(), 7u);
}

TEST(LogLimit, CopiesShareOneCountAndOneLineLeftOutIsSaidInTheSingular) {
    Captured c;
    auto log = c.sink(1);
    auto copy = log;
    log("a");
    copy("b");
    c.clock += 5s;
    copy("c");
    EXPECT_EQ(c.lines, (std::vector<std::string>{"a", "(1 more line like these left out)", "c"}));
}

TEST(LogLimit, ThreadsAtOnceNeverPassMoreThanTheBurst) {
    std::mutex m;
    std::vector<std::string> lines;
    auto log = rate_limited(
        [&](std::string_view line) {
            std::lock_guard lock(m);
            lines.emplace_back(line);
        },
        LogLimit{.burst = 8, .interval = 1h});
    std::vector<std::jthread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&log] {
            for (int i = 0; i < 1000; ++i) log("x");
        });
    threads.clear();
    EXPECT_EQ(lines.size(), 8u);
}

}  // namespace
}  // namespace packfs::remote
