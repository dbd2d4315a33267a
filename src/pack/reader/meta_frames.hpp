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
// Fetched on demand (a remote pack with metadata digests, src/remote/): the frames are not
// there at open. The first inflate of a block reads its frame from the cache when the cache
// holds it, else fetches it with the frames after it up to a window (kFetchWindow, growing for
// sequential fetches; stopping at one already here or being fetched), in one request; a
// fetch claims its frames first, so a thread needing one of them waits for it instead of
// fetching it again. Each block inflated is checked against its SHA-256 in the metadata
// digests, which the opener checked against the image digest: a block that does not match is
// fetched once more from the server alone, and if it still does not match the inflate fails.
// A failed fetch or a mismatch is a transient fault: nothing is kept, and the next inflate of
// the block tries again (the server may be back, or fixed).
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

#include "pack/format/format.hpp"
#include "packfs/error.hpp"

namespace packfs::pack {

class RemoteBytes;

// What inflate() found wrong. Permanent: the pack's own bytes are bad (the block then reads as
// zeros for good). Transient: a block fetched on demand could not be had or did not match its
// digest; nothing was kept and the next inflate tries again.
struct MetaFault {
    Corruption corruption;
    bool transient = false;
};

class MetaFrames {
public:
    // Stored frames fetched at most this many bytes at a time (one request per window); a fetch
    // that starts where an earlier one ended (a walk reading a section in order) doubles that
    // one's window, up to kMaxFetchWindow.
    static constexpr uint64_t kFetchWindow = 256 << 10;
    static constexpr uint64_t kMaxFetchWindow = 4 << 20;

    // `frames` holds the header's meta_frames_length stored bytes (file offset meta_offset),
    // `index` its meta_block_count(meta_length) + 1 offsets (checked against the header's
    // index checksum by the caller). ENOMEM when the address space cannot be reserved.
    static Result<std::unique_ptr<MetaFrames>> create(const Header& header, const std::byte* frames,
                                                      const std::byte* index,
                                                      std::string_view path);
    // Frames fetched on demand through `remote` into `frames` (writable, meta_frames_length
    // bytes, nothing in it yet), each block checked against `digests` (32 bytes per block,
    // already checked against the image digest).
    static Result<std::unique_ptr<MetaFrames>> create_fetching(const Header& header,
                                                               std::byte* frames,
                                                               const std::byte* index,
                                                               std::span<const std::byte> digests,
                                                               RemoteBytes& remote);
    ~MetaFrames();
    MetaFrames(const MetaFrames&) = delete;
    MetaFrames& operator=(const MetaFrames&) = delete;

    // While one lives, this thread's inflates never wait on the server: a block whose frame is
    // neither fetched already nor in the cache, or that another thread is fetching or
    // inflating, is a transient fault at once (nothing is logged). For work done on the side of
    // an open, such as scheduling a walk's prefetch: it must not make the open wait in an outage.
    class LocalOnly {
    public:
        LocalOnly() noexcept;
        ~LocalOnly();
        LocalOnly(const LocalOnly&) = delete;
        LocalOnly& operator=(const LocalOnly&) = delete;

    private:
        bool was_;
    };

    // The inflated region: meta_length bytes; block b is meaningful once inflate(b) succeeded.
    const std::byte* region() const noexcept { return region_; }

    // Inflates block `block` (< the block count) into region(), once: later calls answer as the
    // first did without touching the frame again. nullopt when it inflated; else what is wrong
    // with its index entries or its frame (the block then reads as zeros), or a transient fault
    // of a fetch (tried again next time).
    std::optional<MetaFault> inflate(uint64_t block) const;

private:
    MetaFrames() = default;
    std::optional<MetaFault> inflate_locked(uint64_t block) const;
    // Fetching on demand: makes block `block`'s frame present (fetching it with the frames after
    // it when no other thread is; `fresh`: from the server alone, this block only).
    std::optional<MetaFault> fetch(uint64_t block, bool fresh) const;
    // What a block that would have to be fetched is, under LocalOnly.
    MetaFault not_local(uint64_t block) const;
    // The window of a fetch starting at `block`, and where it ends recorded for the next.
    uint64_t window_for(uint64_t block) const;
    void record_fetch(uint64_t block, uint64_t next_block, uint64_t window) const;
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
    // digests, and the bytes.
    std::byte* fetched_frames_ = nullptr;
    std::unique_ptr<std::atomic<uint8_t>[]> fetch_;
    std::span<const std::byte> digests_;
    RemoteBytes* remote_ = nullptr;
    uint64_t block_count_ = 0;
    // Sequential streams of fetches (a walk reads several sections at once: inodes, dirents,
    // names): the block after each one's last fetch and the window it had.
    struct Stream {
        uint64_t next = UINT64_MAX;
        uint64_t window = 0;
        uint64_t last_use = 0;
    };
    mutable std::mutex streams_mutex_;
    mutable std::array<Stream, 8> streams_{};
    mutable uint64_t stream_clock_ = 0;
};

}  // namespace packfs::pack
