// Small pieces of host I/O the commands share: an owning file descriptor, a write loop, the
// process's fd limit.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <span>
#include <utility>

#include "core/fd.hpp"

namespace packfs::cli {

using UniqueFd = packfs::Fd;

// Writes all of `data` to `fd`, retrying short writes and EINTR. Returns 0 or the errno.
int write_all(int fd, std::span<const std::byte> data) noexcept;

// Raises the soft RLIMIT_NOFILE to the hard limit. A deep extraction holds one fd per level and
// a mounted host directory caches directory fds (a quarter of the limit): the default soft
// limit of 1024 would bound both for no reason the administrator chose.
void raise_fd_limit() noexcept;

}  // namespace packfs::cli
