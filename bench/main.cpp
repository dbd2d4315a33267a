// `packfs-bench`: the benchmark table's command line (the rest of bench/ does the work). A
// program of its own, so the shipped `packfs` carries none of it; `make bench` runs it.
#include <CLI/CLI.hpp>

#include <string>

#include "bench/bench.hpp"

int main(int argc, char** argv) {
    packfs::bench::Options options;
    CLI::App app{"packfs-bench: PackFS's backends against the host filesystem (docs/BENCH.md)"};
    app.add_option("--runs", options.runs, "Runs per figure, interleaved (default 5; 3 with --quick)")
        ->check(CLI::PositiveNumber);
    auto* quick = app.add_flag("--quick", options.quick,
                                "Every category, fewer runs and smaller counts (under a minute)");
    app.add_flag("--full", options.full,
                  "The complete run: every count whole, no time budget on the disk-bound arms")
        ->excludes(quick);
    app.add_option("--disk-budget", options.disk_budget_s,
                    "Seconds after which a run of a disk-bound arm stops short of its count "
                    "(default 0.5; 0.25 with --quick; none with --full; 0: none)")
        ->check(CLI::NonNegativeNumber)
        ->type_name("SECONDS");
    app.add_option("--filter", options.filters,
                    "Run only categories whose name contains SUBSTR (repeatable)")
        ->type_name("SUBSTR");
    app.add_option("--backends", options.backends, "Run only these backends (mem, vfs, dir, raw, raw+fsync, pack)")
        ->delimiter(',')
        ->type_name("LIST");
    app.add_option("--json", options.json_path, "Also write the figures to FILE as JSON")
        ->type_name("FILE");
    app.add_option("--plot", options.plot_path,
                    "Also draw each category's ratio to the raw fs as an SVG chart (needs gnuplot)")
        ->type_name("FILE.svg");
    app.add_option("--tmpdir", options.tmp_dir, "Where the raw fs runs (default $TMPDIR or /tmp)")
        ->check(CLI::ExistingDirectory)
        ->type_name("DIR");
    app.add_flag("--list", options.list, "List the categories and backends, run nothing");
    app.add_flag("--check-scaling", options.check_scaling,
                  "Exit 1 when a category's 4x step takes 12x the time or more, by median and "
                  "fastest run (every scaled category is documented O(n log n) or better, 4.5-4.9x; "
                  "O(n^2) is 16x): the complexity alarm");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : 2;  // --help: 0; a usage error: 2
    }
    for (int i = 0; i < argc; ++i) options.command += (i ? " " : "") + std::string(argv[i]);
    return packfs::bench::run(options);
}
