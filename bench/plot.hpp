// `packfs-bench --plot FILE.svg`: a bar chart of every category's speed relative to the raw
// fs (raw median / backend median, log scale), one bar per backend, drawn by gnuplot run as
// a subprocess on a generated script and data file in a temporary directory.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "bench/harness.hpp"
#include "packfs/error.hpp"

namespace packfs::bench {

// The gnuplot executable on $PATH, if there is one.
std::optional<std::string> find_gnuplot();

// Writes the chart of `figures` (those with a ratio against raw) to `svg_path`. `title` is
// the chart's first line; `tmp_root` is where the temporary directory goes.
Result<void> write_plot(const std::string& gnuplot, const std::string& svg_path,
                        std::span<const Figure> figures, const std::string& title,
                        const std::string& tmp_root);

}  // namespace packfs::bench
