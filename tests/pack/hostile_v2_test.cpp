// Hostile version 2 packs: hand-made damage to what v2 adds (hash buckets, dirent hashes, the
// locator and digest index in a 64-byte inode, the times section, the layout rules), each
// re-checksummed by PackParts so it reaches the deep checks. Each gives EUCLEAN naming what is
// wrong at first use, or a miss (ENOENT) where a lookup cannot tell, never another file's
// answer, and verify reports it. Truncation and random bit flips of v2 packs run in
// hostile_test.cpp with the v1 packs.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "pack/hostile_support.hpp"

namespace packfs::pack {
namespace {

using namespace hostile;
using Op = Probe::Op;

class HostileV2 : public ::testing::Test {
protected:
    void SetUp() override {
        v2 = PackParts::parse(packs().v2);
        all = PackParts::parse(packs().v2_all);
        spit(dir.path / "clean.pack", packs().v2);
        auto b = open_file(dir.path / "clean.pack", PackAccess::mmap);
        ASSERT_TRUE(b);
        clean = *b;
    }
    uint64_t ino(std::string_view path) {
        auto st = clean->lstat(path);
        EXPECT_TRUE(st) << path;
        return st ? st->ino : 0;
    }
    uint64_t dirent_of(std::string_view path) {
        return v2.dirent_index(ino(path_parent(path)), path_basename(path));
    }
    // /many's buckets: index of its first u32 in the buckets section, and how many buckets.
    std::pair<uint64_t, uint64_t> many_buckets() {
        const InodeV2 d = v2.inode_v2(ino("/many"));
        EXPECT_EQ(d.size, 40u);
        return {d.aux, uint64_t{1} << bucket_bits(d.size)};
    }
    static uint64_t bucket_of(std::string_view name) {
        return name_hash(name) >> (32 - bucket_bits(40));
    }

    // Every entry of /many answers with its own content, or with a clean error; never with
    // another entry's.
    static void never_another_file(const std::string& file) {
        TempDir tmp;
        spit(tmp.path / "p.pack", file);
        auto b = open_file(tmp.path / "p.pack", PackAccess::mmap);
        ASSERT_TRUE(b);
        for (int i = 0; i < 40; ++i) {
            const std::string path = fmt::format("/many/entry-{:02}", i);
            auto content = read_file(**b, path);
            if (content) {
                EXPECT_EQ(*content, fmt::format("{}\n", i)) << path;
            } else {
                EXPECT_TRUE(content.error().code() == ENOENT || content.error().code() == EUCLEAN)
                    << path << ": " << describe(content.error());
            }
        }
    }

    TempDir dir;
    PackParts v2, all;
    std::shared_ptr<PackBackend> clean;
};

TEST_F(HostileV2, CleanPartsOpenAndVerify) {
    check_hostile(v2.build(), opens({}, false), "v2");
    check_hostile(all.build(), opens({}, false), "v2, zstd, all times, kept numbers");
}

TEST_F(HostileV2, BucketsPastTheEntriesOrDecreasingAreCorrupt) {
    const auto [first, count] = many_buckets();
    {
        PackParts p = v2;
        for (uint64_t k = 0; k <= count; ++k) p.set<uint32_t>(Section::buckets, first + k, 41);
        check_hostile(p.build(),
                      opens({{Op::lstat, "/many/entry-07"}, {Op::read, "/many/entry-31"}}),
                      "buckets past the entries");
        never_another_file(p.build());
    }
    {
        PackParts p = v2;
        const uint64_t k = bucket_of("entry-07");
        p.set<uint32_t>(Section::buckets, first + k, 5);
        p.set<uint32_t>(Section::buckets, first + k + 1, 3);
        check_hostile(p.build(), opens({{Op::lstat, "/many/entry-07"}}), "a decreasing bucket");
        never_another_file(p.build());
    }
}

TEST_F(HostileV2, ABucketThatMissesItsEntriesGivesNotFoundNeverAnotherFile) {
    const auto [first, count] = many_buckets();
    PackParts p = v2;
    for (uint64_t k = 0; k < count; ++k) p.set<uint32_t>(Section::buckets, first + k, 0);
    // Every bucket but the last is empty now: a name hashed to one of them is not found.
    std::string name = "entry-00";
    for (int i = 0; bucket_of(name) == count - 1; ++i) name = fmt::format("entry-{:02}", i);
    check_hostile(p.build(), opens({{Op::lstat, "/many/" + name, ENOENT}}), "empty buckets");
    never_another_file(p.build());
}

TEST_F(HostileV2, ADirentHashThatIsNotItsNamesIsAMiss) {
    PackParts p = v2;
    p.edit<Dirent>(Section::dirents, dirent_of("/many/entry-07"),
                   [](Dirent& d) { d.name_prefix ^= 1; });
    check_hostile(p.build(), opens({{Op::lstat, "/many/entry-07", ENOENT}}), "dirent hash");
    never_another_file(p.build());
}

// v2 lists a directory from its dirents alone: a dirent whose type is not its inode's lists as
// the dirent says, and the lookup that loads the inode answers EUCLEAN; verify reports it.
TEST_F(HostileV2, ADirentTypeThatIsNotItsInodesIsCorruptAtLookup) {
    PackParts p = v2;
    p.edit<Dirent>(Section::dirents, dirent_of("/docs/readme.txt"),
                   [](Dirent& d) { d.type = S_IFDIR >> 12; });
    check_hostile(p.build(),
                  opens({{Op::lstat, "/docs/readme.txt"}, {Op::read, "/docs/readme.txt"}}),
                  "dirent type");
    PackParts unknown = v2;
    unknown.edit<Dirent>(Section::dirents, dirent_of("/docs/readme.txt"),
                         [](Dirent& d) { d.type = 3; });
    check_hostile(unknown.build(), opens({{Op::readdir, "/docs"}, {Op::lstat, "/docs/readme.txt"}}),
                  "dirent type nibble unknown");
}

TEST_F(HostileV2, LocatorsAndDigestIndexesOutOfRangeAreCorrupt) {
    const uint64_t stream = v2.h.stream_size;
    const uint64_t bytes = v2.sec[idx(Section::bytes)].size();
    const uint64_t digests = v2.sec[idx(kDigests)].size() / 32;
    struct Case {
        const char* label;
        const char* path;
        std::function<void(InodeV2&)> edit;
    };
    const std::vector<Case> cases = {
        {"stream locator past the stream", "/text/lines.txt", [&](InodeV2& n) { n.ref = stream; }},
        {"stream locator wrapping", "/text/lines.txt", [](InodeV2& n) { n.ref = UINT64_MAX - 10; }},
        {"inline locator past bytes", "/many/entry-03", [&](InodeV2& n) { n.ref = bytes; }},
        {"digest index past the digests", "/docs/readme.txt",
         [&](InodeV2& n) { n.aux = static_cast<uint32_t>(digests); }},
        {"an empty file with a locator", "/docs/empty.txt", [](InodeV2& n) { n.ref = 1; }},
        {"an empty file with a digest", "/docs/empty.txt", [](InodeV2& n) { n.aux = 1; }},
        {"a symlink with aux", "/links/rel", [](InodeV2& n) { n.aux = 1; }},
        {"a fifo with aux", "/special/fifo", [](InodeV2& n) { n.aux = 1; }},
        {"a small directory with buckets", "/docs", [](InodeV2& n) { n.aux = 1; }},
        {"buckets past the section", "/many",
         [&](InodeV2& n) {
             n.aux = static_cast<uint32_t>(v2.sec[idx(Section::buckets)].size() / 4 - 3);
         }},
        {"mtime nanoseconds", "/docs/readme.txt", [](InodeV2& n) { n.mtime_nsec = 1000000000; }},
    };
    for (const Case& c : cases) {
        PackParts p = v2;
        p.edit_inode_v2(ino(c.path), c.edit);
        check_hostile(p.build(), opens({{Op::lstat, c.path}}), c.label);
    }
}

TEST_F(HostileV2, TwoFilesSharingADigestIndexWithDifferentBytesAreReportedByVerify) {
    PackParts p = v2;
    const uint32_t other = p.inode_v2(ino("/text/lines.txt")).aux;
    p.edit_inode_v2(ino("/text/zeros.bin"), [&](InodeV2& n) { n.aux = other; });
    check_hostile(p.build(), opens({}), "shared digest index");
}

TEST_F(HostileV2, TheTimesSectionIsCheckedAgainstItsFeature) {
    // Nanoseconds out of range in a times record: EUCLEAN at first use.
    {
        PackParts p = all;
        const uint64_t i = ino("/docs/readme.txt") - 1;
        p.edit<InodeTimes>(Section::times, i, [](InodeTimes& t) { t.ctime_nsec = 1000000000; });
        check_hostile(p.build(), opens({{Op::lstat, "/docs/readme.txt"}}), "times nanoseconds");
    }
    // The feature without the section, or the section without the feature: open fails.
    check_hostile(v2.build([](Header& h) { h.compat_features |= kCompatAllTimes; }),
                  fails_open(EUCLEAN), "all-times bit, no section");
    {
        PackParts p = v2;
        p.sec[idx(Section::times)] = all.sec[idx(Section::times)];
        check_hostile(p.build(), fails_open(EUCLEAN), "times section, no bit");
    }
    // A times section of the wrong length.
    {
        PackParts p = all;
        p.sec[idx(Section::times)].resize(p.sec[idx(Section::times)].size() - 24);
        check_hostile(p.build(), fails_open(EUCLEAN), "times section one record short");
    }
}

TEST_F(HostileV2, LayoutRulesAreChecked) {
    // The inodes must start the region, on a 64-byte boundary.
    check_hostile(v2.build([](Header& h) {
        h.meta_offset += 8;
        h.sums_offset += 8;
    }),
                  fails_open(EUCLEAN), "metadata region off its cache line");
    // Inode records of v1's size in a v2 pack: the count no longer matches.
    {
        PackParts p = v2;
        p.sec[idx(Section::inodes)].append(16 * p.h.inode_count, '\0');
        check_hostile(p.build(), fails_open(EUCLEAN), "80-byte inode section in v2");
    }
    // A v1 pack has no buckets section.
    {
        PackParts p = PackParts::parse(packs().raw);
        p.sec[idx(Section::buckets)] = std::string(8, '\0');
        check_hostile(p.build(), fails_open(EUCLEAN), "buckets in a v1 pack");
    }
}

// The holes feature (the v2 packs under test have holes: /text/zeros.bin spans whole blocks).
TEST_F(HostileV2, HolesAreCheckedAgainstTheirFeature) {
    ASSERT_NE(v2.h.incompat_features & kIncompatHoles, 0u);
    ASSERT_NE(all.h.incompat_features & kIncompatHoles, 0u);
    // Only in version 2.
    check_hostile(PackParts::parse(packs().raw).build([](Header& h) {
        h.incompat_features |= kIncompatHoles;
    }),
                  fails_open(EUCLEAN), "holes in a v1 pack");
    // A raw pack without the bit has no blocks section.
    check_hostile(v2.build([](Header& h) { h.incompat_features &= ~kIncompatHoles; }),
                  fails_open(EUCLEAN), "raw blocks without the holes feature");
    // A compressed pack without the bit: its empty blocks are damage, found at first read.
    {
        PackParts p = all;
        p.h.incompat_features &= ~kIncompatHoles;
        check_hostile(p.build(), opens({{Op::read, "/text/zeros.bin"}}),
                      "empty blocks without the holes feature");
    }
    // Raw blocks hold exactly their stream bytes: one shortened by a byte (the next lengthened)
    // is neither raw nor a hole.
    {
        PackParts p = v2;
        const uint64_t blocks = p.count<uint64_t>(Section::blocks) - 1;
        uint64_t k = 0;
        while (k + 1 < blocks &&
               p.get<uint64_t>(Section::blocks, k + 1) == p.get<uint64_t>(Section::blocks, k))
            ++k;  // the first block with data
        ASSERT_LT(k + 1, blocks);
        p.set<uint64_t>(Section::blocks, k + 1, p.get<uint64_t>(Section::blocks, k + 1) - 1);
        check_hostile(p.build(), opens({}), "a raw block one byte short");
    }
    // A hole where the data was: its file reads zeros, which verify finds by the SHA-256.
    {
        PackParts p = v2;
        const uint64_t blocks = p.count<uint64_t>(Section::blocks) - 1;
        uint64_t k = 0;
        while (k < blocks &&
               p.get<uint64_t>(Section::blocks, k + 1) == p.get<uint64_t>(Section::blocks, k))
            ++k;
        ASSERT_LT(k, blocks);
        const uint64_t begin = p.get<uint64_t>(Section::blocks, k);
        const uint64_t length = p.get<uint64_t>(Section::blocks, k + 1) - begin;
        p.data.erase(begin, length);
        for (uint64_t i = k + 1; i <= blocks; ++i)
            p.set<uint64_t>(Section::blocks, i, p.get<uint64_t>(Section::blocks, i) - length);
        check_hostile(p.build(), opens({}), "a data block turned into a hole");
    }
}

}  // namespace
}  // namespace packfs::pack
