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
#include <functional>
#include <mutex>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "packfs/error.hpp"

namespace packfs::remote {

using Clock = std::chrono::steady_clock;

// Why a request failed, for the log: the URL, the range and what went wrong.
struct HttpFailure {
    int code = EIO;      // errno-style: EIO, ETIMEDOUT, ENOENT, ENOTSUP, ECONNREFUSED, ...
    std::string detail;  // e.g. "HTTP 500", "connection refused", "Content-Range bytes 0-9/10"
};

// One request of any kind (the registry's API): the whole answer's body in `body`, or written
// to `out_fd` when that is set; the request's body from `body` or, when `in_fd` is set, the
// file's `in_size` bytes from its start.
struct HttpRequest {
    std::string method = "GET";
    std::string url;
    std::vector<std::string> headers;  // "Name: value"
    std::string body;
    int in_fd = -1;
    uint64_t in_size = 0;
    int out_fd = -1;
    long stall_seconds = 0;  // fail when no byte moved for this long (0: only the deadline)
    // Body bytes moved so far through out_fd (a 2xx answer's) or in_fd, and the total (the
    // answer's Content-Length or in_size; 0 while unknown). Called on the sending thread.
    std::function<void(uint64_t done, uint64_t total)> progress;
};
struct HttpResponse {
    long status = 0;
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;  // names lowercased, final answer
    std::string header(std::string_view name) const;           // "" when absent
};

class HttpClient {
public:
    explicit HttpClient(unsigned connections);
    ~HttpClient();
    HttpClient(const HttpClient&) = delete;
    HttpClient& operator=(const HttpClient&) = delete;

    // Fills `out` with bytes [offset, offset + out.size()) of `url` by one ranged GET (retried
    // as above until `deadline`). `total` gets the resource's size from the Content-Range.
    // A stop requested through `stop` ends the transfer and the retries early (ECANCELED):
    // background fetches of a pack being closed.
    bool get_range(const std::string& url, uint64_t offset, std::span<std::byte> out,
                   Clock::time_point deadline, uint64_t& total, HttpFailure& why,
                   std::stop_token stop = {});

    // Headers sent with every request from now on (a registry's Authorization).
    void set_headers(std::vector<std::string> headers);

    // One request, retried (for GET and HEAD) as a ranged GET is, until `deadline`. Any status
    // is a success here; what it means is the caller's to decide.
    bool send(const HttpRequest& request, Clock::time_point deadline, HttpResponse& response,
              HttpFailure& why);

private:
    enum class Outcome { ok, retry, fail };
    Outcome attempt(void* handle, const std::string& url, uint64_t offset, std::span<std::byte> out,
                    Clock::time_point deadline, uint64_t& total, HttpFailure& why,
                    const std::stop_token& stop);
    Outcome send_once(void* handle, const HttpRequest& request, Clock::time_point deadline,
                      HttpResponse& response, HttpFailure& why);
    // Takes a connection and runs `once` on it until it succeeds, fails for good, or the
    // deadline is too near for another try (exponential backoff between tries).
    bool with_retries(Clock::time_point deadline, HttpFailure& why,
                      const std::function<Outcome(void*)>& once, const std::stop_token& stop = {});
    // The options every request sets: the URL, redirects, timeouts against the deadline.
    static void set_common(void* handle, const std::string& url, Clock::time_point deadline);
    // Runs the transfer with this client's headers and `extra`. Returns the CURLcode.
    int perform(void* handle, const std::vector<std::string>& extra);
    // What a failed transfer (CURLcode `code`) means, and whether to try again.
    static Outcome transport_failure(void* handle, int code, std::string_view detail,
                                     HttpFailure& why);
    void* acquire(Clock::time_point deadline);
    void release(void* handle);

    unsigned max_handles_;
    mutable std::mutex mutex_;
    std::condition_variable idle_ready_;
    std::vector<void*> idle_;  // CURL easy handles, each with its live connection
    std::vector<std::string> headers_;
    unsigned created_ = 0;
};

}  // namespace packfs::remote
