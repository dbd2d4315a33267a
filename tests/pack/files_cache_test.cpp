// The files cache of builds over a base (files_cache.hpp, docs/PACK.md "Builds over a base"):
// a host tree packed, then packed again over that pack. Files whose path, size, mtime, ctime and
// inode number are unchanged are taken from the base unread; every other file is read: one
// rewritten with the same size and its mtime set back (ctime gives it away), one just written
// (racy when the base was built), and every file when the cache is damaged, hostile, or names a
// content no base holds. Whatever the cache says, the pack is byte for byte the one a build that
// reads every file writes.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>

#include "pack/format/digest.hpp"
#include "pack/writer/files_cache.hpp"
#include "packfs/pack.hpp"
#include "support/files.hpp"

namespace packfs::pack {
namespace {

namespace fs = std::filesystem;
using test_support::slurp;
using test_support::TempDir;

constexpr int kFiles = 30;

void write_host(const fs::path& path, const std::string& bytes) {
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << bytes;
}

std::string random_text(std::size_t n, std::mt19937_64& rng) {
    std::string s(n, '\0');
    for (auto& c : s) c = static_cast<char>('a' + rng() % 26);
    return s;
}

// Sets a file's mtime to `seconds` (its ctime becomes now, as it does for any change).
void set_mtime(const fs::path& path, int64_t seconds) {
    const timespec times[2] = {{seconds, 0}, {seconds, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0) << path;
}

class FilesCacheTest : public ::testing::Test {
protected:
    void SetUp() override {
        std::mt19937_64 rng(7);
        for (int i = 0; i < kFiles; ++i) {
            const fs::path p = src() / fmt::format("d{}/f{}", i % 3, i);
            write_host(p, random_text(2000 + i * 700, rng));
            set_mtime(p, 1'600'000'000 + i);
        }
        write_host(src() / "tiny", "inline");  // in the metadata: never in a files cache
        // Nothing recorded is racy once a second has passed since it was written.
        std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    }

    fs::path src() const { return dir_.path / "src"; }
    std::string cache() const { return (dir_.path / "files").string(); }

    PackStats build(const std::string& out, std::vector<std::string> bases, bool with_cache) {
        PackWriteOptions options;
        options.compression = Compression::zstd;
        options.chunk_size = 4096;
        options.bases = std::move(bases);
        options.files_cache = with_cache ? cache() : std::string();
        auto stats = write_pack_from_host(src().string(), (dir_.path / out).string(), options);
        EXPECT_TRUE(stats) << (stats ? "" : stats.error().message());
        return stats ? *stats : PackStats{};
    }
    std::string bytes_of(const std::string& pack) { return slurp(dir_.path / pack); }
    std::string base() const { return (dir_.path / "v1.pack").string(); }

    // v2 over v1 with the cache, and again reading every file: the same bytes.
    PackStats build_v2_both_ways() {
        const PackStats cached = build("v2.pack", {base()}, true);
        const PackStats read = build("v2-read.pack", {base()}, false);
        EXPECT_EQ(read.unchanged_files, 0u);
        EXPECT_EQ(bytes_of("v2.pack"), bytes_of("v2-read.pack"));
        return cached;
    }

    TempDir dir_;
};

TEST_F(FilesCacheTest, UnchangedFilesAreTakenFromTheBaseUnread) {
    EXPECT_EQ(build("v1.pack", {}, true).unchanged_files, 0u);
    const PackStats v2 = build_v2_both_ways();
    EXPECT_EQ(v2.unchanged_files, static_cast<uint64_t>(kFiles));
    EXPECT_EQ(v2.stream_bytes, 0u);  // nothing new to store
}

TEST_F(FilesCacheTest, AFileRewrittenWithItsOldSizeAndMtimeIsRead) {
    build("v1.pack", {}, true);
    const fs::path p = src() / "d1/f4";
    std::string changed = slurp(p);
    changed[10] ^= 1;
    write_host(p, changed);
    set_mtime(p, 1'600'000'004);  // as before: only its ctime moved
    const PackStats v2 = build_v2_both_ways();
    EXPECT_EQ(v2.unchanged_files, static_cast<uint64_t>(kFiles - 1));
    EXPECT_GT(v2.stream_bytes, 0u);
    auto pack = open_pack((dir_.path / "v2.pack").string());
    ASSERT_TRUE(pack);
    auto got = read_file(**pack, "/d1/f4");
    ASSERT_TRUE(got);
    EXPECT_EQ(*got, changed);
}

TEST_F(FilesCacheTest, AFileWrittenJustBeforeTheBaseIsNotRecorded) {
    const fs::path p = src() / "d2/f5";
    write_host(p, slurp(p) + "more");  // now: racy for the build that follows at once
    build("v1.pack", {}, true);
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    EXPECT_EQ(build_v2_both_ways().unchanged_files, static_cast<uint64_t>(kFiles - 1));
}

TEST_F(FilesCacheTest, ADamagedOrHostileCacheReadsEveryFile) {
    const PackStats v1 = build("v1.pack", {}, true);
    const fs::path file = fs::path(cache()) / (v1.digest + ".files");
    ASSERT_TRUE(fs::exists(file));
    const std::string good = slurp(file);
    std::mt19937_64 rng(3);
    for (int round = 0; round < 40; ++round) {
        std::string bad = good;
        if (round < 20) {
            bad[rng() % bad.size()] ^= static_cast<char>(1 + rng() % 255);  // one byte
        } else if (round < 30) {
            bad.resize(rng() % bad.size());  // cut short
        } else {
            for (char& c : bad) c = static_cast<char>(rng());  // noise
        }
        write_host(file, bad);
        EXPECT_EQ(build_v2_both_ways().unchanged_files, 0u) << "round " << round;
    }
}

TEST_F(FilesCacheTest, ADigestNoBaseHoldsIsNotTaken) {
    const PackStats v1 = build("v1.pack", {}, true);
    // A cache of v1's digest that records every file as it is, under a digest v1 lacks.
    std::vector<FilesCacheEntry> entries;
    std::vector<std::string> paths;
    for (int i = 0; i < kFiles; ++i) paths.push_back(fmt::format("/d{}/f{}", i % 3, i));
    for (const std::string& path : paths) {
        struct stat st {};
        ASSERT_EQ(::stat((src().string() + path).c_str(), &st), 0);
        FilesCacheEntry e;
        e.path = path;
        e.stamp = FileStamp{static_cast<uint64_t>(st.st_size), st.st_ino,
                            Time{st.st_mtim.tv_sec, st.st_mtim.tv_nsec},
                            Time{st.st_ctim.tv_sec, st.st_ctim.tv_nsec}};
        e.sha256.fill(0xab);
        entries.push_back(e);
    }
    Sha256Digest digest;
    for (std::size_t i = 0; i < digest.size(); ++i)
        digest[i] = static_cast<uint8_t>(std::stoi(v1.digest.substr(2 * i, 2), nullptr, 16));
    ASSERT_TRUE(FilesCache::write(cache(), digest, entries));
    EXPECT_EQ(FilesCache::load(cache(), digest).size(), static_cast<std::size_t>(kFiles));
    EXPECT_EQ(build_v2_both_ways().unchanged_files, 0u);
}

TEST_F(FilesCacheTest, OnlyTheNewestCachesAreKept) {
    std::vector<FilesCacheEntry> none;
    for (std::size_t i = 0; i < kFilesCachesKept + 5; ++i) {
        Sha256Digest digest{};
        digest[0] = static_cast<uint8_t>(i);
        ASSERT_TRUE(FilesCache::write(cache(), digest, none));
    }
    std::size_t kept = 0;
    for (const auto& entry : fs::directory_iterator(cache())) kept += entry.path().extension() == ".files";
    EXPECT_EQ(kept, kFilesCachesKept);
}

}  // namespace
}  // namespace packfs::pack
