#include "pack/reader/meta_frames.hpp"

#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "pack/format/codec.hpp"
#include "pack/format/digest.hpp"
#include "pack/reader/image.hpp"

namespace packfs::pack {

Result<std::unique_ptr<MetaFrames>> MetaFrames::create(const Header& header,
                                                       const std::byte* frames,
                                                       const std::byte* index,
                                                       std::string_view path) {
    std::unique_ptr<MetaFrames> m(new MetaFrames());  // private constructor
    m->codec_ = static_cast<Codec>(header.codec);
    m->meta_offset_ = header.meta_offset;
    m->meta_length_ = header.meta_length;
    m->frames_length_ = header.meta_frames_length;
    m->index_offset_ = frame_index_offset(header);
    m->frames_ = frames;
    m->index_ = index;
    if (m->meta_length_ != 0) {
        // Reserved, not committed: a page costs memory only once a block is inflated into it.
        void* at = ::mmap(nullptr, m->meta_length_, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (at == MAP_FAILED) return fail(errno, "open_pack", path);
        m->region_ = static_cast<std::byte*>(at);
    }
    m->block_count_ = meta_block_count(header.meta_length);
    m->state_ = std::make_unique<std::atomic<uint8_t>[]>(m->block_count_);
    return m;
}

Result<std::unique_ptr<MetaFrames>> MetaFrames::create_fetching(const Header& header,
                                                                std::byte* frames,
                                                                const std::byte* index,
                                                                std::span<const std::byte> digests,
                                                                ByteSource& source) {
    auto m = create(header, frames, index, source.name());
    if (!m) return m;
    (*m)->fetched_frames_ = frames;
    (*m)->fetch_ = std::make_unique<std::atomic<uint8_t>[]>((*m)->block_count_);
    (*m)->digests_ = digests;
    (*m)->source_ = &source;
    return m;
}

MetaFrames::~MetaFrames() {
    if (region_ != nullptr) ::munmap(region_, meta_length_);
}

MetaFault MetaFrames::not_here(uint64_t block, HereOnly& here) const {
    if (here.owner != this) {
        here.not_here.clear();
        here.owner = this;
    }
    if (std::find(here.not_here.begin(), here.not_here.end(), block) == here.not_here.end())
        here.not_here.push_back(block);
    return MetaFault{Corruption{meta_offset_ + frame_begin(block), 0, 0,
                                fmt::format("metadata block {} not here", block)},
                     true};
}

std::optional<MetaFault> MetaFrames::inflate(uint64_t block, HereOnly* here_only) const {
    const uint8_t state = state_[block].load(std::memory_order_acquire);
    if (state == inflated) return std::nullopt;
    if (source_ == nullptr) here_only = nullptr;  // nothing to wait for
    std::unique_lock lock(locks_[block % locks_.size()], std::defer_lock);
    // Another thread's inflate under this lock may be waiting on the server.
    if (here_only != nullptr) {
        if (!lock.try_lock()) return not_here(block, *here_only);
    } else {
        lock.lock();
    }
    return inflate_locked(block, here_only);
}

Corruption MetaFrames::frame_fault(uint64_t block, uint64_t offset, uint64_t expected,
                                   uint64_t actual, std::string_view what) const {
    return Corruption{offset, expected, actual,
                      fmt::format("metadata block {} frame {}", block, what)};
}

uint64_t MetaFrames::frame_begin(uint64_t block) const noexcept {
    return load<uint64_t>(index_ + 8 * block);
}

std::optional<MetaFault> MetaFrames::inflate_locked(uint64_t block, HereOnly* here_only) const {
    const uint8_t state = state_[block].load(std::memory_order_acquire);
    if (state == inflated) return std::nullopt;  // by another thread while this one waited
    const uint64_t begin = frame_begin(block);
    const uint64_t end = frame_begin(block + 1);
    const uint64_t start = block * kMetaBlockSize;
    const uint64_t length = std::min<uint64_t>(kMetaBlockSize, meta_length_ - start);
    // The stored length is never more than the block's: a frame that would be is stored raw.
    std::optional<Corruption> fault;
    if (end > frames_length_)
        fault = frame_fault(block, index_offset_ + 8 * (block + 1), frames_length_, end,
                            "end (past the frames)");
    else if (begin > end)
        fault = frame_fault(block, index_offset_ + 8 * block, end, begin, "start (after its end)");
    else if (end - begin > length)
        fault = frame_fault(block, index_offset_ + 8 * block, length, end - begin,
                            "length (longer than the block)");
    if (state == broken) {
        if (fault) return MetaFault{std::move(*fault)};
        return MetaFault{frame_fault(block, meta_offset_ + begin, length, end - begin,
                                     "(does not inflate to the block's length)")};
    }
    std::byte* out = region_ + start;
    // (Empty when the index entries are bad: nothing is read then.)
    const std::span stored(frames_ + (fault ? 0 : begin), fault ? 0 : end - begin);
    auto inflate_stored = [&] {
        if (stored.size() != length)
            return decompress_block(codec_, stored, std::span(out, length));
        std::memcpy(out, stored.data(), length);
        return true;
    };
    auto no_inflate = [&] {
        return frame_fault(block, meta_offset_ + begin, length, stored.size(),
                           "(does not inflate to the block's length)");
    };
    // Fetched on demand: the frame first, then the block checked against its digest; a
    // mismatch is fetched once more, from the server alone.
    for (int attempt = 0; !fault && source_ != nullptr; ++attempt) {
        if (auto missing = fetch(block, attempt > 0, here_only)) return missing;
        auto mismatch = inflate_stored() ? check_digest(block, std::span(out, length))
                                         : MetaFault{no_inflate(), true};
        if (!mismatch) {
            if (fetch_[block].load(std::memory_order_relaxed) == present)
                source_->keep_metadata(meta_offset_ + begin, stored);
            state_[block].store(inflated, std::memory_order_release);
            return std::nullopt;
        }
        const bool from_cache = fetch_[block].load(std::memory_order_relaxed) == cached;
        fetch_[block].store(absent, std::memory_order_release);  // not kept: fetched again
        // A copy from the cache that fails is no news: past the end of a window kept there, the
        // rest of the file's page reads as zeros. What the server sends wrong is reported.
        if (!from_cache)
            source_->reject_metadata(
                meta_offset_ + begin,
                fmt::format("{}; {}", mismatch->corruption.what,
                            attempt > 0 ? "not kept, the read fails"
                                        : "fetching it once more from the server"));
        if (attempt > 0) return mismatch;
    }
    if (!fault && !inflate_stored()) fault = no_inflate();
    if (fault) std::memset(out, 0, length);  // what a failed block reads as, whoever reads it
    state_[block].store(fault ? broken : inflated, std::memory_order_release);
    if (fault) return MetaFault{std::move(*fault)};
    return std::nullopt;
}

std::optional<MetaFault> MetaFrames::check_digest(uint64_t block,
                                                  std::span<const std::byte> block_bytes) const {
    auto mismatch = check_meta_block(digests_, block, block_bytes);
    if (!mismatch) return std::nullopt;
    return MetaFault{Corruption{meta_offset_ + frame_begin(block), mismatch->expected_prefix,
                                mismatch->found_prefix, mismatch->describe(block)},
                     true};
}

std::optional<MetaFault> MetaFrames::fetch(uint64_t block, bool fresh, HereOnly* here_only) const {
    auto claim = [&](uint64_t b) {
        uint8_t expected = absent;
        return fetch_[b].compare_exchange_strong(expected, fetching, std::memory_order_acq_rel);
    };
    while (true) {
        uint8_t now = fetch_[block].load(std::memory_order_acquire);
        if (now == fetching && here_only != nullptr) return not_here(block, *here_only);
        if (now == absent && here_only != nullptr && here_only->owner == this &&
            std::find(here_only->not_here.begin(), here_only->not_here.end(), block) !=
                here_only->not_here.end())
            return not_here(block, *here_only);
        if (now == fetching) {  // another thread's fetch: wait for it to land or fail
            fetch_[block].wait(fetching, std::memory_order_acquire);
            continue;
        }
        if (now != absent && !fresh) return std::nullopt;
        // Absent, or fresh: this block again, alone.
        if (fetch_[block].compare_exchange_strong(now, fetching, std::memory_order_acq_rel)) break;
    }
    // This block (whose index entries the caller checked), then, unless it is fetched afresh
    // or only looked for in the cache (HereOnly: no window asked for), the following ones
    // nobody has or fetches, whose entries are in order, within the source's window.
    const uint64_t from = frame_begin(block);
    uint64_t last = block;
    if (!fresh && here_only == nullptr) {
        const uint64_t window = source_->frame_window(meta_offset_ + from);
        auto joins = [&](uint64_t b) {
            const uint64_t begin = frame_begin(b), end = frame_begin(b + 1);
            return begin <= end && end <= frames_length_ && end - from <= window && claim(b);
        };
        while (last + 1 < block_count_ && joins(last + 1)) ++last;
    }
    const uint64_t to = frame_begin(last + 1);
    // Kept in the cache by an earlier run or another process: as much of the window as it
    // holds, in one read; the blocks past that go back to absent, fetched when they are used.
    if (!fresh) {
        const uint64_t held = source_->cached_metadata(
            meta_offset_ + from, std::span(fetched_frames_ + from, to - from));
        if (from + held >= frame_begin(block + 1)) {
            for (uint64_t b = block; b <= last; ++b) {
                fetch_[b].store(frame_begin(b + 1) <= from + held ? cached : absent,
                                std::memory_order_release);
                fetch_[b].notify_all();
            }
            return std::nullopt;
        }
    }
    if (here_only != nullptr) {  // not in the cache either: left for a fetch that may wait
        for (uint64_t b = block; b <= last; ++b) {
            fetch_[b].store(absent, std::memory_order_release);
            fetch_[b].notify_all();
        }
        return not_here(block, *here_only);
    }
    const Result<void> got =
        source_->fetch_metadata(meta_offset_ + from, std::span(fetched_frames_ + from, to - from));
    for (uint64_t b = block; b <= last; ++b) {
        fetch_[b].store(got ? present : absent, std::memory_order_release);
        fetch_[b].notify_all();
    }
    if (got) return std::nullopt;
    return MetaFault{Corruption{meta_offset_ + from, to - from, 0,
                                fmt::format("metadata blocks {}-{} not fetched: {}", block, last,
                                            got.error().message())},
                     true};
}

}  // namespace packfs::pack
