// Hostile packs (DESIGN §8: "never trust a number from the file"; §14): the reader gets
// truncated files, random bit flips and hand-crafted records that pass every checksum, and
// must answer each with an error (EUCLEAN naming what was wrong, ENOTSUP for a newer format)
// at open or at first use — never a crash, a hang, a wrong answer from checked metadata, or a
// sanitizer report. And verify() must notice every flip that changes what the pack holds.
//
// (a) Truncation at every section boundary, +-1, and at random offsets: open fails.
// (b) Seeded random bit flips in the header, the metadata, the sums, the data region (and the
//     header page's padding): open fails, or the whole tree reads either as it should or with
//     EUCLEAN; and open or verify reports every flip.
// (c) Hand-made hostile headers and records, re-checksummed by PackParts (below) so they reach
//     the deep checks: each gives the documented error, and verify reports it.
// (d) Cases that crashed the reader (found by (c) or by fuzz/fuzz_pack_reader.cpp), each run
//     in a child process so that a crash fails that case alone.
//
// PACKFS_SANITIZER_RUN=1 (the ASan+UBSan and TSan runs) cuts the random trial counts.
#include <gtest/gtest.h>

#include "pack/hostile_support.hpp"

namespace packfs::pack {
namespace {

using namespace hostile;

// --- (a) truncation ----------------------------------------------------------------------

void expect_truncations_fail(const std::string& file, const char* label) {
    TempDir dir;
    const fs::path path = dir.path / "cut.pack";
    Header h;
    std::memcpy(&h, file.data(), sizeof h);
    std::vector<uint64_t> cuts = {0,
                                  1,
                                  8,
                                  kHeaderSize,
                                  kDataOffset,
                                  h.data_offset + h.data_length,
                                  h.meta_offset,
                                  h.meta_offset + h.meta_length,
                                  h.sums_offset,
                                  h.sums_offset + h.sums_length - 8};
    for (const SectionEntry& s : h.sections) {
        cuts.push_back(s.offset);
        cuts.push_back(s.offset + s.length);
    }
    const std::size_t boundaries = cuts.size();
    for (std::size_t i = 0; i < boundaries; ++i) {
        cuts.push_back(cuts[i] + 1);
        if (cuts[i] > 0) cuts.push_back(cuts[i] - 1);
    }
    std::mt19937_64 rng(0x7a11c0de);
    for (int i = 0; i < 200; ++i) cuts.push_back(rng() % file.size());
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    std::size_t tried = 0;
    for (uint64_t cut : cuts) {
        if (cut >= file.size()) continue;
        spit(path, std::string_view(file).substr(0, cut));
        for (PackAccess a : kAccesses) {
            auto r = open_file(path, a);
            EXPECT_TRUE(clear_failure(r))
                << label << " cut at " << cut << " (" << access_name(a) << ")";
            ++tried;
        }
    }
    // A pack with bytes appended is no pack either.
    spit(path, file + std::string(100, '\0'));
    EXPECT_TRUE(clear_failure(open_file(path, PackAccess::mmap))) << label << " extended";
    EXPECT_GT(tried, 400u);
}

TEST(PackHostile, TruncatedPacksFailToOpenWithAClearError) {
    expect_truncations_fail(packs().raw, "raw");
    expect_truncations_fail(packs().zstd, "zstd");
    expect_truncations_fail(packs().v2, "v2");
    expect_truncations_fail(packs().v2_all, "v2-all");
    expect_truncations_fail(packs().v2_lz4, "v2-lz4");
}

// --- PackParts sanity --------------------------------------------------------------------

TEST(PackHostile, PackPartsRebuildsTheWritersBytesExactly) {
    for (const std::string* file : {&packs().raw, &packs().zstd, &packs().lz4, &packs().kept,
                                    &packs().v2, &packs().v2_all, &packs().v2_lz4})
        EXPECT_TRUE(PackParts::parse(*file).build() == *file);
}

// --- (b) random bit flips ----------------------------------------------------------------

enum class Region { header, header_padding, data, metadata, sums };
const char* region_name(Region r) {
    switch (r) {
        case Region::header:
            return "header";
        case Region::header_padding:
            return "header padding";
        case Region::data:
            return "data";
        case Region::metadata:
            return "metadata";
        case Region::sums:
            return "sums";
    }
    return "?";
}

struct FlipStats {
    std::size_t trials = 0, open_failed = 0, opened = 0, verify_caught = 0, walk_errors = 0;
    std::size_t harmless_frame_bits = 0;  // compressed-frame bits whose block decodes the same
};

class FlipHarness {
public:
    FlipHarness(const std::string& file, const char* label) : file_(file), label_(label) {
        std::memcpy(&h_, file.data(), sizeof h_);
        parts_ = PackParts::parse(file);
        path_ = dir_.path / "flip.pack";
        spit(path_, file);
        fd_ = ::open(path_.c_str(), O_RDWR | O_CLOEXEC);
        EXPECT_GE(fd_, 0);
        auto clean = open_file(path_, PackAccess::mmap);
        if (!clean) {
            ADD_FAILURE() << "the clean pack does not open: " << clean.error().message();
            return;
        }
        for (const std::string& p : all_paths(**clean)) {
            PathSpec spec{p, {}, false};
            if (auto names = (*clean)->listxattr(p)) spec.xattrs = *names;
            auto st = (*clean)->lstat(p);
            spec.regular = st && st->type == FileType::regular;
            observe(**clean, spec, clean_, &labels_, &is_content_);
            paths_.push_back(std::move(spec));
        }
        EXPECT_TRUE((*clean)->verify().ok());
        EXPECT_GT(paths_.size(), 300u);
        // Which stream bytes belong to a content (the rest is padding, raw packs only).
        const uint64_t n = parts_.count<Content>(Section::contents);
        for (uint64_t i = 0; i < n; ++i) {
            const Content c = parts_.get<Content>(Section::contents, i);
            if (c.size > h_.inline_max) content_ranges_.emplace_back(c.offset, c.offset + c.size);
        }
        std::sort(content_ranges_.begin(), content_ranges_.end());
    }
    ~FlipHarness() {
        if (fd_ >= 0) ::close(fd_);
    }

    std::pair<uint64_t, uint64_t> range(Region r) const {
        switch (r) {
            case Region::header:
                return {0, kHeaderSize};
            case Region::header_padding:
                return {kHeaderSize, kDataOffset};
            case Region::data:
                return {h_.data_offset, h_.data_offset + h_.data_length};
            case Region::metadata:  // as stored: the region, or its frames and frame index
                return {h_.meta_offset, h_.sums_offset};
            case Region::sums:
                return {h_.sums_offset, h_.sums_offset + h_.sums_length};
        }
        return {0, 0};
    }

    void trial(Region region, uint64_t offset, int bit, PackAccess access, FlipStats& stats) {
        const std::string where =
            fmt::format("{} pack, {} flip at {} bit {} ({})", label_, region_name(region), offset,
                        bit, access_name(access));
        const char original = file_[offset];
        const char flipped = static_cast<char>(original ^ (1 << bit));
        ASSERT_EQ(::pwrite(fd_, &flipped, 1, static_cast<off_t>(offset)), 1);
        run(region, offset, flipped, access, where, stats);
        ASSERT_EQ(::pwrite(fd_, &original, 1, static_cast<off_t>(offset)), 1);
        ++stats.trials;
    }

private:
    // Stream bytes outside every content: padding, which only verify can notice.
    bool is_stream_padding(uint64_t offset) const {
        if (h_.codec != 0) return false;
        const uint64_t pos = offset - h_.data_offset;
        auto it = std::upper_bound(content_ranges_.begin(), content_ranges_.end(),
                                   std::pair{pos, UINT64_MAX});
        return it == content_ranges_.begin() || std::prev(it)->second <= pos;
    }

    // For a compressed pack: does the block holding `offset` decode to the same bytes after the
    // flip? (Some bits of a zstd frame are ignored by decoders: such a flip changes nothing the
    // pack says, and no v1 reader can see it — the format has no checksum of stored bytes.)
    bool block_decodes_the_same(uint64_t offset, char flipped) const {
        if (h_.codec == 0) return false;
        const uint64_t pos = offset - h_.data_offset;
        const uint64_t blocks = parts_.count<uint64_t>(Section::blocks) - 1;
        for (uint64_t i = 0; i < blocks; ++i) {
            const uint64_t begin = parts_.get<uint64_t>(Section::blocks, i);
            const uint64_t end = parts_.get<uint64_t>(Section::blocks, i + 1);
            if (pos < begin || pos >= end) continue;
            const uint64_t length =
                std::min<uint64_t>(h_.block_size, h_.stream_size - i * h_.block_size);
            if (end - begin == length) return false;  // a raw block: the flip is content
            std::string stored = parts_.data.substr(begin, end - begin);
            std::string before(length, '\0'), after(length, '\0');
            const bool ok_before =
                decompress_block(static_cast<Codec>(h_.codec), std::as_bytes(std::span(stored)),
                                 std::as_writable_bytes(std::span(before)));
            stored[pos - begin] = flipped;
            const bool ok_after =
                decompress_block(static_cast<Codec>(h_.codec), std::as_bytes(std::span(stored)),
                                 std::as_writable_bytes(std::span(after)));
            return ok_before && ok_after && before == after;
        }
        return false;
    }

    // The same for a metadata frame of a pack whose metadata is compressed: the sums and the
    // image digest cover the inflated blocks, so a flip that inflates the same changes nothing.
    bool meta_frame_decodes_the_same(uint64_t offset, char flipped) const {
        if (!parts_.framed() || offset >= h_.meta_offset + h_.meta_frames_length) return false;
        std::string file = file_;
        const std::string before = PackParts::inflate_region(file, h_);
        file[offset] = flipped;
        for (uint64_t b = 0; b * kMetaBlockSize < h_.meta_length; ++b) {
            uint64_t begin = 0, end = 0;
            std::memcpy(&begin, file.data() + frame_index_offset(h_) + 8 * b, 8);
            std::memcpy(&end, file.data() + frame_index_offset(h_) + 8 * (b + 1), 8);
            if (offset < h_.meta_offset + begin || offset >= h_.meta_offset + end) continue;
            const uint64_t n =
                std::min<uint64_t>(kMetaBlockSize, h_.meta_length - b * kMetaBlockSize);
            if (end - begin == n) return false;  // stored raw: the flip is metadata
            std::string after(n, '\0');
            const auto stored =
                std::as_bytes(std::span(file.data() + h_.meta_offset + begin, end - begin));
            return decompress_block(static_cast<Codec>(h_.codec), stored,
                                    std::as_writable_bytes(std::span(after))) &&
                   after == before.substr(b * kMetaBlockSize, n);
        }
        return false;
    }

    void run(Region region, uint64_t offset, char flipped, PackAccess access,
             const std::string& where, FlipStats& stats) {
        auto opened = open_file(path_, access);
        if (!opened) {
            ++stats.open_failed;
            EXPECT_TRUE(clear_failure(opened, {EUCLEAN, ENOTSUP})) << where;
            return;
        }
        ++stats.opened;
        EXPECT_NE(region, Region::header) << where << ": a damaged header opened";
        EXPECT_NE(region, Region::sums) << where << ": damaged block sums opened";
        PackBackend& b = **opened;
        // Everything the metadata says is either what the clean pack says, or EUCLEAN. The
        // contents are checked by verify only, so a data flip may change what a read returns.
        seen_.clear();
        for (const PathSpec& p : paths_) observe(b, p, seen_);
        ASSERT_EQ(seen_.size(), clean_.size());
        for (std::size_t i = 0; i < seen_.size(); ++i) {
            if (seen_[i] == clean_[i]) continue;
            if (seen_[i] == "E:EUCLEAN") {
                ++stats.walk_errors;
                continue;
            }
            if (region == Region::data && is_content_[i]) continue;
            ADD_FAILURE() << where << ": " << labels_[i] << " gave\n  " << seen_[i]
                          << "\nexpected\n  " << clean_[i];
        }
        const VerifyReport report = b.verify();
        if (!report.ok()) {
            ++stats.verify_caught;
            return;
        }
        if ((region == Region::data && block_decodes_the_same(offset, flipped)) ||
            (region == Region::metadata && meta_frame_decodes_the_same(offset, flipped))) {
            ++stats.harmless_frame_bits;
            return;
        }
        const char* kind = "";
        if (region == Region::data && is_stream_padding(offset))
            kind = " (stream padding: bytes of no content, which FORMAT.md says are zero)";
        if (region == Region::header_padding)
            kind = " (the header page after the header, which format.hpp says is zero)";
        ADD_FAILURE() << where << ": neither open nor verify noticed the flip" << kind;
    }

    std::string file_;
    const char* label_;
    Header h_{};
    PackParts parts_;
    TempDir dir_;
    fs::path path_;
    int fd_ = -1;
    std::vector<PathSpec> paths_;
    std::vector<std::string> clean_, labels_, seen_;
    std::vector<bool> is_content_;
    std::vector<std::pair<uint64_t, uint64_t>> content_ranges_;
};

// A bound on one pack's flips, for a machine far slower than expected (they take about 2 s
// in the release build, and about as long under ASan+UBSan with the sanitizer counts).
constexpr auto kFlipTimeLimit = std::chrono::seconds(20);

void flip_trials(const std::string& file, const char* label, std::size_t per_region,
                 uint64_t seed) {
    FlipHarness harness(file, label);
    if (::testing::Test::HasFailure()) return;
    std::mt19937_64 rng(seed);
    const auto start = std::chrono::steady_clock::now();
    for (Region region :
         {Region::header, Region::metadata, Region::sums, Region::data, Region::header_padding}) {
        FlipStats stats;
        const auto [begin, end] = harness.range(region);
        const std::size_t trials = region == Region::header_padding ? per_region / 4 : per_region;
        for (std::size_t i = 0; i < trials; ++i) {
            const uint64_t offset = begin + rng() % (end - begin);
            const int bit = static_cast<int>(rng() % 8);
            harness.trial(region, offset, bit, kAccesses[i % 2], stats);
            if (::testing::Test::HasFatalFailure()) return;
            if (std::chrono::steady_clock::now() - start > kFlipTimeLimit) break;  // a slow box
        }
        // Header and sums flips never open; metadata flips always open (blocks are checked at
        // first use) and are always caught by verify.
        if (region == Region::header || region == Region::sums) {
            EXPECT_EQ(stats.opened, 0u);
        }
        std::printf(
            "[ flips    ] %s %-14s %4zu trials: open failed %zu, opened %zu, verify caught "
            "%zu, EUCLEAN answers %zu, harmless frame bits %zu\n",
            label, region_name(region), stats.trials, stats.open_failed, stats.opened,
            stats.verify_caught, stats.walk_errors, stats.harmless_frame_bits);
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("[ flips    ] %s: %.2f s\n", label, seconds);
}

std::size_t flips_per_region() {
    return sanitizer_run() ? 50 : 160;
}

// 4 packs x (4 regions x 160 + 40) = 2720 trials in the release build, 4 x 212 = 848 under
// sanitizers.
TEST(PackHostile, BitFlipsInARawPackAreRejectedOrReadCleanlyAndVerifyCatchesThem) {
    flip_trials(packs().raw, "raw", flips_per_region(), 1);
}
TEST(PackHostile, BitFlipsInAZstdPackAreRejectedOrReadCleanlyAndVerifyCatchesThem) {
    flip_trials(packs().zstd, "zstd", flips_per_region(), 2);
}
TEST(PackHostile, BitFlipsInAnLz4PackAreRejectedOrReadCleanlyAndVerifyCatchesThem) {
    flip_trials(packs().lz4, "lz4", flips_per_region(), 3);
}
TEST(PackHostile, BitFlipsInAPackKeepingInodeNumbersAreRejectedOrReadCleanly) {
    flip_trials(packs().kept, "kept", flips_per_region(), 4);
}
TEST(PackHostile, BitFlipsInAVersion2PackAreRejectedOrReadCleanlyAndVerifyCatchesThem) {
    flip_trials(packs().v2, "v2", flips_per_region(), 5);
}
TEST(PackHostile, BitFlipsInAVersion2ZstdPackWithAllTimesAreRejectedOrReadCleanly) {
    flip_trials(packs().v2_all, "v2-all", flips_per_region(), 6);
}
TEST(PackHostile, BitFlipsInAVersion2Lz4PackWithCompressedMetadataAreRejectedOrReadCleanly) {
    flip_trials(packs().v2_lz4, "v2-lz4", flips_per_region(), 7);
}

TEST_F(Hostile, CleanPartsOpenAndVerify) {
    check_hostile(raw.build(), opens({}, false), "raw");
    check_hostile(zstd.build(), opens({}, false), "zstd");
    check_hostile(kept.build(), opens({}, false), "kept inode numbers");
}

TEST_F(Hostile, SectionsPastTheEndOrOverlappingFailToOpen) {
    const auto bytes = idx(Section::bytes), inodes = idx(Section::inodes),
               dirents = idx(Section::dirents), contents = idx(Section::contents);
    const std::vector<std::pair<const char*, std::function<void(Header&)>>> cases = {
        {"bytes offset past the end",
         [&](Header& h) { h.sections[bytes].offset = h.file_size + 8; }},
        {"bytes length past the end", [&](Header& h) { h.sections[bytes].length += 4096; }},
        {"bytes length huge", [&](Header& h) { h.sections[bytes].length = UINT64_MAX - 7; }},
        {"inodes offset wraps", [&](Header& h) { h.sections[inodes].offset = UINT64_MAX - 7; }},
        {"inodes before the region",
         [&](Header& h) { h.sections[inodes].offset = h.meta_offset - 8; }},
        {"dirents overlap inodes",
         [&](Header& h) { h.sections[dirents].offset = h.sections[inodes].offset; }},
        {"contents overlap dirents",
         [&](Header& h) { h.sections[contents].offset = h.sections[dirents].offset + 16; }},
        {"section unaligned", [&](Header& h) { h.sections[contents].offset += 4; }},
        {"gap of 8 bytes before a section (they are contiguous)",
         [&](Header& h) {
             h.sections[bytes].offset += 8;
             h.sections[bytes].length -= 8;
         }},
        {"dirents not whole records", [&](Header& h) { h.sections[dirents].length -= 8; }},
        {"meta length past the end", [&](Header& h) { h.meta_length += 16384; }},
        {"meta length huge", [&](Header& h) { h.meta_length = UINT64_MAX - 100; }},
        {"meta offset inside the data", [&](Header& h) { h.meta_offset -= 8; }},
        {"meta offset huge", [&](Header& h) { h.meta_offset = UINT64_MAX & ~uint64_t{7}; }},
        {"data length huge", [&](Header& h) { h.data_length = UINT64_MAX - 4000; }},
        {"data length past the metadata", [&](Header& h) { h.data_length = h.meta_offset; }},
        {"sums offset off", [&](Header& h) { h.sums_offset -= 8; }},
        {"sums length off", [&](Header& h) { h.sums_length += 8; }},
        {"sums length huge", [&](Header& h) { h.sums_length = UINT64_MAX - 7; }},
        {"file size field off", [&](Header& h) { h.file_size += 1; }},
        {"stream size differs from raw data", [&](Header& h) { h.stream_size += 1; }},
        {"stream size huge (raw)", [&](Header& h) { h.stream_size = UINT64_MAX; }},
        {"data offset 0", [&](Header& h) { h.data_offset = 0; }},
        {"data offset 8192", [&](Header& h) { h.data_offset = 8192; }},
        {"header size", [&](Header& h) { h.header_size = 4096; }},
        {"meta block size", [&](Header& h) { h.meta_block_size = 4096; }},
        {"block size 0", [&](Header& h) { h.block_size = 0; }},
        {"block size 1000", [&](Header& h) { h.block_size = 1000; }},
        {"block size 32 MiB", [&](Header& h) { h.block_size = 32u << 20; }},
        {"codec zstd without the feature bit", [&](Header& h) { h.codec = 1; }},
        {"version 0", [&](Header& h) { h.version = 0; }},
        {"magic", [&](Header& h) { h.magic[0] = 'X'; }},
        {"inline_max past 4096 (FORMAT.md: <= 4096)", [&](Header& h) { h.inline_max = 1u << 20; }},
    };
    for (const auto& [name, tamper] : cases)
        check_hostile(raw.build(tamper), fails_open(EUCLEAN), name);
    // The compressed pack's own header fields.
    check_hostile(zstd.build([](Header& h) { h.incompat_features = 0; }), fails_open(EUCLEAN),
                  "zstd codec without the feature bit");
    check_hostile(zstd.build([](Header& h) { h.codec = 0; }), fails_open(EUCLEAN),
                  "compressed feature with codec none");
    check_hostile(zstd.build([](Header& h) { h.sections[idx(Section::blocks)].length -= 8; }),
                  fails_open(EUCLEAN), "blocks section one offset short");
    check_hostile(zstd.build([](Header& h) { h.stream_size += h.block_size; }), fails_open(EUCLEAN),
                  "stream size one block more than the blocks section");
}

TEST_F(Hostile, HugeOrZeroCountsFailCleanly) {
    check_hostile(raw.build([](Header& h) { h.inode_count = 0; }), fails_open(EUCLEAN),
                  "inode_count 0");
    check_hostile(raw.build([](Header& h) { h.inode_count = uint64_t{1} << 40; }),
                  fails_open(EUCLEAN), "inode_count 2^40");
    check_hostile(raw.build([](Header& h) { h.inode_count += 1; }), fails_open(EUCLEAN),
                  "inode_count one past the section");
    {  // no inodes at all, consistently
        PackParts p = raw;
        p.sec[idx(Section::inodes)].clear();
        check_hostile(p.build([](Header& h) { h.inode_count = 0; }), fails_open(EUCLEAN),
                      "no inodes");
    }
    {  // a directory claiming 2^64-1 entries
        PackParts p = raw;
        p.edit_inode(ino("/docs"), [](Inode& n) { n.size = UINT64_MAX; });
        check_hostile(
            p.build(),
            opens({{Op::lstat, "/docs"}, {Op::readdir, "/docs"}, {Op::lstat, "/docs/readme.txt"}}),
            "directory with 2^64-1 entries");
    }
    {  // an xattr count past the section
        PackParts p = raw;
        p.edit_inode(ino("/xattr.txt"), [](Inode& n) { n.xattr_count = UINT32_MAX; });
        check_hostile(p.build(), opens({{Op::lstat, "/xattr.txt"}, {Op::listxattr, "/xattr.txt"}}),
                      "xattr count 2^32-1");
    }
    {  // a file size that does not match its content
        PackParts p = raw;
        p.edit_inode(ino("/docs/readme.txt"), [](Inode& n) { n.size = UINT64_MAX; });
        check_hostile(p.build(), opens({{Op::read, "/docs/readme.txt"}}), "file size 2^64-1");
    }
    {  // a content index past the contents section
        PackParts p = raw;
        const uint64_t contents = p.count<Content>(Section::contents);
        p.edit_inode(ino("/docs/readme.txt"), [&](Inode& n) { n.ref = contents + 1; });
        check_hostile(p.build(),
                      opens({{Op::lstat, "/docs/readme.txt"}, {Op::read, "/docs/readme.txt"}}),
                      "content index past the section");
    }
}

TEST_F(Hostile, DirentInodeNumbersOutOfRangeAreCorrupt) {
    for (uint32_t bad : {0u, 1u, static_cast<uint32_t>(raw.h.inode_count + 1), UINT32_MAX}) {
        PackParts p = raw;
        p.edit<Dirent>(Section::dirents, dirent_of("/docs/readme.txt"),
                       [&](Dirent& d) { d.ino = bad; });
        check_hostile(p.build(),
                      opens({{Op::readdir, "/docs"},
                             {Op::lstat, "/docs/readme.txt"},
                             {Op::read, "/docs/readme.txt"}}),
                      fmt::format("dirent ino {}", bad));
    }
}

TEST_F(Hostile, DirectoryRangesOutsideTheDirentsAreCorrupt) {
    const uint64_t dirents = raw.count<Dirent>(Section::dirents);
    const std::vector<std::pair<uint64_t, uint64_t>> ranges = {
        {dirents - 1, 5}, {dirents, 1}, {UINT64_MAX, 2}, {UINT64_MAX - 1, 3}, {0, dirents + 1}};
    for (auto [ref, size] : ranges) {
        PackParts p = raw;
        p.edit_inode(ino("/docs"), [&](Inode& n) {
            n.ref = ref;
            n.size = size;
        });
        check_hostile(
            p.build(),
            opens({{Op::lstat, "/docs"}, {Op::readdir, "/docs"}, {Op::lstat, "/docs/readme.txt"}}),
            fmt::format("directory range ref {} size {}", ref, size));
    }
}

TEST_F(Hostile, DirentCyclesGiveWhatTheEntriesSayAndNeverLoop) {
    // /docs/nested/deep names the root: dirent ino 1 is out of range.
    {
        PackParts p = raw;
        p.edit<Dirent>(Section::dirents, dirent_of("/docs/nested/deep"),
                       [](Dirent& d) { d.ino = 1; });
        check_hostile(p.build(),
                      opens({{Op::readdir, "/docs/nested"}, {Op::lstat, "/docs/nested/deep"}}),
                      "subdirectory entry naming the root");
    }
    // /docs/nested/deep names /docs/nested (its parent), and /docs/nested/deep/x: a cycle.
    for (std::string_view target : {"/docs/nested", "/docs", "/links"}) {
        PackParts p = raw;
        const uint64_t target_ino = ino(target);
        p.edit<Dirent>(Section::dirents, dirent_of("/docs/nested/deep"),
                       [&](Dirent& d) { d.ino = static_cast<uint32_t>(target_ino); });
        const std::string file = p.build();
        SCOPED_TRACE(target);
        TempDir tmp;
        spit(tmp.path / "cycle.pack", file);
        for (PackAccess a : kAccesses) {
            auto r = open_file(tmp.path / "cycle.pack", a);
            ASSERT_TRUE(r);
            PackBackend& b = **r;
            // Whatever the entries say: deep is the target directory.
            auto deep = b.lstat("/docs/nested/deep");
            ASSERT_TRUE(deep);
            EXPECT_EQ(deep->ino, target_ino);
            auto listed = b.readdir("/docs/nested/deep");
            ASSERT_TRUE(listed);
            EXPECT_EQ(*listed, *b.readdir(target));
            // A path that walks the cycle as far as a path can: it ends, with the entries' answer.
            std::string path = "/docs/nested/deep";
            const std::string step = target == "/docs/nested" ? "/deep"
                                     : target == "/docs"      ? "/nested/deep"
                                                              : "";
            if (!step.empty()) {
                while (path.size() + step.size() <= kMaxPathLength) path += step;
                auto far = b.lstat(path);
                ASSERT_TRUE(far) << far.error().message();
                EXPECT_EQ(far->ino, target_ino);
                // The same with symlinks that climb out with "..": lexical, bounded.
                (void)b.stat(path + "/../../..");
            }
            // A recursive walk, depth-bounded, ends.
            EXPECT_GT(hostile_walk(b), 300u);
            // verify walks the tree once and says the directory is reached twice.
            const VerifyReport report = b.verify();
            EXPECT_FALSE(report.ok());
        }
    }
}

TEST_F(Hostile, BadNamesAreCorrupt) {
    const uint64_t d = dirent_of("/docs/readme.txt");
    const uint64_t bytes = raw.sec[idx(Section::bytes)].size();
    const std::vector<std::pair<const char*, std::function<void(Dirent&)>>> cases = {
        {"name length 0", [](Dirent& e) { e.name_length = 0; }},
        {"name length 256", [](Dirent& e) { e.name_length = 256; }},
        {"name length 65535", [](Dirent& e) { e.name_length = 65535; }},
        {"name offset at the end of bytes",
         [&](Dirent& e) { e.name_offset = static_cast<uint32_t>(bytes); }},
        {"name running past bytes",
         [&](Dirent& e) { e.name_offset = static_cast<uint32_t>(bytes - 2); }},
        {"name offset 2^32-1", [](Dirent& e) { e.name_offset = UINT32_MAX; }},
        {"type nibble unknown", [](Dirent& e) { e.type = 3; }},
        {"type differs from the inode's", [](Dirent& e) { e.type = S_IFDIR >> 12; }},
        {"type 0xff", [](Dirent& e) { e.type = 0xff; }},
    };
    for (const auto& [name, f] : cases) {
        PackParts p = raw;
        p.edit<Dirent>(Section::dirents, d, f);
        check_hostile(p.build(), opens({{Op::readdir, "/docs"}}), name);
    }
    // Names that are not file names: "/", NUL, ".", "..": the bytes themselves rewritten.
    for (std::string_view bad : {std::string_view("a/b", 3), std::string_view("a\0b", 3),
                                 std::string_view("."), std::string_view("..")}) {
        PackParts p = raw;
        Dirent e = p.get<Dirent>(Section::dirents, d);
        e.name_offset = static_cast<uint32_t>(p.sec[idx(Section::bytes)].size());
        e.name_length = static_cast<uint16_t>(bad.size());
        e.name_prefix = name_prefix(bad.data(), bad.size());
        p.sec[idx(Section::bytes)] += bad;
        p.set(Section::dirents, d, e);
        check_hostile(p.build(), opens({{Op::readdir, "/docs"}}), "name " + escaped(bad));
    }
}

TEST_F(Hostile, ContentsPastTheStreamOrBytesAreCorrupt) {
    // A content in the stream (larger than inline_max) and an inline one.
    const uint64_t big = raw.inode(ino("/data/65537.bin")).ref - 1;
    const uint64_t small = raw.inode(ino("/docs/readme.txt")).ref - 1;
    const Content b = raw.get<Content>(Section::contents, big);
    const uint64_t bytes = raw.sec[idx(Section::bytes)].size();
    const std::vector<std::tuple<const char*, uint64_t, std::function<void(Content&)>, const char*>>
        cases = {
            {"stream content one byte past the stream", big,
             [&](Content& c) { c.offset = raw.h.stream_size - c.size + 1; }, "/data/65537.bin"},
            {"stream content offset 2^64-1", big, [](Content& c) { c.offset = UINT64_MAX; },
             "/data/65537.bin"},
            {"stream content offset+size wraps", big,
             [](Content& c) { c.offset = UINT64_MAX - 10; }, "/data/65537.bin"},
            {"content size 0", big, [](Content& c) { c.size = 0; }, "/data/65537.bin"},
            {"content size differs from the inode's", big, [&](Content& c) { c.size = b.size - 1; },
             "/data/65537.bin"},
            {"inline content past bytes", small, [&](Content& c) { c.offset = bytes - 3; },
             "/docs/readme.txt"},
            {"inline content offset 2^64-1", small, [](Content& c) { c.offset = UINT64_MAX; },
             "/docs/readme.txt"},
        };
    for (const auto& [name, index, f, path] : cases) {
        PackParts p = raw;
        p.edit<Content>(Section::contents, index, f);
        check_hostile(p.build(), opens({{Op::read, path}}), name);
        PackParts z = zstd;
        const uint64_t zi = z.inode(ino(path)).ref - 1;
        z.edit<Content>(Section::contents, zi, [&](Content& c) {
            if (c.size > z.h.inline_max && std::string_view(name).starts_with("stream content one"))
                c.offset = z.h.stream_size - c.size + 1;
            else
                f(c);
        });
        check_hostile(z.build(), opens({{Op::read, path}}), std::string("zstd: ") + name);
    }
}

TEST_F(Hostile, BadInodeFieldsAreCorrupt) {
    const std::vector<std::tuple<const char*, std::string, std::function<void(Inode&)>>> cases = {
        {"mtime nsec 1e9", "/docs/readme.txt", [](Inode& n) { n.mtime_nsec = 1000000000; }},
        {"atime nsec 2^32-1", "/docs/readme.txt", [](Inode& n) { n.atime_nsec = UINT32_MAX; }},
        {"ctime nsec 1e9 on a directory", "/docs", [](Inode& n) { n.ctime_nsec = 1000000000; }},
        {"unknown type 0170000", "/docs/readme.txt", [](Inode& n) { n.mode = 0170644; }},
        {"unknown type 0030000", "/docs/readme.txt", [](Inode& n) { n.mode = 0030644; }},
        {"type 0", "/docs/readme.txt", [](Inode& n) { n.mode = 0644; }},
        {"mode bits past 0177777", "/docs/readme.txt", [](Inode& n) { n.mode |= 1u << 20; }},
        {"symlink target length 0", "/links/rel", [](Inode& n) { n.size = 0; }},
        {"symlink target past bytes", "/links/rel", [](Inode& n) { n.ref = UINT64_MAX - 2; }},
        {"symlink target over 4095 bytes", "/links/rel", [](Inode& n) { n.size = 5000; }},
        {"xattr range past the section", "/xattr.txt", [](Inode& n) { n.xattr_first = 1u << 30; }},
        {"fifo with a size", "/special/fifo", [](Inode& n) { n.size = 12; }},
        {"directory range past dirents", "/docs", [](Inode& n) { n.ref = UINT64_MAX; }},
        {"empty file with a size", "/docs/empty.txt", [](Inode& n) { n.size = 10; }},
    };
    for (const auto& [name, path, f] : cases) {
        PackParts p = raw;
        p.edit_inode(ino(path), f);
        check_hostile(p.build(), opens({{Op::lstat, path}, {Op::stat, path}}), name);
    }
    {  // The root is not a directory: every lookup is corrupt.
        PackParts p = raw;
        p.edit_inode(kRootIno, [](Inode& n) {
            n.mode = S_IFREG | 0644;
            n.size = 0;
            n.ref = 0;
        });
        check_hostile(p.build(),
                      opens({{Op::lstat, "/"}, {Op::readdir, "/"}, {Op::lstat, "/docs"}}),
                      "root is a regular file");
    }
    {  // A symlink target holding a NUL byte.
        PackParts p = raw;
        const Inode link = p.inode(ino("/links/rel"));
        p.sec[idx(Section::bytes)][link.ref + 2] = '\0';
        check_hostile(p.build(), opens({{Op::readlink, "/links/rel"}, {Op::stat, "/links/rel"}}),
                      "symlink target with a NUL");
    }
}

TEST_F(Hostile, BadXattrRecordsAreCorrupt) {
    const Inode n = raw.inode(ino("/xattr.txt"));
    ASSERT_GT(n.xattr_count, 0u);
    const std::vector<std::pair<const char*, std::function<void(Xattr&)>>> cases = {
        {"xattr name length 0", [](Xattr& x) { x.name_length = 0; }},
        {"xattr name length 256", [](Xattr& x) { x.name_length = 256; }},
        {"xattr name past bytes", [](Xattr& x) { x.name_offset = UINT32_MAX - 1; }},
        {"xattr value past bytes",
         [](Xattr& x) {
             x.value_offset = UINT32_MAX - 1;
             x.value_length = 2;
         }},
        {"xattr value length 65537", [](Xattr& x) { x.value_length = 65537; }},
    };
    for (const auto& [name, f] : cases) {
        PackParts p = raw;
        for (uint32_t i = 0; i < n.xattr_count; ++i)
            p.edit<Xattr>(Section::xattrs, n.xattr_first + i, f);
        Expect e;
        if (std::string_view(name).starts_with("xattr value"))
            e.probes = {{Op::getxattr, "/xattr.txt", EUCLEAN, "user.text"}};
        else
            e.probes = {{Op::listxattr, "/xattr.txt"},
                        {Op::getxattr, "/xattr.txt", EUCLEAN, "user.text"}};
        check_hostile(p.build(), e, name);
    }
}

// The stored offsets of block i of a compressed pack's stream.
std::pair<uint64_t, uint64_t> block_at(const PackParts& p, uint64_t i) {
    return {p.get<uint64_t>(Section::blocks, i), p.get<uint64_t>(Section::blocks, i + 1)};
}

// The first block of `p` that is stored compressed, and a file whose content it holds.
uint64_t compressed_block(const PackParts& p) {
    const uint64_t n = p.count<uint64_t>(Section::blocks) - 1;
    for (uint64_t i = 0; i < n; ++i) {
        auto [b, e] = block_at(p, i);
        const uint64_t len =
            std::min<uint64_t>(p.h.block_size, p.h.stream_size - i * p.h.block_size);
        if (e - b != len) return i;
    }
    ADD_FAILURE() << "no compressed block";
    return 0;
}

// Every regular file whose stream content touches block `i`.
std::vector<std::string> files_in_block(const PackParts& p, PackBackend& clean, uint64_t i) {
    std::vector<std::string> out;
    const uint64_t lo = i * p.h.block_size, hi = lo + p.h.block_size;
    for (const std::string& path : all_paths(clean)) {
        auto st = clean.lstat(path);
        if (!st || st->type != FileType::regular || st->size <= p.h.inline_max) continue;
        const Inode n = p.inode(st->ino);
        const Content c = p.get<Content>(Section::contents, n.ref - 1);
        if (c.offset < hi && c.offset + c.size > lo) out.push_back(path);
    }
    return out;
}

TEST_F(Hostile, BadBlockOffsetsAreCorrupt) {
    for (PackParts* base : {&zstd, &lz4}) {
        const uint64_t blocks = base->count<uint64_t>(Section::blocks) - 1;
        ASSERT_GT(blocks, 4u);
        const uint64_t k = compressed_block(*base);
        auto victims = files_in_block(*base, *clean, k);
        ASSERT_FALSE(victims.empty());
        const std::string& victim = victims.front();
        const std::vector<std::pair<const char*, std::function<void(PackParts&)>>> cases = {
            {"decreasing",
             [&](PackParts& p) {
                 p.set<uint64_t>(Section::blocks, k + 1, p.get<uint64_t>(Section::blocks, k) - 1);
             }},
            {"past the data region",
             [&](PackParts& p) { p.set<uint64_t>(Section::blocks, k + 1, p.data.size() + 100); }},
            {"2^64-1", [&](PackParts& p) { p.set<uint64_t>(Section::blocks, k + 1, UINT64_MAX); }},
            {"first not 0", [&](PackParts& p) { p.set<uint64_t>(Section::blocks, 0, 8); }},
            {"last short of the data length",
             [&](PackParts& p) { p.set<uint64_t>(Section::blocks, blocks, p.data.size() - 1); }},
            {"block stored shorter (frame cut)",
             [&](PackParts& p) {
                 p.set<uint64_t>(Section::blocks, k + 1,
                                 p.get<uint64_t>(Section::blocks, k + 1) - 1);
             }},
        };
        for (const auto& [name, f] : cases) {
            PackParts p = *base;
            f(p);
            Expect e;
            if (std::string_view(name) == "first not 0") {
                const auto first = files_in_block(*base, *clean, 0);
                ASSERT_FALSE(first.empty());
                e.probes = {{Op::read, first.front()}};
            } else if (std::string_view(name) == "last short of the data length") {
                const auto last = files_in_block(*base, *clean, blocks - 1);
                ASSERT_FALSE(last.empty());
                e.probes = {{Op::read, last.front()}};
            } else {
                e.probes = {{Op::read, victim}};
            }
            check_hostile(p.build(), e,
                          fmt::format("{} block offset {}",
                                      codec_name(static_cast<Codec>(base->h.codec)), name));
        }
    }
}

// Replaces the stored bytes of block k with `stored`, shifting the later offsets.
void replace_block(PackParts& p, uint64_t k, const std::string& stored) {
    auto [begin, end] = block_at(p, k);
    const int64_t delta = static_cast<int64_t>(stored.size()) - static_cast<int64_t>(end - begin);
    p.data = p.data.substr(0, begin) + stored + p.data.substr(end);
    const uint64_t n = p.count<uint64_t>(Section::blocks);
    for (uint64_t i = k + 1; i < n; ++i)
        p.set<uint64_t>(Section::blocks, i, p.get<uint64_t>(Section::blocks, i) + delta);
}

TEST_F(Hostile, CompressedBlocksThatDecompressToTheWrongSizeAreCorrupt) {
    for (PackParts* base : {&zstd, &lz4}) {
        const Codec codec = static_cast<Codec>(base->h.codec);
        const uint64_t k = compressed_block(*base);
        const auto victims = files_in_block(*base, *clean, k);
        ASSERT_FALSE(victims.empty());
        // Frames of compressible bytes: shorter than the block, longer, and far longer.
        for (uint64_t size : {uint64_t{base->h.block_size} - 1, uint64_t{base->h.block_size} / 2,
                              uint64_t{base->h.block_size} + 1, uint64_t{base->h.block_size} * 4}) {
            std::string plain(size, 'z');
            std::vector<std::byte> frame;
            ASSERT_TRUE(compress_block(codec, 0, std::as_bytes(std::span(plain)), frame));
            PackParts p = *base;
            replace_block(p, k,
                          std::string(reinterpret_cast<const char*>(frame.data()), frame.size()));
            check_hostile(
                p.build(), opens({{Op::read, victims.front()}}),
                fmt::format("{} block {} decompressing to {} bytes", codec_name(codec), k, size));
        }
        {  // Garbage of the same stored length.
            PackParts p = *base;
            auto [begin, end] = block_at(p, k);
            std::string garbage(end - begin, '\xa5');
            replace_block(p, k, garbage);
            check_hostile(p.build(), opens({{Op::read, victims.front()}}),
                          fmt::format("{} block {} of garbage", codec_name(codec), k));
        }
        {  // An empty stored block (length 0) for a block with content.
            PackParts p = *base;
            replace_block(p, k, "");
            check_hostile(p.build(), opens({{Op::read, victims.front()}}),
                          fmt::format("{} block {} stored empty", codec_name(codec), k));
        }
    }
}

TEST_F(Hostile, NewerVersionsAndUnknownIncompatibleFeaturesAreNotSupported) {
    check_hostile(raw.build([](Header& h) { h.version = kFormatVersion + 1; }), fails_open(ENOTSUP),
                  "version 3");
    check_hostile(raw.build([](Header& h) { h.version = UINT32_MAX; }), fails_open(ENOTSUP),
                  "version 2^32-1");
    // 1: inode numbers; 2: compressed metadata; 3: holes; 4: metadata digests; 5: extents
    for (int bit : {6, 7, 63}) {
        check_hostile(raw.build([&](Header& h) { h.incompat_features |= uint64_t{1} << bit; }),
                      fails_open(ENOTSUP), fmt::format("incompat bit {}", bit));
    }
    check_hostile(zstd.build([](Header& h) { h.codec = 9; }), fails_open(ENOTSUP),
                  "unknown codec 9");
    // A newer version is refused even before its checksum is checked (a v3 header may differ).
    {
        std::string file = packs().raw;
        Header h;
        std::memcpy(&h, file.data(), sizeof h);
        h.version = kFormatVersion + 1;
        std::memcpy(file.data(), &h, sizeof h);
        check_hostile(file, fails_open(ENOTSUP), "version 3, old checksum");
    }
    // Unknown compat and ro_compat bits are ignored: the pack reads as before.
    for (auto tamper :
         {std::function<void(Header&)>([](Header& h) { h.compat_features |= 1u << 7; }),
          std::function<void(Header&)>([](Header& h) { h.ro_compat_features |= 1u << 3; })}) {
        const std::string file = raw.build(tamper);
        check_hostile(file, opens({}, false), "unknown compat bit");
        TempDir tmp;
        spit(tmp.path / "c.pack", file);
        auto b = open_file(tmp.path / "c.pack", PackAccess::mmap);
        ASSERT_TRUE(b);
        EXPECT_EQ(read_file(**b, "/docs/readme.txt"), std::string(conformance::kReadme));
    }
}

TEST_F(Hostile, AnEditWithoutNewSumsIsCaughtByTheBlockSumsAtFirstUse) {
    // The dirent edited, nothing re-checksummed: the pack opens (blocks are checked lazily) and
    // the first lookup touching that block answers EUCLEAN, naming the block.
    std::string file = packs().raw;
    Header h;
    std::memcpy(&h, file.data(), sizeof h);
    const uint64_t at = h.sections[idx(Section::dirents)].offset +
                        dirent_of("/docs/readme.txt") * sizeof(Dirent) + offsetof(Dirent, ino);
    file[at] ^= 1;
    check_hostile(file, opens({{Op::readdir, "/docs"}, {Op::lstat, "/docs/readme.txt"}}),
                  "dirent edited without sums");
    spit(dir.path / "nosums.pack", file);
    auto b = open_file(dir.path / "nosums.pack", PackAccess::pread);
    ASSERT_TRUE(b);
    auto r = (*b)->lstat("/docs/readme.txt");
    ASSERT_FALSE(r);
    ASSERT_TRUE(r.error().corruption());
    EXPECT_NE(r.error().corruption()->what.find("checksum"), std::string::npos)
        << r.error().message();
    // A failed block stays failed.
    EXPECT_EQ((*b)->lstat("/docs/readme.txt").error().code(), EUCLEAN);
}

// --- hand-made damage to the inode numbers (the inode-numbers feature) ----------------------

// by_inode_number() for each of `numbers` on `file`, both access modes: every answer is EUCLEAN
// with its detail, nothing, or the inode with exactly that number, never another one; and
// max_inode_number() ends cleanly. Returns how many lookups answered EUCLEAN.
std::size_t check_number_lookups(const std::string& file, const std::vector<uint64_t>& numbers,
                                 int* max_code = nullptr) {
    TempDir tmp;
    const fs::path path = tmp.path / "numbers.pack";
    spit(path, file);
    std::size_t corrupt = 0;
    for (PackAccess a : kAccesses) {
        SCOPED_TRACE(access_name(a));
        auto reader = PackReader::open(path.string(), PackOpenOptions{.access = a});
        if (!reader) {
            ADD_FAILURE() << "does not open: " << describe(reader.error());
            return corrupt;
        }
        const Ctx ctx{"test", "/"};
        for (uint64_t n : numbers) {
            auto found = (*reader)->by_inode_number(n, ctx);
            if (!found) {
                EXPECT_EQ(found.error().code(), EUCLEAN) << n << ": " << describe(found.error());
                EXPECT_TRUE(found.error().corruption().has_value()) << found.error().message();
                ++corrupt;
            } else if (found->has_value()) {
                EXPECT_EQ((*reader)->inode_number(**found), n) << "a lookup named another inode";
            }
        }
        auto max = (*reader)->max_inode_number(ctx);
        if (max_code != nullptr) *max_code = max ? 0 : max.error().code();
    }
    return corrupt;
}

// The problems verify() reports for `file`, one per line.
std::string verify_problems(const std::string& file) {
    TempDir tmp;
    spit(tmp.path / "v.pack", file);
    auto b = open_file(tmp.path / "v.pack", PackAccess::mmap);
    if (!b) return "does not open: " + describe(b.error());
    std::string out;
    for (const VerifyProblem& p : (*b)->verify().problems) out += p.where + ": " + p.what + "\n";
    return out;
}

class HostileNumbers : public Hostile {
protected:
    uint64_t count() const { return kept.h.inode_count; }
    uint64_t number_of(uint64_t record) const {
        return kept.get<uint64_t>(Section::inode_numbers, record - 1);
    }
    uint32_t order_at(uint64_t position) const {
        return kept.get<uint32_t>(Section::inode_order, position);
    }
    // The position in inode_order of record `record`.
    uint64_t position_of(uint64_t record) const {
        for (uint64_t p = 0; p < count(); ++p)
            if (order_at(p) == record - 1) return p;
        ADD_FAILURE() << "record " << record << " is not in the order";
        return 0;
    }
    std::vector<uint64_t> all_numbers() const {
        std::vector<uint64_t> out;
        for (uint64_t r = 1; r <= count(); ++r) out.push_back(number_of(r));
        return out;
    }
};

TEST_F(HostileNumbers, TheCleanPackKeepsTheMemTreesNumbers) {
    ASSERT_NE(kept.h.incompat_features & kIncompatInodeNumbers, 0u);
    EXPECT_EQ(check_number_lookups(kept.build(), all_numbers()), 0u);
    EXPECT_EQ(verify_problems(kept.build()), "");
    // They differ from the positions somewhere (else these tests would prove little).
    bool differs = false;
    for (uint64_t r = 1; r <= count(); ++r) differs |= number_of(r) != r;
    EXPECT_TRUE(differs);
}

TEST_F(HostileNumbers, SectionsOfTheWrongLengthOrWithoutTheirFeatureFailToOpen) {
    const auto numbers = idx(Section::inode_numbers), order = idx(Section::inode_order);
    const std::vector<std::pair<const char*, std::function<void(PackParts&)>>> edits = {
        {"numbers one record short", [&](PackParts& p) { p.sec[numbers].resize(p.sec[numbers].size() - 8); }},
        {"numbers one record long", [&](PackParts& p) { p.sec[numbers] += std::string(8, '\1'); }},
        {"numbers not whole records", [&](PackParts& p) { p.sec[numbers] += "abc"; }},
        {"order one record short", [&](PackParts& p) { p.sec[order].resize(p.sec[order].size() - 4); }},
        {"order one record long", [&](PackParts& p) { p.sec[order] += std::string(4, '\0'); }},
        {"order not whole records", [&](PackParts& p) { p.sec[order] += "ab"; }},
        {"both empty", [&](PackParts& p) {
             p.sec[numbers].clear();
             p.sec[order].clear();
         }},
    };
    for (const auto& [name, edit] : edits) {
        PackParts p = kept;
        edit(p);
        check_hostile(p.build(), fails_open(EUCLEAN), name);
    }
    check_hostile(kept.build([](Header& h) { h.incompat_features &= ~kIncompatInodeNumbers; }),
                  fails_open(EUCLEAN), "the sections without the feature bit");
    check_hostile(raw.build([](Header& h) { h.incompat_features |= kIncompatInodeNumbers; }),
                  fails_open(EUCLEAN), "the feature bit without the sections");
    check_hostile(raw.build([](Header& h) { h.numbering_sections[1].checksum = 1; }),
                  fails_open(EUCLEAN), "a v1 pack with a non-zero numbering entry");
    check_hostile(kept.build([](Header& h) { h.numbering_sections[0].offset += 8; }),
                  fails_open(EUCLEAN), "numbers after a gap of 8 bytes");
    check_hostile(kept.build([](Header& h) { std::swap(h.numbering_sections[0], h.numbering_sections[1]); }),
                  fails_open(EUCLEAN), "order before numbers");
}

TEST_F(HostileNumbers, AZeroNumberIsCorruptAtUseAndInVerify) {
    for (std::string_view path : {"/docs/readme.txt", "/docs", "/"}) {
        PackParts p = kept;
        const uint64_t record = ino(path);
        const uint64_t old = number_of(record);
        p.set<uint64_t>(Section::inode_numbers, record - 1, 0);
        const std::string file = p.build();
        std::vector<Probe> probes{{Op::lstat, std::string(path)}, {Op::stat, std::string(path)}};
        if (path != "/") probes.emplace_back(Op::readdir, std::string(path_parent(path)));
        check_hostile(file, opens(probes), fmt::format("number 0 for {}", path));
        EXPECT_EQ(check_number_lookups(file, {old}), 2u) << path;
        EXPECT_NE(verify_problems(file).find("inode number is 0"), std::string::npos)
            << verify_problems(file);
    }
}

TEST_F(HostileNumbers, DuplicateNumbersNeverNameAWrongInodeAndVerifyFindsThem) {
    {  // two records, one number (the order unchanged)
        PackParts p = kept;
        const uint64_t a = ino("/docs/readme.txt"), b = ino("/data/65537.bin");
        p.set<uint64_t>(Section::inode_numbers, b - 1, number_of(a));
        const std::string file = p.build();
        check_hostile(file, opens({}), "two records with one number");
        (void)check_number_lookups(file, all_numbers());
        EXPECT_NE(verify_problems(file).find("not strictly ascending"), std::string::npos)
            << verify_problems(file);
    }
    {  // the order names one record twice (and another never)
        PackParts p = kept;
        const uint64_t at = position_of(ino("/docs/readme.txt"));
        const uint64_t next = at + 1 < count() ? at + 1 : at - 1;
        p.set<uint32_t>(Section::inode_order, next, order_at(at));
        const std::string file = p.build();
        check_hostile(file, opens({}), "a record twice in the order");
        (void)check_number_lookups(file, all_numbers());
        EXPECT_NE(verify_problems(file).find("lists a record twice"), std::string::npos)
            << verify_problems(file);
    }
}

TEST_F(HostileNumbers, AnUnsortedOrderIsCorruptWhereALookupTouchesIt) {
    {  // reversed: the second probe of a search for the smallest number is out of bounds
        PackParts p = kept;
        std::string& order = p.sec[idx(Section::inode_order)];
        std::vector<uint32_t> entries(count());
        std::memcpy(entries.data(), order.data(), order.size());
        std::reverse(entries.begin(), entries.end());
        std::memcpy(order.data(), entries.data(), order.size());
        const std::string file = p.build();
        check_hostile(file, opens({}), "order reversed");
        const std::vector<uint64_t> numbers = all_numbers();
        EXPECT_GE(check_number_lookups(file, {*std::min_element(numbers.begin(), numbers.end())}), 2u);
        EXPECT_GT(check_number_lookups(file, numbers), numbers.size());
        EXPECT_NE(verify_problems(file).find("not strictly ascending"), std::string::npos);
    }
    {  // two neighbours swapped: a lookup may miss them, never names a wrong inode
        PackParts p = kept;
        const uint64_t at = count() / 2;
        const uint32_t first = order_at(at), second = order_at(at + 1);
        p.set<uint32_t>(Section::inode_order, at, second);
        p.set<uint32_t>(Section::inode_order, at + 1, first);
        const std::string file = p.build();
        check_hostile(file, opens({}), "two neighbours swapped");
        (void)check_number_lookups(file, all_numbers());
        EXPECT_NE(verify_problems(file).find("not strictly ascending"), std::string::npos);
    }
}

TEST_F(HostileNumbers, OrderEntriesPastTheRecordsAreCorrupt) {
    for (uint32_t bad : {static_cast<uint32_t>(count()), UINT32_MAX}) {
        for (uint64_t at : {uint64_t{0}, count() / 2, count() - 1}) {
            SCOPED_TRACE(fmt::format("order[{}] = {}", at, bad));
            PackParts p = kept;
            const uint64_t old = number_of(order_at(at) + 1);
            p.set<uint32_t>(Section::inode_order, at, bad);
            const std::string file = p.build();
            check_hostile(file, opens({}), "order entry past the records");
            int max_code = 0;
            EXPECT_EQ(check_number_lookups(file, {old}, &max_code), 2u);
            if (at == count() - 1) {
                EXPECT_EQ(max_code, EUCLEAN);
            }
            (void)check_number_lookups(file, all_numbers());
            EXPECT_NE(verify_problems(file).find("names no record"), std::string::npos);
        }
    }
}

TEST_F(HostileNumbers, ALargestNumberBelowTheInodeCountIsCorrupt) {
    PackParts p = kept;
    p.set<uint64_t>(Section::inode_numbers, order_at(count() - 1), 1);
    const std::string file = p.build();
    int max_code = 0;
    (void)check_number_lookups(file, all_numbers(), &max_code);
    EXPECT_EQ(max_code, EUCLEAN);
    EXPECT_FALSE(verify_problems(file).empty());
}

// --- (d) crash regressions --------------------------------------------------------------
// Cases that crashed the reader, each run in a child process. The fuzzer
// (fuzz/fuzz_pack_reader.cpp: one mode byte, then the file) has found none so far; an input it
// finds goes here, rebuilt with PackParts (or read from a file under fuzz/regressions/).

// Runs `body` in a child process (a gtest death test expecting exit code 0), so that a case
// that crashes the reader fails alone, with its sanitizer report, instead of taking the other
// tests of this binary down with it. For the cases that crashed once. "threadsafe": the child
// re-runs this test from the start (its own fixture, its own temporary directory, removed
// before it exits).
class HostileRegression : public Hostile {
protected:
    void isolated(const std::function<void()>& body) {
        GTEST_FLAG_SET(death_test_style, "threadsafe");
        EXPECT_EXIT(
            {
                body();
                std::error_code ec;
                fs::remove_all(dir.path, ec);
                std::_Exit(::testing::Test::HasFailure() ? 1 : 0);
            },
            ::testing::ExitedWithCode(0), "")
            << "the case crashed or failed in its child process (its output is above)";
    }
};

TEST_F(HostileRegression, CompressedStreamSizeThatWrapsTheBlockCountFailsCleanly) {
    // stream_size near 2^64: ceil(stream_size / block_size) computed in 64 bits wraps to 0, so
    // a blocks section of one offset looks consistent. Every read and verify must still fail
    // cleanly (no index past the blocks section). verify() crashed on it (block_state[index]
    // on an empty vector in the verifier's load_block); validate_header now computes the count
    // without overflow, so open fails, and load_block checks the index anyway.
    PackParts p = zstd;
    p.sec[idx(Section::blocks)].assign(8, '\0');
    const std::string file = p.build([](Header& h) { h.stream_size = UINT64_MAX - 100; });
    isolated([&] {
        check_hostile(
            file,
            fails_at_open_or_use({{Op::read, "/data/65537.bin"}, {Op::read, "/text/lines.txt"}}),
            "stream size 2^64-101 with one block offset");
    });
}

}  // namespace
}  // namespace packfs::pack
