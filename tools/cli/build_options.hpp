// The options `packfs build` and `packfs convert` share: the codec and level, the block size,
// the inline limit, epoch seconds for clamping; each parsed with an error that says what is
// accepted; and the text of the writer's progress line.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "packfs/pack.hpp"

namespace packfs::cli {

struct CompressionSpec {
    Compression codec = Compression::none;
    int level = 0;  // 0: the codec's default
};

// "none", "zstd", "lz4", "zstd:19", "lz4:9"; `why` says what is accepted.
std::optional<CompressionSpec> parse_compression(std::string_view text, std::string& why);
// A power of two from 4 KiB to 16 MiB, as the format requires.
std::optional<uint32_t> parse_block_size(std::string_view text);
// Whole seconds since the epoch (may be negative).
std::optional<int64_t> parse_epoch_seconds(std::string_view text);

// The format keeps inline contents up to 4 KiB.
constexpr uint64_t kMaxInline = 4096;

extern const CLI::Validator kCompressionValidator;  // --compress
extern const CLI::Validator kBlockSizeValidator;    // --block-size
extern const CLI::Validator kInlineMaxValidator;    // --inline-max
extern const CLI::Validator kEpochValidator;        // --clamp-mtime

// --metadata: whether a compressed pack's metadata is compressed too.
inline constexpr const char* kMetadataHelp =
    "With --compress and format 2: store the metadata compressed (default; a smaller pack, each "
    "16 KiB metadata block inflated on first use) or raw";

// "scanning: N entries", "hashing: i/n files", "writing: x / y (p%)", "finishing".
std::string build_progress_text(const BuildProgress& progress);

// "zstd:19, 64 KiB blocks", "zstd (default level), 64 KiB blocks", "none".
std::string compression_text(const CompressionSpec& compression, uint32_t block_size);

}  // namespace packfs::cli
