// Small pieces of host I/O the commands share: an owning file descriptor and a write loop.
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

}  // namespace packfs::cli
