// The walk layout (PackWriteOptions::Layout::walk): contents laid out in the order a depth-first
// walk of the finished pack meets them, each directory in its listing order. Checked by walking
// the opened pack as find does (list, then descend into each subdirectory as it comes) and
// reading each file's place in the pack file (host_bytes of a raw pack): the places rise
// strictly. The default layout, on the same tree, does not rise (so the check can fail), and
// both packs hold the same tree.
#include <fcntl.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "packfs/mem.hpp"
#include "packfs/pack.hpp"
#include "support/files.hpp"

namespace packfs {
namespace {

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

// The files' places in the pack file, in the order a depth-first walk in listing order meets
// them.
std::vector<uint64_t> places_in_walk_order(PackBackend& pack) {
    std::vector<uint64_t> out;
    std::function<void(const std::string&)> walk = [&](const std::string& dir) {
        auto entries = pack.readdir(dir);
        ASSERT_TRUE(entries);
        for (const DirEntry& e : *entries) {
            const std::string path = (dir == "/" ? "" : dir) + "/" + e.name;
            if (e.type == FileType::directory) {
                walk(path);
            } else if (e.type == FileType::regular) {
                auto f = pack.open(path, O_RDONLY);
                ASSERT_TRUE(f);
                auto bytes = (*f)->host_bytes(0, 1);
                ASSERT_TRUE(bytes.has_value()) << path;
                out.push_back(bytes->offset);
            }
        }
    };
    walk("/");
    return out;
}

TEST(PackLayout, TheWalkLayoutPutsContentsInTheOrderAWalkReadsThem) {
    TempDir dir;
    auto mem = make_mem_backend();
    fill(*mem);
    PackWriteOptions walk;
    walk.layout = PackWriteOptions::Layout::walk;
    const std::string walked = dir.path.string() + "/walk.pack";
    const std::string plain = dir.path.string() + "/inodes.pack";
    ASSERT_TRUE(write_pack(*mem, walked, walk));
    ASSERT_TRUE(write_pack(*mem, plain));

    auto w = open_pack(walked);
    auto p = open_pack(plain);
    ASSERT_TRUE(w && p);
    const auto w_places = places_in_walk_order(**w);
    const auto p_places = places_in_walk_order(**p);
    ASSERT_EQ(w_places.size(), 6u * 21u);
    EXPECT_TRUE(std::is_sorted(w_places.begin(), w_places.end()) &&
                std::adjacent_find(w_places.begin(), w_places.end()) == w_places.end());
    EXPECT_FALSE(std::is_sorted(p_places.begin(), p_places.end()))
        << "the default layout is breadth-first: a walk jumps around in it";

    EXPECT_TRUE((*w)->verify().ok());
    auto diff_free = [&](const std::string& path) {
        auto a = read_file(**w, path), b = read_file(**p, path);
        return a && b && *a == *b;
    };
    EXPECT_TRUE(diff_free("/d3/s2/f1") && diff_free("/d0/top") && diff_free("/d5/s4/f3"));
}

TEST(PackLayout, TheWalkLayoutIsFormat2Only) {
    TempDir dir;
    auto mem = make_mem_backend();
    ASSERT_TRUE(write_file(*mem, "/f", std::string(1000, 'x')));
    PackWriteOptions v1;
    v1.format = 1;
    v1.layout = PackWriteOptions::Layout::walk;
    auto r = write_pack(*mem, dir.path.string() + "/p.pack", v1);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), EINVAL);
}

}  // namespace
}  // namespace packfs
