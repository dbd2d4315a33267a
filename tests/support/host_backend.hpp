// TEST ONLY. A Backend over a real host directory with plain syscalls (no containment),
// used to check the conformance suite itself against the kernel's behaviour.
#pragma once
#include <memory>
#include <string>

#include "packfs/backend.hpp"

namespace packfs::testing {
std::shared_ptr<Backend> make_host_backend(const std::string& root_dir);
}
