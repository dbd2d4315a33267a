// `packfs-bench`: PackFS's backends against the host filesystem, category by category
// (docs/BENCH.md says what each category does and how to read the table).
#pragma once

#include <string>
#include <vector>

namespace packfs::bench {

struct Options {
    int runs = 0;                       // runs per figure; 0 picks 5 (3 with quick)
    bool quick = false;                 // every category, smaller, in well under a minute
    bool full = false;                  // every count whole, no time budget: the complete run
    double disk_budget_s = -1;          // a disk-bound run's time budget; < 0: the mode's
    std::vector<std::string> filters;   // run the categories whose name holds one of these
    std::vector<std::string> backends;  // run only these backends (empty: all)
    std::string json_path;              // also write the figures as JSON here
    std::string plot_path;              // also draw the ratios to raw as an SVG chart here
    std::string tmp_dir;                // where raw targets live; default $TMPDIR or /tmp
    bool list = false;                  // print the categories and backends, run nothing
    bool check_scaling = false;         // exit 1 when a 4x step trips the alarm (analysis.hpp)
    std::string command;                // the command line, for the header
};

// Runs the benchmark, printing to stdout; progress goes to stderr (in place on a terminal,
// else a line every few seconds).
// Returns the exit code: 0 ok, 1 an operation failed, the chart could not be drawn or (with
// check_scaling) a category scaled as O(n^2) (printed), 2 usage error (printed).
int run(const Options& options);

}  // namespace packfs::bench
