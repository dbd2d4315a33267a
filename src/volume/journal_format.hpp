// The volume journal's on-disk format, version 1 (DESIGN §10). docs/JOURNAL.md is the prose
// form of this file; the two must agree. The journal knows nothing of filesystems: a record
// is a 16-bit type and opaque payload bytes, numbered by a sequence number.
//
// File layout (every integer little-endian, read with memcpy, never through a cast pointer):
//
//   [0, 64)              header (kJournalHeaderSize bytes)
//   [64, ...)            frames, back to back, each a multiple of 8 bytes long (so every
//                        frame starts 8-aligned)
//
// Header (64 bytes):
//    0  8  magic          "PFSJRNL\n"
//    8  4  version        1
//   12  4  header_size    64 (in v1)
//   16  8  generation     the volume's journal generation (its manifest names it)
//   24  8  first_seq      sequence number of the first record; >= 1
//   32 16  volume_id      the volume this journal belongs to
//   48  8  reserved       zero
//   56  8  checksum       XXH3-64 (seed 0) of the header's header_size bytes, this field zero
// For every version, magic, version and header_size stay where they are and the checksum is
// the header's last 8 bytes, so a reader can check the checksum of a newer header (and thus
// tell a newer format, ENOTSUP, from a damaged header, EUCLEAN) before it reads the rest.
//
// Frame (24 + align8(payload_length) bytes):
//    0  4  payload_length  <= kMaxJournalPayload (1 GiB)
//    4  2  type            the caller's record type (opaque here)
//    6  2  flags           zero in v1
//    8  8  seq             first_seq for the first frame, then previous + 1
//   16  n  payload
//  16+n p  padding         zeros up to a multiple of 8 (p = align8(n) - n)
//   ...  8 checksum        XXH3-64 (seed 0) of every byte of the frame before it
//
// A frame is valid when all of it lies in the file, its length is within the maximum, its
// checksum matches, its flags and padding are zero and its seq is the next one. The journal
// is the longest run of valid frames after the header; recovery drops everything after it.
#pragma once

#include <xxhash.h>

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace packfs::volume {

static_assert(std::endian::native == std::endian::little, "the journal assumes a little-endian host");

inline constexpr std::array<char, 8> kJournalMagic = {'P', 'F', 'S', 'J', 'R', 'N', 'L', '\n'};
inline constexpr uint32_t kJournalVersion = 1;
inline constexpr uint32_t kJournalHeaderSize = 64;
// The largest header a reader accepts from any version (to check a newer header's checksum).
inline constexpr uint32_t kJournalMaxHeaderSize = 4096;
inline constexpr uint32_t kMaxJournalPayload = 1u << 30;
inline constexpr std::size_t kFrameHeaderSize = 16;
inline constexpr std::size_t kFrameTrailerSize = 8;

// The header's fields a writer chooses.
struct JournalHeaderFields {
    uint64_t generation = 0;
    uint64_t first_seq = 1;
    std::array<uint8_t, 16> volume_id{};
    friend bool operator==(const JournalHeaderFields&, const JournalHeaderFields&) = default;
};

// The header as stored.
struct JournalHeader {
    char magic[8];
    uint32_t version;
    uint32_t header_size;
    uint64_t generation;
    uint64_t first_seq;
    uint8_t volume_id[16];
    uint64_t reserved;
    uint64_t checksum;
};
static_assert(sizeof(JournalHeader) == kJournalHeaderSize);
static_assert(offsetof(JournalHeader, checksum) == kJournalHeaderSize - 8);

// XXH3-64 of a header's bytes with its last 8 bytes (the checksum) read as zero.
inline uint64_t journal_header_checksum(std::span<const std::byte> header) {
    std::vector<std::byte> copy(header.begin(), header.end());
    std::memset(copy.data() + copy.size() - 8, 0, 8);
    return XXH3_64bits(copy.data(), copy.size());
}

// The 64 header bytes for `fields` (version may be overridden by tests).
inline std::array<std::byte, kJournalHeaderSize> encode_journal_header(
    const JournalHeaderFields& fields, uint32_t version = kJournalVersion) {
    JournalHeader h{};
    std::memcpy(h.magic, kJournalMagic.data(), sizeof h.magic);
    h.version = version;
    h.header_size = kJournalHeaderSize;
    h.generation = fields.generation;
    h.first_seq = fields.first_seq;
    std::memcpy(h.volume_id, fields.volume_id.data(), sizeof h.volume_id);
    std::array<std::byte, kJournalHeaderSize> out;
    std::memcpy(out.data(), &h, sizeof h);
    const uint64_t sum = journal_header_checksum(out);
    std::memcpy(out.data() + offsetof(JournalHeader, checksum), &sum, 8);
    return out;
}

constexpr uint64_t journal_align8(uint64_t n) noexcept { return (n + 7) & ~uint64_t{7}; }

// Bytes of the frame holding a payload of `payload_length` bytes.
constexpr uint64_t journal_frame_size(uint64_t payload_length) noexcept {
    return kFrameHeaderSize + journal_align8(payload_length) + kFrameTrailerSize;
}

// Appends the frame of one record to `out` (payload at most kMaxJournalPayload bytes).
inline void append_journal_frame(std::vector<std::byte>& out, uint64_t seq, uint16_t type,
                                 std::span<const std::byte> payload) {
    const std::size_t start = out.size();
    const std::size_t size = static_cast<std::size_t>(journal_frame_size(payload.size()));
    out.resize(start + size);  // zero-fills the padding
    std::byte* f = out.data() + start;
    const auto length = static_cast<uint32_t>(payload.size());
    const uint16_t flags = 0;
    std::memcpy(f, &length, 4);
    std::memcpy(f + 4, &type, 2);
    std::memcpy(f + 6, &flags, 2);
    std::memcpy(f + 8, &seq, 8);
    if (!payload.empty()) std::memcpy(f + kFrameHeaderSize, payload.data(), payload.size());
    const uint64_t sum = XXH3_64bits(f, size - kFrameTrailerSize);
    std::memcpy(f + size - kFrameTrailerSize, &sum, 8);
}

}  // namespace packfs::volume
