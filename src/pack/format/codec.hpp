// Block compression for the pack's data stream: zstd or LZ4 (block format), one independent
// frame per stream block, so any block decompresses on its own (random access).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "pack/format/format.hpp"

namespace packfs::pack {

// Compresses `input` with `codec` at `level` (0: the codec's default) into `out` (replaced).
// Returns false when the result would not be smaller than the input; the block is then stored
// raw, as the format says.
bool compress_block(Codec codec, int level, std::span<const std::byte> input,
                    std::vector<std::byte>& out);

// Decompresses one stored block into exactly out.size() bytes. False when the stored bytes are
// not a valid frame of `codec` that decompresses to exactly that size (a corrupt pack).
bool decompress_block(Codec codec, std::span<const std::byte> stored, std::span<std::byte> out);

// The codec's name ("zstd", "lz4", "none") for messages and `packfs info`.
const char* codec_name(Codec codec) noexcept;

}  // namespace packfs::pack
