#include "bench/harness.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "bench/progress.hpp"
#include "bench/stats.hpp"

namespace packfs::bench {
namespace {

// Every arm as a list of measures and a run returning one time per measure.
void normalise(Arm& arm) {
    if (!arm.measures.empty()) return;
    arm.measures.push_back(Measure{arm.category, arm.n, arm.bytes, arm.plain, arm.scale_key, arm.scale});
    arm.run_measures = [run = arm.run_once]() -> Result<std::vector<double>> {
        auto s = run();
        if (!s) return std::unexpected(s.error());
        return std::vector<double>{*s};
    };
}

double median_of(const std::vector<double>& v) { return summarize(v).median; }

}  // namespace

int group_runs(const Group& group, const HarnessOptions& options) {
    return group.max_runs > 0 ? std::min(options.runs, group.max_runs) : options.runs;
}

namespace {

// What the runs of one group measured. seconds[arm][measure][run]; earlier[arm][run]: whether
// the arm went in the earlier of its two positions that run; done[arm][run]: the operations a
// budgeted arm's run did (n unless it was cut); at_removal[arm]: its runs cut at the entries
// their teardown may remove.
struct GroupRuns {
    std::vector<std::vector<std::vector<double>>> seconds;
    std::vector<std::vector<bool>> earlier;
    std::vector<std::vector<uint64_t>> done;
    std::vector<int> at_removal;
};

// The warmup runs and then `runs` rounds of `group`'s arms, alternating their order; the group's
// finish() is called on failure (the caller calls it after success).
std::expected<GroupRuns, RunFailure> measure_group(Group& group, int runs, Progress& progress) {
    const std::size_t arms = group.arms.size();
    for (int w = 0; w < group.warmup_runs; ++w) {
        for (const Arm& arm : group.arms) {
            if (arm.budget) arm.budget->reset();
            if (auto s = arm.run_measures(); !s) {
                if (group.finish) group.finish();
                return std::unexpected(RunFailure{arm.category, arm.backend, 0, s.error()});
            }
        }
    }
    GroupRuns out;
    auto& [seconds, earlier, done, at_removal] = out;
    seconds.resize(arms);
    earlier.resize(arms);
    done.resize(arms);
    at_removal.assign(arms, 0);
    for (std::size_t i = 0; i < arms; ++i) seconds[i].resize(group.arms[i].measures.size());
    for (int run = 0; run < runs; ++run) {
        for (std::size_t k = 0; k < arms; ++k) {
            // Even rounds run the arms in declared order, odd rounds in reverse.
            const std::size_t i = run % 2 == 0 ? k : arms - 1 - k;
            const Arm& arm = group.arms[i];
            progress.step(arm.category, arm.backend, run + 1, runs);
            if (arm.budget) arm.budget->reset();
            auto s = arm.run_measures();
            if (s && s->size() != arm.measures.size()) s = fail(EINVAL, "bench: wrong measure count");
            if (!s) {
                if (group.finish) group.finish();
                return std::unexpected(RunFailure{arm.category, arm.backend, run + 1, s.error()});
            }
            // A cut run's time, scaled to what all n operations take at its rate.
            uint64_t did = arm.measures.front().n;
            if (arm.budget && arm.budget->stopped_after() && arm.measures.size() == 1) {
                did = std::max<uint64_t>(*arm.budget->stopped_after(), 1);
                if (arm.budget->stopped_at_removal()) ++at_removal[i];
                (*s)[0] *=
                    static_cast<double>(arm.measures.front().n) / static_cast<double>(did);
            }
            done[i].push_back(did);
            for (std::size_t m = 0; m < s->size(); ++m) seconds[i][m].push_back((*s)[m]);
            earlier[i].push_back(k == std::min(i, arms - 1 - i));
        }
    }
    return out;
}

// The figures of group number `g` from what its runs measured.
void add_figures(std::size_t g, const Group& group, int runs, const GroupRuns& measured,
                 std::vector<Figure>& figures) {
    const std::size_t arms = group.arms.size();
    const auto& [seconds, earlier, done, at_removal] = measured;
    std::vector<std::vector<Summary>> sums(arms);
    for (std::size_t i = 0; i < arms; ++i) {
        for (const auto& s : seconds[i]) sums[i].push_back(summarize(s));
    }
    for (std::size_t i = 0; i < arms; ++i) {
        const Arm& arm = group.arms[i];
        const std::optional<std::size_t> base = arm.baseline ? arm.baseline : group.baseline;
        for (std::size_t m = 0; m < arm.measures.size(); ++m) {
            const Measure& measure = arm.measures[m];
            const Summary& sum = sums[i][m];
            Figure f;
            f.group = g;
            f.measure = m;
            f.category = measure.category;
            f.backend = arm.backend;
            f.section = group.section;
            f.n = measure.n;
            f.bytes = measure.bytes;
            f.runs = runs;
            f.median_s = sum.median;
            f.min_s = sum.min;
            f.max_s = sum.max;
            f.ops_per_s = sum.median > 0 ? static_cast<double>(measure.n) / sum.median : 0;
            if (measure.bytes > 0 && sum.median > 0) {
                f.mb_per_s = static_cast<double>(measure.bytes) / (1024.0 * 1024.0) / sum.median;
            }
            if (arm.budget) {
                TimeBound b{arm.budget->seconds(), 0, at_removal[i], 0};
                for (uint64_t d : done[i]) b.cut_runs += d < measure.n ? 1 : 0;
                std::vector<double> dones(done[i].begin(), done[i].end());
                b.median_done = static_cast<uint64_t>(median_of(dones) + 0.5);
                if (b.cut_runs > 0) f.bound = b;
            }
            f.scale_key = measure.scale_key;
            f.scale = measure.scale;
            f.per_op_ratio = group.per_op_ratio;
            if (base && *base < arms && m < group.arms[*base].measures.size()) {
                const std::size_t b = *base;
                const Measure& bm = group.arms[b].measures[m];
                f.is_baseline = b == i;
                f.baseline_name =
                    group.baseline_label.empty() ? group.arms[b].backend : group.baseline_label;
                if (!f.is_baseline && sum.median > 0) {
                    double speedup = sums[b][m].median / sum.median;
                    if (group.per_op_ratio && bm.n > 0 && measure.n > 0) {
                        speedup *= static_cast<double>(measure.n) / static_cast<double>(bm.n);
                    }
                    f.speedup = speedup;
                }
            }
            // The order check: only where the arm's position changes between rounds.
            const std::size_t p0 = i, p1 = arms - 1 - i;
            if (p0 != p1) {
                std::vector<double> first, second;
                for (std::size_t r = 0; r < seconds[i][m].size(); ++r) {
                    (earlier[i][r] ? first : second).push_back(seconds[i][m][r]);
                }
                if (!first.empty() && !second.empty()) {
                    OrderSplit o;
                    o.earlier_median = median_of(first);
                    o.later_median = median_of(second);
                    o.earlier_runs = static_cast<int>(first.size());
                    o.later_runs = static_cast<int>(second.size());
                    o.earlier_position = std::min(p0, p1) + 1;
                    o.later_position = std::max(p0, p1) + 1;
                    o.arms = arms;
                    f.order = o;
                }
            }
            figures.push_back(std::move(f));
        }
    }
}

}  // namespace

std::expected<std::vector<Figure>, RunFailure> run_groups(std::vector<Group>& groups,
                                                          const HarnessOptions& options) {
    std::size_t total = 0;
    for (const Group& g : groups) total += g.arms.size() * static_cast<std::size_t>(group_runs(g, options));
    Progress progress(options.progress, total);

    std::vector<Figure> figures;
    for (std::size_t g = 0; g < groups.size(); ++g) {
        Group& group = groups[g];
        for (Arm& arm : group.arms) normalise(arm);
        const int runs = group_runs(group, options);
        if (!group.arms.empty()) progress.group(group.arms.front().category);
        if (group.prepare) {
            if (auto ok = group.prepare(); !ok) {
                const Arm& first = group.arms.front();
                if (group.finish) group.finish();
                return std::unexpected(RunFailure{first.category, first.backend, 0, ok.error()});
            }
        }
        auto measured = measure_group(group, runs, progress);
        if (!measured) return std::unexpected(measured.error());
        if (group.finish) group.finish();

        add_figures(g, group, runs, *measured, figures);
    }
    return figures;
}

}  // namespace packfs::bench
