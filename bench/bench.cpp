#include "bench/bench.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "bench/adapters.hpp"
#include "bench/analysis.hpp"
#include "bench/categories.hpp"
#include "bench/harness.hpp"
#include "bench/machine.hpp"
#include "bench/pack_categories.hpp"
#include "bench/plot.hpp"
#include "bench/report.hpp"
#include "bench/settle.hpp"
#include "bench/temp_dir.hpp"
#include "bench/volume_categories.hpp"

namespace packfs::bench {
namespace {

constexpr int kDefaultRuns = 5;
constexpr int kQuickRuns = 3;

// The default run (`make bench`, the first thing a new user runs): about 3 minutes whatever
// the disk does. The in-memory arms keep the full run's counts; a run of an arm whose
// operations reach the disk (the raw fs with and without fsync, the dir backend, the durable
// volumes) stops its setup and its timed part each after kDefaultDiskBudget seconds if its
// count is not done by then, and the table marks the figure. Half a second is still a hundred
// fsyncs on a slow day, enough for a median per operation. Such a run also stops at the entries
// its untimed teardown removes in that time (budget.hpp): removing took 3 ms a directory on a
// busy day. What a budget cannot bound is left to the full run: the dir backend's scaling check
// (4N and 16N on the disk), the 100k-mount table (a minute of mounting on 2 cores; 20k here),
// 4,000 directories for mkdir and rmdir (1,000 here), and 400k creates beside the compactions
// of a volume (100k here: CPU-bound, and the figure is per create).
constexpr double kDefaultDiskBudget = 0.5;
constexpr double kQuickDiskBudget = 0.25;
// And the flush of the scratch fs after each run waits at most this long (settle.hpp): on a
// busy shared disk one syncfs took minutes.
constexpr double kSettleLimit = 1.0;

Sizes default_sizes() {
    Sizes s;
    s.disk_budget_s = kDefaultDiskBudget;
    s.scaling_on_disk = false;
    s.mounts_many = 20'000;
    s.dirs = 1'000;
    s.volume_writes = 100'000;
    return s;
}

// --quick: every category still runs, with fewer runs and a tenth of the counts where the
// count is what takes the time (the fsync'd creates and raw rmdir are milliseconds each on
// a busy disk). The snapshot check keeps a 100x size step: 1k against 100k entries; the
// mount table keeps its counts (they take milliseconds) but resolves through 20k mounts.
Sizes quick_sizes() {
    Sizes s;
    s.files = 2'000;
    s.dirs = 1'000;
    s.iterations = 500;
    s.snapshot_large = 100'000;
    s.snapshot_calls = 2'000;
    s.mounts_many = 20'000;
    s.resolves = 20'000;
    s.scaling_mib = 4;
    s.big_dir = 100'000;
    s.pack_files = 2'000;
    s.pack_opens = 50;
    s.dedup_files = 4;
    s.dedup_copies = 1;
    s.pack_big = 100'000;
    s.dedup_large_files = 16;
    s.dedup_large_copies = 4;
    s.volume_files = 2'000;
    s.volume_fsync_files = 200;
    s.volume_pack_files = 2'000;
    s.volume_entries = 2'000;
    s.volume_journal_changes = 100;
    s.volume_writes = 80'000;
    s.volume_replay_records = 100'000;
    s.disk_budget_s = kQuickDiskBudget;
    s.scaling_on_disk = false;
    return s;
}

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
}

bool contains(const std::string& text, const std::string& filter) {
    return lower(text).find(lower(filter)) != std::string::npos;
}

// The measures of an arm, whether it declares them or is a one-measure arm.
std::vector<Measure> measures_of(const Arm& arm) {
    if (!arm.measures.empty()) return arm.measures;
    return {Measure{arm.category, arm.n, arm.bytes, arm.plain, arm.scale_key, arm.scale}};
}

// Main-table groups: a filter selects a group when it is part of one of its category
// names. Groups of an extra section (scaling, million-entry directory) only when the filter
// names the section, or more of a category name than its plain part: "stat" runs the stat
// row, "stat files @" its scaling check, "scaling" every scaling check.
bool matches(const Group& group, const std::vector<std::string>& filters) {
    if (filters.empty()) return !group.opt_in;
    for (const std::string& f : filters) {
        if (!group.section.empty() && contains(group.section, f)) return true;
        for (const Arm& arm : group.arms) {
            for (const Measure& m : measures_of(arm)) {
                if (!contains(m.category, f)) continue;
                if (group.section.empty() || m.plain.empty() || !contains(m.plain, f)) return true;
            }
        }
    }
    return false;
}

void list_categories(const std::vector<Group>& groups) {
    fmt::print("categories (--filter matches a substring), and the backends each runs on:\n");
    std::string section = "-";
    for (const Group& g : groups) {
        if (g.section != section) {
            section = g.section;
            bool has_plain = false;
            for (const Group& h : groups) {
                if (h.section != section) continue;
                for (const Arm& a : h.arms) {
                    for (const Measure& m : measures_of(a)) has_plain = has_plain || !m.plain.empty();
                }
            }
            if (!section.empty() && has_plain) {
                fmt::print("section \"{}\"{}: --filter \"{}\" runs it all; a plain category name such as\n"
                           "\"stat\" does not select it, \"stat files @\" or \"dir: stat\" does:\n",
                           section, g.opt_in ? " (not in the default run)" : "", section);
            } else if (!section.empty()) {
                fmt::print("section \"{}\"{}: --filter \"{}\" runs it all, a category's name its group:\n",
                           section, g.opt_in ? " (not in the default run)" : "", section);
            }
        }
        std::vector<std::string> categories, backends;
        for (const Arm& a : g.arms) {
            for (const Measure& m : measures_of(a)) {
                if (std::find(categories.begin(), categories.end(), m.category) == categories.end()) {
                    categories.push_back(m.category);
                }
            }
            if (std::find(backends.begin(), backends.end(), a.backend) == backends.end()) {
                backends.push_back(a.backend);
            }
        }
        // Long lists of categories (multi-step groups) wrap, the backends on the first line.
        std::vector<std::string> lines{""};
        for (const std::string& c : categories) {
            std::string& line = lines.back();
            if (!line.empty() && line.size() + 2 + c.size() > 48) {
                line += ",";
                lines.emplace_back();
            }
            lines.back() += lines.back().empty() ? c : ", " + c;
        }
        for (std::size_t i = 0; i < lines.size(); ++i) {
            if (i == 0) {
                fmt::print("  {:<48} {}\n", lines[i], fmt::join(backends, ", "));
            } else {
                fmt::print("    {}\n", lines[i]);
            }
        }
    }
}

// The pack figures' backend: not an adapter (a pack is read-only, built by its groups).
constexpr std::string_view kPackBackend = "pack";

// The adapters --backend names (every one without it) into `adapters`; false after telling
// of a name no adapter, the pack or the volume figures answer to.
bool select_adapters(const Options& options, std::vector<const BackendAdapter*>& adapters) {
    for (const BackendAdapter& a : backend_adapters()) {
        if (options.backends.empty() ||
            std::find(options.backends.begin(), options.backends.end(), a.name) != options.backends.end()) {
            adapters.push_back(&a);
        }
    }
    for (const std::string& name : options.backends) {
        if (name == kPackBackend || name == kVolumeBackend) continue;
        const bool known = std::any_of(backend_adapters().begin(), backend_adapters().end(),
                                       [&](const BackendAdapter& a) { return a.name == name; });
        if (!known) {
            std::string all;
            for (const BackendAdapter& a : backend_adapters()) all += fmt::format(" {}", a.name);
            all += fmt::format(" {} {}", kPackBackend, kVolumeBackend);
            fmt::print(stderr, "packfs-bench: unknown backend '{}' (known:{})\n", name, all);
            return false;
        }
    }
    return true;
}

// Every group the options' backends select: the categories over `adapters`, then the pack's
// and the volume's figures, all made in `scratch`.
std::vector<Group> all_groups(const Options& options, const Sizes& sizes,
                              const std::vector<const BackendAdapter*>& adapters,
                              const std::string& scratch,
                              const std::shared_ptr<VolumeFacts>& volume_facts) {
    std::vector<Group> groups = make_groups(sizes, adapters, scratch);
    const bool packs = options.backends.empty() || std::find(options.backends.begin(), options.backends.end(),
                                                             kPackBackend) != options.backends.end();
    const bool with_raw = std::any_of(adapters.begin(), adapters.end(),
                                      [](const BackendAdapter* a) { return a->role == AdapterRole::baseline; });
    if (packs) {
        for (Group& g : pack_groups(sizes, with_raw, scratch)) groups.push_back(std::move(g));
    }
    const bool volumes = options.backends.empty() || std::find(options.backends.begin(), options.backends.end(),
                                                               kVolumeBackend) != options.backends.end();
    if (volumes) {
        for (Group& g : volume_groups(sizes, with_raw, scratch, volume_facts)) groups.push_back(std::move(g));
    }
    return groups;
}

// The main table, then each extra section's own table under its name, then the analyses and
// the targets.
void print_results(const std::vector<Group>& groups, const std::vector<Figure>& figures,
                   int runs, const HarnessOptions& harness, const VolumeFacts& volume_facts) {
    // The main table, then each extra section's own table under its name.
    std::vector<std::string> sections;
    for (const Figure& f : figures) {
        if (std::find(sections.begin(), sections.end(), f.section) == sections.end()) sections.push_back(f.section);
    }
    std::stable_sort(sections.begin(), sections.end(),
                     [](const std::string& a, const std::string& b) { return a.empty() && !b.empty(); });
    for (const std::string& section : sections) {
        std::vector<Figure> part;
        for (const Figure& f : figures) {
            if (f.section == section) part.push_back(f);
        }
        if (!section.empty()) {
            int section_runs = runs;
            for (const Group& g : groups) {
                if (g.section == section) section_runs = group_runs(g, harness);
            }
            fmt::print("\n== {} ({} runs per figure) ==\n", section, section_runs);
        }
        print_table(stdout, part);
    }
    print_scaling(stdout, figures);
    print_vfs_overhead(stdout, figures);
    print_order(stdout, figures);
    print_targets(stdout, figures);
    print_pack_targets(stdout, figures);
    print_volume_targets(stdout, figures, volume_facts);
}

// What --json, --plot and --check-scaling ask for: 0, or the exit code of the first that fails.
int write_outputs(const Options& options, const std::vector<Figure>& figures,
                  const RunContext& context, const std::string& gnuplot,
                  const std::string& tmp_root) {
    if (!options.json_path.empty()) {
        if (auto ok = write_json(options.json_path, figures); !ok) {
            fmt::print(stderr, "packfs-bench: --json: {}\n", ok.error().message());
            return 1;
        }
    }
    if (!options.plot_path.empty()) {
        const std::string title =
            fmt::format("packfs-bench{}: speed against the raw host fs ({}, {} CPUs, {})",
                        context.mode.empty() ? "" : " " + context.mode, context.tmp_fs.type,
                        context.machine.cpus, context.machine.cpu_model);
        if (auto ok = write_plot(gnuplot, options.plot_path, figures, title, tmp_root); !ok) {
            fmt::print(stderr, "packfs-bench: --plot: {}\n", ok.error().message());
            return 1;
        }
    }
    if (options.check_scaling) {
        const std::vector<ScalingStep> alarms = quadratic_steps(figures);
        for (const ScalingStep& s : alarms) {
            fmt::print(stderr,
                       "packfs-bench: scaling alarm: {} on {}: {} -> {} took {:.2f}x the time "
                       "(fastest runs {:.2f}x), at or over the {:g}x tripwire; O(n log n) predicts "
                       "{:.2f}x, O(n^2) 16x\n",
                       s.key, s.backend, s.n_small, s.n_large, s.ratio, s.min_ratio,
                       kAlarmRatio, s.nlogn);
        }
        if (!alarms.empty()) return 1;
    }
    return 0;
}

}  // namespace

int run(const Options& options) {
    std::vector<const BackendAdapter*> adapters;
    if (!select_adapters(options, adapters)) return 2;

    if (options.quick && options.full) {
        fmt::print(stderr, "packfs-bench: --quick and --full exclude each other\n");
        return 2;
    }
    const int runs = options.runs > 0 ? options.runs : options.quick ? kQuickRuns : kDefaultRuns;
    Sizes sizes = options.quick ? quick_sizes() : options.full ? Sizes{} : default_sizes();
    if (options.disk_budget_s >= 0) sizes.disk_budget_s = options.disk_budget_s;
    std::string tmp_root = options.tmp_dir;
    if (tmp_root.empty()) {
        const char* env = std::getenv("TMPDIR");
        tmp_root = env && *env ? env : "/tmp";
    }

    // The chart needs gnuplot: find out before minutes of measuring, not after.
    std::string gnuplot;
    if (!options.plot_path.empty() && !options.list) {
        auto found = find_gnuplot();
        if (!found) {
            fmt::print(stderr, "packfs-bench: --plot needs gnuplot, which is not on PATH "
                               "(Debian/Ubuntu: apt-get install gnuplot-nox); nothing was run\n");
            return 1;
        }
        gnuplot = *found;
    }

    auto session = TempDir::create(tmp_root, "packfs-bench-");
    if (!session) {
        fmt::print(stderr, "packfs-bench: cannot make a scratch directory: {}\n", session.error().message());
        return 1;
    }

    auto volume_facts = std::make_shared<VolumeFacts>();
    std::vector<Group> groups =
        all_groups(options, sizes, adapters, session->path(), volume_facts);
    if (options.list) {
        list_categories(groups);
        return 0;
    }
    std::erase_if(groups, [&](const Group& g) { return !matches(g, options.filters); });
    if (groups.empty()) {
        fmt::print(stderr, "packfs-bench: no category matches --filter (see --list)\n");
        return 2;
    }

    RunContext context;
    context.machine = describe_machine();
    context.tmp_fs = describe_filesystem(session->path());
    context.tmp_dir = session->path();
    context.command = options.command;
    context.runs = runs;
    context.mode = options.quick ? "--quick" : options.full ? "--full" : "";
    context.disk_budget_s = sizes.disk_budget_s;
    print_header(stdout, context);
    fmt::print("load:     {} at start\n", load_average());
    fmt::print("memory:   {} at start\n", memory_latency());
    std::fflush(stdout);

    set_settle_limit(options.full ? 0 : kSettleLimit);
    const auto start = std::chrono::steady_clock::now();
    // Progress reaches stderr wherever it goes: `make bench | tee` must not look hung.
    const HarnessOptions harness{
        runs, ::isatty(STDERR_FILENO) == 1 ? ProgressStyle::in_place : ProgressStyle::lines};
    auto figures = run_groups(groups, harness);
    if (!figures) {
        const RunFailure& f = figures.error();
        fmt::print(stderr, "packfs-bench: {} on {}, run {}: {}\n", f.category, f.backend, f.run,
                   f.error.message());
        return 1;
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    print_results(groups, *figures, runs, harness, *volume_facts);
    if (const SettleCounts settle = settle_counts(); settle.not_waited > 0) {
        fmt::print(
            "\nsettle:   {} of {} flushes of the scratch fs outlasted {:g} s; the next run went "
            "ahead while they finished\n",
            settle.not_waited, settle.flushes, kSettleLimit);
    }
    fmt::print("\nload:     {} at end; wall time {:.1f} s\n", load_average(), wall);
    fmt::print("memory:   {} at end\n", memory_latency());
    std::fflush(stdout);
    if (const int code = write_outputs(options, *figures, context, gnuplot, tmp_root); code != 0)
        return code;
    return 0;
}

}  // namespace packfs::bench
