// Where a long benchmark run is, on stderr. On a terminal one line redrawn in place; anywhere
// else (`make bench | tee log`, a CI log) a plain line at each group's start and every few
// seconds, so a run blocked in a slow disk's fsyncs is never silent.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

namespace packfs::bench {

enum class ProgressStyle {
    off,
    in_place,  // a terminal: "\r" and redraw
    lines,     // not a terminal: whole lines, a ticker between steps
};

class Progress {
public:
    Progress(ProgressStyle style, std::size_t total_steps, std::FILE* out = stderr,
             std::chrono::milliseconds interval = std::chrono::seconds(5));
    ~Progress();
    Progress(const Progress&) = delete;
    Progress& operator=(const Progress&) = delete;

    // A group of figures starts: a line of its own in the `lines` style.
    void group(const std::string& category);
    // One run of one arm starts.
    void step(const std::string& category, const std::string& backend, int run, int runs);

private:
    std::string line_locked() const;
    void print_locked(bool whole_line);
    void tick(const std::stop_token& stop);

    ProgressStyle style_;
    std::size_t total_;
    std::FILE* out_;
    std::chrono::milliseconds interval_;
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
    std::mutex mutex_;
    std::condition_variable_any wake_;
    std::size_t done_ = 0;
    std::string what_;
    std::jthread ticker_;  // last: stopped and joined before the members it reads go
};

}  // namespace packfs::bench
