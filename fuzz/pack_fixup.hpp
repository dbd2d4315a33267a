// Makes arbitrary bytes pass a pack's checksums, so the fuzzer's mutations reach the parser
// instead of dying at the header checksum (a fuzzer cannot invert XXH3).
//
// fix_checksums() reads the header's own numbers and recomputes, wherever those numbers lie
// inside the buffer (a range that does not fit is left alone): each section's checksum, each
// metadata block sum, the sums checksum, the metadata digests (with their feature), the image
// digest and, last, the header checksum; with
// compressed metadata the frame index checksum too, and the rest from the frames inflated.
// With `fix_file_size` it also writes the buffer's size into file_size. Every range is
// checked here, so hostile numbers cannot make this code read out of bounds.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include "pack/format/codec.hpp"
#include "pack/format/digest.hpp"
#include "pack/format/format.hpp"

namespace packfs::fuzz {

// The metadata region as a reader sees it: the bytes at meta_offset, or with compressed
// metadata the frames inflated (a block whose frame is out of range or does not inflate stays
// zero). Empty when the region does not fit the buffer (or, inflated, is over 64 MiB).
inline std::string metadata_region(const std::string& file, const packfs::pack::Header& h) {
    using namespace packfs::pack;
    const uint64_t size = file.size();
    auto fits = [&](uint64_t offset, uint64_t length) {
        return offset <= size && length <= size - offset;
    };
    if ((h.incompat_features & kIncompatCompressedMeta) == 0)
        return fits(h.meta_offset, h.meta_length) ? file.substr(h.meta_offset, h.meta_length)
                                                  : std::string();
    const uint64_t blocks = meta_block_count(h.meta_length);
    if (h.meta_length > (64u << 20) || !fits(h.meta_offset, h.meta_frames_length) ||
        !fits(frame_index_offset(h), 8 * (blocks + 1)))
        return {};
    std::string region(h.meta_length, '\0');
    for (uint64_t b = 0; b < blocks; ++b) {
        uint64_t begin = 0, end = 0;
        std::memcpy(&begin, file.data() + frame_index_offset(h) + 8 * b, 8);
        std::memcpy(&end, file.data() + frame_index_offset(h) + 8 * (b + 1), 8);
        const uint64_t n = std::min<uint64_t>(kMetaBlockSize, h.meta_length - b * kMetaBlockSize);
        if (begin > end || end > h.meta_frames_length || end - begin > n) continue;
        const auto stored =
            std::as_bytes(std::span(file.data() + h.meta_offset + begin, end - begin));
        const auto out = std::as_writable_bytes(std::span(region.data() + b * kMetaBlockSize, n));
        if (stored.size() == n)
            std::memcpy(out.data(), stored.data(), n);
        else if (!decompress_block(static_cast<Codec>(h.codec), stored, out))
            std::memset(out.data(), 0, n);
    }
    return region;
}

inline void fix_checksums(std::string& file, bool fix_file_size) {
    using namespace packfs::pack;
    if (file.size() < sizeof(Header)) return;
    Header h;
    std::memcpy(&h, file.data(), sizeof h);
    const uint64_t size = file.size();
    auto fits = [&](uint64_t offset, uint64_t length) {
        return offset <= size && length <= size - offset;
    };
    auto bytes = [&](uint64_t offset, uint64_t length) {
        return std::as_bytes(std::span(file.data() + offset, length));
    };
    if (fix_file_size) h.file_size = size;
    // Compressed metadata: the frame index's checksum first (it does not need the frames).
    const bool framed = (h.incompat_features & kIncompatCompressedMeta) != 0;
    const uint64_t blocks = meta_block_count(h.meta_length);
    if (framed && h.meta_frames_length < size && blocks < size &&
        fits(frame_index_offset(h), 8 * (blocks + 1)))
        h.meta_index_checksum = xxh3_64(bytes(frame_index_offset(h), 8 * (blocks + 1)));
    const std::string region = metadata_region(file, h);
    const bool have_region = !region.empty() || h.meta_length == 0;
    auto in_region = [&](uint64_t offset, uint64_t length) {
        return have_region && offset >= h.meta_offset && offset - h.meta_offset <= region.size() &&
               length <= region.size() - (offset - h.meta_offset);
    };
    auto region_bytes = [&](uint64_t offset, uint64_t length) {
        return std::as_bytes(std::span(region.data() + (offset - h.meta_offset), length));
    };
    for (std::size_t i = 0; i < kSectionCount; ++i) {  // the optional sections too
        SectionEntry& s = section(h, i);
        // An absent section's entry stays all zero (a checksum of nothing there would make the
        // reader refuse the pack at open, and the mutation would never reach the records).
        if (s.offset == 0 && s.length == 0) continue;
        if (in_region(s.offset, s.length))
            s.checksum = xxh3_64(region_bytes(s.offset, s.length));
        else if (!framed && fits(s.offset, s.length))
            s.checksum = xxh3_64(bytes(s.offset, s.length));
    }
    if (have_region && fits(h.sums_offset, h.sums_length)) {
        for (uint64_t b = 0; b < h.sums_length / 8 && b * kMetaBlockSize < region.size(); ++b) {
            const uint64_t at = b * kMetaBlockSize;
            const uint64_t n = std::min<uint64_t>(kMetaBlockSize, region.size() - at);
            const uint64_t sum = xxh3_64(std::as_bytes(std::span(region.data() + at, n)));
            std::memcpy(file.data() + h.sums_offset + 8 * b, &sum, 8);
        }
    }
    if (fits(h.sums_offset, h.sums_length))
        h.sums_checksum = xxh3_64(bytes(h.sums_offset, h.sums_length));
    // With metadata digests the image digest covers their table: rewritten from the region
    // first, when it fits.
    const bool digests = (h.incompat_features & kIncompatMetaDigests) != 0;
    const uint64_t table = meta_digests_offset(h);
    const bool table_fits = digests && h.sums_offset <= size && h.sums_length <= size &&
                            blocks <= size && fits(table, 32 * blocks);
    if (have_region && table_fits) {
        for (uint64_t b = 0; b < blocks && b * kMetaBlockSize < region.size(); ++b) {
            const uint64_t at = b * kMetaBlockSize;
            const uint64_t n = std::min<uint64_t>(kMetaBlockSize, region.size() - at);
            const Sha256Digest d = sha256(std::as_bytes(std::span(region.data() + at, n)));
            std::memcpy(file.data() + table + 32 * b, d.data(), d.size());
        }
        seal_header(h, bytes(table, 32 * blocks));
    } else if (have_region && !digests) {
        seal_header(h, std::as_bytes(std::span(region.data(), region.size())));
    } else {
        h.header_checksum = 0;
        h.header_checksum = xxh3_64(std::as_bytes(std::span(&h, 1)));
    }
    std::memcpy(file.data(), &h, sizeof h);
}

}  // namespace packfs::fuzz
