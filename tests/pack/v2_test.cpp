// Pack format version 2 (docs/FORMAT.md, "Version 2"), beyond the conformance suite (which runs
// on v2 packs too): the layout the format promises (64-byte inodes on cache lines, digests apart,
// buckets), lookups in directories of every size around the bucket thresholds, a directory
// whose names all share one hash, and a v2 pack that answers exactly as the v1 pack of the same
// tree does.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "conformance/conformance_suite.hpp"
#include "pack/format/format.hpp"
#include "pack/reader/reader.hpp"
#include "pack/test_hooks.hpp"
#include "packfs/mem.hpp"
#include "packfs/pack.hpp"
#include "packfs/path.hpp"
#include "support/files.hpp"

namespace packfs::pack {
namespace {

namespace fs = std::filesystem;
using test_support::slurp;
using test_support::TempDir;

// Directory sizes around the bucket thresholds (none under 16 entries; 2^bits buckets with
// bits = floor(log2(n)) - 1), and a large one.
constexpr uint64_t kDirSizes[] = {0, 1, 2, 15, 16, 17, 31, 32, 33, 1000, 4097};

std::string name_of(uint64_t dir_size, uint64_t i) {
    // Long shared prefixes, as real trees have ("file-…"): v1's 4-byte prefix never decides.
    return fmt::format("file-with-a-long-common-prefix-{}-{}", dir_size, i);
}

std::shared_ptr<Backend> big_tree() {
    auto mem = make_mem_backend();
    for (uint64_t n : kDirSizes) {
        const std::string dir = fmt::format("/d{}", n);
        EXPECT_TRUE(mem->mkdir(dir));
        for (uint64_t i = 0; i < n; ++i) {
            // Contents that say who they are; some big enough for the stream, some inline.
            std::string content = fmt::format("{}/{}\n", n, i);
            if (i % 7 == 0) content.append(300, static_cast<char>('a' + i % 26));
            EXPECT_TRUE(write_file(*mem, path_join(dir, name_of(n, i)), content));
        }
    }
    EXPECT_TRUE(mem->symlink("d1000", "/link"));
    EXPECT_TRUE(mem->setxattr("/d16", "user.k", "v"));
    return mem;
}

std::shared_ptr<PackBackend> build_and_open(Backend& tree, const fs::path& path, PackWriteOptions w,
                                            PackOpenOptions o = {}) {
    auto stats = write_pack(tree, path.string(), w);
    EXPECT_TRUE(stats) << stats.error().message();
    auto pack = open_pack(path.string(), o);
    EXPECT_TRUE(pack) << pack.error().message();
    return pack ? *pack : nullptr;
}

std::string show(const Stat& s) {
    return fmt::format(
        "ino={} type={} mode={:o} uid={} gid={} nlink={} size={} rdev={} blocks={} "
        "a={}.{} m={}.{} c={}.{}",
        s.ino, file_type_name(s.type), s.mode, s.uid, s.gid, s.nlink, s.size, s.rdev, s.blocks,
        s.atime.sec, s.atime.nsec, s.mtime.sec, s.mtime.nsec, s.ctime.sec, s.ctime.nsec);
}

PackWriteOptions v2_options(PackTimes times = PackTimes::mtime) {
    PackWriteOptions w;
    w.format = 2;
    w.times = times;
    return w;
}

// Every lookup finds its own file, every absent name misses, every listing is whole.
void expect_every_lookup_right(PackBackend& pack) {
    for (uint64_t n : kDirSizes) {
        const std::string dir = fmt::format("/d{}", n);
        auto listed = pack.readdir(dir);
        ASSERT_TRUE(listed) << dir;
        std::set<std::string> names;
        for (const DirEntry& e : *listed) names.insert(e.name);
        EXPECT_EQ(names.size(), n) << dir;
        for (uint64_t i = 0; i < n; ++i) {
            const std::string path = path_join(dir, name_of(n, i));
            EXPECT_TRUE(names.count(name_of(n, i))) << path;
            auto content = read_file(pack, path);
            ASSERT_TRUE(content) << path << ": " << content.error().message();
            EXPECT_TRUE(content->starts_with(fmt::format("{}/{}\n", n, i))) << path;
            auto missing = pack.lstat(path + "x");
            ASSERT_FALSE(missing) << path << "x";
            EXPECT_EQ(missing.error().code(), ENOENT);
        }
        auto missing = pack.lstat(path_join(dir, "absent"));
        ASSERT_FALSE(missing);
        EXPECT_EQ(missing.error().code(), ENOENT);
    }
}

TEST(PackV2, TheLayoutIsWhatTheFormatPromises) {
    TempDir dir;
    auto tree = big_tree();
    ASSERT_TRUE(write_pack(*tree, (dir.path / "p.pack").string(), v2_options()));
    const std::string file = slurp(dir.path / "p.pack");
    Header h;
    std::memcpy(&h, file.data(), sizeof h);
    EXPECT_EQ(h.version, 2u);
    EXPECT_EQ(h.meta_offset % 64, 0u) << "each inode on its own cache line";
    const SectionEntry& inodes = section(h, Section::inodes);
    EXPECT_EQ(inodes.offset, h.meta_offset);
    EXPECT_EQ(inodes.length, 64 * h.inode_count);
    // One digest per distinct content; buckets for the directories of 16 entries or more.
    const uint64_t files = [] {
        uint64_t total = 0;
        for (uint64_t n : kDirSizes) total += n;
        return total;
    }();
    EXPECT_EQ(section(h, kDigests).length, 32 * files);  // every content differs
    uint64_t buckets = 0;
    for (uint64_t n : kDirSizes) {
        if (bucket_bits(n) != 0) buckets += (uint64_t{1} << bucket_bits(n)) + 1;
    }
    EXPECT_EQ(section(h, Section::buckets).length, 4 * buckets);
    EXPECT_EQ(section(h, Section::times).length, 0u) << "mtime only: no times section";
    EXPECT_EQ(h.compat_features & kCompatAllTimes, 0u);
    auto pack = open_pack((dir.path / "p.pack").string());
    ASSERT_TRUE(pack);
    EXPECT_EQ((*pack)->info().version, 2u);
}

TEST(PackV2, LookupsInDirectoriesOfEverySizeFindEveryEntry) {
    TempDir dir;
    auto tree = big_tree();
    for (PackAccess access : {PackAccess::mmap, PackAccess::pread}) {
        auto pack = build_and_open(*tree, dir.path / "p.pack", v2_options(), {.access = access});
        ASSERT_TRUE(pack);
        expect_every_lookup_right(*pack);
        const VerifyReport report = pack->verify();
        EXPECT_TRUE(report.ok()) << report.problems.front().where << ": "
                                 << report.problems.front().what;
    }
}

// The lookup hot path (PackReader::probe) never guesses: before a directory's blocks were
// checked it is `unsure` (the slow lookup checks them); after, it answers exactly what lookup()
// does, `found` with the same record for every entry and `absent` for every missing name, in
// directories of every size around the bucket thresholds.
TEST(PackV2, TheLookupHotPathAnswersAsTheCheckedLookupOrLeavesItToIt) {
    TempDir dir;
    auto tree = big_tree();
    const fs::path path = dir.path / "p.pack";
    ASSERT_TRUE(write_pack(*tree, path.string(), v2_options()));
    auto reader = PackReader::open(path.string(), {});
    ASSERT_TRUE(reader) << reader.error().message();
    const Ctx ctx{"lookup", {}};
    auto root = (*reader)->root(ctx);
    ASSERT_TRUE(root);
    using Probe = PackReader::Probe;
    InodeView out;
    // The largest directory's run lies in blocks nothing has checked yet.
    auto big = (*reader)->lookup(*root, "d4097", ctx);
    ASSERT_TRUE(big && *big);
    EXPECT_EQ((*reader)->probe(**big, name_of(4097, 4000), out), Probe::unsure);
    for (uint64_t n : kDirSizes) {
        auto d = (*reader)->lookup(*root, fmt::format("d{}", n), ctx);
        ASSERT_TRUE(d && *d) << n;
        std::vector<uint64_t> records;
        for (uint64_t i = 0; i < n; ++i) {  // checks the directory's blocks on the way
            auto slow = (*reader)->lookup(**d, name_of(n, i), ctx);
            ASSERT_TRUE(slow && *slow) << name_of(n, i);
            records.push_back((*slow)->ino);
        }
        for (uint64_t i = 0; i < n; ++i) {
            const std::string name = name_of(n, i);
            ASSERT_EQ((*reader)->probe(**d, name, out), Probe::found) << name;
            EXPECT_EQ(out.ino, records[i]) << name;
            EXPECT_EQ((*reader)->probe(**d, name + "x", out), Probe::absent) << name;
        }
        EXPECT_EQ((*reader)->probe(**d, "absent", out), Probe::absent) << n;
    }
}

// Every stat, listing, link and xattr of the v2 pack equals the v1 pack's (listing order
// aside: v2 lists a directory in hash order), with mtime-only and with all times.
TEST(PackV2, AnswersAsTheVersion1PackOfTheSameTree) {
    TempDir dir;
    auto tree = big_tree();
    for (PackTimes times : {PackTimes::mtime, PackTimes::all}) {
        PackWriteOptions v1 = v2_options(times);
        v1.format = 1;
        auto one = build_and_open(*tree, dir.path / "1.pack", v1);
        auto two = build_and_open(*tree, dir.path / "2.pack", v2_options(times));
        ASSERT_TRUE(one && two);
        std::vector<std::string> dirs = {"/"};
        std::size_t compared = 0;
        while (!dirs.empty()) {
            const std::string d = dirs.back();
            dirs.pop_back();
            auto a = one->readdir(d), b = two->readdir(d);
            ASSERT_TRUE(a && b) << d;
            auto by_name = [](const DirEntry& x, const DirEntry& y) { return x.name < y.name; };
            std::sort(a->begin(), a->end(), by_name);
            std::sort(b->begin(), b->end(), by_name);
            ASSERT_EQ(a->size(), b->size()) << d;
            for (std::size_t i = 0; i < a->size(); ++i) {
                const std::string path = path_join(d, (*a)[i].name);
                EXPECT_EQ((*a)[i].name, (*b)[i].name) << path;
                EXPECT_EQ((*a)[i].ino, (*b)[i].ino) << path;
                auto sa = one->lstat(path), sb = two->lstat(path);
                ASSERT_TRUE(sa && sb) << path;
                EXPECT_EQ(show(*sa), show(*sb)) << path;
                const std::vector<std::string> none;
                EXPECT_EQ(one->listxattr(path).value_or(none), two->listxattr(path).value_or(none));
                if (sa->type == FileType::directory) dirs.push_back(path);
                if (sa->type == FileType::symlink) {
                    EXPECT_EQ(one->readlink(path).value_or(""), two->readlink(path).value_or(""));
                }
                if (sa->type == FileType::regular) {
                    EXPECT_EQ(read_file(*one, path).value_or("?"),
                              read_file(*two, path).value_or("!"));
                }
                ++compared;
            }
        }
        EXPECT_GT(compared, 5000u);
    }
}

uint32_t one_hash(std::string_view) {
    return 0x9e3779b9u;
}

// The worst case a hostile or unlucky tree can make: every name in a directory has the same
// 32-bit hash. Every lookup still answers right (the run is ordered by hash, then name, and a
// lookup binary-searches it), verify finds nothing wrong, and a reader that hashes otherwise
// misses every entry but never answers with a wrong one.
TEST(PackV2, ADirectoryWhoseNamesAllShareOneHashAnswersEveryLookup) {
    TempDir dir;
    auto tree = big_tree();
    const fs::path path = dir.path / "p.pack";
    WriteHooks hooks;
    hooks.name_hash = &one_hash;
    auto stats = write_pack_with_hooks(*tree, path.string(), v2_options(), hooks);
    ASSERT_TRUE(stats) << stats.error().message();
    auto opened = open_pack_with_hooks(path.string(), {}, OpenHooks{.name_hash = &one_hash});
    ASSERT_TRUE(opened) << opened.error().message();
    std::shared_ptr<PackBackend> pack = *opened;
    expect_every_lookup_right(*pack);
    const VerifyReport report = pack->verify();
    EXPECT_TRUE(report.ok()) << report.problems.front().where << ": "
                             << report.problems.front().what;

    auto other = open_pack((dir.path / "p.pack").string());
    ASSERT_TRUE(other);
    for (uint64_t i = 0; i < 1000; i += 37) {
        auto st = (*other)->lstat(path_join("/d1000", name_of(1000, i)));
        EXPECT_TRUE(!st || st->size == pack->lstat(path_join("/d1000", name_of(1000, i)))->size);
    }
    EXPECT_FALSE((*other)->verify().ok()) << "verify hashes the names and sees they do not match";
}

TEST(PackV2, AllTimesAreKeptInTheirSectionAndOtherwiseReadAsMtime) {
    TempDir dir;
    auto mem = make_mem_backend();
    ASSERT_TRUE(write_file(*mem, "/f", "x"));
    ASSERT_TRUE(
        mem->utimens("/f", TimeUpdate::at({1000000000, 7}), TimeUpdate::at({1234567890, 5})));
    const Stat source = *mem->lstat("/f");
    auto all = build_and_open(*mem, dir.path / "a.pack", v2_options(PackTimes::all));
    auto some = build_and_open(*mem, dir.path / "m.pack", v2_options());
    ASSERT_TRUE(all && some);
    const Stat a = *all->lstat("/f"), m = *some->lstat("/f");
    EXPECT_EQ(a.atime, source.atime);
    EXPECT_EQ(a.mtime, source.mtime);
    EXPECT_EQ(a.ctime, source.ctime);
    EXPECT_EQ(m.atime, source.mtime);
    EXPECT_EQ(m.ctime, source.mtime);
    EXPECT_EQ(m.mtime, source.mtime);
}

}  // namespace
}  // namespace packfs::pack
