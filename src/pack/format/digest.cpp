#include "pack/format/digest.hpp"

#include <fmt/format.h>
#include <nettle/sha2.h>
#include <xxhash.h>

#include <cstring>
#include <vector>

#include "core/io.hpp"

namespace packfs::pack {

uint64_t xxh3_64(std::span<const std::byte> bytes) noexcept {
    return XXH3_64bits(bytes.data(), bytes.size());
}

std::array<uint64_t, 2> xxh3_128(std::span<const std::byte> bytes) noexcept {
    XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
    return {h.low64, h.high64};
}

// nettle's SHA-256 (its x86-64 build uses the CPU's SHA instructions where present): a plain
// struct, no allocation or lookup per digest, and no OpenSSL for a program that only reads.
struct Sha256::Context {
    sha256_ctx ctx;
};

Sha256::Sha256() : context_(std::make_unique<Context>()) {
    sha256_init(&context_->ctx);
}
Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::update(std::span<const std::byte> bytes) noexcept {
    sha256_update(&context_->ctx, bytes.size(), reinterpret_cast<const uint8_t*>(bytes.data()));
}

Sha256Digest Sha256::finish() noexcept {
    Sha256Digest out{};
    sha256_digest(&context_->ctx, out.size(), out.data());  // and starts over
    return out;
}

Sha256Digest sha256(std::span<const std::byte> bytes) noexcept {
    thread_local Sha256 context;  // reused: creating one per call costs more than small data
    context.update(bytes);
    return context.finish();
}

void seal_header(Header& header, std::span<const std::byte> covered) noexcept {
    header.header_checksum = 0;
    std::memset(header.image_digest, 0, sizeof header.image_digest);
    Sha256 digest;
    digest.update(std::as_bytes(std::span(&header, 1)));
    digest.update(covered);
    const Sha256Digest d = digest.finish();
    std::memcpy(header.image_digest, d.data(), d.size());
    header.header_checksum = xxh3_64(std::as_bytes(std::span(&header, 1)));
}

struct Xxh3_128::State {
    XXH3_state_t* state = XXH3_createState();
    ~State() { XXH3_freeState(state); }
};

Xxh3_128::Xxh3_128() : state_(std::make_unique<State>()) {
    if (!state_->state) throw std::bad_alloc();
    XXH3_128bits_reset(state_->state);
}
Xxh3_128::~Xxh3_128() = default;
Xxh3_128::Xxh3_128(Xxh3_128&&) noexcept = default;
Xxh3_128& Xxh3_128::operator=(Xxh3_128&&) noexcept = default;

void Xxh3_128::update(std::span<const std::byte> bytes) noexcept {
    XXH3_128bits_update(state_->state, bytes.data(), bytes.size());
}

std::array<uint64_t, 2> Xxh3_128::finish() noexcept {
    XXH128_hash_t h = XXH3_128bits_digest(state_->state);
    XXH3_128bits_reset(state_->state);
    return {h.low64, h.high64};
}

std::string to_hex(std::span<const uint8_t> bytes) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (uint8_t b : bytes) {
        out += kDigits[b >> 4];
        out += kDigits[b & 15];
    }
    return out;
}

std::optional<MetaBlockMismatch> check_meta_block(std::span<const std::byte> table, uint64_t block,
                                                  std::span<const std::byte> bytes) {
    const Sha256Digest found = sha256(bytes);
    const auto expected =
        std::span(reinterpret_cast<const uint8_t*>(table.data()) + 32 * block, 32);
    if (std::memcmp(found.data(), expected.data(), 32) == 0) return std::nullopt;
    auto prefix = [](const uint8_t* p) {
        uint64_t v = 0;
        for (int i = 0; i < 8; ++i) v = v << 8 | p[i];
        return v;
    };
    return MetaBlockMismatch{to_hex(expected), to_hex(found), prefix(expected.data()),
                             prefix(found.data())};
}

std::string MetaBlockMismatch::describe(uint64_t block) const {
    return fmt::format("metadata block {} SHA-256 (expected {}, found {})", block, expected, found);
}

Result<Sha256Digest> sha256_file(int fd, std::string_view what) {
    Sha256 sha;
    std::vector<std::byte> buffer(1 << 20);
    for (uint64_t at = 0;;) {
        auto n = io::pread_full(fd, buffer, at, what);
        if (!n) return std::unexpected(n.error());
        sha.update(std::span(buffer).first(*n));
        if (*n < buffer.size()) break;
        at += *n;
    }
    return sha.finish();
}

}  // namespace packfs::pack
