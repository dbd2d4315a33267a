// Compressed metadata (docs/FORMAT.md, "Compressed metadata"): a pack whose metadata is stored
// as one frame per 16 KiB block answers exactly as the same pack with its metadata raw, through
// both accesses and from many threads first touching its blocks at once; and damage to what the
// feature adds (the frame index, the frames, the padding, the header fields) is EUCLEAN naming
// the frame at first use, or a refusal at open, never a crash or another file's answer.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <thread>

#include "pack/hostile_support.hpp"

namespace packfs::pack {
namespace {

using namespace hostile;
using Op = Probe::Op;

// Every path of a pack with what lstat, readlink, listxattr, getxattr and two reads answer.
std::string describe_tree(PackBackend& b) {
    std::string out;
    for (const std::string& p : all_paths(b)) {
        PathSpec spec{p, {}, false};
        if (auto names = b.listxattr(p)) spec.xattrs = *names;
        auto st = b.lstat(p);
        spec.regular = st && st->type == FileType::regular;
        std::vector<std::string> seen;
        observe(b, spec, seen);
        out += p + "\n";
        for (const std::string& s : seen) out += "  " + s + "\n";
    }
    return out;
}

class MetaFrames : public ::testing::Test {
protected:
    static Header header_of(const std::string& file) {
        Header h;
        std::memcpy(&h, file.data(), sizeof h);
        return h;
    }
    static uint64_t index_entry(const std::string& file, uint64_t i) {
        uint64_t v = 0;
        std::memcpy(&v, file.data() + frame_index_offset(header_of(file)) + 8 * i, 8);
        return v;
    }
    static void set_index_entry(std::string& file, uint64_t i, uint64_t v) {
        std::memcpy(file.data() + frame_index_offset(header_of(file)) + 8 * i, &v, 8);
    }
    // After an edit of the frames or the index: the index checksum, the image digest (over the
    // clean inflated region, or the metadata digests) and the header checksum made right again, so
    // the damage reaches the frame checks instead of failing the index checksum at open.
    static std::string reseal(std::string file, const std::string& clean_region) {
        Header h = header_of(file);
        const uint64_t blocks = meta_block_count(h.meta_length);
        h.meta_index_checksum = xxh3_64(
            std::as_bytes(std::span(file.data() + frame_index_offset(h), 8 * (blocks + 1))));
        // With metadata digests the digest covers their table (of the clean blocks), else
        // the region.
        seal_header(
            h, (h.incompat_features & kIncompatMetaDigests) != 0
                   ? std::string_view(file).substr(meta_digests_offset(h), meta_digests_length(h))
                   : std::string_view(clean_region));
        std::memcpy(file.data(), &h, sizeof h);
        return file;
    }

    const std::string& framed = packs().v2_all;  // zstd, metadata compressed
    const Header h = header_of(framed);
    const std::string region = PackParts::inflate_region(framed, h);
};

TEST_F(MetaFrames, TheWriterCompressesTheMetadataOfACompressedVersion2Pack) {
    ASSERT_TRUE(h.incompat_features & kIncompatCompressedMeta);
    EXPECT_GT(meta_block_count(h.meta_length), 3u)
        << "several blocks, so the tests below mean something";
    EXPECT_LT(h.meta_frames_length, h.meta_length / 2) << "the metadata compresses";
    EXPECT_EQ(h.sums_offset, frame_index_offset(h) + 8 * (meta_block_count(h.meta_length) + 1));
    // Not for raw data (no codec), nor for format 1, nor when asked not to.
    for (const std::string* file : {&packs().v2, &packs().zstd}) {
        EXPECT_EQ(header_of(*file).incompat_features & kIncompatCompressedMeta, 0u);
        EXPECT_EQ(header_of(*file).meta_frames_length, 0u);
    }
}

TEST_F(MetaFrames, AnswersExactlyAsTheSamePackWithItsMetadataRaw) {
    PackParts parts = PackParts::parse(framed);
    parts.h.incompat_features &= ~kIncompatCompressedMeta;
    const std::string raw_meta = parts.build();
    ASSERT_EQ(header_of(raw_meta).meta_frames_length, 0u);
    TempDir dir;
    spit(dir.path / "framed.pack", framed);
    spit(dir.path / "raw.pack", raw_meta);
    auto reference = open_file(dir.path / "raw.pack", PackAccess::mmap);
    ASSERT_TRUE(reference);
    const std::string expected = describe_tree(**reference);
    ASSERT_GT(expected.size(), 10000u);
    for (PackAccess a : kAccesses) {
        SCOPED_TRACE(access_name(a));
        auto b = open_file(dir.path / "framed.pack", a);
        ASSERT_TRUE(b) << describe(b.error());
        EXPECT_TRUE((*b)->info().compressed_metadata);
        EXPECT_EQ((*b)->info().meta_length, h.meta_length);
        EXPECT_EQ(describe_tree(**b), expected);
        const VerifyReport report = (*b)->verify();
        EXPECT_TRUE(report.ok()) << report.problems.front().where << ": "
                                 << report.problems.front().what;
    }
}

// Many threads open one pack and race through it in different orders, each first touch of a
// block inflating it: every thread sees exactly the single-threaded answers (run under TSan).
TEST_F(MetaFrames, ThreadsRacingToInflateTheSameBlocksSeeTheSameTree) {
    TempDir dir;
    spit(dir.path / "framed.pack", framed);
    std::string expected;
    {
        auto b = open_file(dir.path / "framed.pack", PackAccess::mmap);
        ASSERT_TRUE(b);
        expected = describe_tree(**b);
    }
    for (PackAccess a : kAccesses) {
        auto b = open_file(dir.path / "framed.pack", a);
        ASSERT_TRUE(b);
        constexpr int kThreads = 4;
        std::vector<std::string> seen(kThreads);
        std::vector<std::string> verified(kThreads);
        {
            std::vector<std::jthread> threads;
            for (int t = 0; t < kThreads; ++t) {
                threads.emplace_back([&, t] {
                    if (t == kThreads - 1) {  // one thread inflates everything through verify
                        const VerifyReport r = (*b)->verify();
                        verified[t] = r.ok() ? "ok" : r.problems.front().what;
                    }
                    seen[t] = describe_tree(**b);
                });
            }
        }
        for (int t = 0; t < kThreads; ++t) EXPECT_EQ(seen[t], expected) << "thread " << t;
        EXPECT_EQ(verified[kThreads - 1], "ok");
    }
}

// The root's inode is in block 0, so damage to block 0's frame fails every lookup.
TEST_F(MetaFrames, AFrameThatDoesNotInflateIsCorruptAtFirstUseAndNamed) {
    std::string file = framed;
    const uint64_t end = index_entry(file, 1);
    ASSERT_LT(end, kMetaBlockSize) << "block 0 is stored compressed";
    std::memset(file.data() + h.meta_offset, 0xa5, end);  // garbage, not a frame
    const std::string damaged = reseal(file, region);
    check_hostile(damaged, opens({{Op::lstat, "/text", EUCLEAN}, {Op::readdir, "/", EUCLEAN}}),
                  "garbage frame");
    TempDir dir;
    spit(dir.path / "p.pack", damaged);
    auto b = open_file(dir.path / "p.pack", PackAccess::mmap);
    ASSERT_TRUE(b);
    auto st = (*b)->lstat("/text");
    ASSERT_FALSE(st);
    ASSERT_TRUE(st.error().corruption().has_value());
    EXPECT_NE(st.error().corruption()->what.find("metadata block 0 frame"), std::string::npos)
        << st.error().message();
    EXPECT_EQ(st.error().corruption()->offset, h.meta_offset);
    // Asked again, it answers the same (the block stays failed; it is not inflated twice).
    auto again = (*b)->lstat("/text");
    ASSERT_FALSE(again);
    EXPECT_EQ(again.error().code(), EUCLEAN);
    const VerifyReport report = (*b)->verify();
    ASSERT_FALSE(report.ok());
    EXPECT_EQ(report.problems.front().where,
              fmt::format("metadata block 0 (offset {})", h.meta_offset));
}

TEST_F(MetaFrames, FrameIndexEntriesOutOfOrderOrRangeAreCorruptAtFirstUse) {
    const Probe root{Op::lstat, "/text", EUCLEAN};
    {
        std::string file = framed;  // block 0 ends past the frames
        set_index_entry(file, 1, h.meta_frames_length + 1);
        check_hostile(reseal(file, region), opens({root}), "end past the frames");
        set_index_entry(file, 0, uint64_t{1} << 40);          // a short frame far past the file:
        set_index_entry(file, 1, (uint64_t{1} << 40) + 100);  // never read
        check_hostile(reseal(file, region), opens({root}), "frame far past the file");
    }
    {
        std::string file = framed;  // block 0 starts after it ends
        set_index_entry(file, 0, index_entry(file, 1) + 1);
        check_hostile(reseal(file, region), opens({root}), "start after end");
    }
    {
        std::string file = framed;  // block 0 stored longer than a block
        ASSERT_GT(h.meta_frames_length, kMetaBlockSize + 1);
        set_index_entry(file, 1, kMetaBlockSize + 1);
        check_hostile(reseal(file, region), opens({root}), "frame longer than its block");
    }
    {
        std::string file = framed;  // two frames swapped in the index: each inflates to the
        // other block's bytes (or not at all), and the sums catch it
        const uint64_t a = index_entry(file, 1), b = index_entry(file, 2);
        set_index_entry(file, 1, a + (b - a) / 2);
        check_hostile(reseal(file, region), opens({root}), "frame boundary moved");
    }
}

TEST_F(MetaFrames, TheHeaderAndIndexOfTheFeatureAreCheckedAtOpen) {
    {
        std::string file = framed;  // an index entry changed without a new index checksum
        set_index_entry(file, 1, index_entry(file, 1) + 1);
        check_hostile(file, fails_open(EUCLEAN), "index checksum");
    }
    PackParts parts = PackParts::parse(framed);
    check_hostile(parts.build(), opens({}, false), "rebuilt clean");
    check_hostile(parts.build([](Header& x) { x.meta_length += 1u << 30; }), fails_open(EUCLEAN),
                  "inflated length far past what the sums cover");
    check_hostile(parts.build([&](Header& x) { x.meta_length = x.file_size * 4096; }),
                  fails_open(EUCLEAN), "inflated length past 2048 x the file");
    check_hostile(parts.build([](Header& x) { x.meta_frames_length += 8; }), fails_open(EUCLEAN),
                  "frames length moved");
    check_hostile(parts.build([](Header& x) { x.meta_frames_length = UINT64_MAX - 4; }),
                  fails_open(EUCLEAN), "frames length near 2^64");
    // The feature needs compressed data (for its codec) and version 2.
    PackParts v2_raw = PackParts::parse(packs().v2);
    v2_raw.h.incompat_features |= kIncompatCompressedMeta;
    check_hostile(v2_raw.build(), fails_open(EUCLEAN), "compressed metadata without a codec");
    PackParts v1 = PackParts::parse(packs().zstd);
    v1.h.incompat_features |= kIncompatCompressedMeta;
    check_hostile(v1.build(), fails_open(EUCLEAN), "compressed metadata in version 1");
    // Without the feature its fields are zero.
    PackParts plain = PackParts::parse(packs().v2);
    check_hostile(plain.build([](Header& x) { x.meta_index_checksum = 1; }), fails_open(EUCLEAN),
                  "index checksum without the feature");
    // The padding between the frames and the index is zero.
    if (h.meta_frames_length % 8 != 0) {
        std::string file = framed;
        file[h.meta_offset + h.meta_frames_length] = 1;
        check_hostile(file, fails_open(EUCLEAN), "padding");
    }
}

TEST_F(MetaFrames, ABlockStoredRawIsUsedAsStored) {
    // A block whose frame would not be smaller is stored raw: rewrite block 0 that way.
    std::string file = framed;
    const uint64_t old_end = index_entry(file, 1);
    std::string rebuilt = file.substr(0, h.meta_offset) + region.substr(0, kMetaBlockSize) +
                          file.substr(h.meta_offset + old_end, h.meta_frames_length - old_end);
    const uint64_t growth = kMetaBlockSize - old_end;
    Header x = h;
    x.meta_frames_length += growth;
    rebuilt.resize(h.meta_offset + (x.meta_frames_length + 7) / 8 * 8, '\0');
    std::string index =
        file.substr(frame_index_offset(h), 8 * (meta_block_count(h.meta_length) + 1));
    for (uint64_t i = 1; i * 8 < index.size(); ++i) {
        uint64_t v = 0;
        std::memcpy(&v, index.data() + 8 * i, 8);
        v += growth;
        std::memcpy(index.data() + 8 * i, &v, 8);
    }
    rebuilt += index;
    x.sums_offset = rebuilt.size();
    rebuilt += file.substr(h.sums_offset);
    x.file_size = rebuilt.size();
    std::memcpy(rebuilt.data(), &x, sizeof x);
    const std::string fixed = reseal(rebuilt, region);
    check_hostile(fixed, opens({}, false), "block 0 stored raw");
    TempDir dir;
    spit(dir.path / "a.pack", fixed);
    spit(dir.path / "b.pack", framed);
    auto a = open_file(dir.path / "a.pack", PackAccess::pread);
    auto b = open_file(dir.path / "b.pack", PackAccess::pread);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(describe_tree(**a), describe_tree(**b));
}

}  // namespace
}  // namespace packfs::pack
