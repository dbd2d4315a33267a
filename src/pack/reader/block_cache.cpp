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
        s.bytes -= s.lru.back().block.size;
        s.map.erase(s.lru.back().index);
        s.lru.pop_back();
    }
    s.lru.push_front(Entry{index, block});
    s.map.emplace(index, s.lru.begin());
    s.bytes += block.size;
    return block;
}

}  // namespace packfs::pack
