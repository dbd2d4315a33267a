// The categories of the benchmark (the earlier PackFS's categories 1-7 and 9, plus the
// snapshot cost), each turned into a Group of interleaved arms, one per backend.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "bench/adapters.hpp"
#include "bench/harness.hpp"

namespace packfs::bench {

struct Sizes {
    std::size_t files = 20'000;       // 1-5: small files in one directory
    std::size_t file_bytes = 128;
    std::size_t dirs = 4'000;         // 6: mkdir / rmdir
    std::vector<std::size_t> large_mib{1, 16, 64};  // 7: written in 1 MiB pwrite calls
    std::size_t threads = 8;          // 9: each thread create+read+unlink of its own files
    std::size_t iterations = 4'000;
    std::size_t snapshot_small = 1'000;       // entries in the trees snapshot() is timed on
    std::size_t snapshot_large = 1'000'000;
    std::size_t snapshot_calls = 10'000;      // snapshot() calls per run
};

// Every category's group, in report order; `scratch` is the host directory raw targets are
// made under. The adapters are those selected; a category takes the ones it applies to.
std::vector<Group> make_groups(const Sizes& sizes, std::span<const BackendAdapter* const> adapters,
                               const std::string& scratch);

// "1k", "16k", "1M": a count as the category names print it.
std::string short_count(std::size_t n);

}  // namespace packfs::bench
