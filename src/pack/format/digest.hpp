// The pack's hashes: XXH3-64 for checksums, XXH3-128 for dedup candidates, SHA-256 for
// content and image digests (nettle, which uses the CPU's SHA instructions where present).
#pragma once

#include <array>
#include <cstring>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "pack/format/format.hpp"
#include "packfs/error.hpp"

namespace packfs::pack {

uint64_t xxh3_64(std::span<const std::byte> bytes) noexcept;
std::array<uint64_t, 2> xxh3_128(std::span<const std::byte> bytes) noexcept;

using Sha256Digest = std::array<uint8_t, 32>;

// A hash table's hash of a SHA-256: its first 8 bytes (uniform already).
struct Sha256DigestHash {
    std::size_t operator()(const Sha256Digest& d) const noexcept {
        std::size_t h;
        std::memcpy(&h, d.data(), sizeof h);
        return h;
    }
};

// Incremental SHA-256.
class Sha256 {
public:
    Sha256();
    ~Sha256();
    Sha256(Sha256&&) noexcept;
    Sha256& operator=(Sha256&&) noexcept;
    void update(std::span<const std::byte> bytes) noexcept;
    Sha256Digest finish() noexcept;  // the object can be reused after finish()

private:
    struct Context;
    std::unique_ptr<Context> context_;
};

Sha256Digest sha256(std::span<const std::byte> bytes) noexcept;
// The SHA-256 of a file's bytes from offset 0 to its end (read errors name `what`).
Result<Sha256Digest> sha256_file(int fd, std::string_view what);

// A pack header sealed (format.hpp): the image digest, SHA-256 of the header (digest and
// checksum zero) then `covered` (the inflated metadata region, or with kIncompatMetaDigests the
// table of its blocks' digests), and then the header checksum, both from the header's other
// fields as they are now.
void seal_header(Header& header, std::span<const std::byte> covered) noexcept;

// A metadata block (inflated) that does not match its entry in the metadata digests table
// (kIncompatMetaDigests): both digests in hex, and their first 8 bytes big-endian (so they read
// as the start of the hex) for a Corruption's fields.
struct MetaBlockMismatch {
    std::string expected, found;
    uint64_t expected_prefix = 0, found_prefix = 0;
    // "metadata block B SHA-256 (expected X, found Y)"
    std::string describe(uint64_t block) const;
};
// Checks metadata block `block` against its entry in `table`; nullopt when it matches.
std::optional<MetaBlockMismatch> check_meta_block(std::span<const std::byte> table, uint64_t block,
                                                  std::span<const std::byte> bytes);

// Incremental XXH3-128, for contents read in slices.
class Xxh3_128 {
public:
    Xxh3_128();
    ~Xxh3_128();
    Xxh3_128(Xxh3_128&&) noexcept;
    Xxh3_128& operator=(Xxh3_128&&) noexcept;
    void update(std::span<const std::byte> bytes) noexcept;
    std::array<uint64_t, 2> finish() noexcept;

private:
    struct State;
    std::unique_ptr<State> state_;
};

std::string to_hex(std::span<const uint8_t> bytes);

}  // namespace packfs::pack
