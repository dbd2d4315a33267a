// Small pieces of host I/O the commands share: an owning file descriptor, a write loop, the
// process's fd limit.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <span>
#include <utility>

namespace packfs::cli {

// An owning file descriptor: closed when the object goes.
class UniqueFd {
public:
    UniqueFd() = default;
    explicit UniqueFd(int fd) noexcept : fd_(fd) {}
    UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    UniqueFd& operator=(UniqueFd&& o) noexcept {
        if (this != &o) {
            reset();
            fd_ = std::exchange(o.fd_, -1);
        }
        return *this;
    }
    UniqueFd(const UniqueFd&) = delete;
    UniqueFd& operator=(const UniqueFd&) = delete;
    ~UniqueFd() { reset(); }

    int get() const noexcept { return fd_; }
    explicit operator bool() const noexcept { return fd_ >= 0; }
    int release() noexcept { return std::exchange(fd_, -1); }
    void reset() noexcept {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }

private:
    int fd_ = -1;
};

// Writes all of `data` to `fd`, retrying short writes and EINTR. Returns 0 or the errno.
int write_all(int fd, std::span<const std::byte> data) noexcept;

// Raises the soft RLIMIT_NOFILE to the hard limit. A deep extraction holds one fd per level and
// a mounted host directory caches directory fds (a quarter of the limit): the default soft
// limit of 1024 would bound both for no reason the administrator chose.
void raise_fd_limit() noexcept;

}  // namespace packfs::cli
