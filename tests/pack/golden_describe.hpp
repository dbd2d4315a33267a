// What a golden pack holds, as text (tests/pack/golden_test.cpp): one line per entry, keyed by
// the SHA-256 of its path, so a golden's tree can be recorded beside it when it is written and
// compared with what every later reader finds.
#pragma once

#include <string>
#include <string_view>

#include "packfs/backend.hpp"

namespace packfs::golden {

std::string hex_sha256(std::string_view bytes);
// Every entry of `fs`, one line each: type, mode, ids, nlink, size (not for directories),
// rdev, times with ns, content SHA-256 or target, xattrs; "error: ..." when a call fails.
std::string describe_all(Backend& fs);

}  // namespace packfs::golden
