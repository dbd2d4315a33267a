// The argument checks every backend makes the same way, in one place (DESIGN §4): what a name,
// an open's target, an xattr or a time must be. Errors name the operation and, where given,
// the virtual path.
#pragma once

#include <cstdint>
#include <string_view>

#include "packfs/error.hpp"
#include "packfs/types.hpp"

namespace packfs {

inline constexpr std::size_t kMaxXattrValue = 64 * 1024;  // Linux's XATTR_SIZE_MAX

// One component as the node calls take it: "", ".", "..", a '/' or a NUL is EINVAL, over 255
// bytes ENAMETOOLONG.
Result<void> check_name(std::string_view name, std::string_view op);

// What open() answers for an existing object of `type` opened with `flags` (ENOTDIR for
// O_DIRECTORY on a non-directory, EISDIR for a directory opened for writing, ELOOP for a
// symlink, ENOTSUP for a special file), in Linux's order.
Result<void> check_open_target(FileType type, int flags, std::string_view path = {});

// An xattr name the way Linux checks it: a known namespace prefix ("user.", "trusted.",
// "security.", "system.") and a name after it, 1..255 bytes in all.
Result<void> check_xattr_name(std::string_view name, std::string_view op,
                              std::string_view path = {});
// A value up to 64 KiB (E2BIG beyond).
Result<void> check_xattr_value(std::string_view value, std::string_view path = {});

// A utimens time: nsec 0..999,999,999 where it is set.
Result<void> check_time(const TimeUpdate& update, std::string_view path = {});
// Applies one utimens update to `field`.
void apply_time(Time& field, const TimeUpdate& update, Time now) noexcept;

}  // namespace packfs
