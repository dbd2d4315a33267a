// The measuring loop. A Group is the arms that are compared with each other (one category,
// several backends; or one backend at several sizes). Its runs are interleaved, A/B style:
// round 1 runs every arm once, round 2 again in the reverse order, and so on, so a slow
// patch of the machine or one arm's leftovers land on every arm alike rather than on
// whichever always ran second. Each figure is the median of its runs, with min and max, and
// the medians of the runs where the arm went earlier and later in its round (the order
// check: if they differ, order matters for that figure).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/budget.hpp"
#include "bench/progress.hpp"
#include "packfs/error.hpp"

namespace packfs::bench {

// One figure an arm produces per run. Most arms time one thing; an arm that times several
// steps of one run (create, list, stat, remove a million entries; mount, resolve, unmount)
// produces one figure per step, so the expensive setup of each step is the step before it.
struct Measure {
    std::string category;  // "create files", "mount 8k backends", "1M-entry dir: create"
    uint64_t n = 0;        // operations per run: what ops/s counts
    uint64_t bytes = 0;    // payload bytes per run; 0 where MB/s means nothing
    // The part of the name a --filter must go beyond to select a group of an extra section
    // (see Group::section): "stat all" in "1M-entry dir: stat all". Empty: nothing.
    std::string plain;
    // Scaling check: figures with the same key and backend at scales 1, 4, 16 (N, 4N, 16N)
    // are compared with the predictions of O(n), O(n log n) and O(n^2). scale 0: none.
    std::string scale_key;
    uint64_t scale = 0;
};

struct Arm {
    std::string category;  // "create files", "write 64MB"; a label for multi-measure arms
    std::string backend;   // "mem", "raw", "raw+fsync", "vfs"
    uint64_t n = 0;        // operations per run: what ops/s counts
    uint64_t bytes = 0;    // payload bytes per run; 0 where MB/s means nothing
    std::string plain;     // as Measure::plain, for a one-measure arm
    std::string scale_key;  // as Measure::scale_key, for a one-measure arm
    uint64_t scale = 0;
    // One run: set up (untimed), time the work, tear down (untimed); returns the seconds.
    std::function<Result<double>()> run_once;
    // Or, for an arm with several measures: one run returns one time per measure, in order.
    std::vector<Measure> measures;
    std::function<Result<std::vector<double>>()> run_measures;
    // The arm this one's ratio is taken against, overriding the group's (same measure index).
    std::optional<std::size_t> baseline;
    // A disk-bound one-measure arm's time budget, shared with its run (null: none). A run
    // it cut short is scaled to n from the operations it did (budget.hpp).
    std::shared_ptr<RunBudget> budget;
};

struct Group {
    std::vector<Arm> arms;
    // The arm the others' ratio is taken against (usually raw); none if absent.
    std::optional<std::size_t> baseline;
    std::string baseline_label;  // how a ratio names the baseline; default its backend name
    // Compare time per operation rather than time per run (arms with different n).
    bool per_op_ratio = false;
    // Empty for the main table. Otherwise the extra section the group belongs to ("scaling",
    // "million-entry directory"): with --filter, its groups run only when a filter names
    // the section, or goes beyond a measure's `plain` part ("stat files @", "dir: stat").
    std::string section;
    // Not part of the default run: only when a filter selects it (see section).
    bool opt_in = false;
    // At most this many runs, whatever --runs says (for the expensive groups); 0: no cap.
    int max_runs = 0;
    // Untimed runs of every arm before the timed rounds (for groups whose runs are so short
    // that a cold first run would be a fifth of the figures).
    int warmup_runs = 0;
    std::function<Result<void>()> prepare;  // untimed, once before the runs (optional)
    std::function<void()> finish;           // once after them (optional)
};

// The order check of one figure: the medians of the runs where its arm went earlier in the
// round and where it went later (positions counted from 1 of `arms`).
struct OrderSplit {
    double earlier_median = 0, later_median = 0;
    int earlier_runs = 0, later_runs = 0;
    std::size_t earlier_position = 0, later_position = 0, arms = 0;
};

// A figure whose runs its time budget cut short, by the time or by the entries their teardown
// may remove within it: what they did of n (the table marks it).
struct TimeBound {
    double budget_s = 0;       // the budget of each run
    int cut_runs = 0;          // runs that stopped at it
    int removal_runs = 0;      // of them, those stopped at what their teardown may remove
    uint64_t median_done = 0;  // operations done, median over the runs (n for a whole run)
};

struct Figure {
    std::size_t group = 0;  // index of the Group it came from: rows of one comparison
    std::size_t measure = 0;  // index of its measure in its arm (multi-measure arms)
    std::string category;
    std::string backend;
    std::string section;  // the group's section; empty for the main table
    uint64_t n = 0;
    uint64_t bytes = 0;
    int runs = 0;
    double median_s = 0, min_s = 0, max_s = 0;
    double ops_per_s = 0;
    std::optional<double> mb_per_s;  // MB = 2^20 bytes
    // Baseline median / this median (per operation where the group compares per op): above
    // 1 this arm is faster. Absent without a baseline.
    std::optional<double> speedup;
    std::string baseline_name;  // what speedup is against ("raw", "1k tree")
    bool is_baseline = false;
    bool per_op_ratio = false;
    std::string scale_key;
    uint64_t scale = 0;
    std::optional<OrderSplit> order;  // absent when the arm always had the same position
    std::optional<TimeBound> bound;   // absent when every run did all n operations
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
    ProgressStyle progress = ProgressStyle::off;  // progress on stderr
};

// Runs every group in order; the figures come in group order, arms in declared order (and
// an arm's measures in theirs).
std::expected<std::vector<Figure>, RunFailure> run_groups(std::vector<Group>& groups,
                                                          const HarnessOptions& options);

// The runs a group gets under `options` (its cap applied).
int group_runs(const Group& group, const HarnessOptions& options);

}  // namespace packfs::bench
