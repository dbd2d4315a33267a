// Decompressed stream blocks of a compressed pack, kept for reuse: a sharded LRU bounded by
// bytes (PackOpenOptions::block_cache_bytes). Each shard has its own mutex, so readers of
// different blocks rarely meet; a block is handed out as a shared pointer, so it is copied from
// outside the lock and stays valid while evicted. Two threads missing the same block both
// decompress it; the first insert wins and the second gets the first's copy.
//
// The bound: no shard ever holds more than capacity / shards bytes (an insert evicts first, under
// the shard's lock), so the cache never holds more than `capacity`. What it does not count:
// blocks handed out and evicted while a reader still copies from them (one per reader at most),
// and a block being decompressed by a thread that missed it (one per reader at most). stats()
// reports the bytes held and their high-water mark, which the tests check under parallel readers.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace packfs::pack {

struct CachedBlock {
    std::shared_ptr<const std::byte[]> bytes;
    std::size_t size = 0;
    explicit operator bool() const noexcept { return bytes != nullptr; }
};

class BlockCache {
public:
    // `capacity` bytes in total; blocks of at most `block_size` bytes. A capacity below one
    // block caches nothing.
    BlockCache(std::size_t capacity, uint32_t block_size);

    CachedBlock find(uint64_t index);
    // Keeps `block` (unless it is larger than a shard) and returns the cached copy of `index`,
    // which is `block` unless another thread inserted it first.
    CachedBlock insert(uint64_t index, CachedBlock block);

    bool enabled() const noexcept { return !shards_.empty(); }

    struct Stats {
        std::size_t capacity = 0;    // what it may hold (the shards' capacities summed)
        std::size_t bytes = 0;       // what it holds now
        std::size_t peak_bytes = 0;  // the most it ever held
        std::size_t blocks = 0;      // blocks held now
    };
    Stats stats() const noexcept;

private:
    struct Entry {
        uint64_t index;
        CachedBlock block;
    };
    struct alignas(64) Shard {
        std::mutex mutex;
        std::list<Entry> lru;  // most recently used first
        std::unordered_map<uint64_t, std::list<Entry>::iterator> map;
        std::size_t bytes = 0;
    };
    Shard& shard_of(uint64_t index) noexcept { return *shards_[index % shards_.size()]; }

    std::vector<std::unique_ptr<Shard>> shards_;
    std::size_t shard_capacity_ = 0;
    // The shards' bytes summed, changed under a shard's lock (after its own bytes changed), and
    // the most it ever was.
    std::atomic<std::size_t> bytes_{0};
    std::atomic<std::size_t> peak_bytes_{0};
    std::atomic<std::size_t> blocks_{0};
};

}  // namespace packfs::pack
