#include "remote/walk_prefetch.hpp"

#include <algorithm>
#include <vector>

namespace packfs::remote {

void WalkPrefetch::listed(std::span<const uint64_t> files) noexcept try {
    walk_.listed(files);
} catch (const std::bad_alloc&) {  // the walk is not followed as far: reads fetch for themselves
}

void WalkPrefetch::opened(uint64_t file, const pack::StoredRanges& ranges) noexcept try {
    std::vector<pack::StoredRange> ahead;
    walk_.opened(file, budget_, [&](uint64_t record) -> uint64_t {
        auto range = ranges.of(record);
        if (!range) return 0;
        ahead.push_back(*range);
        return range->end - range->offset;
    });
    std::sort(ahead.begin(), ahead.end(),
              [](const auto& a, const auto& b) { return a.offset < b.offset; });
    std::size_t kept = 0;
    for (const pack::StoredRange& r : ahead) {
        if (kept != 0 && r.offset <= ahead[kept - 1].end + kGap)
            ahead[kept - 1].end = std::max(ahead[kept - 1].end, r.end);
        else
            ahead[kept++] = r;
    }
    ahead.resize(kept);
    if (!ahead.empty()) bytes_->prefetch(ahead);
} catch (const std::bad_alloc&) {
}

}  // namespace packfs::remote
