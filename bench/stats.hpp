// Order statistics of a set of timed runs.
#pragma once

#include <span>

namespace packfs::bench {

struct Summary {
    double median = 0;
    double min = 0;
    double max = 0;
};

// Median (mean of the two middle values for an even count), min and max; all 0 when empty.
Summary summarize(std::span<const double> seconds);

}  // namespace packfs::bench
