#include "mem/file_content.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <mutex>
#include <vector>

namespace packfs::mem {
namespace {

// Free full-size chunk buffers, most recently freed (warmest) last.
class ChunkBufferPool {
public:
    std::byte* take() {
        {
            std::lock_guard lock(mutex_);
            if (!free_.empty()) {
                std::byte* p = free_.back();
                free_.pop_back();
                return p;
            }
        }
        return new std::byte[kChunkSize];
    }
    void give(std::byte* p) {
        {
            std::lock_guard lock(mutex_);
            if (free_.size() < kChunkPoolBytes / kChunkSize) {
                free_.push_back(p);
                return;
            }
        }
        delete[] p;
    }

private:
    std::mutex mutex_;
    std::vector<std::byte*> free_;
};

// Never destroyed: chunks may be freed by other static destructors at exit.
ChunkBufferPool& chunk_pool() {
    static ChunkBufferPool* pool = new ChunkBufferPool;
    return *pool;
}

// The part of a file of `size` bytes that falls inside chunk `index`.
uint32_t visible_in_chunk(uint64_t size, uint64_t index) {
    uint64_t base = index * kChunkSize;
    if (size <= base) return 0;
    return static_cast<uint32_t>(std::min<uint64_t>(size - base, kChunkSize));
}

// Buffers start at 64 bytes and double, so n appends cost O(n) copying in total.
uint32_t grown_capacity(uint32_t old_capacity, uint32_t needed) {
    if (needed <= old_capacity) return old_capacity;
    uint32_t cap = std::bit_ceil(std::max<uint32_t>(needed, 64));
    return std::min(cap, kChunkSize);
}

void zero(std::byte* p, uint32_t from, uint32_t to) {
    if (to > from) std::memset(p + from, 0, to - from);
}

}  // namespace

Chunk::Chunk(uint32_t capacity)
    : capacity_(capacity),
      data_(capacity == kChunkSize ? chunk_pool().take() : new std::byte[capacity]) {}

Chunk::~Chunk() {
    if (capacity_ == kChunkSize) {
        chunk_pool().give(data_);
    } else {
        delete[] data_;
    }
}

FileContent FileContent::backed_by(std::shared_ptr<const LowerContent> lower, uint64_t size) {
    FileContent content;
    content.backing_ = std::move(lower);
    content.backing_size_ = size;
    return content;
}

Result<void> FileContent::read_backing(uint64_t pos, uint64_t end, std::byte* dst) const {
    const uint64_t stop = std::min(end, std::max(pos, backing_size_));
    uint64_t at = pos;
    while (at < stop) {
        auto n = backing_->read(at, std::span<std::byte>(dst + (at - pos), stop - at));
        if (!n) return std::unexpected(n.error());
        if (*n == 0) break;  // a lower shorter than it said: the rest reads as zeros
        at += *n;
    }
    std::memset(dst + (at - pos), 0, end - at);
    return {};
}

Result<std::size_t> FileContent::read(uint64_t size, uint64_t offset,
                                      std::span<std::byte> out) const {
    if (offset >= size || out.empty()) return 0;
    std::size_t total = static_cast<std::size_t>(std::min<uint64_t>(out.size(), size - offset));
    std::byte* dst = out.data();
    uint64_t pos = offset;
    uint64_t end = offset + total;
    auto it = chunks_.lower_bound(pos / kChunkSize);
    while (pos < end) {
        uint64_t index = pos / kChunkSize;
        uint64_t base = index * kChunkSize;
        uint32_t from = static_cast<uint32_t>(pos - base);
        uint32_t to = static_cast<uint32_t>(std::min<uint64_t>(end - base, kChunkSize));
        while (it != chunks_.end() && it.key() < index) ++it;
        if (it != chunks_.end() && it.key() == index) {
            const Chunk& c = *it.value();
            uint32_t stored = std::min(to, c.capacity());
            if (stored > from) {
                std::memcpy(dst, c.data() + from, stored - from);
                zero(dst, stored - from, to - from);
            } else {
                zero(dst, 0, to - from);
            }
        } else if (backing_ && pos < backing_size_) {
            // A run of chunks the file never changed: one read from the lower for all of it.
            uint64_t run_end = it != chunks_.end() ? std::min(end, it.key() * kChunkSize) : end;
            if (auto ok = read_backing(pos, run_end, dst); !ok) return std::unexpected(ok.error());
            dst += run_end - pos;
            pos = run_end;
            continue;
        } else {
            zero(dst, 0, to - from);
        }
        dst += to - from;
        pos = base + to;
    }
    return total;
}

ChunkPtr FileContent::chunk_from_backing(uint64_t index, uint32_t visible,
                                         uint32_t capacity_needed) {
    const uint64_t base = index * kChunkSize;
    auto chunk = std::make_shared<Chunk>(grown_capacity(0, std::max(visible, capacity_needed)));
    if (auto ok = read_backing(base, base + visible, chunk->data()); !ok)
        throw_lower(std::move(ok.error()));
    chunk->frontier = 0;  // no version can see this buffer yet: the write may fill it in place
    allocated_ += chunk->capacity();
    return chunk;
}

void FileContent::modify_chunk(uint64_t index, uint32_t visible_before, uint32_t visible_after,
                               uint32_t a, std::span<const std::byte> data) {
    const ChunkPtr* current = chunks_.find(index);
    const uint32_t b = a + static_cast<uint32_t>(data.size());
    if (!current && !data.empty() && backing_ && index * kChunkSize < backing_size_) {
        // First change of a chunk still in the lower: copy just this chunk up.
        chunks_.insert_or_assign(index, chunk_from_backing(index, visible_before, b));
        current = chunks_.find(index);
    }
    Chunk* old = current ? current->get() : nullptr;
    const bool has_data = !data.empty();
    if (!old && !has_data) return;  // a hole stays a hole: it reads as zeros
    const uint32_t old_cap = old ? old->capacity() : 0;
    const uint32_t old_valid = std::min(visible_before, old_cap);  // bytes of `old` in use

    // In place: every byte we touch is at or past the frontier, so no version can see it.
    const uint32_t first_touched = has_data ? std::min(a, old_valid) : old_valid;
    if (old && b <= old_cap && first_touched >= old->frontier) {
        std::byte* p = old->data();
        const uint32_t new_valid = std::min(visible_after, old_cap);
        if (has_data) {
            zero(p, old_valid, a);
            std::memcpy(p + a, data.data(), data.size());
        }
        zero(p, std::max(b, old_valid), new_valid);
        old->frontier = std::max(old->frontier, new_valid);
        return;
    }
    if (!has_data && old_valid >= std::min(visible_after, old_cap)) return;  // nothing to zero

    const uint32_t cap = grown_capacity(old_cap, has_data ? b : 0);
    auto fresh = std::make_shared<Chunk>(cap);
    std::byte* p = fresh->data();
    const uint32_t new_valid = std::min(visible_after, cap);
    if (has_data) {
        if (old) std::memcpy(p, old->data(), std::min(old_valid, a));
        zero(p, std::min(old_valid, a), a);
        std::memcpy(p + a, data.data(), data.size());
        if (old && old_valid > b) std::memcpy(p + b, old->data() + b, old_valid - b);
        zero(p, std::max(b, old_valid), new_valid);
    } else {
        std::memcpy(p, old->data(), old_valid);
        zero(p, old_valid, new_valid);
    }
    fresh->frontier = new_valid;
    allocated_ += cap;
    allocated_ -= old_cap;
    chunks_.insert_or_assign(index, std::move(fresh));
}

void FileContent::write(uint64_t size, uint64_t offset, std::span<const std::byte> data) {
    if (data.empty()) return;
    const uint64_t end = offset + data.size();
    const uint64_t new_size = std::max(size, end);
    // The chunk holding the old end of file must read zeros between it and the write.
    if (offset > size && size % kChunkSize != 0 && size / kChunkSize < offset / kChunkSize) {
        uint64_t index = size / kChunkSize;
        modify_chunk(index, visible_in_chunk(size, index), visible_in_chunk(new_size, index), 0,
                     {});
    }
    for (uint64_t index = offset / kChunkSize; index * kChunkSize < end; ++index) {
        uint64_t base = index * kChunkSize;
        uint64_t from = std::max(offset, base);
        uint64_t to = std::min(end, base + kChunkSize);
        modify_chunk(index, visible_in_chunk(size, index), visible_in_chunk(new_size, index),
                     static_cast<uint32_t>(from - base), data.subspan(from - offset, to - from));
    }
}

void FileContent::resize(uint64_t old_size, uint64_t new_size) {
    if (new_size < old_size) {
        // Drop every chunk that lies wholly past the new end.
        uint64_t first_dropped = (new_size + kChunkSize - 1) / kChunkSize;
        std::vector<uint64_t> dropped;
        for (auto it = chunks_.lower_bound(first_dropped); it != chunks_.end(); ++it) {
            dropped.push_back(it.key());
            allocated_ -= it.value()->capacity();
        }
        for (uint64_t index : dropped) chunks_.erase(index);
        backing_size_ = std::min(backing_size_, new_size);
    } else if (new_size > old_size) {
        uint64_t index = old_size / kChunkSize;
        modify_chunk(index, visible_in_chunk(old_size, index), visible_in_chunk(new_size, index),
                     0, {});
    }
}

}  // namespace packfs::mem
