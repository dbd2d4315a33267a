#include "bench/analysis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "bench/categories.hpp"
#include "bench/report.hpp"

namespace packfs::bench {
namespace {

const Figure* find(std::span<const Figure> figures, std::string_view category, std::string_view backend) {
    for (const Figure& f : figures) {
        if (f.category == category && f.backend == backend) return &f;
    }
    return nullptr;
}

// "20k -> 80k" style sizes.
std::string count_text(uint64_t n) {
    if (n >= 1'000'000 && n % 100'000 == 0) return fmt::format("{:g}M", static_cast<double>(n) / 1e6);
    if (n >= 1'000 && n % 100 == 0) return fmt::format("{:g}k", static_cast<double>(n) / 1e3);
    return fmt::format("{}", n);
}

std::string verdict_word(bool met) { return met ? "met" : "MISSED"; }

}  // namespace

std::string closest_class(double ratio, uint64_t n) {
    const double nn = static_cast<double>(std::max<uint64_t>(n, 2));
    const double preds[3] = {4, 4 * std::log(4 * nn) / std::log(nn), 16};
    const char* names[3] = {"O(n)", "O(n log n)", "O(n^2)"};
    std::size_t best = 0;
    double best_d = 1e300;
    for (std::size_t i = 0; i < 3; ++i) {
        const double d = std::fabs(std::log(std::max(ratio, 1e-9) / preds[i]));
        if (d < best_d) {
            best_d = d;
            best = i;
        }
    }
    return names[best];
}

std::vector<ScalingStep> scaling_steps(std::span<const Figure> figures) {
    // (key, backend) in order of first appearance, then its figures by scale.
    std::vector<std::pair<std::string, std::string>> keys;
    std::map<std::pair<std::string, std::string>, std::map<uint64_t, const Figure*>> by_key;
    for (const Figure& f : figures) {
        if (f.scale == 0 || f.scale_key.empty()) continue;
        auto k = std::pair{f.scale_key, f.backend};
        if (!by_key.contains(k)) keys.push_back(k);
        by_key[k][f.scale] = &f;
    }
    std::vector<ScalingStep> steps;
    for (const auto& k : keys) {
        const auto& scales = by_key[k];
        for (const auto& [scale, small] : scales) {
            auto it = scales.find(scale * 4);
            if (it == scales.end()) continue;
            const Figure* large = it->second;
            if (small->median_s <= 0) continue;
            ScalingStep s;
            s.key = k.first;
            s.backend = k.second;
            s.section = large->section;
            // The large-file categories count 1 MiB calls (n = 4, 16, 64): their n log n
            // prediction is taken over bytes, which is what their cost follows.
            const bool by_bytes = small->n < 1000 && small->bytes > 0;
            s.n_small = by_bytes ? small->bytes : small->n;
            s.n_large = by_bytes ? large->bytes : large->n;
            s.by_bytes = by_bytes;
            s.scale_small = scale;
            s.scale_large = scale * 4;
            s.ratio = large->median_s / small->median_s;
            s.min_ratio = small->min_s > 0 ? large->min_s / small->min_s : s.ratio;
            const double nn = static_cast<double>(std::max<uint64_t>(s.n_small, 2));
            s.nlogn = 4 * std::log(4 * nn) / std::log(nn);
            s.verdict = closest_class(s.ratio, s.n_small);
            steps.push_back(std::move(s));
        }
    }
    return steps;
}

std::vector<ScalingStep> quadratic_steps(std::span<const Figure> figures) {
    std::vector<ScalingStep> steps = scaling_steps(figures);
    std::erase_if(steps, [](const ScalingStep& s) {
        return s.ratio < kAlarmRatio || s.min_ratio < kAlarmRatio;
    });
    return steps;
}

void print_scaling(std::FILE* out, std::span<const Figure> figures) {
    const auto steps = scaling_steps(figures);
    if (steps.empty()) return;
    fmt::print(out, "\nscaling: median time at 4x the size / median time at the size, against the predictions\n");
    fmt::print(out, "for a 4x step (O(n) 4, O(n log n) 4*log(4n)/log(n), O(n^2) 16); the verdict is the closest\n\n");
    const std::vector<std::string> header{"category", "backend", "step", "n", "ratio", "O(n)", "O(n log n)",
                                          "O(n^2)", "closest"};
    std::vector<std::vector<std::string>> rows;
    for (const ScalingStep& s : steps) {
        const std::string step = s.scale_small == 1 ? "N -> 4N" : fmt::format("{}N -> {}N", s.scale_small, s.scale_large);
        rows.push_back({s.key, s.backend, step, s.by_bytes ? fmt::format("{}MB -> {}MB", s.n_small >> 20, s.n_large >> 20)
                                   : fmt::format("{} -> {}", count_text(s.n_small), count_text(s.n_large)),
                        fmt::format("{:.2f}", s.ratio), "4", fmt::format("{:.2f}", s.nlogn), "16", s.verdict});
    }
    std::vector<std::size_t> width(header.size());
    for (std::size_t i = 0; i < header.size(); ++i) width[i] = header[i].size();
    for (const auto& r : rows) {
        for (std::size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
    }
    auto line = [&](const std::vector<std::string>& cells) {
        std::string l;
        for (std::size_t i = 0; i < cells.size(); ++i) {
            const bool left = i < 3 || i + 1 == cells.size();
            l += left ? fmt::format("{:<{}}", cells[i], width[i]) : fmt::format("{:>{}}", cells[i], width[i]);
            if (i + 1 < cells.size()) l += "  ";
        }
        while (!l.empty() && l.back() == ' ') l.pop_back();
        fmt::print(out, "{}\n", l);
    };
    line(header);
    std::size_t total = 0;
    for (std::size_t w : width) total += w + 2;
    fmt::print(out, "{}\n", std::string(total - 2, '-'));
    for (const auto& r : rows) line(r);
    std::fflush(out);
}

void print_order(std::FILE* out, std::span<const Figure> figures, double threshold) {
    std::size_t checked = 0;
    std::vector<std::string> lines;
    for (const Figure& f : figures) {
        if (!f.order) continue;
        ++checked;
        const OrderSplit& o = *f.order;
        if (o.earlier_median <= 0 || o.later_median <= 0) continue;
        const double ratio = o.later_median / o.earlier_median;
        if (std::max(ratio, 1 / ratio) - 1 <= threshold) continue;
        lines.push_back(fmt::format(
            "  {} ({}): {} when {} of {} ({} run{}), {} when {} of {} ({} run{}): later/earlier {:.2f}",
            f.category, f.backend, duration_text(o.earlier_median), o.earlier_position, o.arms, o.earlier_runs,
            o.earlier_runs == 1 ? "" : "s", duration_text(o.later_median), o.later_position, o.arms, o.later_runs,
            o.later_runs == 1 ? "" : "s", ratio));
    }
    const int pct = static_cast<int>(std::lround(threshold * 100));
    if (checked == 0) {
        fmt::print(out, "\norder: no figure changed position between rounds (one arm, or one run)\n");
    } else if (lines.empty()) {
        fmt::print(out, "\norder: order effect below {}% everywhere ({} figures whose arm went earlier in some\n"
                        "rounds and later in others; medians of the two sets of runs compared)\n", pct, checked);
    } else {
        fmt::print(out, "\norder: figures whose median differs by more than {}% between the runs where the arm went\n"
                        "earlier in its round and those where it went later ({} of {} checked):\n", pct, lines.size(), checked);
        for (const auto& l : lines) fmt::print(out, "{}\n", l);
    }
    std::fflush(out);
}

void print_vfs_overhead(std::FILE* out, std::span<const Figure> figures) {
    std::vector<std::string> lines;
    for (const Figure& v : figures) {
        if (v.backend != "vfs" || !v.section.empty()) continue;
        const Figure* m = nullptr;
        for (const Figure& f : figures) {
            if (f.group == v.group && f.backend == "mem" && f.category == v.category) m = &f;
        }
        if (!m || m->median_s <= 0) continue;
        lines.push_back(fmt::format("  {:<32} {:>9} against {:>9}: {:.2f}x", v.category,
                                    duration_text(v.median_s), duration_text(m->median_s), v.median_s / m->median_s));
    }
    if (lines.empty()) return;
    fmt::print(out, "\nvfs against mem (mem mounted at \"/\" of a Vfs, against mem called directly; median time):\n");
    for (const auto& l : lines) fmt::print(out, "{}\n", l);
    std::fflush(out);
}

void print_targets(std::FILE* out, std::span<const Figure> figures) {
    std::vector<std::string> lines;
    // Category 10: mount + resolve + unmount of the largest count < 50 ms; 4N/N <= 5.
    {
        const Figure* mount = nullptr;
        const Figure* resolve = nullptr;
        const Figure* unmount = nullptr;
        for (const Figure& f : figures) {
            if (f.backend != "vfs") continue;
            if (f.scale_key == "mount backends" && (!mount || f.n > mount->n)) mount = &f;
            if (f.scale_key == "resolve, N mounts" && (!resolve || f.n > resolve->n)) resolve = &f;
            if (f.scale_key == "unmount backends" && (!unmount || f.n > unmount->n)) unmount = &f;
        }
        if (mount && resolve && unmount && mount->n == resolve->n && mount->n == unmount->n) {
            const double total = mount->median_s + resolve->median_s + unmount->median_s;
            lines.push_back(fmt::format("mount + resolve + unmount of {} backends < 50 ms: {} + {} + {} = {}: {}",
                                        count_text(mount->n), duration_text(mount->median_s),
                                        duration_text(resolve->median_s), duration_text(unmount->median_s),
                                        duration_text(total), verdict_word(total < 0.050)));
        }
    }
    const auto steps = scaling_steps(figures);
    for (const ScalingStep& s : steps) {
        if (s.key != "mount backends" && s.key != "resolve, N mounts" && s.key != "unmount backends") continue;
        lines.push_back(fmt::format("{} {} -> {}: 4N/N = {:.2f} <= 5 ({}): {}", s.key, count_text(s.n_small),
                                    count_text(s.n_large), s.ratio, s.verdict, verdict_word(s.ratio <= 5)));
    }
    for (const Figure& f : figures) {
        if (f.per_op_ratio && f.speedup && f.category.starts_with("resolve ")) {
            lines.push_back(fmt::format("{} within 2x of the {} (per op): {:.2f}x: {}", f.category, f.baseline_name,
                                        1 / *f.speedup, verdict_word(1 / *f.speedup <= 2)));
        }
    }
    // Issue 13: mem per operation, its ratio to the raw fs, the Vfs's cost, a second reader.
    struct PerOp {
        const char* category;
        double max_ns;
        double min_ratio;  // to the raw fs; 0: none asked
    };
    static constexpr PerOp kPerOp[] = {
        {"stat files", 100, 10},  {"read files", 200, 16}, {"create files", 500, 0},
        {"unlink files", 500, 0}, {"mkdir", 500, 0},       {"rmdir", 500, 0},
    };
    for (const PerOp& t : kPerOp) {
        const Figure* m = find(figures, t.category, "mem");
        if (!m || m->n == 0) continue;
        const double ns = m->median_s / static_cast<double>(m->n) * 1e9;
        lines.push_back(fmt::format("{} (mem) <= {:.0f} ns: {:.0f} ns: {}", t.category, t.max_ns,
                                    ns, verdict_word(ns <= t.max_ns)));
        if (t.min_ratio > 0 && m->speedup) {
            lines.push_back(fmt::format("{} (mem) >= {:.0f}x raw: {}: {}", t.category, t.min_ratio,
                                        ratio_text(*m->speedup),
                                        verdict_word(*m->speedup >= t.min_ratio)));
        }
    }
    for (const Figure& v : figures) {
        if (v.backend != "vfs" || !v.section.empty() || v.category.starts_with("mount table"))
            continue;
        const Figure* m = find(figures, v.category, "mem");
        if (!m || m->median_s <= 0) continue;
        const double r = v.median_s / m->median_s;
        lines.push_back(fmt::format("{} through the Vfs <= +10%: {:+.0f}%: {}", v.category,
                                    (r - 1) * 100, verdict_word(r <= 1.10)));
    }
    for (const char* backend : {"mem", "raw"}) {
        const Figure* one = find(figures, "stat files", backend);
        const Figure* two = find(figures, "stat files, 2 threads", backend);
        if (!one || !two || one->ops_per_s <= 0) continue;
        const double r = two->ops_per_s / one->ops_per_s;
        lines.push_back(fmt::format(
            "stat on 2 threads against 1 ({}) >= 1.8x: {:.2f}x{}", backend, r,
            std::string_view(backend) == "mem" ? fmt::format(": {}", verdict_word(r >= 1.8))
                                               : std::string(" (for comparison)")));
    }
    for (const Figure& f : figures) {
        if (!f.category.starts_with("snapshot 1M") || f.n == 0) continue;
        const double ns = f.median_s / static_cast<double>(f.n) * 1e9;
        lines.push_back(fmt::format("{} ({}) <= 50 ns: {:.0f} ns: {}", f.category, f.backend, ns,
                                    verdict_word(ns <= 50)));
    }
    if (lines.empty()) return;
    fmt::print(out, "\ntargets (issues 3 and 13):\n");
    for (const auto& l : lines) fmt::print(out, "  {}\n", l);
    std::fflush(out);
}

}  // namespace packfs::bench
