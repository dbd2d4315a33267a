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
    sub->add_flag("--quick", options->quick, "Every category, fewer runs and smaller counts");
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
