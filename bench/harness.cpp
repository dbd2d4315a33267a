#include "bench/harness.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "bench/stats.hpp"

namespace packfs::bench {
namespace {

class Progress {
public:
    Progress(bool enabled, std::size_t total) : enabled_(enabled), total_(total) {}
    ~Progress() { clear(); }

    void step(const Arm& arm, int run, int runs) {
        ++done_;
        if (!enabled_) return;
        fmt::print(stderr, "\r\033[K[{}/{}] {} · {} · run {}/{}", done_, total_, arm.category,
                   arm.backend, run, runs);
        std::fflush(stderr);
    }
    void clear() {
        if (!enabled_) return;
        fmt::print(stderr, "\r\033[K");
        std::fflush(stderr);
    }

private:
    bool enabled_;
    std::size_t total_;
    std::size_t done_ = 0;
};

}  // namespace

std::expected<std::vector<Figure>, RunFailure> run_groups(std::vector<Group>& groups,
                                                          const HarnessOptions& options) {
    std::size_t total = 0;
    for (const Group& g : groups) total += g.arms.size() * static_cast<std::size_t>(options.runs);
    Progress progress(options.progress, total);

    std::vector<Figure> figures;
    for (std::size_t g = 0; g < groups.size(); ++g) {
        Group& group = groups[g];
        if (group.prepare) {
            if (auto ok = group.prepare(); !ok) {
                const Arm& first = group.arms.front();
                return std::unexpected(RunFailure{first.category, first.backend, 0, ok.error()});
            }
        }
        const std::size_t arms = group.arms.size();
        std::vector<std::vector<double>> seconds(arms);
        for (int run = 0; run < options.runs; ++run) {
            for (std::size_t k = 0; k < arms; ++k) {
                // Even rounds run the arms in declared order, odd rounds in reverse.
                const std::size_t i = run % 2 == 0 ? k : arms - 1 - k;
                const Arm& arm = group.arms[i];
                progress.step(arm, run + 1, options.runs);
                auto s = arm.run_once();
                if (!s) {
                    if (group.finish) group.finish();
                    return std::unexpected(RunFailure{arm.category, arm.backend, run + 1, s.error()});
                }
                seconds[i].push_back(*s);
            }
        }
        if (group.finish) group.finish();

        std::vector<Summary> sums;
        for (const auto& s : seconds) sums.push_back(summarize(s));
        for (std::size_t i = 0; i < arms; ++i) {
            const Arm& arm = group.arms[i];
            const Summary& sum = sums[i];
            Figure f;
            f.group = g;
            f.category = arm.category;
            f.backend = arm.backend;
            f.n = arm.n;
            f.runs = options.runs;
            f.median_s = sum.median;
            f.min_s = sum.min;
            f.max_s = sum.max;
            f.ops_per_s = sum.median > 0 ? static_cast<double>(arm.n) / sum.median : 0;
            if (arm.bytes > 0 && sum.median > 0) {
                f.mb_per_s = static_cast<double>(arm.bytes) / (1024.0 * 1024.0) / sum.median;
            }
            if (group.baseline) {
                const std::size_t b = *group.baseline;
                f.is_baseline = b == i;
                f.baseline_name =
                    group.baseline_label.empty() ? group.arms[b].backend : group.baseline_label;
                if (!f.is_baseline && sum.median > 0) f.speedup = sums[b].median / sum.median;
            }
            figures.push_back(std::move(f));
        }
    }
    return figures;
}

}  // namespace packfs::bench
