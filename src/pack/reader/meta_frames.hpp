// A pack's compressed metadata (kIncompatCompressedMeta, docs/FORMAT.md "Compressed
// metadata"): one frame per metadata block, inflated the first time the block is used into an
// anonymous mapping the size of the whole inflated region. The reader then addresses the
// region exactly as when it is stored raw (its hot path is the same bit test per block), a
// block never used costs only address space, and opening stays O(1) in the number of files.
//
// Concurrency: a block is inflated once, under one of a few striped locks; its state is
// published with release order after its bytes, so a reader that sees the state (or, through
// the reader's own checked bit, anything ordered after it) sees the bytes.
//
// Fetched on demand (a pack from a ByteSource with metadata digests, byte_source.hpp): the
// frames are not there at open. The first inflate of a block reads its frame from the source's
// cache when it holds it, else fetches it with the frames after it up to the window the source
// asks for (ByteSource::frame_window: the policy is the source's; stopping at a frame already
// here or being fetched), in one request; a fetch claims its frames first, so a thread needing
// one of them waits for it instead of fetching it again. Each block inflated is checked against
// its SHA-256 in the metadata digests, which the opener checked against the image digest: a
// block that does not match is fetched once more from the server alone, and if it still does
// not match the inflate fails. A failed fetch or a mismatch is a transient fault: nothing is
// kept, and the next inflate of the block tries again (the server may be back, or fixed).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "pack/format/format.hpp"
#include "packfs/error.hpp"

namespace packfs::pack {

class ByteSource;

// Metadata read on the side of an open (a walk's files scheduled ahead of it) must never wait on
// the server: in an outage, a cached file must still open. An inflate given one of these (in the
// Ctx the read is made with, meta_reader.hpp) uses only frames fetched already or in the cache:
// a block whose frame is neither, or that another thread is fetching or inflating, is a
// transient fault at once (nothing is logged). It remembers the blocks found not here, so that
// the many inodes of one such block look in the cache for it once.
struct HereOnly {
    const void* owner = nullptr;  // the MetaFrames the blocks below are of
    std::vector<uint64_t> not_here;
};

// What inflate() found wrong. Permanent: the pack's own bytes are bad (the block then reads as
// zeros for good). Transient: a block fetched on demand could not be had or did not match its
// digest; nothing was kept and the next inflate tries again.
struct MetaFault {
    Corruption corruption;
    bool transient = false;
};

class MetaFrames {
public:
    // `frames` holds the header's meta_frames_length stored bytes (file offset meta_offset),
    // `index` its meta_block_count(meta_length) + 1 offsets (checked against the header's
    // index checksum by the caller). ENOMEM when the address space cannot be reserved.
    static Result<std::unique_ptr<MetaFrames>> create(const Header& header, const std::byte* frames,
                                                      const std::byte* index,
                                                      std::string_view path);
    // Frames fetched on demand through `source` into `frames` (writable, meta_frames_length
    // bytes, nothing in it yet), each block checked against `digests` (32 bytes per block,
    // already checked against the image digest).
    static Result<std::unique_ptr<MetaFrames>> create_fetching(const Header& header,
                                                               std::byte* frames,
                                                               const std::byte* index,
                                                               std::span<const std::byte> digests,
                                                               ByteSource& source);
    ~MetaFrames();
    MetaFrames(const MetaFrames&) = delete;
    MetaFrames& operator=(const MetaFrames&) = delete;

    // The inflated region: meta_length bytes; block b is meaningful once inflate(b) succeeded.
    const std::byte* region() const noexcept { return region_; }

    // Inflates block `block` (< the block count) into region(), once: later calls answer as the
    // first did without touching the frame again. nullopt when it inflated; else what is wrong
    // with its index entries or its frame (the block then reads as zeros), or a transient fault
    // of a fetch (tried again next time). `here_only`: never wait on the server (HereOnly).
    std::optional<MetaFault> inflate(uint64_t block, HereOnly* here_only = nullptr) const;

private:
    MetaFrames() = default;
    std::optional<MetaFault> inflate_locked(uint64_t block, HereOnly* here_only) const;
    // Fetching on demand: makes block `block`'s frame present (fetching it with the frames after
    // it when no other thread is; `fresh`: from the server alone, this block only).
    std::optional<MetaFault> fetch(uint64_t block, bool fresh, HereOnly* here_only) const;
    // What a block that would have to be fetched is, with HereOnly.
    MetaFault not_here(uint64_t block, HereOnly& here) const;
    std::optional<MetaFault> check_digest(uint64_t block,
                                          std::span<const std::byte> block_bytes) const;
    uint64_t frame_begin(uint64_t block) const noexcept;
    Corruption frame_fault(uint64_t block, uint64_t offset, uint64_t expected, uint64_t actual,
                           std::string_view what) const;

    enum State : uint8_t { pending = 0, inflated = 1, broken = 2 };
    // present: fetched from the server (kept in the cache once it checks out); cached: read from
    // the cache, where it is already.
    enum Fetch : uint8_t { absent = 0, fetching = 1, present = 2, cached = 3 };

    Codec codec_ = Codec::none;
    uint64_t meta_offset_ = 0, meta_length_ = 0, frames_length_ = 0, index_offset_ = 0;
    const std::byte* frames_ = nullptr;
    const std::byte* index_ = nullptr;
    std::byte* region_ = nullptr;  // meta_length_ bytes, mapped
    std::unique_ptr<std::atomic<uint8_t>[]> state_;
    mutable std::array<std::mutex, 16> locks_;
    // Fetching on demand (else null): where the frames go, each block's Fetch state, the
    // digests, and the source.
    std::byte* fetched_frames_ = nullptr;
    std::unique_ptr<std::atomic<uint8_t>[]> fetch_;
    std::span<const std::byte> digests_;
    ByteSource* source_ = nullptr;
    uint64_t block_count_ = 0;
};

}  // namespace packfs::pack
