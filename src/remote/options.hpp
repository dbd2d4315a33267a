// RemoteOptions checked where they are used (open_remote_pack, pull_pack), so every caller (the
// CLI, the Python and C bindings, a program) is held to the same rules.
#pragma once

#include <string_view>

#include "packfs/error.hpp"
#include "packfs/remote.hpp"

namespace packfs::remote {

// EINVAL from `op`, naming `url` and what is wrong (remote_option_problem, or request headers
// given for an oci:// reference).
Result<void> check_options(std::string_view url, const RemoteOptions& options, std::string_view op);

}  // namespace packfs::remote
