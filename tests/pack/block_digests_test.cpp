// Block digests (docs/FORMAT.md, the block-digests feature): a format 2 pack stores the SHA-256
// of every stored block, so a reader that fetches blocks one at a time can check each. The
// digests are checked here against an independent reading of the file (the block's stored
// bytes found from the header and the blocks section, hashed by this test), for raw, raw with
// holes and compressed packs; verify catches a changed block by its digest; the feature is
// left out on request and in version 1; a damaged entry or feature bit is refused on open.
// Metadata digests (the metadata-digests feature) likewise: one SHA-256 per metadata block,
// checked against the region as this test inflates it, the image digest over their table, verify
// naming a block whose entry differs, and left out with the block digests.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "pack/format/digest.hpp"
#include "pack/format/format.hpp"
#include "pack/hostile_support.hpp"
#include "packfs/mem.hpp"
#include "packfs/pack.hpp"
#include "support/files.hpp"

namespace packfs::pack {
namespace {

using hostile::PackParts;
using test_support::slurp;
using test_support::TempDir;

constexpr uint32_t kBlock = 16 * 1024;

const auto kEveryCodec = ::testing::Values(Compression::none, Compression::zstd, Compression::lz4);
std::string codec_test_name(const ::testing::TestParamInfo<Compression>& info) {
    return info.param == Compression::none   ? "raw"
           : info.param == Compression::zstd ? "zstd"
                                             : "lz4";
}

std::string pattern(std::size_t n, unsigned seed) {
    std::string s(n, '\0');
    uint32_t x = seed * 2654435761u + 1;
    for (auto& c : s) {
        x = x * 1103515245u + 12345u;
        c = static_cast<char>(x >> 24);
    }
    return s;
}

void fill(Backend& mem) {
    ASSERT_TRUE(mem.mkdir("/d", 0755));
    ASSERT_TRUE(write_file(mem, "/d/big", pattern(5 * kBlock + 123, 1)));
    ASSERT_TRUE(write_file(mem, "/d/zeros-inside",
                           pattern(kBlock, 2) + std::string(3 * kBlock, '\0') + "tail"));
    ASSERT_TRUE(write_file(mem, "/small", std::string(1000, 'x')));
}

Header header_of(const std::string& file) {
    Header h;
    std::memcpy(&h, file.data(), sizeof h);
    return h;
}

// The block digests as the file holds them, and the SHA-256s of the blocks' stored bytes as
// this test finds them.
struct Digests {
    std::vector<std::string> stored, computed;
};

Digests read_digests(const std::string& file) {
    const Header h = header_of(file);
    const PackParts parts = PackParts::parse(file);
    Digests d;
    const std::string& table = parts.sec[static_cast<std::size_t>(Section::block_digests)];
    for (std::size_t at = 0; at + 32 <= table.size(); at += 32)
        d.stored.push_back(table.substr(at, 32));
    const uint64_t count = (h.stream_size + h.block_size - 1) / h.block_size;
    const std::string& blocks = parts.sec[static_cast<std::size_t>(Section::blocks)];
    for (uint64_t i = 0; i < count; ++i) {
        uint64_t begin = i * h.block_size,
                 end = std::min<uint64_t>(begin + h.block_size, h.stream_size);
        if (!blocks.empty()) {
            std::memcpy(&begin, blocks.data() + 8 * i, 8);
            std::memcpy(&end, blocks.data() + 8 * (i + 1), 8);
        }
        const Sha256Digest sha =
            sha256(std::as_bytes(std::span(parts.data.data() + begin, end - begin)));
        d.computed.emplace_back(reinterpret_cast<const char*>(sha.data()), sha.size());
    }
    return d;
}

// `mem` packed at `path` in blocks of kBlock with `compression`: the file's bytes.
std::string pack_bytes(Backend& mem, const std::string& path, Compression compression) {
    PackWriteOptions options;
    options.compression = compression;
    options.block_size = kBlock;
    EXPECT_TRUE(write_pack(mem, path, options));
    return slurp(path);
}

class BlockDigests : public ::testing::TestWithParam<Compression> {};

TEST_P(BlockDigests, EveryStoredBlockHasItsSha256AndVerifyChecksIt) {
    TempDir dir;
    auto mem = make_mem_backend();
    fill(*mem);
    const std::string path = dir.path.string() + "/p.pack";
    const std::string file = pack_bytes(*mem, path, GetParam());
    const Header h = header_of(file);
    EXPECT_NE(h.compat_features & kCompatBlockDigests, 0u);
    EXPECT_NE(h.incompat_features & kIncompatHoles, 0u);  // the three blocks of zeros
    const Digests d = read_digests(file);
    ASSERT_EQ(d.stored.size(), (h.stream_size + kBlock - 1) / kBlock);
    EXPECT_EQ(d.stored, d.computed);

    auto pack = open_pack(path);
    ASSERT_TRUE(pack) << pack.error().message();
    EXPECT_TRUE((*pack)->info().has_block_digests);
    EXPECT_TRUE((*pack)->verify().ok());

    // A byte of the first block changed: verify names that block by its digest.
    std::string bad = file;
    bad[h.data_offset + 7] ^= 0x40;
    hostile::spit(path, bad);
    auto damaged = open_pack(path);
    ASSERT_TRUE(damaged);
    const VerifyReport report = (*damaged)->verify();
    bool named = false;
    for (const VerifyProblem& p : report.problems)
        named |= p.where.starts_with("data block 0 ") && p.what.find("block digest mismatch") == 0;
    EXPECT_TRUE(named);
}

INSTANTIATE_TEST_SUITE_P(Codecs, BlockDigests, kEveryCodec, codec_test_name);

TEST(BlockDigestsFeature, ARawStreamWithoutHolesHasOneDigestPerStreamBlock) {
    TempDir dir;
    auto mem = make_mem_backend();
    ASSERT_TRUE(write_file(*mem, "/f", pattern(3 * kBlock + 5, 9)));
    const std::string path = dir.path.string() + "/p.pack";
    const std::string file = pack_bytes(*mem, path, Compression::none);
    EXPECT_EQ(header_of(file).incompat_features & kIncompatHoles, 0u);
    const Digests d = read_digests(file);
    EXPECT_EQ(d.stored.size(), 4u);
    EXPECT_EQ(d.stored, d.computed);
}

TEST(BlockDigestsFeature, LeftOutOnRequestInVersion1AndWithoutAStream) {
    TempDir dir;
    auto mem = make_mem_backend();
    fill(*mem);
    auto feature_of = [&](const PackWriteOptions& options) {
        const std::string path = dir.path.string() + "/p.pack";
        EXPECT_TRUE(write_pack(*mem, path, options));
        auto pack = open_pack(path);
        EXPECT_TRUE(pack && (*pack)->verify().ok());
        return pack && (*pack)->info().has_block_digests;
    };
    PackWriteOptions without;
    without.block_digests = false;
    EXPECT_FALSE(feature_of(without));
    PackWriteOptions v1;
    v1.format = 1;
    EXPECT_FALSE(feature_of(v1));
    auto tiny = make_mem_backend();
    ASSERT_TRUE(write_file(*tiny, "/inline", "only inline bytes"));
    const std::string path = dir.path.string() + "/tiny.pack";
    ASSERT_TRUE(write_pack(*tiny, path));
    auto pack = open_pack(path);
    ASSERT_TRUE(pack);
    EXPECT_FALSE((*pack)->info().has_block_digests);  // no stream, no blocks to digest
}

TEST(BlockDigestsFeature, ADamagedEntryOrFeatureBitIsRefusedOnOpen) {
    TempDir dir;
    auto mem = make_mem_backend();
    fill(*mem);
    const std::string path = dir.path.string() + "/p.pack";
    ASSERT_TRUE(write_pack(*mem, path));
    const PackParts clean = PackParts::parse(slurp(path));
    auto open_error = [&](const PackParts& parts, auto tamper) {
        hostile::spit(path, parts.build(tamper));
        auto pack = open_pack(path);
        return pack ? std::string() : pack.error().message();
    };
    // One digest short.
    PackParts shorter = clean;
    shorter.sec[static_cast<std::size_t>(Section::block_digests)].resize(
        shorter.sec[static_cast<std::size_t>(Section::block_digests)].size() - 32);
    EXPECT_NE(open_error(shorter, [](Header&) {}).find("section block_digests length"),
              std::string::npos);
    // The section without its feature bit.
    EXPECT_NE(open_error(clean, [](Header& h) { h.compat_features &= ~kCompatBlockDigests; })
                  .find("block_digests entry (without the block-digests feature)"),
              std::string::npos);
    // The feature in a version 1 header.
    PackWriteOptions v1;
    v1.format = 1;
    ASSERT_TRUE(write_pack(*mem, path, v1));
    EXPECT_NE(open_error(PackParts::parse(slurp(path)),
                         [](Header& h) { h.compat_features |= kCompatBlockDigests; })
                  .find("block digests in version 1"),
              std::string::npos);
}

// --- metadata digests ------------------------------------------------------------------------

// The metadata region as the reader sees it (inflated), and the table of its blocks' digests.
struct MetaTable {
    std::string region, table;
};

MetaTable meta_table(const std::string& file) {
    const Header h = header_of(file);
    MetaTable t;
    t.region = (h.incompat_features & kIncompatCompressedMeta) != 0
                   ? PackParts::inflate_region(file, h)
                   : file.substr(h.meta_offset, h.meta_length);
    t.table = file.substr(meta_digests_offset(h), meta_digests_length(h));
    return t;
}

std::string sha_of(std::string_view bytes) {
    const Sha256Digest d = sha256(std::as_bytes(std::span(bytes.data(), bytes.size())));
    return std::string(reinterpret_cast<const char*>(d.data()), d.size());
}

// SHA-256 of the header (checksum and digest zero) followed by `covered`.
std::string image_digest_over(Header h, std::string_view covered) {
    h.header_checksum = 0;
    std::memset(h.image_digest, 0, sizeof h.image_digest);
    std::string bytes(reinterpret_cast<const char*>(&h), sizeof h);
    bytes += covered;
    return sha_of(bytes);
}

class MetadataDigests : public ::testing::TestWithParam<Compression> {};

TEST_P(MetadataDigests, EveryMetadataBlockHasItsSha256AndTheImageDigestCoversTheTable) {
    TempDir dir;
    auto mem = make_mem_backend();
    fill(*mem);
    for (int i = 0; i < 400; ++i)  // metadata of several blocks
        ASSERT_TRUE(write_file(*mem, "/d/n" + std::to_string(i), pattern(300 + i, 100 + i)));
    const std::string path = dir.path.string() + "/p.pack";
    const std::string file = pack_bytes(*mem, path, GetParam());
    const Header h = header_of(file);
    ASSERT_NE(h.incompat_features & kIncompatMetaDigests, 0u);
    const MetaTable t = meta_table(file);
    const uint64_t blocks = (h.meta_length + kMetaBlockSize - 1) / kMetaBlockSize;
    ASSERT_GE(blocks, 3u);
    ASSERT_EQ(t.table.size(), 32 * blocks);
    EXPECT_EQ(meta_digests_offset(h) + t.table.size(), file.size());  // the last thing in it
    for (uint64_t b = 0; b < blocks; ++b)
        EXPECT_EQ(t.table.substr(32 * b, 32),
                  sha_of(std::string_view(t.region).substr(b * kMetaBlockSize, kMetaBlockSize)))
            << "block " << b;
    EXPECT_EQ(image_digest_over(h, t.table),
              std::string(reinterpret_cast<const char*>(h.image_digest), 32));

    auto pack = open_pack(path);
    ASSERT_TRUE(pack) << pack.error().message();
    EXPECT_TRUE((*pack)->info().has_metadata_digests);
    EXPECT_TRUE((*pack)->verify().ok());

    // An entry changed and the header sealed over the changed table: the digest holds, and
    // verify names the block whose entry differs.
    std::string bad = file;
    bad[meta_digests_offset(h) + 32 * 2 + 5] ^= 0x01;
    Header resealed = h;
    seal_header(resealed,
                std::as_bytes(std::span(bad.data() + meta_digests_offset(h), t.table.size())));
    std::memcpy(bad.data(), &resealed, sizeof resealed);
    hostile::spit(path, bad);
    auto sealed = open_pack(path);
    ASSERT_TRUE(sealed) << sealed.error().message();
    VerifyReport report = (*sealed)->verify();
    ASSERT_EQ(report.problems.size(), 1u);
    EXPECT_TRUE(report.problems[0].where.starts_with("metadata block 2 "))
        << report.problems[0].where;
    EXPECT_EQ(report.problems[0].what.find("SHA-256 mismatch"), 0u) << report.problems[0].what;

    // The same change without sealing: the image digest no longer matches either.
    bad = file;
    bad[meta_digests_offset(h) + 32 * 2 + 5] ^= 0x01;
    hostile::spit(path, bad);
    auto unsealed = open_pack(path);
    ASSERT_TRUE(unsealed);
    report = (*unsealed)->verify();
    bool digest_named = false;
    for (const VerifyProblem& p : report.problems) digest_named |= p.where == "image digest";
    EXPECT_TRUE(digest_named);
}

INSTANTIATE_TEST_SUITE_P(Codecs, MetadataDigests, kEveryCodec, codec_test_name);

TEST(MetadataDigestsFeature, LeftOutWithTheBlockDigestsAndInVersion1) {
    TempDir dir;
    auto mem = make_mem_backend();
    fill(*mem);
    const std::string path = dir.path.string() + "/p.pack";
    for (uint32_t version : {1u, 2u}) {
        PackWriteOptions options;
        options.format = version;
        options.block_digests = false;
        options.compression = Compression::zstd;
        ASSERT_TRUE(write_pack(*mem, path, options));
        const std::string file = slurp(path);
        const Header h = header_of(file);
        EXPECT_EQ(h.incompat_features & kIncompatMetaDigests, 0u) << version;
        EXPECT_EQ(meta_digests_offset(h), file.size()) << version;  // the sums end the file
        // Without the table the image digest covers the region, as it always did.
        EXPECT_EQ(image_digest_over(h, meta_table(file).region),
                  std::string(reinterpret_cast<const char*>(h.image_digest), 32))
            << version;
        auto pack = open_pack(path);
        ASSERT_TRUE(pack) << pack.error().message();
        EXPECT_FALSE((*pack)->info().has_metadata_digests);
        EXPECT_TRUE((*pack)->verify().ok());
    }
}

TEST(MetadataDigestsFeature, AShortTableOrTheFeatureInVersion1IsRefusedOnOpen) {
    TempDir dir;
    auto mem = make_mem_backend();
    fill(*mem);
    const std::string path = dir.path.string() + "/p.pack";
    ASSERT_TRUE(write_pack(*mem, path));
    const std::string file = slurp(path);
    auto open_error = [&](const std::string& bytes) {
        hostile::spit(path, bytes);
        auto pack = open_pack(path);
        return pack ? std::string() : pack.error().message();
    };
    // The last entry cut off, the header's file size and checksum made to agree.
    std::string shorter = file.substr(0, file.size() - 32);
    Header h = header_of(shorter);
    h.file_size = shorter.size();
    h.header_checksum = 0;
    h.header_checksum = xxh3_64(std::as_bytes(std::span(&h, 1)));
    std::memcpy(shorter.data(), &h, sizeof h);
    EXPECT_NE(open_error(shorter).find("block sums and metadata digests (must end the file)"),
              std::string::npos)
        << open_error(shorter);
    // The feature in a version 1 header.
    PackWriteOptions v1;
    v1.format = 1;
    ASSERT_TRUE(write_pack(*mem, path, v1));
    EXPECT_NE(open_error(PackParts::parse(slurp(path)).build([](Header& x) {
                  x.incompat_features |= kIncompatMetaDigests;
              })).find("metadata digests in version 1"),
              std::string::npos);
}

}  // namespace
}  // namespace packfs::pack
