// The listings a zero-message-opendir mount served lately. With no handle between the readdir
// calls of one directory, each call asks for the listing again; a big directory must not be
// listed once per call. A listing is needed only until the kernel has read it all (it caches
// it from then on), so the cache is small: bounded by entries (a few MiB), oldest out first,
// the newest always kept however big.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "packfs/types.hpp"

namespace packfs::fuse {

using Listing = std::shared_ptr<const std::vector<DirEntry>>;

class ListingCache {
public:
    Listing find(uint64_t node) {
        std::lock_guard lock(mutex_);
        auto it = listings_.find(node);
        return it == listings_.end() ? nullptr : it->second;
    }
    void add(uint64_t node, Listing listing) {
        std::lock_guard lock(mutex_);
        if (!listings_.emplace(node, listing).second) return;
        order_.push_back(node);
        entries_ += listing->size();
        while (entries_ > kMaxEntries && order_.size() > 1) {
            auto oldest = listings_.find(order_.front());
            entries_ -= oldest->second->size();
            listings_.erase(oldest);
            order_.pop_front();
        }
    }

private:
    static constexpr std::size_t kMaxEntries = 1 << 14;
    std::mutex mutex_;
    std::unordered_map<uint64_t, Listing> listings_;
    std::deque<uint64_t> order_;
    std::size_t entries_ = 0;
};

}  // namespace packfs::fuse
