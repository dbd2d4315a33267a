#include "mem/content.hpp"

#include <algorithm>
#include <array>
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
        return static_cast<std::byte*>(::operator new(kChunkSize));
    }
    void give(std::byte* p) noexcept {
        {
            std::lock_guard lock(mutex_);
            if (free_.size() < kChunkPoolBytes / kChunkSize) {
                free_.push_back(p);
                return;
            }
        }
        ::operator delete(p);
    }

private:
    std::mutex mutex_;
    std::vector<std::byte*> free_;
};

// Never destroyed: chunks may be freed by reclamation after static destructors ran.
ChunkBufferPool& chunk_pool() {
    static ChunkBufferPool* pool = new ChunkBufferPool;
    return *pool;
}

// The part of a file of `size` bytes that falls inside chunk `index`.
uint32_t visible_in_chunk(uint64_t size, uint64_t index) noexcept {
    const uint64_t base = index * kChunkSize;
    if (size <= base) return 0;
    return static_cast<uint32_t>(std::min<uint64_t>(size - base, kChunkSize));
}

// Buffers start at 64 bytes and double, so n appends cost O(n) copying in total.
uint32_t grown_capacity(uint32_t old_capacity, uint32_t needed) noexcept {
    if (needed <= old_capacity) return old_capacity;
    const uint32_t cap = std::bit_ceil(std::max<uint32_t>(needed, 64));
    return std::min(cap, kChunkSize);
}

void zero(std::byte* p, uint32_t from, uint32_t to) noexcept {
    if (to > from) std::memset(p + from, 0, to - from);
}

void chunk_release(Chunk* c, rcu::Reclaimer& reclaimer) noexcept {
    if (c && --c->refs == 0) retire_in_arena(reclaimer, c);
}

void map_release(ChunkMap* m, rcu::Reclaimer& reclaimer) noexcept {
    if (!m || --m->refs != 0) return;
    for (auto& slot : m->slots) {
        void* p = slot.load(std::memory_order_relaxed);
        if (!p) continue;
        if (m->height == 0) {
            chunk_release(static_cast<Chunk*>(p), reclaimer);
        } else {
            map_release(static_cast<ChunkMap*>(p), reclaimer);
        }
    }
    reclaimer.retire(m);
}

void map_destroy_now(ChunkMap* m, Arena& arena) noexcept {
    if (!m || --m->refs != 0) return;
    for (auto& slot : m->slots) {
        void* p = slot.load(std::memory_order_relaxed);
        if (!p) continue;
        if (m->height == 0) {
            auto* c = static_cast<Chunk*>(p);
            if (--c->refs == 0) arena.destroy(c);
        } else {
            map_destroy_now(static_cast<ChunkMap*>(p), arena);
        }
    }
    delete m;
}

}  // namespace

Chunk* Chunk::make(Arena& arena, uint32_t capacity) {
    const bool inline_buffer = capacity < kChunkSize;
    auto* c = new (arena.allocate(sizeof(Chunk) + (inline_buffer ? capacity : 0))) Chunk;
    c->capacity = capacity;
    c->data = inline_buffer ? reinterpret_cast<std::byte*>(c + 1) : chunk_pool().take();
    return c;
}

Chunk::~Chunk() {
    if (!inline_buffer()) chunk_pool().give(data);
}

// --- reading ---------------------------------------------------------------------------------

const Chunk* Content::chunk(uint64_t index) const noexcept {
    if (!raw_) return nullptr;
    if (!is_map()) return index == 0 ? as_chunk() : nullptr;
    const ChunkMap* m = as_map();
    if (index >= m->capacity()) return nullptr;
    for (;;) {
        const int slot = static_cast<int>((index >> (ChunkMap::kBits * m->height)) &
                                          (ChunkMap::kSlots - 1));
        void* p = m->slots[slot].load(std::memory_order_acquire);
        if (!p) return nullptr;
        if (m->height == 0) return static_cast<const Chunk*>(p);
        m = static_cast<const ChunkMap*>(p);
    }
}

uint64_t Content::next_chunk(uint64_t index) const noexcept {
    constexpr uint64_t kNone = UINT64_MAX;
    if (!raw_) return kNone;
    if (!is_map()) return index == 0 ? 0 : kNone;
    const ChunkMap* root = as_map();
    const uint64_t limit = root->capacity();
    while (index < limit) {
        // Down towards `index`; a missing node skips everything below it.
        const ChunkMap* m = root;
        uint64_t skip = 0;
        while (true) {
            const uint64_t span = uint64_t{1} << (ChunkMap::kBits * m->height);
            void* p =
                m->slots[(index / span) & (ChunkMap::kSlots - 1)].load(std::memory_order_acquire);
            if (!p) {
                skip = span;
                break;
            }
            if (m->height == 0) return index;
            m = static_cast<const ChunkMap*>(p);
        }
        index = (index / skip + 1) * skip;
    }
    return kNone;
}

std::optional<uint64_t> Content::seek(uint64_t size, uint64_t offset, bool data,
                                      uint64_t backing_size) const noexcept {
    if (offset >= size) return std::nullopt;
    const uint64_t last = (size - 1) / kChunkSize;
    const uint64_t backed_chunks = (backing_size + kChunkSize - 1) / kChunkSize;
    uint64_t index = offset / kChunkSize;
    if (data) {
        if (index < backed_chunks) return offset;  // the lower's bytes are data
        const uint64_t next = next_chunk(index);
        if (next > last) return std::nullopt;
        return std::max(offset, next * kChunkSize);
    }
    // The first chunk neither held nor backed; the end of file when every one is.
    for (; index <= last; ++index) {
        if (index >= backed_chunks && chunk(index) == nullptr)
            return std::max(offset, index * kChunkSize);
    }
    return size;
}

Result<std::size_t> Content::read(uint64_t size, uint64_t offset, std::span<std::byte> out,
                                  const Backing* backing, uint64_t backing_size) const {
    if (offset >= size || out.empty()) return 0;
    const std::size_t total = static_cast<std::size_t>(std::min<uint64_t>(out.size(), size - offset));
    std::byte* dst = out.data();
    uint64_t pos = offset;
    const uint64_t end = offset + total;
    while (pos < end) {
        const uint64_t index = pos / kChunkSize;
        const uint64_t base = index * kChunkSize;
        const uint32_t from = static_cast<uint32_t>(pos - base);
        const uint32_t to = static_cast<uint32_t>(std::min<uint64_t>(end - base, kChunkSize));
        if (const Chunk* c = chunk(index)) {
            const uint32_t stored = std::min(to, c->capacity);
            if (stored > from) {
                std::memcpy(dst, c->data + from, stored - from);
                zero(dst, stored - from, to - from);
            } else {
                zero(dst, 0, to - from);
            }
        } else if (backing && pos < backing_size) {
            // Bytes never changed since the copy-up: the lower's, zeros past its end.
            const uint64_t stop = std::min<uint64_t>(base + to, backing_size);
            uint64_t at = pos;
            while (at < stop) {
                auto n = backing->read(at, std::span<std::byte>(dst + (at - pos), stop - at));
                if (!n) return std::unexpected(n.error());
                if (*n == 0) break;
                at += *n;
            }
            std::memset(dst + (at - pos), 0, base + to - at);
        } else {
            zero(dst, 0, to - from);
        }
        dst += to - from;
        pos = base + to;
    }
    return total;
}

// --- sharing -------------------------------------------------------------------------------

void Content::retain(Content c) noexcept {
    if (!c.raw_) return;
    if (c.is_map()) {
        ++c.as_map()->refs;
    } else {
        ++c.as_chunk()->refs;
    }
}

void Content::release(Content c, rcu::Reclaimer& reclaimer) noexcept {
    if (!c.raw_) return;
    if (c.is_map()) {
        map_release(c.as_map(), reclaimer);
    } else {
        chunk_release(c.as_chunk(), reclaimer);
    }
}

void Content::destroy_now(Content c, Arena& arena) noexcept {
    if (!c.raw_) return;
    if (c.is_map()) {
        map_destroy_now(c.as_map(), arena);
    } else if (--c.as_chunk()->refs == 0) {
        arena.destroy(c.as_chunk());
    }
}

// --- writing -------------------------------------------------------------------------------

Result<void> ContentWriter::read_backing(uint64_t pos, uint64_t end, std::byte* dst) const {
    const uint64_t stop = std::min(end, std::max(pos, state_.aux));
    uint64_t at = pos;
    while (at < stop && backing_) {
        auto n = backing_->read(at, std::span<std::byte>(dst + (at - pos), stop - at));
        if (!n) return std::unexpected(n.error());
        if (*n == 0) break;  // a lower shorter than it said: the rest reads as zeros
        at += *n;
    }
    std::memset(dst + (at - pos), 0, end - at);
    return {};
}

Result<Chunk*> ContentWriter::chunk_from_backing(uint64_t index, uint32_t visible,
                                                 uint32_t capacity_needed) {
    const uint64_t base = index * kChunkSize;
    Chunk* chunk = Chunk::make(arena_, grown_capacity(0, std::max(visible, capacity_needed)));
    if (auto ok = read_backing(base, base + visible, chunk->data); !ok) {
        arena_.destroy(chunk);
        return std::unexpected(ok.error());
    }
    chunk->frontier = 0;  // no state can see this buffer yet: the write may fill it in place
    return chunk;
}

// A map node as the live file's own: itself when only this file references it, else a copy.
// While `copying_` (the change replaces or removes a chunk a reader of the current size may be
// reading) the file's own nodes are copied too, unless this writer made them: the copies are
// published with the cell's state, so one read sees the file before the write or after it.
ChunkMap* ContentWriter::own_map(ChunkMap* node, std::atomic<void*>* parent_slot) {
    if (node->refs == 1 &&
        (!copying_ || std::find(made_.begin(), made_.end(), node) != made_.end()))
        return node;
    auto* copy = new ChunkMap;
    copy->height = node->height;
    for (int i = 0; i < ChunkMap::kSlots; ++i) {
        void* p = node->slots[i].load(std::memory_order_relaxed);
        if (p) {
            if (node->height == 0) {
                ++static_cast<Chunk*>(p)->refs;
            } else {
                ++static_cast<ChunkMap*>(p)->refs;
            }
        }
        copy->slots[i].store(p, std::memory_order_relaxed);
    }
    if (parent_slot) {
        // The parent is a copy made by this write (or the file's own): the old node loses
        // that parent's reference.
        parent_slot->store(copy, std::memory_order_release);
        map_release(node, reclaimer_);
    } else {
        map_release(node, reclaimer_);
        set_content(Content::of(copy));
    }
    made_.push_back(copy);
    return copy;
}

void ContentWriter::set_chunk(uint64_t index, Chunk* chunk) {
    // Whether a reader of the current size may be reading the chunk being replaced.
    const bool visible = index * uint64_t{kChunkSize} < state_.size;
    Content c = content();
    if (index == 0 && !c.is_map()) {
        // The one-chunk form: the content is chunk 0 itself.
        if (!c.empty()) chunk_release(c.as_chunk(), reclaimer_);
        set_content(chunk ? Content::of(chunk) : Content());
        return;
    }
    ChunkMap* root;
    if (!c.is_map()) {
        if (!chunk) return;  // a hole past a one-chunk (or empty) file: nothing to remove
        root = new ChunkMap;  // chunk 0, if any, moves into a map (published with the state)
        if (!c.empty()) root->slots[0].store(c.as_chunk(), std::memory_order_relaxed);
        made_.push_back(root);
        set_content(Content::of(root));
    } else {
        root = c.as_map();
    }
    // Grow the map until it covers `index` (a new root: published with the state).
    while (index >= root->capacity()) {
        if (!chunk) return;  // nothing stored that far
        auto* taller = new ChunkMap;
        taller->height = root->height + 1;
        taller->slots[0].store(root, std::memory_order_relaxed);
        made_.push_back(taller);
        root = taller;
        set_content(Content::of(root));
    }
    copying_ = visible;
    ChunkMap* node = own_map(root, nullptr);
    while (node->height > 0) {
        auto& slot = node->slots[(index >> (ChunkMap::kBits * node->height)) & (ChunkMap::kSlots - 1)];
        auto* below = static_cast<ChunkMap*>(slot.load(std::memory_order_relaxed));
        if (!below) {
            if (!chunk) {
                copying_ = false;
                return;
            }
            below = new ChunkMap;
            below->height = node->height - 1;
            made_.push_back(below);
            slot.store(below, std::memory_order_release);
        } else {
            below = own_map(below, &slot);
        }
        node = below;
    }
    auto& slot = node->slots[index & (ChunkMap::kSlots - 1)];
    chunk_release(static_cast<Chunk*>(slot.load(std::memory_order_relaxed)), reclaimer_);
    slot.store(chunk, std::memory_order_release);
    copying_ = false;
}

Result<void> ContentWriter::modify_chunk(uint64_t index, uint32_t visible_before,
                                         uint32_t visible_after, uint32_t a,
                                         std::span<const std::byte> data) {
    Chunk* old = const_cast<Chunk*>(content().chunk(index));
    const uint32_t b = a + static_cast<uint32_t>(data.size());
    const bool has_data = !data.empty();
    bool from_backing = false;
    if (!old && has_data) {
        // First change of a chunk still in the lower: the copy of just this chunk, read before
        // the write changed anything (write()).
        for (auto& [i, c] : backed_) {
            if (i == index && c) {
                old = std::exchange(c, nullptr);
                from_backing = true;
            }
        }
    }
    if (!old && !has_data) return {};  // a hole stays a hole: it reads as zeros
    const uint32_t old_cap = old ? old->capacity : 0;
    const uint32_t old_valid = std::min(visible_before, old_cap);  // bytes of `old` in use

    // In place: every byte we touch is at or past the frontier, so no state can see it.
    const uint32_t first_touched = has_data ? std::min(a, old_valid) : old_valid;
    if (old && b <= old_cap && first_touched >= old->frontier) {
        std::byte* p = old->data;
        const uint32_t new_valid = std::min(visible_after, old_cap);
        if (has_data) {
            zero(p, old_valid, a);
            std::memcpy(p + a, data.data(), data.size());
        }
        zero(p, std::max(b, old_valid), new_valid);
        old->frontier = std::max(old->frontier, new_valid);
        if (from_backing) {
            state_.allocated += old->capacity;
            set_chunk(index, old);
        }
        return {};
    }
    if (!has_data && old_valid >= std::min(visible_after, old_cap)) return {};  // nothing to zero

    const uint32_t cap = grown_capacity(old_cap, has_data ? b : 0);
    Chunk* fresh = Chunk::make(arena_, cap);
    std::byte* p = fresh->data;
    const uint32_t new_valid = std::min(visible_after, cap);
    if (has_data) {
        if (old) std::memcpy(p, old->data, std::min(old_valid, a));
        zero(p, std::min(old_valid, a), a);
        std::memcpy(p + a, data.data(), data.size());
        if (old && old_valid > b) std::memcpy(p + b, old->data + b, old_valid - b);
        zero(p, std::max(b, old_valid), new_valid);
    } else {
        std::memcpy(p, old->data, old_valid);
        zero(p, old_valid, new_valid);
    }
    fresh->frontier = new_valid;
    state_.allocated += cap;
    if (from_backing) {
        arena_.destroy(old);  // never published
    } else {
        state_.allocated -= old_cap;
    }
    set_chunk(index, fresh);
    return {};
}

Result<void> ContentWriter::write(uint64_t offset, std::span<const std::byte> data) {
    if (data.empty()) return {};
    const uint64_t size = state_.size;
    const uint64_t end = offset + data.size();
    const uint64_t new_size = std::max(size, end);
    // The lower's chunks this write changes first, so a lower that fails changes nothing.
    if (backing_) {
        for (uint64_t index = offset / kChunkSize; index * kChunkSize < end; ++index) {
            if (index * kChunkSize >= state_.aux || content().chunk(index)) continue;
            const uint64_t base = index * kChunkSize;
            const uint32_t b = static_cast<uint32_t>(std::min<uint64_t>(end - base, kChunkSize));
            auto up = chunk_from_backing(index, visible_in_chunk(size, index), b);
            if (!up) {
                for (auto& [i, c] : backed_)
                    if (c) arena_.destroy(c);
                backed_.clear();
                return std::unexpected(up.error());
            }
            backed_.emplace_back(index, *up);
        }
    }
    // The chunk holding the old end of file must read zeros between it and the write.
    if (offset > size && size % kChunkSize != 0 && size / kChunkSize < offset / kChunkSize) {
        const uint64_t index = size / kChunkSize;
        if (auto ok = modify_chunk(index, visible_in_chunk(size, index),
                                   visible_in_chunk(new_size, index), 0, {});
            !ok)
            return ok;
    }
    for (uint64_t index = offset / kChunkSize; index * kChunkSize < end; ++index) {
        const uint64_t base = index * kChunkSize;
        const uint64_t from = std::max(offset, base);
        const uint64_t to = std::min(end, base + kChunkSize);
        if (auto ok = modify_chunk(index, visible_in_chunk(size, index),
                                   visible_in_chunk(new_size, index),
                                   static_cast<uint32_t>(from - base),
                                   data.subspan(from - offset, to - from));
            !ok)
            return ok;
    }
    state_.size = new_size;
    for (auto& [i, c] : backed_)
        if (c) arena_.destroy(c);  // (every one was used)
    backed_.clear();
    return {};
}

void ContentWriter::drop_from(uint64_t first_index) {
    Content c = content();
    if (c.empty()) return;
    if (!c.is_map()) {
        if (first_index == 0) {
            state_.allocated -= c.as_chunk()->capacity;
            set_chunk(0, nullptr);
        }
        return;
    }
    std::vector<uint64_t> dropped;
    const ChunkMap* root = c.as_map();
    const uint64_t limit = root->capacity();
    for (uint64_t index = first_index; index < limit; ++index) {
        // Skip whole empty subtrees quickly: walk down, stepping over missing nodes.
        const ChunkMap* m = root;
        uint64_t step = 1;
        bool missing = false;
        while (m->height > 0) {
            void* p = m->slots[(index >> (ChunkMap::kBits * m->height)) & (ChunkMap::kSlots - 1)]
                          .load(std::memory_order_relaxed);
            if (!p) {
                step = uint64_t{1} << (ChunkMap::kBits * m->height);
                missing = true;
                break;
            }
            m = static_cast<const ChunkMap*>(p);
        }
        if (missing) {
            index = (index / step + 1) * step - 1;
            continue;
        }
        if (const Chunk* chunk = static_cast<const Chunk*>(
                m->slots[index & (ChunkMap::kSlots - 1)].load(std::memory_order_relaxed))) {
            state_.allocated -= chunk->capacity;
            dropped.push_back(index);
        }
    }
    for (uint64_t index : dropped) set_chunk(index, nullptr);
}

Result<void> ContentWriter::punch(uint64_t offset, uint64_t length) {
    static const std::array<std::byte, kChunkSize> kZeros{};
    const uint64_t end =
        std::min(state_.size, offset + length);  // (the caller checked: no overflow)
    for (uint64_t index = offset / kChunkSize; index * kChunkSize < end; ++index) {
        const uint64_t base = index * kChunkSize;
        const uint64_t from = std::max(offset, base);
        const uint64_t to = std::min(end, base + kChunkSize);
        const bool backed = backing_ != nullptr && base < state_.aux;
        const Chunk* held = content().chunk(index);
        if (!held && !backed) continue;  // a hole already
        const bool whole = from == base && (to == base + kChunkSize || to == state_.size);
        if (whole && !backed) {
            state_.allocated -= held->capacity;
            set_chunk(index, nullptr);
            continue;
        }
        // Bytes past a held buffer read as zeros already.
        const uint64_t stop = backed ? to : std::min<uint64_t>(to, base + held->capacity);
        if (from >= stop) continue;
        if (auto ok = write(from, std::span(kZeros).first(stop - from)); !ok) return ok;
    }
    return {};
}

void ContentWriter::share(Content from, uint64_t from_index, uint64_t to_index, uint64_t count) {
    for (uint64_t k = 0; k < count; ++k) {
        auto* chunk = const_cast<Chunk*>(from.chunk(from_index + k));
        if (const Chunk* old = content().chunk(to_index + k)) state_.allocated -= old->capacity;
        if (chunk) {
            chunk->frontier = chunk->capacity;  // the writer's field: no state writes it in place
            ++chunk->refs;
            state_.allocated += chunk->capacity;
        }
        set_chunk(to_index + k, chunk);
    }
}

Result<void> ContentWriter::resize(uint64_t new_size) {
    const uint64_t old_size = state_.size;
    if (new_size < old_size) {
        // Drop every chunk that lies wholly past the new end.
        drop_from((new_size + kChunkSize - 1) / kChunkSize);
        state_.aux = std::min(state_.aux, new_size);
    } else if (new_size > old_size) {
        const uint64_t index = old_size / kChunkSize;
        if (auto ok = modify_chunk(index, visible_in_chunk(old_size, index),
                                   visible_in_chunk(new_size, index), 0, {});
            !ok)
            return ok;
    }
    state_.size = new_size;
    return {};
}

}  // namespace packfs::mem
