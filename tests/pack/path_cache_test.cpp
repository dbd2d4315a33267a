// The per-thread cache of path prefixes (src/pack/reader/path_cache.hpp) must never change an answer:
// packs with the same paths and other contents, a pack closed and another opened in its place,
// more directories than the cache holds, symlinked prefixes, and threads reading at once all
// answer exactly what each pack's tree holds. (The conformance suite's read-only topics run
// through the cache too.)
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <thread>
#include <vector>

#include "packfs/mem.hpp"
#include "packfs/pack.hpp"
#include "packfs/path.hpp"
#include "support/files.hpp"

namespace packfs::pack {
namespace {

using test_support::TempDir;

constexpr int kDirs = 600;  // more than the cache's 256 slots
constexpr int kFilesPerDir = 3;

std::string dir_of(int d) {
    return fmt::format("/a/b{}/c", d);
}
std::string file_of(int d, int f) {
    return fmt::format("{}/f{}", dir_of(d), f);
}
std::string content_of(std::string_view tag, int d, int f) {
    return fmt::format("{} {} {}", tag, d, f);
}

Result<void> mkdir_all(Backend& fs, std::string_view path) {
    for (std::size_t at = path.find('/', 1);; at = path.find('/', at + 1)) {
        auto made = fs.mkdir(path.substr(0, at));
        if (!made && made.error().code() != EEXIST) return made;
        if (at == std::string_view::npos) return {};
    }
}

// The same paths in every pack (at other records when `link_to_a` differs); each file says
// which pack it is in. "/link" points at /a in
// one pack and at /other in another, so a symlinked prefix names other directories per pack.
std::shared_ptr<PackBackend> make_pack(const TempDir& dir, std::string_view tag, bool link_to_a) {
    auto mem = make_mem_backend();
    EXPECT_TRUE(mkdir_all(*mem, "/other"));
    // Other entries beside them, so the same path is another record in each kind of pack.
    for (int extra = 0; extra < (link_to_a ? 0 : 37); ++extra)
        EXPECT_TRUE(mkdir_all(*mem, fmt::format("/a/b{}/extra{}", extra, extra)));
    for (int d = 0; d < kDirs; ++d) {
        EXPECT_TRUE(mkdir_all(*mem, dir_of(d)));
        for (int f = 0; f < kFilesPerDir; ++f)
            EXPECT_TRUE(write_file(*mem, file_of(d, f), content_of(tag, d, f)));
    }
    EXPECT_TRUE(mkdir_all(*mem, "/other/b0/c"));
    EXPECT_TRUE(write_file(*mem, "/other/b0/c/f0", "other"));
    EXPECT_TRUE(mem->symlink(link_to_a ? "a" : "other", "/link"));
    const std::string path = (dir.path / fmt::format("{}.pack", tag)).string();
    EXPECT_TRUE(write_pack(*mem, path));
    auto pack = open_pack(path);
    EXPECT_TRUE(pack) << pack.error().message();
    return *pack;
}

// Reads `n` random files of `pack` by path (read_file and read_view), each checked.
void read_random(PackBackend& pack, std::string_view tag, int n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::string scratch;
    for (int i = 0; i < n; ++i) {
        const int d = static_cast<int>(rng() % kDirs), f = static_cast<int>(rng() % kFilesPerDir);
        const std::string want = content_of(tag, d, f);
        auto got = read_file(pack, file_of(d, f));
        ASSERT_TRUE(got) << file_of(d, f) << ": " << got.error().message();
        ASSERT_EQ(*got, want);
        auto view = pack.read_view(file_of(d, f), 0, 100, scratch);
        ASSERT_TRUE(view);
        ASSERT_EQ(std::string(reinterpret_cast<const char*>(view->data()), view->size()), want);
    }
}

TEST(PackPathCache, PacksWithTheSamePathsKeepTheirOwnAnswers) {
    TempDir dir;
    auto one = make_pack(dir, "one", true);
    auto two = make_pack(dir, "two", false);
    for (int round = 0; round < 3; ++round) {
        read_random(*one, "one", 500, 1 + round);
        read_random(*two, "two", 500, 1 + round);  // the same paths, just cached for `one`
    }
    // A symlinked prefix names another directory in each pack, and is never taken for the
    // directory a plain prefix of the same bytes named.
    EXPECT_EQ(read_file(*one, "/link/b0/c/f0").value_or("?"), content_of("one", 0, 0));
    EXPECT_EQ(read_file(*two, "/link/b0/c/f0").value_or("?"), "other");
    EXPECT_EQ(read_file(*one, "/link/b0/c/f0").value_or("?"), content_of("one", 0, 0));
    // Misses and errors still answer as the walk does, before and after the prefix is cached
    // (a fresh pack's first answers are the walk's own: nothing of it is cached yet).
    auto fresh = make_pack(dir, "fresh", true);
    const int dotdot = fresh->lstat(dir_of(1) + "/../c/f0").error().code();
    for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(one->lstat(dir_of(1) + "/nope").error().code(), ENOENT);
        EXPECT_EQ(one->lstat(file_of(1, 0) + "/x").error().code(), ENOTDIR);
        EXPECT_EQ(one->stat(dir_of(1) + "/").value().type, FileType::directory);
        EXPECT_EQ(one->lstat(file_of(1, 0) + "/").error().code(), ENOTDIR);
        EXPECT_EQ(one->lstat(dir_of(1) + "/../c/f0").error().code(), dotdot);
    }
}

TEST(PackPathCache, APackOpenedWhereAnotherWasAnswersForItself) {
    TempDir dir;
    for (int generation = 0; generation < 3; ++generation) {
        const std::string tag = fmt::format("gen{}", generation);
        auto pack = make_pack(dir, tag, generation % 2 == 0);
        read_random(*pack, tag, 400, 7);  // the same paths each time, cached by the last pack
    }
}

TEST(PackPathCache, ThreadsReadingAtOnceEachGetTheRightBytes) {
    TempDir dir;
    auto one = make_pack(dir, "one", true);
    auto two = make_pack(dir, "two", false);
    std::vector<std::thread> threads;
    for (uint32_t t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            for (int round = 0; round < 3; ++round) {
                read_random(t % 2 ? *one : *two, t % 2 ? "one" : "two", 200, t * 10 + round);
                read_random(t % 2 ? *two : *one, t % 2 ? "two" : "one", 200, t * 10 + round);
            }
        });
    }
    for (auto& thread : threads) thread.join();
}

}  // namespace
}  // namespace packfs::pack
