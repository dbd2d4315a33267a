#include "bench/plot.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "bench/temp_dir.hpp"

extern char** environ;

namespace packfs::bench {
namespace {

// A string as a gnuplot (and data file) double-quoted string.
std::string quoted(std::string_view s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    out += '"';
    return out;
}

Result<void> write_text(const std::string& path, const std::string& text) {
    std::ofstream file(path, std::ios::trunc);
    if (!file) return fail(errno ? errno : EIO, "open", path);
    file << text;
    file.close();
    if (!file) return fail(EIO, "write", path);
    return {};
}

}  // namespace

std::optional<std::string> find_gnuplot() {
    const char* env = std::getenv("PATH");
    std::string_view path = env && *env ? env : "/usr/local/bin:/usr/bin:/bin";
    while (!path.empty()) {
        const std::size_t colon = path.find(':');
        std::string dir(path.substr(0, colon));
        path = colon == std::string_view::npos ? std::string_view() : path.substr(colon + 1);
        if (dir.empty()) dir = ".";
        std::string candidate = dir + "/gnuplot";
        if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    return std::nullopt;
}

Result<void> write_plot(const std::string& gnuplot, const std::string& svg_path,
                        std::span<const Figure> figures, const std::string& title,
                        const std::string& tmp_root) {
    // Columns: the backends that have a ratio against raw, in order of appearance; rows:
    // the categories that have one, in order of appearance.
    std::vector<std::string> backends, categories;
    for (const Figure& f : figures) {
        if (!f.speedup || f.baseline_name != "raw") continue;
        if (std::find(backends.begin(), backends.end(), f.backend) == backends.end()) backends.push_back(f.backend);
        if (std::find(categories.begin(), categories.end(), f.category) == categories.end()) {
            categories.push_back(f.category);
        }
    }
    if (categories.empty()) return fail(EINVAL, "--plot: no figure has a ratio against raw (run with the raw backend)");

    std::string data = "# category";
    for (const auto& b : backends) data += " " + quoted(b);
    data += "\n";
    double lo = 1, hi = 1;
    for (const auto& c : categories) {
        data += quoted(c);
        for (const auto& b : backends) {
            const Figure* hit = nullptr;
            for (const Figure& f : figures) {
                if (f.category == c && f.backend == b && f.speedup && f.baseline_name == "raw") hit = &f;
            }
            if (hit) {
                data += fmt::format(" {:.6g}", *hit->speedup);
                lo = std::min(lo, *hit->speedup);
                hi = std::max(hi, *hit->speedup);
            } else {
                data += " -";
            }
        }
        data += "\n";
    }

    auto dir = TempDir::create(tmp_root, "packfs-plot-");
    if (!dir) return std::unexpected(dir.error());
    const std::string data_path = dir->path() + "/ratios.dat";
    const std::string script_path = dir->path() + "/chart.gp";
    if (auto ok = write_text(data_path, data); !ok) return ok;

    // A log axis wants bars that grow from 1 (raw), up for faster and down for slower:
    // boxes from y = 1 to the ratio, clustered by hand (histogram style draws from 0).
    const double bottom = std::pow(10.0, std::floor(std::log10(lo)) - (lo < 1 ? 0 : 1));
    const double top = std::pow(10.0, std::ceil(std::log10(hi)) + 0.0);
    const std::size_t nb = backends.size();
    const double width = 0.8 / static_cast<double>(nb);
    std::string script;
    script += fmt::format("set terminal svg size {},560 dynamic font 'sans,11' background rgb 'white'\n",
                          std::max<std::size_t>(900, 48 * categories.size() + 180));
    script += fmt::format("set output {}\n", quoted(svg_path));
    script += "set encoding utf8\n";
    script += fmt::format("set title {} noenhanced\n", quoted(title));
    script += "set datafile missing '-'\n";
    script += "set logscale y 10\n";
    script += fmt::format("set yrange [{:g}:{:g}]\n", bottom, top);
    script += "set ylabel 'raw median / backend median (log scale); dashed: raw = 1, above = faster'\n";
    script += "set grid ytics mytics lc rgb '#dddddd'\n";
    script += "set style fill solid 0.85 border rgb '#333333'\n";
    script += fmt::format("set xrange [-0.6:{}]\n", static_cast<double>(categories.size()) - 0.4);
    // Labels hang down-right from their tick, anchored at their start (an end-anchored
    // rotated label is drawn misplaced by some SVG renderers).
    script += "set xtics rotate by -35 scale 0 offset -1,-0.4 font ',9' noenhanced\n";
    script += "set bmargin 9\n";
    script += "set rmargin 14\n";
    script += "set key top left noenhanced\n";
    script += "set arrow from graph 0, first 1 to graph 1, first 1 nohead lc rgb 'black' dt 2 lw 1.5\n";
    const char* colours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"};
    script += "plot ";
    for (std::size_t b = 0; b < nb; ++b) {
        const double offset = (static_cast<double>(b) - static_cast<double>(nb - 1) / 2) * width;
        // x = row + offset; boxes from 1 to the ratio.
        const std::size_t c = b + 2;  // the data column
        script += fmt::format(
            "{}{} using ($0+({:g})):(1):($0+({:g})):($0+({:g})):(${}<1?${}:1):(${}<1?1:${}){} "
            "with boxxyerror lc rgb '{}' title {}",
            b == 0 ? "" : ", \\\n     ", b == 0 ? quoted(data_path) : "''", offset, offset - width / 2,
            offset + width / 2, c, c, c, c, b == 0 ? ":xtic(1)" : "", colours[b % 6], quoted(backends[b]));
    }
    script += "\n";
    if (auto ok = write_text(script_path, script); !ok) return ok;

    // gnuplot's own messages go to our stderr; its exit status says whether it worked.
    std::vector<char*> argv{const_cast<char*>(gnuplot.c_str()), const_cast<char*>(script_path.c_str()), nullptr};
    pid_t pid = 0;
    if (const int err = ::posix_spawn(&pid, gnuplot.c_str(), nullptr, nullptr, argv.data(), environ); err != 0) {
        return fail(err, "posix_spawn", gnuplot);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) return fail(errno, "waitpid", gnuplot);
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return fail(EIO, "gnuplot failed on", script_path);
    return {};
}

}  // namespace packfs::bench
