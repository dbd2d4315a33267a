// A pack's compressed metadata (kIncompatCompressedMeta, docs/FORMAT.md "Compressed
// metadata"): one frame per metadata block, inflated the first time the block is used into an
// anonymous mapping the size of the whole inflated region. The reader then addresses the
// region exactly as when it is stored raw (its hot path is the same bit test per block), a
// block never used costs only address space, and opening stays O(1) in the number of files.
//
// Concurrency: a block is inflated once, under one of a few striped locks; its state is
// published with release order after its bytes, so a reader that sees the state (or, through
// the reader's own checked bit, anything ordered after it) sees the bytes.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>

#include "pack/format.hpp"
#include "packfs/error.hpp"

namespace packfs::pack {

class MetaFrames {
public:
    // `frames` holds the header's meta_frames_length stored bytes (file offset meta_offset),
    // `index` its meta_block_count(meta_length) + 1 offsets (checked against the header's
    // index checksum by the caller). ENOMEM when the address space cannot be reserved.
    static Result<std::unique_ptr<MetaFrames>> create(const Header& header, const std::byte* frames,
                                                      const std::byte* index,
                                                      std::string_view path);
    ~MetaFrames();
    MetaFrames(const MetaFrames&) = delete;
    MetaFrames& operator=(const MetaFrames&) = delete;

    // The inflated region: meta_length bytes; block b is meaningful once inflate(b) succeeded.
    const std::byte* region() const noexcept { return region_; }

    // Inflates block `block` (< the block count) into region(), once: later calls answer as the
    // first did without touching the frame again. nullopt when it inflated; else what is wrong
    // with its index entries or its frame (the block then reads as zeros).
    std::optional<Corruption> inflate(uint64_t block) const;

private:
    MetaFrames() = default;
    std::optional<Corruption> inflate_locked(uint64_t block) const;
    Corruption frame_fault(uint64_t block, uint64_t offset, uint64_t expected, uint64_t actual,
                           std::string_view what) const;

    enum State : uint8_t { pending = 0, inflated = 1, broken = 2 };

    Codec codec_ = Codec::none;
    uint64_t meta_offset_ = 0, meta_length_ = 0, frames_length_ = 0, index_offset_ = 0;
    const std::byte* frames_ = nullptr;
    const std::byte* index_ = nullptr;
    std::byte* region_ = nullptr;  // meta_length_ bytes, mapped
    std::unique_ptr<std::atomic<uint8_t>[]> state_;
    mutable std::array<std::mutex, 16> locks_;
};

}  // namespace packfs::pack
