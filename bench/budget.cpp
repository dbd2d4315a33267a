#include "bench/budget.hpp"

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
}

std::optional<double> RemovalCost::per_entry() const noexcept {
    if (entries_ <= 0) return std::nullopt;
    return seconds_ / entries_;
}

}  // namespace packfs::bench
