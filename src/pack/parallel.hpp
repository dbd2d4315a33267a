// Runs fn(i) for i in [0, count) on `jobs` threads (the caller's thread is one of them) and
// returns the first error any call returned, after every started call finished. Between its
// own items the caller's thread calls `tick()`, so progress is reported from the caller only.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "packfs/error.hpp"

namespace packfs::pack {

template <class Fn, class Tick>
Result<void> parallel_for(std::size_t count, unsigned jobs, Fn&& fn, Tick&& tick) {
    std::atomic<std::size_t> next{0};
    std::atomic<bool> failed{false};
    std::mutex error_mutex;
    std::optional<Error> first_error;
    auto work = [&](bool caller) {
        for (;;) {
            if (failed.load(std::memory_order_relaxed)) return;
            std::size_t i = next.fetch_add(1, std::memory_order_relaxed);
            if (i >= count) return;
            Result<void> r = fn(i);
            if (!r) {
                std::lock_guard lock(error_mutex);
                if (!first_error) first_error = r.error();
                failed = true;
                return;
            }
            if (caller) tick();
        }
    };
    {
        std::vector<std::jthread> helpers;
        unsigned extra = std::min<std::size_t>(jobs > 0 ? jobs - 1 : 0, count > 0 ? count - 1 : 0);
        helpers.reserve(extra);
        for (unsigned t = 0; t < extra; ++t) helpers.emplace_back([&] { work(false); });
        work(true);
    }  // joins the helpers
    if (first_error) return std::unexpected(*first_error);
    return {};
}

}  // namespace packfs::pack
