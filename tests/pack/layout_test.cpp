// The walk layout (PackWriteOptions::Layout::walk, the default): contents laid out in the order a
// depth-first walk of the finished pack meets them, each directory in its listing order. Checked
// by walking the opened pack as find does (list, then descend into each subdirectory as it
// comes) and reading each file's place in the pack file (host_bytes of a raw pack): the places
// rise strictly. The inodes layout, on the same tree, does not rise (so the check can fail), and
// both packs hold the same tree. With duplicates, hard links, inline and large files the walk
// still stores each content once, small contents packed tightly and large ones page-aligned; a
// build is reproducible; a format 1 pack stays in inode order.
#include <fcntl.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "packfs/mem.hpp"
#include "packfs/pack.hpp"
#include "support/files.hpp"

namespace packfs {
namespace {

using test_support::slurp;
using test_support::TempDir;

// Directories within directories, each with files big enough for the stream (not inline).
void fill(Backend& mem) {
    for (int a = 0; a < 6; ++a) {
        const std::string dir = "/d" + std::to_string(a);
        ASSERT_TRUE(mem.mkdir(dir, 0755));
        for (int b = 0; b < 5; ++b) {
            const std::string sub = dir + "/s" + std::to_string(b);
            ASSERT_TRUE(mem.mkdir(sub, 0755));
            for (int f = 0; f < 4; ++f)  // every content distinct: no two files share a place
                ASSERT_TRUE(
                    write_file(mem, sub + "/f" + std::to_string(f),
                               sub + std::string(200 + 10 * f, static_cast<char>('a' + f))));
        }
        ASSERT_TRUE(write_file(mem, dir + "/top", dir + std::string(300, 'T')));
    }
}

// A regular file met by the walk: its path, size and place in the pack file (nullopt when its
// content is not in the data stream: inline, or empty).
struct Met {
    std::string path;
    uint64_t size = 0;
    std::optional<uint64_t> place;
};

// The regular files in the order a depth-first walk in listing order meets them.
std::vector<Met> files_in_walk_order(PackBackend& pack) {
    std::vector<Met> out;
    std::function<void(const std::string&)> walk = [&](const std::string& dir) {
        auto entries = pack.readdir(dir);
        ASSERT_TRUE(entries);
        for (const DirEntry& e : *entries) {
            const std::string path = (dir == "/" ? "" : dir) + "/" + e.name;
            if (e.type == FileType::directory) {
                walk(path);
            } else if (e.type == FileType::regular) {
                auto st = pack.lstat(path);
                ASSERT_TRUE(st);
                auto f = pack.open(path, O_RDONLY);
                ASSERT_TRUE(f);
                Met met{path, st->size, std::nullopt};
                if (auto bytes = (*f)->host_bytes(0, 1)) met.place = bytes->offset;
                out.push_back(std::move(met));
            }
        }
    };
    walk("/");
    return out;
}

// The places of the files the walk meets, all of them in the data stream.
std::vector<uint64_t> places_in_walk_order(PackBackend& pack) {
    std::vector<uint64_t> out;
    for (const Met& m : files_in_walk_order(pack)) {
        EXPECT_TRUE(m.place.has_value()) << m.path;
        if (m.place) out.push_back(*m.place);
    }
    return out;
}

TEST(PackLayout, TheWalkLayoutPutsContentsInTheOrderAWalkReadsThem) {
    TempDir dir;
    auto mem = make_mem_backend();
    fill(*mem);
    PackWriteOptions walk, inodes;
    walk.layout = PackWriteOptions::Layout::walk;
    inodes.layout = PackWriteOptions::Layout::inodes;
    const std::string walked = dir.path.string() + "/walk.pack";
    const std::string plain = dir.path.string() + "/inodes.pack";
    const std::string by_default = dir.path.string() + "/default.pack";
    ASSERT_TRUE(write_pack(*mem, walked, walk));
    ASSERT_TRUE(write_pack(*mem, plain, inodes));
    ASSERT_TRUE(write_pack(*mem, by_default));
    EXPECT_EQ(slurp(by_default), slurp(walked)) << "walk is the default layout";

    auto w = open_pack(walked);
    auto p = open_pack(plain);
    ASSERT_TRUE(w && p);
    const auto w_places = places_in_walk_order(**w);
    const auto p_places = places_in_walk_order(**p);
    ASSERT_EQ(w_places.size(), 6u * 21u);
    EXPECT_TRUE(std::is_sorted(w_places.begin(), w_places.end()) &&
                std::adjacent_find(w_places.begin(), w_places.end()) == w_places.end());
    EXPECT_FALSE(std::is_sorted(p_places.begin(), p_places.end()))
        << "the inodes layout is breadth-first: a walk jumps around in it";

    EXPECT_TRUE((*w)->verify().ok());
    auto diff_free = [&](const std::string& path) {
        auto a = read_file(**w, path), b = read_file(**p, path);
        return a && b && *a == *b;
    };
    EXPECT_TRUE(diff_free("/d3/s2/f1") && diff_free("/d0/top") && diff_free("/d5/s4/f3"));
}

// Duplicates (stored once, at the first name the walk meets), a hard link, inline and empty
// files, and large files among small ones: each new content the walk meets lies past every
// earlier one, a small one right after the last (packed tightly), a large one (16 KiB and up,
// raw packs) at the next 4 KiB boundary of the stream; every other file names a content met
// before it. Twice built, and from a fresh copy of the tree: the same bytes.
TEST(PackLayout, TheWalkKeepsDedupSmallFilePackingAndReproducibility) {
    TempDir dir;
    auto mem = make_mem_backend();
    fill(*mem);
    const std::string big = std::string(40000, 'B') + "big";
    ASSERT_TRUE(write_file(*mem, "/d1/big", big));
    ASSERT_TRUE(write_file(*mem, "/d4/s2/big", big));  // a duplicate of a large content
    ASSERT_TRUE(write_file(*mem, "/d2/huge", std::string(70000, 'H')));
    ASSERT_TRUE(write_file(*mem, "/d3/s0/copy", *read_file(*mem, "/d0/s1/f2")));  // small dup
    ASSERT_TRUE(write_file(*mem, "/d5/copy", *read_file(*mem, "/d3/s3/f0")));
    ASSERT_TRUE(mem->link("/d1/s1/f1", "/d5/s0/hard"));
    ASSERT_TRUE(write_file(*mem, "/d2/s2/tiny", "inline"));
    ASSERT_TRUE(write_file(*mem, "/d2/s3/empty", ""));

    const std::string one = dir.path.string() + "/1.pack";
    const std::string two = dir.path.string() + "/2.pack";
    auto stats = write_pack(*mem, one);
    ASSERT_TRUE(stats);
    ASSERT_TRUE(write_pack(*mem, two));
    EXPECT_EQ(slurp(one), slurp(two));
    auto copy = make_mem_backend();  // the same tree, made in another order
    std::function<void(const std::string&)> copy_dir = [&](const std::string& d) {
        auto entries = mem->readdir(d);
        ASSERT_TRUE(entries);
        std::vector<DirEntry> reversed(entries->rbegin(), entries->rend());
        for (const DirEntry& e : reversed) {
            const std::string path = (d == "/" ? "" : d) + "/" + e.name;
            if (e.type == FileType::directory) {
                ASSERT_TRUE(copy->mkdir(path, 0755));
                copy_dir(path);
            } else if (path != "/d5/s0/hard") {
                ASSERT_TRUE(write_file(*copy, path, *read_file(*mem, path)));
            }
        }
    };
    copy_dir("/");
    ASSERT_TRUE(copy->link("/d1/s1/f1", "/d5/s0/hard"));
    auto clock = [](Backend& b) {  // mtimes, which a pack records, made equal
        std::function<void(const std::string&)> set = [&](const std::string& d) {
            auto entries = b.readdir(d);
            ASSERT_TRUE(entries);
            for (const DirEntry& e : *entries) {
                const std::string path = (d == "/" ? "" : d) + "/" + e.name;
                if (e.type == FileType::directory) set(path);
                ASSERT_TRUE(b.utimens(path, TimeUpdate::at(Time{1'000'000'000, 0}),
                                      TimeUpdate::at(Time{1'000'000'000, 0})));
            }
        };
        set("/");
        ASSERT_TRUE(b.utimens("/", TimeUpdate::at(Time{1'000'000'000, 0}),
                              TimeUpdate::at(Time{1'000'000'000, 0})));
    };
    clock(*mem);
    clock(*copy);
    ASSERT_TRUE(write_pack(*mem, one));
    const std::string three = dir.path.string() + "/3.pack";
    PackWriteOptions one_job;
    one_job.jobs = 1;
    ASSERT_TRUE(write_pack(*copy, three, one_job));
    EXPECT_EQ(slurp(one), slurp(three)) << "a copy made in another order packs the same";

    auto pack = open_pack(one);
    ASSERT_TRUE(pack);
    const auto met = files_in_walk_order(**pack);
    ASSERT_EQ(met.size(), 6u * 21u + 8u);
    std::set<uint64_t> seen;
    uint64_t stream_start = 0, stream_end = 0;  // places, in the pack file
    std::size_t shared = 0, outside = 0;
    for (const Met& m : met) {
        if (!m.place) {
            EXPECT_LE(m.size, 64u) << m.path << ": only inline and empty files are outside";
            ++outside;
            continue;
        }
        if (seen.contains(*m.place)) {
            ++shared;
            continue;
        }
        if (seen.empty()) {
            stream_start = stream_end = *m.place;
        } else if (m.size >= 16384) {
            const uint64_t at = stream_end - stream_start;
            EXPECT_EQ(*m.place - stream_start, (at + 4095) / 4096 * 4096) << m.path;
        } else {
            EXPECT_EQ(*m.place, stream_end) << m.path << ": small contents packed tightly";
        }
        seen.insert(*m.place);
        stream_end = *m.place + m.size;
    }
    EXPECT_EQ(outside, 2u);  // tiny, empty
    EXPECT_EQ(shared, 4u);   // the second big, two small copies, the hard link
    EXPECT_EQ(stats->unique_bytes, stats->file_bytes - big.size() -
                                       read_file(*mem, "/d3/s0/copy")->size() -
                                       read_file(*mem, "/d5/copy")->size());
    EXPECT_TRUE((*pack)->verify().ok());
    for (const Met& m : met) {
        auto stored = read_file(**pack, m.path);
        ASSERT_TRUE(stored) << m.path;
        EXPECT_EQ(*stored, *read_file(*mem, m.path)) << m.path;
    }
}

// Format 1 has no walk layout: its packs are laid out in inode order whatever the option says
// (so the default, walk, builds one as it always did).
TEST(PackLayout, AFormat1PackIsInInodeOrderWhateverTheLayout) {
    TempDir dir;
    auto mem = make_mem_backend();
    fill(*mem);
    PackWriteOptions v1;
    v1.format = 1;
    ASSERT_TRUE(write_pack(*mem, dir.path.string() + "/default.pack", v1));
    v1.layout = PackWriteOptions::Layout::walk;
    ASSERT_TRUE(write_pack(*mem, dir.path.string() + "/walk.pack", v1));
    v1.layout = PackWriteOptions::Layout::inodes;
    ASSERT_TRUE(write_pack(*mem, dir.path.string() + "/inodes.pack", v1));
    const std::string inodes = slurp(dir.path / "inodes.pack");
    EXPECT_EQ(slurp(dir.path / "default.pack"), inodes);
    EXPECT_EQ(slurp(dir.path / "walk.pack"), inodes);
}

}  // namespace
}  // namespace packfs
