#include "pack/reader/block_cache.hpp"

#include <algorithm>

namespace packfs::pack {

BlockCache::BlockCache(std::size_t capacity, uint32_t block_size) {
    const std::size_t block = std::max<std::size_t>(block_size, 1);
    if (capacity < block) return;
    // At least four blocks per shard, at most 16 shards.
    const std::size_t shards = std::clamp<std::size_t>(capacity / (4 * block), 1, 16);
    shard_capacity_ = capacity / shards;
    shards_.reserve(shards);
    for (std::size_t i = 0; i < shards; ++i) shards_.push_back(std::make_unique<Shard>());
}

CachedBlock BlockCache::find(uint64_t index) {
    if (shards_.empty()) return {};
    Shard& s = shard_of(index);
    std::lock_guard lock(s.mutex);
    auto it = s.map.find(index);
    if (it == s.map.end()) return {};
    s.lru.splice(s.lru.begin(), s.lru, it->second);
    return it->second->block;
}

CachedBlock BlockCache::insert(uint64_t index, CachedBlock block) {
    if (shards_.empty() || block.size > shard_capacity_) return block;
    Shard& s = shard_of(index);
    std::lock_guard lock(s.mutex);
    if (auto it = s.map.find(index); it != s.map.end()) return it->second->block;
    while (!s.lru.empty() && s.bytes + block.size > shard_capacity_) {
        const std::size_t size = s.lru.back().block.size;
        s.bytes -= size;
        bytes_.fetch_sub(size, std::memory_order_relaxed);
        blocks_.fetch_sub(1, std::memory_order_relaxed);
        s.map.erase(s.lru.back().index);
        s.lru.pop_back();
    }
    s.lru.push_front(Entry{index, block});
    s.map.emplace(index, s.lru.begin());
    s.bytes += block.size;
    blocks_.fetch_add(1, std::memory_order_relaxed);
    const std::size_t now = bytes_.fetch_add(block.size, std::memory_order_relaxed) + block.size;
    std::size_t peak = peak_bytes_.load(std::memory_order_relaxed);
    while (now > peak && !peak_bytes_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
    return block;
}

BlockCache::Stats BlockCache::stats() const noexcept {
    return Stats{.capacity = shard_capacity_ * shards_.size(),
                 .bytes = bytes_.load(std::memory_order_relaxed),
                 .peak_bytes = peak_bytes_.load(std::memory_order_relaxed),
                 .blocks = blocks_.load(std::memory_order_relaxed)};
}

}  // namespace packfs::pack
