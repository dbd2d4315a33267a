// Content-defined chunking: where a stream of bytes is cut into chunks, decided by the bytes
// themselves, so that an insertion or a deletion moves the cuts near it and no others (a fixed
// block grid would move every cut after it). Chunks so cut are named by their SHA-256 and are
// the unit two versions of a tree share (DESIGN §8, docs/FORMAT.md "Chunks").
//
// The method is FastCDC's (Xia et al., USENIX ATC 2016): a gear hash, h = (h << 1) + gear[byte],
// whose top bits depend on the last 64 bytes only; a cut after a byte where the hash's top bits
// are all zero; the first `min_size` bytes of a chunk never looked at (a chunk is never
// smaller, and the scan is that much shorter); "normalized chunking": before `avg_size` bytes
// the test asks two bits more than log2(avg_size), after it two bits fewer, so chunk sizes
// gather around the average; a cut forced at `max_size`. The gear table and the masks are
// fixed here and in docs/FORMAT.md: a pack records its parameters, and the same parameters
// must cut the same bytes at the same places in every build and every version of PackFS
// (tests/pack/chunker_test.cpp pins them).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace packfs::pack {

struct ChunkParams {
    uint32_t min_size = 16 << 10;
    uint32_t avg_size = 64 << 10;  // a power of two
    uint32_t max_size = 256 << 10;

    // min = avg / 4 and max = avg * 4, casync's proportions.
    static ChunkParams around(uint32_t avg_size) noexcept {
        return {avg_size / 4, avg_size, avg_size * 4};
    }
    // What is wrong with these parameters ("" when nothing): avg a power of two in
    // 1 KiB ..= 4 MiB, 64 <= min < avg < max <= 16 MiB.
    std::string check() const;
    bool operator==(const ChunkParams&) const = default;
};

// The gear table: 256 values of splitmix64 from seed 0x5041434b46534344 ("PACKFSCD").
const std::array<uint64_t, 256>& gear_table() noexcept;

class Chunker {
public:
    // `params` must pass check().
    explicit Chunker(ChunkParams params) noexcept;

    const ChunkParams& params() const noexcept { return params_; }

    // The length of the chunk that starts at data[0]. `data` holds at least max_size bytes,
    // or every byte left of the stream (then its end is a cut: `data` may be shorter than
    // min_size). Never 0 for non-empty data; never more than max_size or data.size().
    std::size_t cut(std::span<const std::byte> data) const noexcept;

private:
    ChunkParams params_;
    uint64_t mask_before_avg_;  // log2(avg) + 2 top bits
    uint64_t mask_after_avg_;   // log2(avg) - 2 top bits
};

// Cuts a stream given in pieces of any size (put) into chunks, handing each chunk to a sink
// whole as soon as its end is known, and the last at finish(). Holds at most max_size bytes.
class StreamChunker {
public:
    explicit StreamChunker(ChunkParams params) : chunker_(params) {
        buffer_.reserve(2 * std::size_t{params.max_size});
    }

    template <class Sink>  // void(std::span<const std::byte> chunk)
    void put(std::span<const std::byte> bytes, Sink&& sink) {
        const std::size_t max = chunker_.params().max_size;
        while (!bytes.empty()) {
            const std::size_t take = std::min(bytes.size(), 2 * max - buffer_.size());
            buffer_.insert(buffer_.end(), bytes.begin(), bytes.begin() + take);
            bytes = bytes.subspan(take);
            std::size_t at = 0;
            while (buffer_.size() - at >= max) {
                const std::size_t n = chunker_.cut(std::span(buffer_).subspan(at));
                sink(std::span<const std::byte>(buffer_).subspan(at, n));
                at += n;
            }
            buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(at));
        }
    }

    template <class Sink>
    void finish(Sink&& sink) {
        std::size_t at = 0;
        while (at < buffer_.size()) {
            const std::size_t n = chunker_.cut(std::span(buffer_).subspan(at));
            sink(std::span<const std::byte>(buffer_).subspan(at, n));
            at += n;
        }
        buffer_.clear();
    }

private:
    Chunker chunker_;
    std::vector<std::byte> buffer_;
};

}  // namespace packfs::pack
