// The data region: the stream of contents written in order, either raw or cut into fixed
// blocks compressed by a pool of workers and written in stream order, with their offsets kept
// for the blocks section. A full block is handed to the pool at once and the writer goes on
// filling the next; it writes finished blocks as soon as they are next in order and waits only
// when a window of blocks (a few per worker) is in flight, so a slow block at a high level
// never leaves the other workers idle (no batch barrier) and memory stays bounded.
//
// With holes allowed (format 2), a block of zeros is stored in no bytes (kIncompatHoles), in
// raw streams too, which are then cut into blocks; a raw stream that met no such block is
// written exactly as without holes and reports no block offsets.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "pack/format/format.hpp"
#include "pack/writer/output_file.hpp"
#include "packfs/error.hpp"

namespace packfs::pack {

class StreamWriter {
public:
    // Writes to `out` from its current position (which must be kDataOffset).
    // With `digests` (format 2's block digests; needs `holes`, so the stream is cut into
    // blocks), each block's stored bytes are hashed with SHA-256 as they are stored: by the
    // workers for compressed blocks, by the caller's thread for raw ones.
    StreamWriter(OutputFile& out, Codec codec, int level, uint32_t block_size, unsigned jobs,
                 bool holes = false, bool digests = false);
    ~StreamWriter();  // stops the workers (blocks in flight are dropped)
    StreamWriter(const StreamWriter&) = delete;
    StreamWriter& operator=(const StreamWriter&) = delete;

    Result<void> put(std::span<const std::byte> bytes);
    // `count` zero bytes (whole blocks of them are holes when holes are allowed, not even
    // looked at).
    Result<void> put_zeros(uint64_t count);
    // Flushes the last block. Returns the block offsets (relative to the data region, count
    // + 1 of them) for a compressed stream or one with holes, empty for a raw one.
    Result<std::vector<uint64_t>> finish();

    uint64_t stream_bytes() const noexcept { return stream_bytes_; }
    uint64_t stored_bytes() const noexcept { return stored_bytes_; }
    bool wrote_holes() const noexcept { return wrote_holes_; }
    // After finish(): one digest per block, in stream order (empty without `digests`).
    std::vector<BlockDigest> take_digests() noexcept { return std::move(digests_); }

private:
    // One block on its way: filled by the writer, compressed by a worker, written in order.
    struct Block {
        std::vector<std::byte> raw;
        std::vector<std::byte> compressed;
        bool smaller = false;  // compressed is what is stored (else raw: the format's rule)
        bool hole = false;     // all zeros: nothing is stored
        bool done = false;
        BlockDigest digest{};  // of the stored bytes (with digests)
    };

    bool blocked() const noexcept { return codec_ != Codec::none || holes_; }
    void submit(bool hole = false);                            // hands current_ to the pool
    Result<void> put_block(std::span<const std::byte> block);  // raw with holes: one block
    Result<void> write_ready(std::size_t keep_at_most);  // writes done blocks in order
    void work();

    OutputFile& out_;
    Codec codec_;
    bool holes_;
    bool digesting_;
    bool wrote_holes_ = false;
    int level_;
    uint32_t block_size_;
    std::size_t window_;  // blocks in flight at most

    std::mutex mutex_;
    std::condition_variable work_ready_;  // a block to compress, or stopping
    std::condition_variable block_done_;  // a block compressed
    std::deque<Block> in_flight_;         // in stream order; the front is written next
    std::size_t next_to_compress_ = 0;    // index into in_flight_ of the first unclaimed block
    bool stopping_ = false;
    std::vector<std::jthread> workers_;

    std::vector<std::byte> current_;  // the block being filled
    std::vector<uint64_t> offsets_{0};
    std::vector<BlockDigest> digests_;
    uint64_t stream_bytes_ = 0;
    uint64_t stored_bytes_ = 0;
};

}  // namespace packfs::pack
