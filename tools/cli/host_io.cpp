#include "host_io.hpp"

#include <sys/resource.h>

#include <cerrno>

namespace packfs::cli {

int write_all(int fd, std::span<const std::byte> data) noexcept {
    while (!data.empty()) {
        const ssize_t n = ::write(fd, data.data(), data.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        data = data.subspan(static_cast<std::size_t>(n));
    }
    return 0;
}

void raise_fd_limit() noexcept {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &limit);
    }
}

}  // namespace packfs::cli
