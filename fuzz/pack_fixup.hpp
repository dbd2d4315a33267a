// Makes arbitrary bytes pass a pack's checksums, so the fuzzer's mutations reach the parser
// instead of dying at the header checksum (a fuzzer cannot invert XXH3).
//
// fix_checksums() reads the header's own numbers and recomputes, wherever those numbers lie
// inside the buffer (a range that does not fit is left alone): each section's checksum, each
// metadata block sum, the sums checksum, the image digest and, last, the header checksum.
// With `fix_file_size` it also writes the buffer's size into file_size. Every range is
// checked here, so hostile numbers cannot make this code read out of bounds.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include "pack/digest.hpp"
#include "pack/format.hpp"

namespace packfs::fuzz {

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
    for (std::size_t i = 0; i < kSectionCount; ++i) {  // the optional sections too
        SectionEntry& s = section(h, i);
        // An absent section's entry stays all zero (a checksum of nothing there would make the
        // reader refuse the pack at open, and the mutation would never reach the records).
        if (s.offset == 0 && s.length == 0) continue;
        if (fits(s.offset, s.length)) s.checksum = xxh3_64(bytes(s.offset, s.length));
    }
    const bool meta_fits = fits(h.meta_offset, h.meta_length);
    if (meta_fits && fits(h.sums_offset, h.sums_length)) {
        for (uint64_t b = 0; b < h.sums_length / 8 && b * kMetaBlockSize < h.meta_length; ++b) {
            const uint64_t at = b * kMetaBlockSize;
            const uint64_t n = std::min<uint64_t>(kMetaBlockSize, h.meta_length - at);
            const uint64_t sum = xxh3_64(bytes(h.meta_offset + at, n));
            std::memcpy(file.data() + h.sums_offset + 8 * b, &sum, 8);
        }
    }
    if (fits(h.sums_offset, h.sums_length))
        h.sums_checksum = xxh3_64(bytes(h.sums_offset, h.sums_length));
    if (meta_fits) {
        Header zeroed = h;
        zeroed.header_checksum = 0;
        std::memset(zeroed.image_digest, 0, sizeof zeroed.image_digest);
        Sha256 sha;
        sha.update(std::as_bytes(std::span(&zeroed, 1)));
        sha.update(bytes(h.meta_offset, h.meta_length));
        const Sha256Digest digest = sha.finish();
        std::memcpy(h.image_digest, digest.data(), digest.size());
    }
    h.header_checksum = 0;
    h.header_checksum = xxh3_64(std::as_bytes(std::span(&h, 1)));
    std::memcpy(file.data(), &h, sizeof h);
}

}  // namespace packfs::fuzz
