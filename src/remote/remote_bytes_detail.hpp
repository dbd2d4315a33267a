// What remote_bytes.cpp (reads) and block_fetch.cpp (fetches) of HttpPackBytes share.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <utility>

#include "packfs/error.hpp"

namespace packfs::remote::detail {

// Calls each(first, last) for each maximal run of consecutive values in `sorted`, in order,
// until one fails; returns that failure, or success.
template <class Each>
Result<void> each_run(std::span<const std::size_t> sorted, Each&& each) {
    for (std::size_t k = 0; k < sorted.size();) {
        std::size_t j = k;
        while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
        if (auto done = each(sorted[k], sorted[j]); !done) return done;
        k = j + 1;
    }
    return {};
}

// A fetch that failed: `code` (the errno the cause maps to), with `line` (the URL, the bytes
// and the cause, as the log has it) as its detail.
inline std::unexpected<Error> fetch_failed(int code, std::string line) {
    return std::unexpected(Error(code, "read").with_detail(std::move(line)));
}

}  // namespace packfs::remote::detail
