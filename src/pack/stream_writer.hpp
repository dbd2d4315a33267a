// The data region: the stream of contents written in order, either raw or cut into fixed
// blocks that are compressed in parallel batches and written in order, with their offsets
// kept for the blocks section.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "pack/format.hpp"
#include "pack/output_file.hpp"
#include "packfs/error.hpp"

namespace packfs::pack {

class StreamWriter {
public:
    // Writes to `out` from its current position (which must be kDataOffset).
    StreamWriter(OutputFile& out, Codec codec, int level, uint32_t block_size, unsigned jobs);

    Result<void> put(std::span<const std::byte> bytes);
    Result<void> put_zeros(uint64_t count);
    // Flushes the last block. Returns the block offsets (relative to the data region, count
    // + 1 of them) for a compressed stream, empty for a raw one.
    Result<std::vector<uint64_t>> finish();

    uint64_t stream_bytes() const noexcept { return stream_bytes_; }
    uint64_t stored_bytes() const noexcept { return stored_bytes_; }

private:
    Result<void> flush_batch();

    OutputFile& out_;
    Codec codec_;
    int level_;
    uint32_t block_size_;
    unsigned jobs_;
    std::vector<std::vector<std::byte>> batch_;  // full blocks waiting to be compressed
    std::vector<std::byte> current_;             // the block being filled
    std::vector<uint64_t> offsets_{0};
    uint64_t stream_bytes_ = 0;
    uint64_t stored_bytes_ = 0;
};

}  // namespace packfs::pack
