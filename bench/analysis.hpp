// What the report derives from the figures, beside the table: the scaling check (time at 4N
// against time at N, next to the predictions of O(n), O(n log n) and O(n^2)), the order
// check (did going earlier or later in a round change a figure?), what the Vfs costs over
// mem, and the targets of the current issue with their verdicts.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "bench/harness.hpp"

namespace packfs::bench {

// One 4x step of one scaling key on one backend.
struct ScalingStep {
    std::string key;      // "stat files", "entry dir: create", "mount backends"
    std::string backend;
    std::string section;  // of the larger figure
    uint64_t n_small = 0, n_large = 0;  // operations; bytes where by_bytes
    bool by_bytes = false;
    uint64_t scale_small = 0, scale_large = 0;  // 1 -> 4, 4 -> 16
    double ratio = 0;                           // median at the larger n / median at the smaller
    double min_ratio = 0;                       // the same of the fastest runs (noise only adds)
    double linear = 4, nlogn = 0, quadratic = 16;  // the predictions for this step
    std::string verdict;                           // "O(n)", "O(n log n)", "O(n^2)"
};

std::vector<ScalingStep> scaling_steps(std::span<const Figure> figures);
// The class whose prediction is closest to `ratio` (by factor, i.e. in log space) for a 4x
// step from n: "O(n)", "O(n log n)" or "O(n^2)".
std::string closest_class(double ratio, uint64_t n);

void print_scaling(std::FILE* out, std::span<const Figure> figures);
// The complexity alarm: the steps that took at least kAlarmRatio times as long at 4N as at N,
// by their medians and by their fastest runs both. Every scaled category is documented as
// O(n log n) or better (docs/BENCH.md), about 4.5-4.9x a 4x step, and O(n^2) is 16x; the
// tripwire sits well above the first because caches make real code step up at some sizes
// (a working set outgrowing the LLC: up to ~11x, docs/BENCH.md), and asking the fastest runs
// too keeps a shared machine's stalls, which only ever add time, from tripping it.
inline constexpr double kAlarmRatio = 12;
std::vector<ScalingStep> quadratic_steps(std::span<const Figure> figures);
// Every figure whose earlier-in-round and later-in-round medians differ by more than
// `threshold` (0.2: 20%), or one line saying none did.
void print_order(std::FILE* out, std::span<const Figure> figures, double threshold = 0.2);
// vfs median / mem median, category by category, where one group has both.
void print_vfs_overhead(std::FILE* out, std::span<const Figure> figures);
// The targets of issues 3 and 13 that the figures allow to check, measured value and verdict.
void print_targets(std::FILE* out, std::span<const Figure> figures);

}  // namespace packfs::bench
