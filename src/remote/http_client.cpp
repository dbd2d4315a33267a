#include "remote/http_client.hpp"

#include "remote/curl_api.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string_view>

namespace packfs::remote {

namespace {

constexpr auto kFirstBackoff = std::chrono::milliseconds(100);
constexpr auto kBackoffCap = std::chrono::milliseconds(2000);
constexpr auto kConnectCap = std::chrono::milliseconds(10'000);

// One attempt's view of the answer, filled by the callbacks.
struct Transfer {
    std::span<std::byte> out;
    std::size_t received = 0;
    long status = 0;
    bool have_range = false;
    uint64_t range_first = 0, range_last = 0, range_total = 0;
    std::string refused;  // why the callbacks stopped the transfer, if they did
};

bool starts_with_nocase(std::string_view text, std::string_view prefix) {
    if (text.size() < prefix.size()) return false;
    for (std::size_t i = 0; i < prefix.size(); ++i) {
        if (std::tolower(static_cast<unsigned char>(text[i])) != prefix[i]) return false;
    }
    return true;
}

// "Content-Range: bytes FIRST-LAST/TOTAL" (TOTAL may be "*", which is no use to us).
bool parse_content_range(std::string_view value, Transfer& t) {
    constexpr std::string_view kBytes = "bytes ";
    if (!value.starts_with(kBytes)) return false;
    value.remove_prefix(kBytes.size());
    unsigned long long first = 0, last = 0, total = 0;
    char tail = 0;
    const std::string text(value);
    if (std::sscanf(text.c_str(), "%llu-%llu/%llu%c", &first, &last, &total, &tail) < 3)
        return false;
    t.have_range = true;
    t.range_first = first;
    t.range_last = last;
    t.range_total = total;
    return true;
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
    auto& t = *static_cast<Transfer*>(user);
    const std::size_t n = size * count;
    std::string_view line(data, n);
    while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.remove_suffix(1);
    if (line.starts_with("HTTP/")) {  // a new response (after a redirect): start over
        t.have_range = false;
        const auto space = line.find(' ');
        t.status = space == std::string_view::npos
                       ? 0
                       : std::atol(std::string(line.substr(space + 1, 3)).c_str());
        return n;
    }
    if (starts_with_nocase(line, "content-range:")) {
        std::string_view value = line.substr(14);
        while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
        parse_content_range(value, t);
    }
    return n;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
    auto& t = *static_cast<Transfer*>(user);
    const std::size_t n = size * count;
    if (t.status >= 300 || t.status < 200) return n;  // an error page: read and dropped
    if (t.status != 206) {
        t.refused = fmt::format("HTTP {} to a ranged request (the server ignores Range)", t.status);
        return CURL_WRITEFUNC_ERROR;
    }
    if (n > t.out.size() - t.received) {
        t.refused = "more bytes than the range asked for";
        return CURL_WRITEFUNC_ERROR;
    }
    std::memcpy(t.out.data() + t.received, data, n);
    t.received += n;
    return n;
}

// The answer to a general request, filled by its callbacks.
struct Exchange {
    const HttpRequest* request;
    HttpResponse* response;
    uint64_t sent = 0;
    uint64_t received = 0;  // through out_fd
    uint64_t length = 0;    // the answer's Content-Length, 0 when it has none
    std::string failed{};
};

constexpr std::size_t kMaxBodyInMemory = 64 << 20;  // a registry's JSON, not a blob

size_t on_exchange_header(char* data, size_t size, size_t count, void* user) {
    auto& x = *static_cast<Exchange*>(user);
    const std::size_t n = size * count;
    std::string_view line(data, n);
    while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.remove_suffix(1);
    if (line.starts_with("HTTP/")) {
        x.response->headers.clear();
        x.length = 0;
        const auto space = line.find(' ');
        x.response->status = space == std::string_view::npos
                                 ? 0
                                 : std::atol(std::string(line.substr(space + 1, 3)).c_str());
        return n;
    }
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) return n;
    std::string name(line.substr(0, colon));
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (name == "content-length") x.length = std::strtoull(std::string(value).c_str(), nullptr, 10);
    x.response->headers.emplace_back(std::move(name), std::string(value));
    return n;
}

size_t on_exchange_body(char* data, size_t size, size_t count, void* user) {
    auto& x = *static_cast<Exchange*>(user);
    const std::size_t n = size * count;
    if (x.request->out_fd >= 0 && x.response->status / 100 == 2) {
        for (std::size_t done = 0; done < n;) {
            const ssize_t w = ::write(x.request->out_fd, data + done, n - done);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) {
                x.failed = fmt::format("writing the body: {}", std::strerror(errno));
                return CURL_WRITEFUNC_ERROR;
            }
            done += static_cast<std::size_t>(w);
        }
        x.received += n;
        if (x.request->progress) x.request->progress(x.received, x.length);
        return n;
    }
    if (x.response->body.size() + n > kMaxBodyInMemory) {
        x.failed = "an answer larger than 64 MiB";
        return CURL_WRITEFUNC_ERROR;
    }
    x.response->body.append(data, n);
    return n;
}

size_t on_exchange_read(char* buffer, size_t size, size_t count, void* user) {
    auto& x = *static_cast<Exchange*>(user);
    const HttpRequest& r = *x.request;
    const std::size_t room = size * count;
    if (r.in_fd < 0) {
        const std::size_t n = std::min<std::size_t>(room, r.body.size() - x.sent);
        std::memcpy(buffer, r.body.data() + x.sent, n);
        x.sent += n;
        return n;
    }
    const std::size_t want = static_cast<std::size_t>(std::min<uint64_t>(room, r.in_size - x.sent));
    if (want == 0) return 0;
    for (;;) {
        const ssize_t got = ::pread(r.in_fd, buffer, want, static_cast<off_t>(x.sent));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            x.failed = "reading the file to send";
            return CURL_READFUNC_ABORT;
        }
        x.sent += static_cast<uint64_t>(got);
        if (r.progress) r.progress(x.sent, r.in_size);
        return static_cast<std::size_t>(got);
    }
}

// A transfer's progress callback: a nonzero answer aborts it (CURLE_ABORTED_BY_CALLBACK).
int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    return static_cast<const std::stop_token*>(user)->stop_requested() ? 1 : 0;
}

long remaining_ms(Clock::time_point deadline) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    return std::max<long>(1, static_cast<long>(left.count()));
}

}  // namespace

HttpClient::HttpClient(unsigned connections) : max_handles_(std::max(1u, connections)) {}

HttpClient::~HttpClient() {
    for (void* h : idle_) curl().easy_cleanup(static_cast<CURL*>(h));
}

void* HttpClient::acquire(Clock::time_point deadline) {
    std::unique_lock lock(mutex_);
    for (;;) {
        if (!idle_.empty()) {
            void* h = idle_.back();
            idle_.pop_back();
            return h;
        }
        if (created_ < max_handles_) {
            ++created_;
            lock.unlock();
            CURL* h = curl().easy_init();
            if (h == nullptr) {
                lock.lock();
                --created_;
                return nullptr;
            }
            return h;
        }
        if (idle_ready_.wait_until(lock, deadline) == std::cv_status::timeout) return nullptr;
    }
}

void HttpClient::release(void* handle) {
    {
        std::lock_guard lock(mutex_);
        idle_.push_back(handle);
    }
    idle_ready_.notify_one();
}

HttpClient::Outcome HttpClient::attempt(void* handle, const std::string& url, uint64_t offset,
                                        std::span<std::byte> out, Clock::time_point deadline,
                                        uint64_t& total, HttpFailure& why,
                                        const std::stop_token& stop) {
    CURL* h = static_cast<CURL*>(handle);
    Transfer t;
    t.out = out;
    const std::string range = fmt::format("{}-{}", offset, offset + out.size() - 1);
    set_common(h, url, deadline);
    curl().easy_setopt(h, CURLOPT_RANGE, range.c_str());
    curl().easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl().easy_setopt(h, CURLOPT_HEADERDATA, &t);
    curl().easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl().easy_setopt(h, CURLOPT_WRITEDATA, &t);
    if (stop.stop_possible()) {
        curl().easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
        curl().easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl().easy_setopt(h, CURLOPT_XFERINFODATA, &stop);
    }
    const auto code = static_cast<CURLcode>(perform(h, {}));
    if (stop.stop_requested()) {
        why = {ECANCELED, "cancelled"};
        return Outcome::fail;
    }
    if (!t.refused.empty()) {
        why = {ENOTSUP, t.refused};
        return Outcome::fail;
    }
    if (code != CURLE_OK)
        return transport_failure(h, code,
                                 fmt::format("after {} of {} bytes", t.received, out.size()), why);
    if (t.status == 429 || t.status >= 500) {
        why = {EIO, fmt::format("HTTP {}", t.status)};
        return Outcome::retry;
    }
    if (t.status != 206) {
        why = {t.status == 404                      ? ENOENT
               : t.status == 401 || t.status == 403 ? EACCES
                                                    : EIO,
               t.status == 416
                   ? fmt::format("HTTP 416: the resource ends before byte {}", offset + out.size())
                   : fmt::format("HTTP {}", t.status)};
        return Outcome::fail;
    }
    if (!t.have_range || t.range_first != offset || t.range_last != offset + out.size() - 1) {
        why = {EIO, t.have_range ? fmt::format("Content-Range bytes {}-{} for a request of {}",
                                               t.range_first, t.range_last, range)
                                 : std::string("a 206 answer without a usable Content-Range")};
        return Outcome::fail;
    }
    if (t.received != out.size()) {
        why = {EIO, fmt::format("{} of {} bytes received", t.received, out.size())};
        return Outcome::retry;
    }
    total = t.range_total;
    return Outcome::ok;
}

std::string HttpResponse::header(std::string_view name) const {
    for (const auto& [n, v] : headers) {
        if (n == name) return v;
    }
    return {};
}

void HttpClient::set_headers(std::vector<std::string> headers) {
    std::lock_guard lock(mutex_);
    headers_ = std::move(headers);
}

HttpClient::Outcome HttpClient::send_once(void* handle, const HttpRequest& request,
                                          Clock::time_point deadline, HttpResponse& response,
                                          HttpFailure& why) {
    CURL* h = static_cast<CURL*>(handle);
    response = HttpResponse{};
    Exchange x{.request = &request, .response = &response};
    set_common(h, request.url, deadline);
    curl().easy_setopt(h, CURLOPT_HEADERFUNCTION, on_exchange_header);
    curl().easy_setopt(h, CURLOPT_HEADERDATA, &x);
    curl().easy_setopt(h, CURLOPT_WRITEFUNCTION, on_exchange_body);
    curl().easy_setopt(h, CURLOPT_WRITEDATA, &x);
    if (request.stall_seconds > 0) {
        curl().easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl().easy_setopt(h, CURLOPT_LOW_SPEED_TIME, request.stall_seconds);
    }
    const uint64_t body_size = request.in_fd >= 0 ? request.in_size : request.body.size();
    if (request.method == "HEAD") {
        curl().easy_setopt(h, CURLOPT_NOBODY, 1L);
    } else if (request.method == "PUT" || request.method == "POST" || request.method == "PATCH") {
        curl().easy_setopt(h, CURLOPT_UPLOAD, 1L);  // PUT, with the body from the read callback
        curl().easy_setopt(h, CURLOPT_READFUNCTION, on_exchange_read);
        curl().easy_setopt(h, CURLOPT_READDATA, &x);
        curl().easy_setopt(h, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(body_size));
        if (request.method != "PUT")
            curl().easy_setopt(h, CURLOPT_CUSTOMREQUEST, request.method.c_str());
    }
    const auto code = static_cast<CURLcode>(perform(h, request.headers));
    if (!x.failed.empty()) {
        why = {EIO, x.failed};
        return Outcome::fail;
    }
    if (code != CURLE_OK) return transport_failure(h, code, {}, why);
    if (response.status == 429 || response.status >= 500) {
        why = {EIO, fmt::format("HTTP {}", response.status)};
        return Outcome::retry;
    }
    return Outcome::ok;
}

bool HttpClient::send(const HttpRequest& request, Clock::time_point deadline,
                      HttpResponse& response, HttpFailure& why) {
    // A retried GET that writes to a file would append twice: retry only into memory.
    const bool retry = (request.method == "GET" || request.method == "HEAD") && request.out_fd < 0;
    return with_retries(deadline, why, [&](void* handle) {
        const Outcome outcome = send_once(handle, request, deadline, response, why);
        return outcome == Outcome::retry && !retry ? Outcome::fail : outcome;
    });
}

bool HttpClient::with_retries(Clock::time_point deadline, HttpFailure& why,
                              const std::function<Outcome(void*)>& once,
                              const std::stop_token& stop) {
    if (auto loaded = load_curl(); !loaded) {  // (the first request of the process loads it)
        why = {EIO, std::string(loaded.error().message())};
        return false;
    }
    auto backoff = std::chrono::duration_cast<Clock::duration>(kFirstBackoff);
    for (;;) {
        void* handle = acquire(deadline);
        if (handle == nullptr) {
            why = {ETIMEDOUT, "no connection free before the timeout"};
            return false;
        }
        const Outcome outcome = once(handle);
        release(handle);
        if (outcome == Outcome::ok) return true;
        if (outcome == Outcome::fail) return false;
        if (Clock::now() + backoff >= deadline) {
            why.code = ETIMEDOUT;
            why.detail += " (gave up at the timeout)";
            return false;
        }
        {  // a stop cuts the wait short
            std::mutex m;
            std::condition_variable_any woken;
            std::unique_lock lock(m);
            woken.wait_for(lock, stop, backoff, [] { return false; });
        }
        if (stop.stop_requested()) {
            why = {ECANCELED, "cancelled"};
            return false;
        }
        backoff = std::min<Clock::duration>(2 * backoff, kBackoffCap);
    }
}

void HttpClient::set_common(void* handle, const std::string& url, Clock::time_point deadline) {
    CURL* h = static_cast<CURL*>(handle);
    const long left = remaining_ms(deadline);
    curl().easy_reset(h);  // keeps the live connection, drops the last request's options
    curl().easy_setopt(h, CURLOPT_URL, url.c_str());
    curl().easy_setopt(h, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for DNS timeouts
    curl().easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
    curl().easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
    curl().easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    curl().easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl().easy_setopt(h, CURLOPT_USERAGENT, "packfs");
    curl().easy_setopt(h, CURLOPT_TIMEOUT_MS, left);
    curl().easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                     std::min<long>(left, static_cast<long>(kConnectCap.count())));
}

int HttpClient::perform(void* handle, const std::vector<std::string>& extra) {
    CURL* h = static_cast<CURL*>(handle);
    curl_slist* headers = nullptr;
    {
        std::lock_guard lock(mutex_);
        for (const std::string& line : headers_) headers = curl().slist_append(headers, line.c_str());
    }
    for (const std::string& line : extra) headers = curl().slist_append(headers, line.c_str());
    headers = curl().slist_append(headers, "Expect:");  // no 100-continue round trip
    curl().easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    const CURLcode code = curl().easy_perform(h);
    curl().slist_free_all(headers);
    return code;
}

HttpClient::Outcome HttpClient::transport_failure(void* handle, int code, std::string_view detail,
                                                  HttpFailure& why) {
    const auto c = static_cast<CURLcode>(code);
    long os_errno = 0;
    curl().easy_getinfo(static_cast<CURL*>(handle), CURLINFO_OS_ERRNO, &os_errno);
    if (c == CURLE_COULDNT_CONNECT && os_errno == ECONNREFUSED) {
        why = {ECONNREFUSED, "connection refused"};
        return Outcome::fail;
    }
    if (c == CURLE_URL_MALFORMAT || c == CURLE_UNSUPPORTED_PROTOCOL) {
        why = {EINVAL, curl().easy_strerror(c)};
        return Outcome::fail;
    }
    if (c == CURLE_COULDNT_RESOLVE_HOST) {
        why = {EHOSTUNREACH, curl().easy_strerror(c)};
        return Outcome::fail;
    }
    why = {c == CURLE_OPERATION_TIMEDOUT ? ETIMEDOUT : EIO,
           detail.empty() ? std::string(curl().easy_strerror(c))
                          : fmt::format("{} {}", curl().easy_strerror(c), detail)};
    return Outcome::retry;
}

bool HttpClient::get_range(const std::string& url, uint64_t offset, std::span<std::byte> out,
                           Clock::time_point deadline, uint64_t& total, HttpFailure& why,
                           std::stop_token stop) {
    return with_retries(
        deadline, why,
        [&](void* handle) { return attempt(handle, url, offset, out, deadline, total, why, stop); },
        stop);
}

}  // namespace packfs::remote
