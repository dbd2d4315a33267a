// TEST ONLY. Small helpers shared by the Vfs tests (DESIGN §11).
#pragma once

#include <fcntl.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "conformance/conformance_suite.hpp"
#include "packfs/mem.hpp"
#include "packfs/path.hpp"
#include "packfs/vfs.hpp"

namespace packfs::vfs_test {

using conformance::FailsWith;
using conformance::FailsWithOneOf;
using conformance::IsOk;

inline std::shared_ptr<Backend> mem() { return make_mem_backend(); }

// Sorted names of a directory, or an empty list with a test failure.
inline std::vector<std::string> names_of(Backend& fs, std::string_view dir) {
    auto names = conformance::sorted_names(fs, dir);
    EXPECT_TRUE(IsOk(names)) << "readdir " << dir;
    return names ? *names : std::vector<std::string>{};
}

// The whole content of a file, or "<errno name>" when it cannot be read.
inline std::string content_of(Backend& fs, std::string_view path) {
    auto r = read_file(fs, path);
    if (!r) return "<" + std::string(errno_name(r.error().code())) + ">";
    return *r;
}

// True when the environment asks for the short sanitizer run.
inline bool sanitizer_run() {
    const char* v = std::getenv("PACKFS_SANITIZER_RUN");
    return v != nullptr && std::string_view(v) == "1";
}

}  // namespace packfs::vfs_test
