// The measuring loop. A Group is the arms that are compared with each other (one category,
// several backends; or one backend at several sizes). Its runs are interleaved, A/B style:
// round 1 runs every arm once, round 2 again in the reverse order, and so on, so a slow
// patch of the machine or one arm's leftovers land on every arm alike rather than on
// whichever always ran second. Each figure is the median of its runs, with min and max.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "packfs/error.hpp"

namespace packfs::bench {

struct Arm {
    std::string category;  // "create files", "write 64MB", "snapshot 1M-entry tree"
    std::string backend;   // "mem", "raw", "raw+fsync"
    uint64_t n = 0;        // operations per run: what ops/s counts
    uint64_t bytes = 0;    // payload bytes per run; 0 where MB/s means nothing
    // One run: set up (untimed), time the work, tear down (untimed); returns the seconds.
    std::function<Result<double>()> run_once;
};

struct Group {
    std::vector<Arm> arms;
    // The arm the others' ratio is taken against (usually raw); none if absent.
    std::optional<std::size_t> baseline;
    std::string baseline_label;  // how a ratio names the baseline; default its backend name
    std::function<Result<void>()> prepare;  // untimed, once before the runs (optional)
    std::function<void()> finish;           // once after them (optional)
};

struct Figure {
    std::size_t group = 0;  // index of the Group it came from: rows of one comparison
    std::string category;
    std::string backend;
    uint64_t n = 0;
    int runs = 0;
    double median_s = 0, min_s = 0, max_s = 0;
    double ops_per_s = 0;
    std::optional<double> mb_per_s;  // MB = 2^20 bytes
    // Baseline median / this median: above 1 this arm is faster. Absent without a baseline.
    std::optional<double> speedup;
    std::string baseline_name;  // what speedup is against ("raw", "1k tree")
    bool is_baseline = false;
};

// Where a failed run happened, and why.
struct RunFailure {
    std::string category;
    std::string backend;
    int run = 0;
    Error error;
};

struct HarnessOptions {
    int runs = 5;
    bool progress = false;  // a progress line on stderr
};

// Runs every group in order; the figures come in group order, arms in declared order.
std::expected<std::vector<Figure>, RunFailure> run_groups(std::vector<Group>& groups,
                                                          const HarnessOptions& options);

}  // namespace packfs::bench
