#include "pack/meta_frames.hpp"

#include <fmt/format.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "pack/codec.hpp"

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
    m->state_ = std::make_unique<std::atomic<uint8_t>[]>(meta_block_count(header.meta_length));
    return m;
}

MetaFrames::~MetaFrames() {
    if (region_ != nullptr) ::munmap(region_, meta_length_);
}

std::optional<Corruption> MetaFrames::inflate(uint64_t block) const {
    const uint8_t state = state_[block].load(std::memory_order_acquire);
    if (state == inflated) return std::nullopt;
    std::lock_guard lock(locks_[block % locks_.size()]);
    return inflate_locked(block);
}

Corruption MetaFrames::frame_fault(uint64_t block, uint64_t offset, uint64_t expected,
                                   uint64_t actual, std::string_view what) const {
    return Corruption{offset, expected, actual,
                      fmt::format("metadata block {} frame {}", block, what)};
}

std::optional<Corruption> MetaFrames::inflate_locked(uint64_t block) const {
    const uint8_t state = state_[block].load(std::memory_order_acquire);
    if (state == inflated) return std::nullopt;  // by another thread while this one waited
    const uint64_t begin = load<uint64_t>(index_ + 8 * block);
    const uint64_t end = load<uint64_t>(index_ + 8 * (block + 1));
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
        if (fault) return fault;
        return frame_fault(block, meta_offset_ + begin, length, end - begin,
                           "(does not inflate to the block's length)");
    }
    std::byte* out = region_ + start;
    if (!fault) {
        const std::span stored(frames_ + begin, end - begin);
        if (stored.size() == length)
            std::memcpy(out, stored.data(), length);
        else if (!decompress_block(codec_, stored, std::span(out, length)))
            fault = frame_fault(block, meta_offset_ + begin, length, stored.size(),
                                "(does not inflate to the block's length)");
    }
    if (fault) std::memset(out, 0, length);  // what a failed block reads as, whoever reads it
    state_[block].store(fault ? broken : inflated, std::memory_order_release);
    return fault;
}

}  // namespace packfs::pack
