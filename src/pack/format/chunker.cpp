#include "pack/format/chunker.hpp"

#include <fmt/format.h>

#include <bit>

namespace packfs::pack {

namespace {

constexpr uint64_t kGearSeed = 0x5041434b46534344ULL;  // "PACKFSCD"

constexpr std::array<uint64_t, 256> make_gear() {
    std::array<uint64_t, 256> table{};
    uint64_t state = kGearSeed;
    for (auto& value : table) {  // splitmix64
        state += 0x9e3779b97f4a7c15ULL;
        uint64_t z = state;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        value = z ^ (z >> 31);
    }
    return table;
}

constexpr std::array<uint64_t, 256> kGear = make_gear();

// The top `bits` bits: they depend on the last 64 bytes the hash took in.
constexpr uint64_t top_bits(unsigned bits) noexcept {
    return bits == 0 ? 0 : ~uint64_t{0} << (64 - bits);
}

}  // namespace

const std::array<uint64_t, 256>& gear_table() noexcept {
    return kGear;
}

std::string ChunkParams::check() const {
    if (!std::has_single_bit(avg_size) || avg_size < (1u << 10) || avg_size > (4u << 20))
        return fmt::format("the average chunk size {} is not a power of two from 1 KiB to 4 MiB",
                           avg_size);
    if (min_size < 64 || min_size >= avg_size)
        return fmt::format(
            "the smallest chunk size {} is not from 64 bytes to below the average {}", min_size,
            avg_size);
    if (max_size <= avg_size || max_size > (16u << 20))
        return fmt::format(
            "the largest chunk size {} is not above the average {} and at most 16 MiB", max_size,
            avg_size);
    return {};
}

Chunker::Chunker(ChunkParams params) noexcept
    : params_(params),
      mask_before_avg_(top_bits(static_cast<unsigned>(std::countr_zero(params.avg_size)) + 2)),
      mask_after_avg_(top_bits(static_cast<unsigned>(std::countr_zero(params.avg_size)) - 2)) {}

std::size_t Chunker::cut(std::span<const std::byte> data) const noexcept {
    const std::size_t n = std::min<std::size_t>(data.size(), params_.max_size);
    if (n <= params_.min_size) return n;
    const std::size_t normal = std::min<std::size_t>(n, params_.avg_size);
    const auto* bytes = reinterpret_cast<const uint8_t*>(data.data());
    uint64_t hash = 0;
    std::size_t i = params_.min_size;
    for (; i < normal; ++i) {
        hash = (hash << 1) + kGear[bytes[i]];
        if ((hash & mask_before_avg_) == 0) return i + 1;
    }
    for (; i < n; ++i) {
        hash = (hash << 1) + kGear[bytes[i]];
        if ((hash & mask_after_avg_) == 0) return i + 1;
    }
    return n;
}

}  // namespace packfs::pack
