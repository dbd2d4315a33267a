#include "bench/stats.hpp"

#include <algorithm>
#include <vector>

namespace packfs::bench {

Summary summarize(std::span<const double> seconds) {
    if (seconds.empty()) return {};
    std::vector<double> sorted(seconds.begin(), seconds.end());
    std::sort(sorted.begin(), sorted.end());
    const std::size_t mid = sorted.size() / 2;
    const double median =
        sorted.size() % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
    return {median, sorted.front(), sorted.back()};
}

}  // namespace packfs::bench
