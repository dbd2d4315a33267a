#include "bench/report.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

namespace packfs::bench {
namespace {

// 1234567.8 -> "1,234,568"; 1234.5 with one decimal -> "1,234.5".
std::string grouped(double value, int decimals = 0) {
    const std::string digits = fmt::format("{:.{}f}", value, decimals);
    const std::size_t sign = digits[0] == '-' ? 1 : 0;
    const std::size_t dot = digits.find('.');
    const std::size_t end = dot == std::string::npos ? digits.size() : dot;
    std::string out = digits.substr(0, sign);
    for (std::size_t i = sign; i < end; ++i) {
        if (i > sign && (end - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    out += digits.substr(end);
    return out;
}

std::string three_digits(double v) {
    if (v >= 100) return fmt::format("{:.0f}", v);
    if (v >= 10) return fmt::format("{:.1f}", v);
    return fmt::format("{:.2f}", v);
}

}  // namespace

std::string duration_text(double seconds) {
    if (seconds >= 1) return three_digits(seconds) + " s";
    if (seconds >= 1e-3) return three_digits(seconds * 1e3) + " ms";
    if (seconds >= 1e-6) return three_digits(seconds * 1e6) + " us";
    return three_digits(seconds * 1e9) + " ns";
}

std::string ratio_text(double speedup) {
    if (speedup >= 1) return three_digits(speedup) + "x faster";
    return three_digits(1 / speedup) + "x slower";
}

void print_header(std::FILE* out, const RunContext& c) {
    fmt::print(out, "packfs-bench{}: {} runs per figure, backends interleaved; median, min, max\n",
               c.mode.empty() ? "" : " " + c.mode, c.runs);
    if (c.disk_budget_s > 0) {
        fmt::print(out,
                   "budget:   a disk-bound run stops after its n operations or {:g} s, whichever "
                   "is first, and at\n"
                   "          the entries its teardown removes in {:g} s (marked *; `--full`: no "
                   "budget)\n",
                   c.disk_budget_s, c.disk_budget_s);
    }
    fmt::print(out, "command:  {}\n", c.command);
    fmt::print(out, "machine:  {} CPUs, {}, {}, {:.1f} GiB RAM\n", c.machine.cpus, c.machine.cpu_model,
               c.machine.kernel, c.machine.mem_gib);
    fmt::print(out, "build:    {}, {}\n", c.machine.compiler, c.machine.build_type);
    fmt::print(out, "raw fs:   {} on {} ({} mounted at {}, {})\n", c.tmp_dir, c.tmp_fs.type,
               c.tmp_fs.device, c.tmp_fs.mount_point, c.tmp_fs.options);
    std::fflush(out);
}

void print_table(std::FILE* out, std::span<const Figure> figures) {
    struct Row {
        std::vector<std::string> cells;
        std::size_t group;
    };
    const std::vector<std::string> header{"category", "backend", "n",     "median", "min",
                                          "max",      "per op",  "ops/s", "MB/s",   "vs raw"};
    std::vector<Row> rows;
    for (const Figure& f : figures) {
        std::string ratio = "-";
        if (f.is_baseline) ratio = "baseline";
        else if (f.speedup) ratio = ratio_text(*f.speedup);
        rows.push_back(
            {{f.category, f.backend, grouped(static_cast<double>(f.n)) + (f.bound ? "*" : ""),
              duration_text(f.median_s), duration_text(f.min_s), duration_text(f.max_s),
              duration_text(f.n ? f.median_s / static_cast<double>(f.n) : 0), grouped(f.ops_per_s),
              f.mb_per_s ? grouped(*f.mb_per_s, 1) : "-", ratio},
             f.group});
    }
    std::vector<std::size_t> width(header.size());
    for (std::size_t i = 0; i < header.size(); ++i) width[i] = header[i].size();
    for (const Row& r : rows) {
        for (std::size_t i = 0; i < r.cells.size(); ++i) width[i] = std::max(width[i], r.cells[i].size());
    }
    // Text columns align left, numbers right.
    auto print_row = [&](const std::vector<std::string>& cells) {
        std::string line;
        for (std::size_t i = 0; i < cells.size(); ++i) {
            const bool left = i < 2 || i + 1 == cells.size();
            line += left ? fmt::format("{:<{}}", cells[i], width[i]) : fmt::format("{:>{}}", cells[i], width[i]);
            if (i + 1 < cells.size()) line += "  ";
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        fmt::print(out, "{}\n", line);
    };
    fmt::print(out, "\n");
    print_row(header);
    std::size_t total = 0;
    for (std::size_t w : width) total += w + 2;
    fmt::print(out, "{}\n", std::string(total - 2, '-'));
    for (std::size_t i = 0; i < rows.size(); ++i) {
        if (i > 0 && rows[i].group != rows[i - 1].group) fmt::print(out, "\n");
        print_row(rows[i].cells);
    }
    // Ratios not taken against raw say what they are taken against.
    bool first = true;
    for (const Figure& f : figures) {
        if (!f.speedup || f.baseline_name == "raw") continue;
        const Figure* base = nullptr;
        for (const Figure& b : figures) {
            if (b.group == f.group && b.is_baseline && b.measure == f.measure) base = &b;
        }
        if (first) fmt::print(out, "\n");
        first = false;
        fmt::print(out, "{} ({}): {} per op against {} per op on the {}: {:.2f}x the time\n",
                   f.category, f.backend, duration_text(f.median_s / static_cast<double>(f.n)),
                   base ? duration_text(base->median_s / static_cast<double>(base->n)) : "?",
                   f.baseline_name, 1 / *f.speedup);
    }
    // What the time budget cut: the times above are scaled to n from what the runs did.
    first = true;
    for (const Figure& f : figures) {
        if (!f.bound) continue;
        if (first) fmt::print(out, "\n");
        first = false;
        const TimeBound& b = *f.bound;
        const std::string removal =
            fmt::format("at what their teardown removes in {:g} s", b.budget_s);
        std::string at = fmt::format("stopped at {:g} s", b.budget_s);
        if (b.removal_runs == b.cut_runs) {
            at = "stopped " + removal;
        } else if (b.removal_runs > 0) {
            at = fmt::format("stopped: {} at {:g} s, {} {}", b.cut_runs - b.removal_runs,
                             b.budget_s, b.removal_runs, removal);
        }
        fmt::print(out,
                   "* time-bounded: {} on {}: {} of {} ops per run (median; {} of {} runs {}), "
                   "times scaled to n\n",
                   f.category, f.backend, grouped(static_cast<double>(b.median_done)),
                   grouped(static_cast<double>(f.n)), b.cut_runs, f.runs, at);
    }
    std::fflush(out);
}

Result<void> write_json(const std::string& path, std::span<const Figure> figures) {
    nlohmann::ordered_json records = nlohmann::ordered_json::array();
    for (const Figure& f : figures) {
        nlohmann::ordered_json r;
        r["category"] = f.category;
        r["backend"] = f.backend;
        r["n"] = f.n;
        r["runs"] = f.runs;
        r["median_s"] = f.median_s;
        r["min_s"] = f.min_s;
        r["max_s"] = f.max_s;
        r["ops_per_s"] = f.ops_per_s;
        r["mb_per_s"] = f.mb_per_s ? nlohmann::ordered_json(*f.mb_per_s) : nlohmann::ordered_json();
        records.push_back(std::move(r));
    }
    std::ofstream file(path, std::ios::trunc);
    if (!file) return fail(errno ? errno : EIO, "open", path);
    file << records.dump(2) << '\n';
    file.close();
    if (!file) return fail(EIO, "write", path);
    return {};
}

}  // namespace packfs::bench
