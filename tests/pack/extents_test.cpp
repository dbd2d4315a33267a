// Packs made of extents (docs/FORMAT.md "Extents"): large contents cut at content-defined
// boundaries, and packs built over bases that store only what their bases lack. A chain
// v1 <- v2 <- v3 built from a tree edited between versions (a large file with bytes inserted in
// its middle, small files edited, added and removed) reads back exactly, in every codec, through
// read and view; each version stores about what changed; verify passes and catches a damaged
// extent; a missing or a wrong base is refused by name; damaged extent records answer EUCLEAN.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <random>
#include <string>

#include "hostile_support.hpp"
#include "pack/format/format.hpp"
#include "pack/reader/reader.hpp"
#include "packfs/mem.hpp"
#include "packfs/pack.hpp"
#include "support/files.hpp"

namespace packfs::pack {
namespace {

namespace fs = std::filesystem;
using test_support::slurp;
using test_support::TempDir;

constexpr uint32_t kChunk = 4096;  // small chunks, so small trees have many

std::string random_text(std::size_t n, std::mt19937_64& rng) {
    std::string s(n, '\0');
    for (auto& c : s) c = static_cast<char>('a' + rng() % 26);
    return s;
}

// The tree of a version: path -> bytes.
using Tree = std::map<std::string, std::string>;

Tree first_tree() {
    std::mt19937_64 rng(39);
    Tree t;
    t["/big"] = random_text(600'000, rng);
    t["/big-copy"] = t["/big"];  // whole-file dedup within a pack
    t["/dir/large"] = random_text(200'000, rng);
    t["/dir/zeros"] = std::string(100'000, '\0');
    for (int i = 0; i < 40; ++i)
        t[fmt::format("/dir/small{}", i)] = random_text(100 + rng() % 3000, rng);
    t["/tiny"] = "x";
    return t;
}

Tree next_tree(const Tree& prev, int version) {
    std::mt19937_64 rng(1000 + version);
    Tree t = prev;
    std::string& big = t["/big"];
    big.insert(big.size() / 2, random_text(77, rng));            // an insertion in the middle
    t["/dir/large"].erase(1000, 33);                             // a deletion near the start
    t[fmt::format("/dir/small{}", version)] += "edited";         // a small file edited
    t.erase(fmt::format("/dir/small{}", 20 + version));          // one removed
    t[fmt::format("/new{}", version)] = random_text(5000, rng);  // one added
    return t;
}

void fill(Backend& mem, const Tree& tree) {
    ASSERT_TRUE(mem.mkdir("/dir", 0755));
    for (const auto& [path, bytes] : tree) ASSERT_TRUE(write_file(mem, path, bytes)) << path;
}

PackStats build(const Tree& tree, const fs::path& out, Compression compression,
                std::vector<std::string> bases) {
    auto mem = make_mem_backend();
    fill(*mem, tree);
    PackWriteOptions options;
    options.compression = compression;
    options.chunk_size = kChunk;
    options.block_size = 16 << 10;
    options.bases = std::move(bases);
    options.clamp_time = Time{1'000'000, 0};  // the same tree at any time packs alike
    auto stats = write_pack(*mem, out.string(), options);
    EXPECT_TRUE(stats) << (stats ? "" : stats.error().message());
    return stats ? *stats : PackStats{};
}

void expect_reads(const fs::path& pack, const Tree& tree, const PackOpenOptions& options = {}) {
    auto backend = open_pack(pack.string(), options);
    ASSERT_TRUE(backend) << backend.error().message();
    for (const auto& [path, bytes] : tree) {
        auto got = read_file(**backend, path);
        ASSERT_TRUE(got) << path << ": " << got.error().message();
        EXPECT_TRUE(*got == bytes) << pack << " " << path << ": " << got->size() << " bytes, "
                                   << bytes.size() << " expected";
        // Reads at odd places and lengths cross extents and packs.
        auto f = (*backend)->open(path, O_RDONLY, 0);
        ASSERT_TRUE(f);
        std::mt19937_64 rng(bytes.size());
        for (int i = 0; i < 20 && !bytes.empty(); ++i) {
            const uint64_t at = rng() % bytes.size();
            std::string buf(1 + rng() % 20'000, '\0');
            auto n = (*f)->pread(std::as_writable_bytes(std::span(buf)), at);
            ASSERT_TRUE(n) << n.error().message();
            EXPECT_EQ(buf.substr(0, *n), bytes.substr(at, buf.size())) << path << " at " << at;
        }
    }
    auto report = (*backend)->verify();
    for (const auto& p : report.problems)
        ADD_FAILURE() << pack << ": " << p.where << ": " << p.what;
}

class Extents : public ::testing::TestWithParam<Compression> {};

TEST_P(Extents, AChainOfVersionsReadsExactlyAndStoresWhatChanged) {
    TempDir dir;
    const Tree v1 = first_tree(), v2 = next_tree(v1, 2), v3 = next_tree(v2, 3);
    const auto p1 = dir.path / "v1.pack", p2 = dir.path / "v2.pack", p3 = dir.path / "v3.pack";
    const PackStats s1 = build(v1, p1, GetParam(), {});
    const PackStats s2 = build(v2, p2, GetParam(), {p1.string()});
    const PackStats s3 = build(v3, p3, GetParam(), {p2.string()});  // v1 found beside v2
    const PackStats whole3 = build(v3, dir.path / "v3-whole.pack", GetParam(), {});
    EXPECT_GT(s1.extents, 0u);
    EXPECT_EQ(s1.base_bytes, 0u);
    // Most of v2 and v3 is in their bases: their data regions hold a few chunks.
    EXPECT_GT(s2.base_bytes, s2.unique_bytes * 9 / 10);
    EXPECT_GT(s3.base_bytes, s3.unique_bytes * 9 / 10);
    EXPECT_LT(s3.data_bytes * 5, whole3.data_bytes) << s3.data_bytes << " " << whole3.data_bytes;
    expect_reads(p1, v1);
    expect_reads(p2, v2);
    expect_reads(p3, v3);
    expect_reads(dir.path / "v3-whole.pack", v3);

    auto backend = open_pack(p3.string());
    ASSERT_TRUE(backend);
    const PackInfo& info = (*backend)->info();
    EXPECT_EQ(info.chunk_size, kChunk);
    ASSERT_EQ(info.bases.size(), 2u);  // v2 and, through it, v1: numbered as v2 numbers v1
    EXPECT_EQ(info.bases[0].second, "v1.pack");
    EXPECT_EQ(info.bases[1].second, "v2.pack");
}

INSTANTIATE_TEST_SUITE_P(Codecs, Extents,
                         ::testing::Values(Compression::none, Compression::zstd, Compression::lz4),
                         [](const auto& param) {
                             return param.param == Compression::none   ? std::string("raw")
                                    : param.param == Compression::zstd ? std::string("zstd")
                                                                       : std::string("lz4");
                         });

TEST(ExtentBases, AMissingOrWrongBaseIsRefusedByName) {
    TempDir dir;
    const Tree v1 = first_tree(), v2 = next_tree(v1, 2);
    const auto p1 = dir.path / "v1.pack", p2 = dir.path / "v2.pack";
    build(v1, p1, Compression::zstd, {});
    build(v2, p2, Compression::zstd, {p1.string()});
    auto base = open_pack(p1.string());
    ASSERT_TRUE(base);
    const std::string digest = (*base)->info().digest;
    base->reset();

    fs::rename(p1, dir.path / "elsewhere.pack");
    auto missing = open_pack(p2.string());
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().code(), ENOENT);
    EXPECT_NE(missing.error().message().find(digest), std::string::npos)
        << missing.error().message();
    EXPECT_NE(missing.error().message().find("v1.pack"), std::string::npos);
    EXPECT_NE(missing.error().message().find("--base"), std::string::npos);
    // Given where it is, it reads.
    PackOpenOptions given;
    given.bases = {(dir.path / "elsewhere.pack").string()};
    expect_reads(p2, v2, given);

    // Another pack under the base's name is not taken for it.
    build(next_tree(v2, 5), p1, Compression::zstd, {});
    auto wrong = open_pack(p2.string());
    ASSERT_FALSE(wrong);
    EXPECT_EQ(wrong.error().code(), ENOENT);
    EXPECT_NE(wrong.error().message().find("another pack"), std::string::npos)
        << wrong.error().message();

    // A build over a base that is not there says which.
    auto mem = make_mem_backend();
    PackWriteOptions options;
    options.bases = {(dir.path / "nothing.pack").string()};
    auto failed = write_pack(*mem, (dir.path / "x.pack").string(), options);
    ASSERT_FALSE(failed);
    EXPECT_NE(failed.error().message().find("nothing.pack"), std::string::npos);
}

TEST(ExtentBases, BuildingTwiceGivesTheSameBytes) {
    TempDir dir;
    const Tree v1 = first_tree(), v2 = next_tree(v1, 2);
    const auto p1 = dir.path / "v1.pack";
    build(v1, p1, Compression::zstd, {});
    build(v2, dir.path / "a.pack", Compression::zstd, {p1.string()});
    build(v2, dir.path / "b.pack", Compression::zstd, {p1.string()});
    const std::string a = slurp(dir.path / "a.pack"), b = slurp(dir.path / "b.pack");
    ASSERT_EQ(a.size(), b.size());
    const auto differ = std::mismatch(a.begin(), a.end(), b.begin());
    EXPECT_TRUE(differ.first == a.end())
        << "the packs differ from byte " << differ.first - a.begin();
}

// Every file of a damaged pack read: `refused` when one answered EUCLEAN (any other failure
// fails the test), `all_right` while every one that read gave its bytes.
void read_damaged(Backend& backend, const Tree& tree, std::string_view what, bool& refused,
                  bool& all_right) {
    for (const auto& [file, want] : tree) {
        auto got = read_file(backend, file);
        if (!got) {
            EXPECT_EQ(got.error().code(), kErrCorrupt)
                << what << " " << file << ": " << got.error().message();
            refused = true;
        } else {
            all_right &= *got == want;
        }
    }
}

// Every checksum of an edited metadata region right again: each section's, the block sums',
// the metadata digests', the header's.
void reseal(std::string& bad) {
    Header bh;
    std::memcpy(&bh, bad.data(), sizeof bh);
    const std::string_view region(bad.data() + bh.meta_offset, bh.meta_length);
    for (std::size_t k = 0; k < kSectionCount; ++k) {
        SectionEntry& e = section(bh, k);
        if (e.offset != 0)
            e.checksum = hostile::xxh3_of(region.substr(e.offset - bh.meta_offset, e.length));
    }
    std::string sums;
    for (uint64_t at = 0; at < region.size(); at += kMetaBlockSize) {
        const uint64_t sum = hostile::xxh3_of(region.substr(at, kMetaBlockSize));
        sums.append(reinterpret_cast<const char*>(&sum), 8);
    }
    bad.replace(bh.sums_offset, sums.size(), sums);
    bh.sums_checksum = hostile::xxh3_of(sums);
    // The metadata digests (after the sums) and the image digest follow the region.
    std::string digests;
    for (uint64_t at = 0; at < region.size(); at += kMetaBlockSize) {
        const auto d = sha256(std::as_bytes(std::span(region.substr(at, kMetaBlockSize))));
        digests.append(reinterpret_cast<const char*>(d.data()), 32);
    }
    const bool meta_digests = (bh.incompat_features & kIncompatMetaDigests) != 0;
    if (meta_digests) bad.replace(bh.sums_offset + bh.sums_length, digests.size(), digests);
    hostile::seal_header(bh, meta_digests ? std::string_view(digests) : region);
    std::memcpy(bad.data(), &bh, sizeof bh);
}

// Damaged extent records, with every checksum made right again (hostile::PackParts): a read
// answers EUCLEAN naming what is wrong, never a crash or wrong bytes; verify reports it.
TEST(ExtentBases, DamagedExtentsAreRefused) {
    TempDir dir;
    const Tree v1 = first_tree();
    const auto p1 = dir.path / "v1.pack";
    PackWriteOptions options;
    options.chunk_size = kChunk;
    options.compress_metadata = false;
    auto mem = make_mem_backend();
    fill(*mem, v1);
    ASSERT_TRUE(write_pack(*mem, p1.string(), options));
    const std::string good = slurp(p1);
    Header h;
    std::memcpy(&h, good.data(), sizeof h);
    const uint64_t first = h.extents_section.offset;
    const uint64_t count = h.extents_section.length / sizeof(Extent);
    ASSERT_GT(count, 4u);

    struct Damage {
        const char* what;
        std::function<void(Extent&)> edit;
    };
    const std::vector<Damage> damages = {
        {"a count moved", [](Extent& e) { e.count = e.count != 0 ? 0 : 7; }},
        {"length 0", [](Extent& e) { e.length = 0; }},
        {"past the stream", [](Extent& e) { e.offset = ~uint64_t{0} - 10; }},
        {"no such base", [](Extent& e) { e.pack = 3; }},
        {"a gap", [](Extent& e) { e.at += 1; }},
        {"a wrong digest", [](Extent& e) { e.sha256[0] ^= 1; }},
    };
    for (const Damage& damage : damages) {
        for (uint64_t i : {uint64_t{0}, uint64_t{1}, count - 1}) {
            std::string bad = good;
            Extent e;
            std::memcpy(&e, bad.data() + first + i * sizeof(Extent), sizeof e);
            damage.edit(e);
            std::memcpy(bad.data() + first + i * sizeof(Extent), &e, sizeof e);
            reseal(bad);
            const auto path = dir.path / "bad.pack";
            hostile::spit(path, bad);

            auto backend = open_pack(path.string());
            ASSERT_TRUE(backend) << damage.what << ": " << backend.error().message();
            bool refused = false, all_right = true;
            read_damaged(**backend, v1, damage.what, refused, all_right);
            const VerifyReport report = (*backend)->verify();
            EXPECT_FALSE(report.ok()) << damage.what << " at " << i;
            // A damage reads refused, or (a digest; a count where reads do not look) reads
            // right and only verify finds it.
            const bool quiet = std::string(damage.what) == "a wrong digest" ||
                               (std::string(damage.what) == "a count moved" && i != 0);
            EXPECT_TRUE(refused || quiet) << damage.what << " at " << i;
            if (quiet) {
                EXPECT_TRUE(all_right) << damage.what << " at " << i;
            }
        }
    }
}

// v2 over v1, raw metadata, for the tests below that look at its records.
struct OverABase {
    TempDir dir;
    Tree v1 = first_tree(), v2 = next_tree(v1, 2);
    fs::path p1 = dir.path / "v1.pack", p2 = dir.path / "v2.pack";
    std::string bytes;  // v2's
    Header h{};
    std::vector<uint64_t> located;  // the inode records (0-based) with a kBaseLocator

    OverABase() {
        PackWriteOptions options;
        options.chunk_size = kChunk;
        options.compress_metadata = false;
        auto mem = make_mem_backend();
        fill(*mem, v1);
        EXPECT_TRUE(write_pack(*mem, p1.string(), options));
        options.bases = {p1.string()};
        mem = make_mem_backend();
        fill(*mem, v2);
        EXPECT_TRUE(write_pack(*mem, p2.string(), options));
        bytes = slurp(p2);
        std::memcpy(&h, bytes.data(), sizeof h);
        for (uint64_t i = 0; i < h.inode_count; ++i) {
            const InodeV2 n = inode(i);
            if ((n.mode & S_IFMT) == S_IFREG && (n.ref & kExtentLocator) == 0 &&
                (n.ref & kBaseLocator) != 0)
                located.push_back(i);
        }
    }
    uint64_t inode_at(uint64_t i) const { return h.sections[0].offset + i * sizeof(InodeV2); }
    InodeV2 inode(uint64_t i) const {
        InodeV2 n;
        std::memcpy(&n, bytes.data() + inode_at(i), sizeof n);
        return n;
    }
};

// A content v1 holds whole is located there by the inode alone: no extent record, and no digest
// stored again (v1 has it).
TEST(ExtentBases, ContentsABaseHoldsWholeAreLocatedThereWithTheirDigests) {
    OverABase t;
    uint64_t regular = 0, stored = 0;  // files with a content; of them, outside the metadata
    for (uint64_t i = 0; i < t.h.inode_count; ++i) {
        const InodeV2 n = t.inode(i);
        regular += (n.mode & S_IFMT) == S_IFREG && n.size > 0;
        stored += (n.mode & S_IFMT) == S_IFREG && n.size > 64;
    }
    // Of v2's files, those edited or added (and the big ones, cut into chunks) are not.
    EXPECT_GE(t.located.size(), stored - 6) << stored;
    for (uint64_t i : t.located) EXPECT_EQ(locator_base(t.inode(i).ref), 1u);
    const uint64_t digests = t.h.sections[2].length / 32;
    EXPECT_LE(digests, regular - t.located.size());
    expect_reads(t.p2, t.v2);
}

// Damaged base locators (checksums right again): a read answers EUCLEAN or reads right, never
// a crash or wrong bytes, and verify reports it.
TEST(ExtentBases, DamagedBaseLocatorsAreRefused) {
    OverABase t;
    ASSERT_GE(t.located.size(), 3u);
    struct Damage {
        const char* what;
        std::function<void(InodeV2&)> edit;
        bool quiet;  // reads stay right: only verify can tell
    };
    const std::vector<Damage> damages = {
        {"base 0", [](InodeV2& n) { n.ref = base_locator(0, n.ref & kBaseOffsetMask); }, false},
        {"no such base", [](InodeV2& n) { n.ref = base_locator(2, n.ref & kBaseOffsetMask); },
         false},
        {"past the base's stream", [](InodeV2& n) { n.ref = base_locator(1, kBaseOffsetMask - 9); },
         false},
        {"another content's digest", [](InodeV2& n) { n.aux ^= 1; }, true},
        {"a digest index past the base's", [](InodeV2& n) { n.aux = 0xfffffff0u; }, true},
    };
    for (const Damage& damage : damages) {
        for (uint64_t i : {t.located.front(), t.located[1], t.located.back()}) {
            std::string bad = t.bytes;
            InodeV2 n = t.inode(i);
            damage.edit(n);
            std::memcpy(bad.data() + t.inode_at(i), &n, sizeof n);
            reseal(bad);
            const auto path = t.dir.path / "bad.pack";
            hostile::spit(path, bad);
            PackOpenOptions options;
            options.bases = {t.p1.string()};
            auto backend = open_pack(path.string(), options);
            ASSERT_TRUE(backend) << damage.what << ": " << backend.error().message();
            bool refused = false, all_right = true;
            read_damaged(**backend, t.v2, damage.what, refused, all_right);
            EXPECT_TRUE(all_right) << damage.what;
            EXPECT_NE(refused, damage.quiet) << damage.what << " at " << i;
            const VerifyReport report = (*backend)->verify();
            EXPECT_FALSE(report.ok()) << damage.what << " at " << i;
        }
    }
}

// verify of a pack over a base reads what the base holds for it, and names the file whose
// bytes the base no longer has right.
TEST(ExtentBases, VerifyChecksTheContentsInTheBase) {
    OverABase t;
    ASSERT_FALSE(t.located.empty());
    auto backend = open_pack(t.p2.string());
    ASSERT_TRUE(backend);
    EXPECT_TRUE((*backend)->verify().ok());
    backend->reset();
    // One byte of the base's stream turned, where the first located content starts.
    std::string base = slurp(t.p1);
    Header bh;
    std::memcpy(&bh, base.data(), sizeof bh);
    const uint64_t offset = t.inode(t.located.front()).ref & kBaseOffsetMask;
    base[bh.data_offset + offset] ^= 0x20;
    hostile::spit(t.p1, base);
    backend = open_pack(t.p2.string());
    ASSERT_TRUE(backend);
    const VerifyReport report = (*backend)->verify();
    ASSERT_FALSE(report.ok());
    bool named = false;
    for (const auto& p : report.problems)
        named |= p.what.find("of base 1") != std::string::npos &&
                 p.what.find("SHA-256 mismatch") != std::string::npos;
    EXPECT_TRUE(named) << report.problems.front().where << ": " << report.problems.front().what;
}

}  // namespace
}  // namespace packfs::pack
