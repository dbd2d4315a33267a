#include "daemon_log.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <syslog.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>

namespace packfs::cli::daemon_log {

namespace {

std::atomic<int> g_file{-1};
std::atomic<bool> g_detached{false};

std::string stamp() {
    const auto now = std::chrono::system_clock::now();
    const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() %
        1000;
    std::tm utc{};
    ::gmtime_r(&seconds, &utc);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
    return fmt::format("{}.{:03}Z", text, ms);
}

}  // namespace

Result<void> open_file(const std::string& path) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return fail(errno, "open", fmt::format("{} (--log)", path));
    if (const int old = g_file.exchange(fd); old >= 0) ::close(old);
    return {};
}

void detached() {
    ::openlog("packfs", LOG_PID, LOG_DAEMON);
    g_detached.store(true);
}

void write(std::string_view line, int priority) {
    if (const int fd = g_file.load(); fd >= 0) {
        // One write, so lines from several threads (and an O_APPEND file) never interleave.
        const std::string whole = fmt::format("{} packfs[{}]: {}\n", stamp(), ::getpid(), line);
        for (std::size_t done = 0; done < whole.size();) {
            const ssize_t n = ::write(fd, whole.data() + done, whole.size() - done);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;  // a full disk: the line is lost, not the mount
            done += static_cast<std::size_t>(n);
        }
    } else if (g_detached.load()) {
        ::syslog(priority, "%.*s", static_cast<int>(line.size()), line.data());
    } else {
        std::fprintf(stderr, "packfs: %.*s\n", static_cast<int>(line.size()), line.data());
    }
}

}  // namespace packfs::cli::daemon_log
