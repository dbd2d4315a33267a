// Host files for tests: a scratch directory removed with everything in it, and whole-file
// reads and writes.
#pragma once

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace packfs::test_support {

// mkdtemp under $TMPDIR (or /tmp); removed, recursively, when the object goes.
struct TempDir {
    std::filesystem::path path;
    TempDir() {
        const char* base = std::getenv("TMPDIR");
        std::string tmpl = std::string(base && *base ? base : "/tmp") + "/packfs-test-XXXXXX";
        path = ::mkdtemp(tmpl.data());
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    ~TempDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path, ignored);
    }
};

inline std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace packfs::test_support
