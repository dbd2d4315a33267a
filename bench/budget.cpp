#include "bench/budget.hpp"

#include <algorithm>

namespace packfs::bench {

RemovalCost& RemovalCost::scratch() {
    static RemovalCost cost;
    return cost;
}

void RemovalCost::record(uint64_t entries, double seconds) noexcept {
    if (entries < kMinSample) return;
    // Each sample halves the weight of those before it.
    entries_ = entries_ / 2 + static_cast<double>(entries);
    seconds_ = seconds_ / 2 + seconds;
    last_ = seconds / static_cast<double>(entries);
}

std::optional<double> RemovalCost::per_entry() const noexcept {
    if (entries_ <= 0) return std::nullopt;
    return std::max(last_, seconds_ / entries_);
}

}  // namespace packfs::bench
