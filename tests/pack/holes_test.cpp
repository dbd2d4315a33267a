// Holes in packs (docs/FORMAT.md, the holes feature): whole blocks of zeros are stored in
// nothing, in raw and compressed packs alike, whether the source says where its holes are (a
// host file's SEEK_HOLE, a mem file's absent chunks) or they are only written zeros. They read
// back as zeros, lseek's SEEK_DATA / SEEK_HOLE finds them, verify passes, a raw pack still
// serves its data zero-copy, and a tree with no block of zeros packs as it did before the
// feature (no feature bit, no blocks section in a raw pack).
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "pack/format/format.hpp"
#include "packfs/mem.hpp"
#include "packfs/pack.hpp"
#include "packfs/path.hpp"
#include "support/files.hpp"

namespace packfs::pack {
namespace {

namespace fs = std::filesystem;
using test_support::slurp;
using test_support::TempDir;

constexpr uint64_t kMiB = 1 << 20;

const char* compression_name(Compression c) {
    return c == Compression::none ? "none" : c == Compression::zstd ? "zstd" : "lz4";
}
const uint32_t kBlock = PackWriteOptions{}.block_size;  // the default block size

// Bytes no block of zeros can hide in: every 4 KiB has non-zero bytes.
std::string dense_bytes(std::size_t n, char seed) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + i % 97 + 1);
    return s;
}

Result<void> pwrite_at(Backend& fs, std::string_view path, std::string_view bytes,
                       uint64_t offset) {
    auto f = fs.open(path, O_WRONLY | O_CREAT, 0644);
    if (!f) return std::unexpected(f.error());
    auto n = (*f)->pwrite(std::as_bytes(std::span(bytes)), offset);
    if (!n) return std::unexpected(n.error());
    return {};
}

struct Expected {
    std::string path;
    std::string bytes;
};

// A mem tree: a 64 MiB file with two bytes written (the rest absent chunks), 1 MiB of written
// zeros, a file whose middle block is zeros, and a small file.
std::vector<Expected> fill_sparse_tree(Backend& mem) {
    std::vector<Expected> files;
    std::string sparse(64 * kMiB, '\0');
    sparse[32 * kMiB] = 'x';
    sparse.back() = 'z';
    EXPECT_TRUE(pwrite_at(mem, "/sparse", "x", 32 * kMiB));
    EXPECT_TRUE(pwrite_at(mem, "/sparse", "z", 64 * kMiB - 1));
    files.push_back({"/sparse", std::move(sparse)});
    files.push_back({"/zeros", std::string(kMiB, '\0')});
    files.push_back({"/mixed", dense_bytes(kBlock, 'a') + std::string(2 * kBlock, '\0') +
                                   dense_bytes(kBlock, 'b')});
    files.push_back({"/small", "hello\n"});
    for (std::size_t i = 1; i < files.size(); ++i)
        EXPECT_TRUE(write_file(mem, files[i].path, files[i].bytes));
    return files;
}

Header header_of(const fs::path& path) {
    const std::string file = slurp(path);
    Header h{};
    EXPECT_GE(file.size(), sizeof h);
    std::memcpy(&h, file.data(), std::min(file.size(), sizeof h));
    return h;
}

// Walks `path`'s extents with SEEK_DATA / SEEK_HOLE as cp and tar do: every hole reads as
// zeros, the extents tile the file, and the bytes in holes are returned.
uint64_t hole_bytes(Backend& pack, const std::string& path, const std::string& want) {
    auto f = pack.open(path, O_RDONLY);
    EXPECT_TRUE(f) << path;
    if (!f) return 0;
    uint64_t holes = 0;
    for (uint64_t at = 0; at < want.size();) {
        auto data = (*f)->seek_data(at, true);
        const uint64_t data_at = data ? *data : want.size();
        if (!data) {
            EXPECT_EQ(data.error().code(), ENXIO) << path << " at " << at;
        }
        EXPECT_GE(data_at, at);
        EXPECT_LE(data_at, want.size());
        // [at, data_at) is a hole: zeros in the source.
        const auto first_data = want.find_first_not_of('\0', at);
        EXPECT_GE(first_data, data_at) << path << ": a hole at " << at << " over data";
        holes += data_at - at;
        if (data_at >= want.size()) break;
        auto hole = (*f)->seek_data(data_at, false);
        EXPECT_TRUE(hole) << path;
        if (!hole) break;
        EXPECT_GT(*hole, data_at) << path;
        at = *hole;
    }
    auto past = (*f)->seek_data(want.size(), true);
    EXPECT_FALSE(past);
    if (!past) {
        EXPECT_EQ(past.error().code(), ENXIO);
    }
    return holes;
}

class PackHoles : public ::testing::TestWithParam<Compression> {};

TEST_P(PackHoles, BlocksOfZerosAreStoredInNothingAndReadAsZeros) {
    TempDir dir;
    auto mem = make_mem_backend();
    const auto files = fill_sparse_tree(*mem);
    PackWriteOptions options;
    options.compression = GetParam();
    const fs::path path = dir.path / "holes.pack";
    auto stats = write_pack(*mem, path.string(), options);
    ASSERT_TRUE(stats) << stats.error().message();

    // 66 MiB of files in under 1 MiB: the data blocks of /sparse and /mixed at most.
    EXPECT_LT(fs::file_size(path), kMiB);
    EXPECT_LE(stats->data_bytes, 5u * kBlock);
    const Header h = header_of(path);
    EXPECT_NE(h.incompat_features & kIncompatHoles, 0u);

    for (PackAccess access : {PackAccess::mmap, PackAccess::pread}) {
        auto pack = open_pack(path.string(), {.access = access});
        ASSERT_TRUE(pack) << pack.error().message();
        EXPECT_TRUE((*pack)->info().has_holes);
        for (const Expected& f : files) {
            auto got = read_file(**pack, f.path);
            ASSERT_TRUE(got) << f.path << ": " << got.error().message();
            EXPECT_TRUE(*got == f.bytes) << f.path << " reads back different bytes";
            auto st = (*pack)->stat(f.path);
            ASSERT_TRUE(st);
            EXPECT_EQ(st->size, f.bytes.size());
        }
        // st_blocks counts what lies outside hole blocks (du sees the holes).
        auto sparse_st = (*pack)->stat("/sparse");
        ASSERT_TRUE(sparse_st);
        EXPECT_LE(sparse_st->blocks * 512, 4u * kBlock);
        EXPECT_GE(sparse_st->blocks, 1u);
        // A read across a hole and the data after it.
        std::string scratch;
        auto view = (*pack)->read_view("/mixed", kBlock - 10, 2 * kBlock + 20, scratch);
        ASSERT_TRUE(view);
        EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(view->data()), view->size()),
                  std::string_view(files[2].bytes).substr(kBlock - 10, 2 * kBlock + 20));
        // SEEK_HOLE finds the holes: all of /sparse but its two data blocks, at least one
        // whole block of /mixed, all of /zeros but the block it may share.
        EXPECT_GE(hole_bytes(**pack, "/sparse", files[0].bytes), 64 * kMiB - 4 * kBlock);
        EXPECT_GE(hole_bytes(**pack, "/zeros", files[1].bytes), kMiB - 2 * kBlock);
        EXPECT_GE(hole_bytes(**pack, "/mixed", files[2].bytes), kBlock);
        EXPECT_EQ(hole_bytes(**pack, "/small", files[3].bytes), 0u);
        auto report = (*pack)->verify();
        EXPECT_TRUE(report.ok()) << (report.problems.empty() ? "" : report.problems[0].what);
    }
}

INSTANTIATE_TEST_SUITE_P(Codecs, PackHoles,
                         ::testing::Values(Compression::none, Compression::zstd, Compression::lz4),
                         [](const auto& param) {
                             return std::string(compression_name(param.param));
                         });

TEST(PackHoles, ARawPackServesItsDataBlocksZeroCopyStill) {
    TempDir dir;
    auto mem = make_mem_backend();
    const auto files = fill_sparse_tree(*mem);
    const fs::path path = dir.path / "raw.pack";
    ASSERT_TRUE(write_pack(*mem, path.string(), {}));
    auto pack = open_pack(path.string());
    ASSERT_TRUE(pack);
    std::string scratch;
    // Within /mixed's first block (data), and within /sparse's block holding 'x'.
    auto view = (*pack)->read_view("/mixed", 100, 4000, scratch);
    ASSERT_TRUE(view);
    EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(view->data()), view->size()),
              std::string_view(files[2].bytes).substr(100, 4000));
    EXPECT_TRUE(scratch.empty()) << "a raw data block is viewed in the mapping";
    auto x = (*pack)->read_view("/sparse", 32 * kMiB, 1, scratch);
    ASSERT_TRUE(x);
    ASSERT_EQ(x->size(), 1u);
    EXPECT_EQ(static_cast<char>((*x)[0]), 'x');
    EXPECT_TRUE(scratch.empty());
}

TEST(PackHoles, ATreeWithoutBlocksOfZerosPacksAsBeforeTheFeature) {
    TempDir dir;
    auto mem = make_mem_backend();
    ASSERT_TRUE(write_file(*mem, "/a", dense_bytes(3 * kBlock + 5, 'a')));
    std::string almost_zeros(kBlock, '\0');  // no block of zeros: its last byte is not
    almost_zeros.back() = 'b';
    ASSERT_TRUE(write_file(*mem, "/b", almost_zeros));
    for (Compression c : {Compression::none, Compression::zstd}) {
        PackWriteOptions options;
        options.compression = c;
        const fs::path path = dir.path / "plain.pack";
        ASSERT_TRUE(write_pack(*mem, path.string(), options));
        const Header h = header_of(path);
        EXPECT_EQ(h.incompat_features & kIncompatHoles, 0u) << compression_name(c);
        if (c == Compression::none) {
            EXPECT_EQ(section(h, Section::blocks).length, 0u) << "a raw pack has no blocks";
            EXPECT_EQ(h.data_length, h.stream_size);
        }
    }
}

TEST(PackHoles, Version1StoresTheZerosAndReadsTheSame) {
    TempDir dir;
    auto mem = make_mem_backend();
    ASSERT_TRUE(pwrite_at(*mem, "/sparse", "x", 4 * kMiB - 1));
    PackWriteOptions options;
    options.format = 1;
    const fs::path path = dir.path / "v1.pack";
    ASSERT_TRUE(write_pack(*mem, path.string(), options));
    EXPECT_EQ(header_of(path).incompat_features & kIncompatHoles, 0u);
    EXPECT_GE(fs::file_size(path), 4 * kMiB);
    auto pack = open_pack(path.string());
    ASSERT_TRUE(pack);
    std::string want(4 * kMiB, '\0');
    want.back() = 'x';
    EXPECT_TRUE(read_file(**pack, "/sparse") == want);
}

// From a host directory: the source's holes are found with SEEK_HOLE (never read), and a
// 256 MiB file with one byte written packs into one block of data.
TEST(PackHoles, AHostFilesHolesAreFoundWithSeekHole) {
    TempDir dir;
    const fs::path src = dir.path / "src";
    fs::create_directories(src);
    {
        const int fd = ::open((src / "big").c_str(), O_WRONLY | O_CREAT, 0644);
        ASSERT_GE(fd, 0);
        ASSERT_EQ(::pwrite(fd, "y", 1, 200 * kMiB), 1);
        ASSERT_EQ(::ftruncate(fd, 256 * kMiB), 0);
        ::close(fd);
    }
    for (Compression c : {Compression::none, Compression::zstd}) {
        PackWriteOptions options;
        options.compression = c;
        const fs::path path = dir.path / "host.pack";
        auto stats = write_pack_from_host(src.string(), path.string(), options);
        ASSERT_TRUE(stats) << stats.error().message();
        EXPECT_LE(stats->data_bytes, kBlock) << compression_name(c);
        EXPECT_LT(fs::file_size(path), kMiB) << compression_name(c);
        auto pack = open_pack(path.string());
        ASSERT_TRUE(pack);
        std::string byte(1, '\0');
        auto f = (*pack)->open("/big", O_RDONLY);
        ASSERT_TRUE(f);
        auto n = (*f)->pread(std::as_writable_bytes(std::span(byte)), 200 * kMiB);
        ASSERT_TRUE(n);
        EXPECT_EQ(byte, "y");
        auto data = (*f)->seek_data(0, true);
        ASSERT_TRUE(data);
        EXPECT_LE(*data, 200 * kMiB);
        EXPECT_GT(*data, 200 * kMiB - kBlock);
        EXPECT_TRUE((*pack)->verify().ok());
    }
}

// What st_blocks must be for a regular file of a pack with holes, from the block walk that
// SEEK_DATA / SEEK_HOLE make: its bytes outside hole blocks, in 512-byte units, for a file of a
// block or more; a smaller one counts all its bytes.
uint64_t blocks_by_seeking(Backend& pack, const std::string& path, uint64_t size,
                           uint32_t block_size) {
    if (size < block_size) return (size + 511) / 512;
    auto f = pack.open(path, O_RDONLY);
    EXPECT_TRUE(f) << path;
    if (!f) return 0;
    uint64_t data = 0;
    for (uint64_t at = 0; at < size;) {
        auto start = (*f)->seek_data(at, true);
        if (!start) break;  // ENXIO: a hole up to the end
        auto end = (*f)->seek_data(*start, false);
        EXPECT_TRUE(end) << path;
        if (!end) break;
        data += *end - *start;
        at = *end;
    }
    return (data + 511) / 512;
}

// A stretch of a file's bytes: data (no block of zeros in it) or zeros.
struct Stretch {
    bool zeros;
    uint64_t length;
};

std::string bytes_of_stretches(const std::vector<Stretch>& runs, char seed) {
    std::string s;
    for (const Stretch& r : runs)
        s += r.zeros ? std::string(r.length, '\0') : dense_bytes(r.length, seed++);
    return s;
}

// Hole layouts around a file's first and last blocks, each file between two small ones of odd
// sizes so that it starts and ends inside blocks; a twin of one (one content, two names); and
// files below a block. st_blocks is what the block walk counts, the same by path, by node and
// by handle, twice over (the second time from anything remembered), and from several threads
// at once, in raw and compressed packs, with small and default blocks.
TEST(PackHoles, StatCountsTheBytesOutsideHoleBlocksAsTheBlockWalkDoes) {
    TempDir dir;
    auto alternating = [](uint64_t b, int pairs) {
        std::vector<Stretch> runs;
        for (int i = 0; i < pairs; ++i) runs.insert(runs.end(), {{false, b}, {true, 2 * b}});
        return runs;
    };
    for (const uint32_t b : {4096u, kBlock}) {
        const std::vector<std::vector<Stretch>> layouts = {
            {{false, b / 2}, {true, 3 * b}, {false, b / 2}},  // a hole in the middle
            {{true, 2 * b + 100}, {false, b}},                // starts in a hole
            {{false, b + 7}, {true, 2 * b}},                  // ends in a hole
            {{true, 5 * b + 300}},                            // all zeros
            alternating(b, 4),                                // data, hole, data, ...
            {{true, 20 * b}, {false, 1}, {true, 20 * b}},     // one byte in a large hole
            {{false, b}},                                     // one block of data
            {{false, 3 * b + 5}},                             // no hole anywhere
            {{true, b - 1}},                                  // below a block
        };
        auto mem = make_mem_backend();
        std::vector<Expected> files;
        for (std::size_t i = 0; i < layouts.size(); ++i) {
            const std::string name = fmt::format("/f{:02}", i);
            files.push_back({name, bytes_of_stretches(layouts[i], static_cast<char>('a' + i))});
            ASSERT_TRUE(write_file(*mem, name, files.back().bytes));
            ASSERT_TRUE(write_file(*mem, name + "_pad", dense_bytes(777 + 131 * i, 'p')));
        }
        files.push_back({"/twin", files[0].bytes});
        ASSERT_TRUE(write_file(*mem, "/twin", files.back().bytes));
        for (Compression c : {Compression::none, Compression::zstd, Compression::lz4}) {
            const std::string what = fmt::format("{}, {}-byte blocks", compression_name(c), b);
            PackWriteOptions options;
            options.compression = c;
            options.block_size = b;
            const fs::path path = dir.path / "layouts.pack";
            ASSERT_TRUE(write_pack(*mem, path.string(), options)) << what;
            ASSERT_NE(header_of(path).incompat_features & kIncompatHoles, 0u) << what;
            auto pack = open_pack(path.string());
            ASSERT_TRUE(pack) << what;
            std::vector<uint64_t> want;
            for (const Expected& f : files)
                want.push_back(blocks_by_seeking(**pack, f.path, f.bytes.size(), b));
            EXPECT_EQ(want[0], want.back()) << what << ": a twin has its content's blocks";
            for (std::size_t i = 0; i <= 5; ++i)  // the layouts with a whole block of zeros
                EXPECT_LT(want[i], (files[i].bytes.size() + 511) / 512) << what << ": " << i;
            EXPECT_LE(want[3] * 512, 2 * b) << what << ": all zeros shares two blocks at most";
            for (std::size_t i = 0; i < files.size(); ++i) {
                const std::string& p = files[i].path;
                for (int round = 0; round < 2; ++round) {
                    auto st = (*pack)->stat(p);
                    ASSERT_TRUE(st) << what << ": " << p;
                    EXPECT_EQ(st->blocks, want[i]) << what << ": " << p << " round " << round;
                }
                auto entry = (*pack)->lookup(kRootNode, p.substr(1));
                ASSERT_TRUE(entry) << what << ": " << p;
                EXPECT_EQ(entry->stat.blocks, want[i]) << what << ": " << p;
                auto f = (*pack)->open(p, O_RDONLY);
                ASSERT_TRUE(f);
                EXPECT_EQ((*f)->fstat()->blocks, want[i]) << what << ": " << p;
            }
            auto fresh = open_pack(path.string());  // nothing remembered, threads racing
            ASSERT_TRUE(fresh);
            std::atomic<int> wrong{0};
            std::vector<std::thread> threads;
            for (int t = 0; t < 4; ++t) {
                threads.emplace_back([&, t] {
                    for (int n = 0; n < 50; ++n) {
                        const std::size_t i = (n + t) % files.size();
                        auto st = (*fresh)->stat(files[i].path);
                        if (!st || st->blocks != want[i]) wrong.fetch_add(1);
                    }
                });
            }
            for (std::thread& t : threads) t.join();
            EXPECT_EQ(wrong.load(), 0) << what;
        }
    }
}

}  // namespace
}  // namespace packfs::pack
