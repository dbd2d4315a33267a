// The timed operations of the core categories (categories.hpp): each receives a fresh, empty
// target, does its setup, starts the clock only around the operations it reports, and leaves
// teardown to the target's destructor (untimed). categories.cpp makes the groups of them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "bench/budget.hpp"
#include "bench/categories.hpp"
#include "bench/target.hpp"
#include "packfs/backend.hpp"

namespace packfs::bench::category_timers {

inline constexpr std::size_t kMiB = 1024 * 1024;
// The scaling section's runs: it is a ratio of two medians of the same backend, and at 5
// runs it would add a minute and a half to the default run.
inline constexpr int kScalingRuns = 3;

Result<double> time_create(Target& t, const Sizes& s, RunBudget& budget);
Result<double> time_read(Target& t, const Sizes& s, RunBudget& budget);
Result<double> time_stat(Target& t, const Sizes& s, RunBudget& budget);
Result<double> time_stat_two_threads(Target& t, const Sizes& s, RunBudget& budget);
Result<double> time_readdir(Target& t, const Sizes& s, RunBudget& budget);
Result<double> time_unlink(Target& t, const Sizes& s, RunBudget& budget);
Result<double> time_mkdir(Target& t, const Sizes& s, RunBudget& budget);
Result<double> time_rmdir(Target& t, const Sizes& s, RunBudget& budget);
Result<double> time_write_large(Target& t, std::size_t mib);
Result<double> time_read_large(Target& t, std::size_t mib);
Result<double> time_concurrent(Target& t, const Sizes& s, RunBudget& budget);
Result<std::vector<double>> time_big_dir(Target& t, std::size_t entries);
Result<void> build_tree(Backend& fs, std::size_t entries);
Result<double> time_snapshots(Backend& fs, std::size_t calls);

}  // namespace packfs::bench::category_timers
