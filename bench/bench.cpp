#include "bench/bench.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "bench/adapters.hpp"
#include "bench/categories.hpp"
#include "bench/harness.hpp"
#include "bench/machine.hpp"
#include "bench/report.hpp"
#include "bench/temp_dir.hpp"

namespace packfs::bench {
namespace {

constexpr int kDefaultRuns = 5;
constexpr int kQuickRuns = 3;

// --quick: every category still runs, with fewer runs and a tenth of the counts where the
// count is what takes the time (the fsync'd creates and raw rmdir are milliseconds each on
// a busy disk). The snapshot check keeps a 100x size step: 1k against 100k entries.
Sizes quick_sizes() {
    Sizes s;
    s.files = 2'000;
    s.dirs = 1'000;
    s.iterations = 500;
    s.snapshot_large = 100'000;
    s.snapshot_calls = 2'000;
    return s;
}

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
}

bool matches(const Group& group, const std::vector<std::string>& filters) {
    if (filters.empty()) return true;
    for (const Arm& arm : group.arms) {
        for (const std::string& f : filters) {
            if (lower(arm.category).find(lower(f)) != std::string::npos) return true;
        }
    }
    return false;
}

void list_categories(const std::vector<Group>& groups) {
    fmt::print("categories (--filter matches a substring), and the backends each runs on:\n");
    for (const Group& g : groups) {
        std::vector<std::string> categories, backends;
        for (const Arm& a : g.arms) {
            if (std::find(categories.begin(), categories.end(), a.category) == categories.end()) {
                categories.push_back(a.category);
            }
            if (std::find(backends.begin(), backends.end(), a.backend) == backends.end()) {
                backends.push_back(a.backend);
            }
        }
        fmt::print("  {:<48} {}\n", fmt::format("{}", fmt::join(categories, ", ")),
                   fmt::join(backends, ", "));
    }
}

}  // namespace

int run(const Options& options) {
    std::vector<const BackendAdapter*> adapters;
    for (const BackendAdapter& a : backend_adapters()) {
        if (options.backends.empty() ||
            std::find(options.backends.begin(), options.backends.end(), a.name) != options.backends.end()) {
            adapters.push_back(&a);
        }
    }
    for (const std::string& name : options.backends) {
        const bool known = std::any_of(backend_adapters().begin(), backend_adapters().end(),
                                       [&](const BackendAdapter& a) { return a.name == name; });
        if (!known) {
            std::string all;
            for (const BackendAdapter& a : backend_adapters()) all += fmt::format(" {}", a.name);
            fmt::print(stderr, "packfs bench: unknown backend '{}' (known:{})\n", name, all);
            return 2;
        }
    }

    const int runs = options.runs > 0 ? options.runs : options.quick ? kQuickRuns : kDefaultRuns;
    const Sizes sizes = options.quick ? quick_sizes() : Sizes{};
    std::string tmp_root = options.tmp_dir;
    if (tmp_root.empty()) {
        const char* env = std::getenv("TMPDIR");
        tmp_root = env && *env ? env : "/tmp";
    }

    auto session = TempDir::create(tmp_root, "packfs-bench-");
    if (!session) {
        fmt::print(stderr, "packfs bench: cannot make a scratch directory: {}\n", session.error().message());
        return 1;
    }

    std::vector<Group> groups = make_groups(sizes, adapters, session->path());
    if (options.list) {
        list_categories(groups);
        return 0;
    }
    std::erase_if(groups, [&](const Group& g) { return !matches(g, options.filters); });
    if (groups.empty()) {
        fmt::print(stderr, "packfs bench: no category matches --filter (see --list)\n");
        return 2;
    }

    RunContext context;
    context.machine = describe_machine();
    context.tmp_fs = describe_filesystem(session->path());
    context.tmp_dir = session->path();
    context.command = options.command;
    context.runs = runs;
    context.quick = options.quick;
    print_header(stdout, context);
    fmt::print("load:     {} at start\n", load_average());
    std::fflush(stdout);

    const auto start = std::chrono::steady_clock::now();
    auto figures = run_groups(groups, {runs, ::isatty(STDERR_FILENO) == 1});
    if (!figures) {
        const RunFailure& f = figures.error();
        fmt::print(stderr, "packfs bench: {} on {}, run {}: {}\n", f.category, f.backend, f.run,
                   f.error.message());
        return 1;
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    print_table(stdout, *figures);
    fmt::print("\nload:     {} at end; wall time {:.1f} s\n", load_average(), wall);
    if (!options.json_path.empty()) {
        if (auto ok = write_json(options.json_path, *figures); !ok) {
            fmt::print(stderr, "packfs bench: --json: {}\n", ok.error().message());
            return 1;
        }
    }
    return 0;
}

}  // namespace packfs::bench
