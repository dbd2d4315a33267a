// The options `packfs build` and `packfs convert` share (build_options.hpp).
#include "build_options.hpp"

#include <fmt/format.h>

#include <charconv>

#include "format.hpp"
#include "pack_report.hpp"

namespace packfs::cli {

std::optional<CompressionSpec> parse_compression(std::string_view text, std::string& why) {
    const std::size_t colon = text.find(':');
    const std::string_view name = text.substr(0, colon);
    CompressionSpec spec;
    int max_level = 0;
    if (name == "none") {
        spec.codec = Compression::none;
    } else if (name == "zstd") {
        spec.codec = Compression::zstd;
        max_level = 22;
    } else if (name == "lz4") {
        spec.codec = Compression::lz4;
        max_level = 12;  // LZ4 HC's highest
    } else {
        why =
            fmt::format("unknown codec '{}': expected zstd, lz4 or none, optionally :LEVEL", name);
        return std::nullopt;
    }
    if (colon == std::string_view::npos) return spec;
    const std::string_view level = text.substr(colon + 1);
    auto parsed = parse_size(level);
    if (max_level == 0 || !parsed || level.find_first_not_of("0123456789") != level.npos ||
        *parsed < 1 || *parsed > static_cast<uint64_t>(max_level)) {
        why = max_level == 0
                  ? std::string("'none' takes no level")
                  : fmt::format("level '{}' of {}: expected 1 to {}", level, name, max_level);
        return std::nullopt;
    }
    spec.level = static_cast<int>(*parsed);
    return spec;
}

extern const CLI::Validator kCompressionValidator(
    [](std::string& value) {
        std::string why;
        return parse_compression(value, why) ? std::string() : why;
    },
    "zstd|lz4|none[:LEVEL]");

std::optional<uint32_t> parse_block_size(std::string_view text) {
    auto size = parse_size(text);
    if (!size || *size < 4096 || *size > (16u << 20) || (*size & (*size - 1)) != 0) {
        return std::nullopt;
    }
    return static_cast<uint32_t>(*size);
}

extern const CLI::Validator kBlockSizeValidator(
    [](std::string& value) {
        return parse_block_size(value)
                   ? std::string()
                   : fmt::format("block size '{}': expected a power of two from 4K to 16M", value);
    },
    "SIZE");

extern const CLI::Validator kInlineMaxValidator(
    [](std::string& value) {
        auto size = parse_size(value);
        return size && *size <= kMaxInline
                   ? std::string()
                   : fmt::format("inline limit '{}': expected 0 to 4096 bytes (or 4K)", value);
    },
    "SIZE");

std::optional<int64_t> parse_epoch_seconds(std::string_view text) {
    int64_t value = 0;
    const char* end = text.data() + text.size();
    auto [at, ec] = std::from_chars(text.data(), end, value);
    if (text.empty() || ec != std::errc() || at != end) return std::nullopt;
    return value;
}

extern const CLI::Validator kEpochValidator(
    [](std::string& value) {
        return parse_epoch_seconds(value)
                   ? std::string()
                   : fmt::format("time '{}': expected whole seconds since the epoch", value);
    },
    "SECONDS");

std::string build_progress_text(const BuildProgress& p) {
    switch (p.phase) {
        case BuildProgress::Phase::scan:
            return fmt::format("scanning: {} entries", p.done);
        case BuildProgress::Phase::hash:
            return fmt::format("hashing and writing: {}/{} files", p.done, p.total);
        case BuildProgress::Phase::write:
            return fmt::format(
                "writing: {} / {} ({:.0f}%)", human_size(p.done), human_size(p.total),
                p.total ? 100.0 * static_cast<double>(p.done) / static_cast<double>(p.total)
                        : 100.0);
        case BuildProgress::Phase::finish:
            return "finishing";
    }
    return {};
}

std::string compression_text(const CompressionSpec& compression, uint32_t block_size) {
    std::string text = compression_name(compression.codec);
    if (compression.codec == Compression::none) return text;
    text += compression.level ? fmt::format(":{}", compression.level) : " (default level)";
    return text + fmt::format(", {} blocks", human_size(block_size));
}

}  // namespace packfs::cli
