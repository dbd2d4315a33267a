// What every category times with and in what order it visits its files.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <latch>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/budget.hpp"
#include "bench/settle.hpp"
#include "packfs/error.hpp"

namespace packfs::bench {

class Stopwatch {
public:
    double seconds() const {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    }

private:
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// 0 .. n-1 in an order fixed by `seed`, so every run and backend visits files alike.
inline std::vector<std::size_t> shuffled(std::size_t n, uint64_t seed) {
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::mt19937_64 rng(seed);
    std::shuffle(order.begin(), order.end(), rng);
    return order;
}

// What each operation of a timed loop leaves for the teardown to remove: an entry (create,
// mkdir: the loop also stops at the entries the budget may leave) or nothing.
enum class Leaves { nothing, entry };

// Times op(i) for each i of `order` (op returns Result<void>), stopping early when `budget` is
// spent: after at least one operation, and telling the budget after how many. The clock and the
// budget start together; the budget's check is one clock read per operation on a disk-bound
// arm (tens of ns against microseconds) and a branch on the others.
template <class Op>
Result<double> time_each(const std::vector<std::size_t>& order, RunBudget& budget, Leaves leaves,
                         Op&& op) {
    Stopwatch clock;
    budget.start();
    for (std::size_t k = 0; k < order.size(); ++k) {
        if (auto ok = op(order[k]); !ok) return std::unexpected(ok.error());
        const bool stop = leaves == Leaves::entry ? budget.spent(k + 1) : budget.spent();
        if (k + 1 < order.size() && stop) {
            const double seconds = clock.seconds();
            budget.stopped_after(k + 1);
            return seconds;
        }
    }
    return clock.seconds();
}

// Runs body(k) on `threads` threads, started and parked before the clock starts; the clock
// stops when the last one has finished. The first error of any thread is the result. `setup`,
// if given, runs untimed on each thread before it parks (to warm that core's caches as the
// thread that made the data has them warm in a one-thread category); its error is the result.
inline Result<double> time_threads(std::size_t threads,
                                   const std::function<Result<void>(std::size_t)>& body,
                                   const std::function<Result<void>(std::size_t)>& setup = {}) {
    std::vector<std::optional<Error>> errors(threads);
    std::latch ready(static_cast<std::ptrdiff_t>(threads));
    std::latch start(1);
    std::vector<std::thread> pool;
    pool.reserve(threads);
    for (std::size_t k = 0; k < threads; ++k) {
        pool.emplace_back([&, k] {
            Result<void> prepared;
            if (setup) prepared = setup(k);
            ready.count_down();
            start.wait();
            if (!prepared) {
                errors[k] = prepared.error();
                return;
            }
            if (auto ok = body(k); !ok) errors[k] = ok.error();
        });
    }
    ready.wait();
    Stopwatch clock;
    start.count_down();
    for (auto& th : pool) th.join();
    const double seconds = clock.seconds();
    for (auto& e : errors) {
        if (e) return std::unexpected(*e);
    }
    return seconds;
}

}  // namespace packfs::bench
