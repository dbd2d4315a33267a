// Range GETs over HTTP(S) with libcurl: a pool of easy handles, each keeping its connection
// alive between requests, so up to `connections` requests are in flight at once. Every call is
// bounded by a deadline (retries included), never by the server's goodwill.
//
// What is retried, with exponential backoff (100 ms doubling to a 2 s cap) until the deadline:
// timeouts, a connection cut mid-body, 5xx and 429 answers. What fails at once: connection
// refused (the server is down: waiting would only hang the caller; the next read tries
// again), 4xx answers (404: ENOENT; 416: the resource is shorter than the pack), a 200 answer
// to a ranged request (a server that ignores Range: the body is not read, there is no silent
// full download), and a Content-Range or body that is not exactly what was asked.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "packfs/error.hpp"

namespace packfs::remote {

using Clock = std::chrono::steady_clock;

// Why a request failed, for the log: the URL, the range and what went wrong.
struct HttpFailure {
    int code = EIO;      // errno-style: EIO, ETIMEDOUT, ENOENT, ENOTSUP, ECONNREFUSED, ...
    std::string detail;  // e.g. "HTTP 500", "connection refused", "Content-Range bytes 0-9/10"
};

class HttpClient {
public:
    explicit HttpClient(unsigned connections);
    ~HttpClient();
    HttpClient(const HttpClient&) = delete;
    HttpClient& operator=(const HttpClient&) = delete;

    // Fills `out` with bytes [offset, offset + out.size()) of `url` by one ranged GET (retried
    // as above until `deadline`). `total` gets the resource's size from the Content-Range.
    bool get_range(const std::string& url, uint64_t offset, std::span<std::byte> out,
                   Clock::time_point deadline, uint64_t& total, HttpFailure& why);

    // Requests made and bytes received so far (every attempt counts).
    uint64_t requests() const noexcept;
    uint64_t bytes_received() const noexcept;

private:
    enum class Outcome { ok, retry, fail };
    Outcome attempt(void* handle, const std::string& url, uint64_t offset, std::span<std::byte> out,
                    Clock::time_point deadline, uint64_t& total, HttpFailure& why);
    void* acquire(Clock::time_point deadline);
    void release(void* handle);

    unsigned max_handles_;
    mutable std::mutex mutex_;
    std::condition_variable idle_ready_;
    std::vector<void*> idle_;  // CURL easy handles, each with its live connection
    unsigned created_ = 0;
    uint64_t requests_ = 0, bytes_ = 0;
};

}  // namespace packfs::remote
