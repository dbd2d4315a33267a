// `packfs bench`: the benchmark table (bench/ holds the work; this is its command line).
#include <memory>

#include "bench/bench.hpp"
#include "command.hpp"

namespace packfs::cli {

Command add_bench_command(CLI::App& parent) {
    auto options = std::make_shared<bench::Options>();
    CLI::App* sub = parent.add_subcommand(
        "bench", "Benchmark PackFS's backends against the host filesystem (docs/BENCH.md)");
    sub->add_option("--runs", options->runs, "Runs per figure, interleaved (default 5; 3 with --quick)")
        ->check(CLI::PositiveNumber);
    auto* quick = sub->add_flag("--quick", options->quick,
                                "Every category, fewer runs and smaller counts (under a minute)");
    sub->add_flag("--full", options->full,
                  "The complete run: every count whole, no time budget on the disk-bound arms")
        ->excludes(quick);
    sub->add_option("--disk-budget", options->disk_budget_s,
                    "Seconds after which a run of a disk-bound arm stops short of its count "
                    "(default 0.5; 0.25 with --quick; none with --full; 0: none)")
        ->check(CLI::NonNegativeNumber)
        ->type_name("SECONDS");
    sub->add_option("--filter", options->filters,
                    "Run only categories whose name contains SUBSTR (repeatable)")
        ->type_name("SUBSTR");
    sub->add_option("--backends", options->backends, "Run only these backends (mem, vfs, dir, raw, raw+fsync, pack)")
        ->delimiter(',')
        ->type_name("LIST");
    sub->add_option("--json", options->json_path, "Also write the figures to FILE as JSON")
        ->type_name("FILE");
    sub->add_option("--plot", options->plot_path,
                    "Also draw each category's ratio to the raw fs as an SVG chart (needs gnuplot)")
        ->type_name("FILE.svg");
    sub->add_option("--tmpdir", options->tmp_dir, "Where the raw fs runs (default $TMPDIR or /tmp)")
        ->check(CLI::ExistingDirectory)
        ->type_name("DIR");
    sub->add_flag("--list", options->list, "List the categories and backends, run nothing");
    return {sub, [options](const std::string& command_line) {
                options->command = command_line;
                return bench::run(*options);
            }};
}

}  // namespace packfs::cli
