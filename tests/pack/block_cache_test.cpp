// The decompressed-block cache (src/pack/reader/block_cache.hpp) never holds more than its bound:
// the cache alone under 8 threads inserting and finding blocks, and a compressed pack's reader
// under 8 threads reading its files at random (each read checked), with a cache far smaller than
// the pack's blocks. The bound is checked on the cache's own count of the bytes it holds, after
// every operation and as its high-water mark at the end. And the decompression ahead of a
// sequential reader (src/pack/reader/decompress_ahead.hpp), which fills the same cache: a run of
// reads from block to block has the blocks after it inflated on its thread, reads that jump about
// do not.
#include "pack/reader/block_cache.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "pack/reader/reader.hpp"
#include "packfs/mem.hpp"
#include "packfs/pack.hpp"
#include "support/files.hpp"

namespace packfs::pack {
namespace {

using test_support::TempDir;

constexpr int kThreads = 8;

TEST(BlockCache, NeverExceedsItsBoundUnderParallelInserts) {
    constexpr uint32_t kBlock = 4096;
    constexpr std::size_t kCapacity = 40 * kBlock;  // 2 shards of 5 blocks: eviction throughout
    BlockCache cache(kCapacity, kBlock);
    ASSERT_TRUE(cache.enabled());
    ASSERT_LE(cache.stats().capacity, kCapacity);
    std::atomic<bool> over{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            std::mt19937 rng(static_cast<uint32_t>(t) + 1);
            for (int i = 0; i < 20000; ++i) {
                const uint64_t index = rng() % 400;
                if (CachedBlock hit = cache.find(index)) {
                    // A block is never changed: its bytes still say which it is.
                    if (hit.bytes[0] != static_cast<std::byte>(index & 0xff)) over = true;
                } else {
                    // Blocks of every size up to a whole one (a pack's last block is shorter).
                    const std::size_t size = 1 + rng() % kBlock;
                    auto bytes = std::make_shared_for_overwrite<std::byte[]>(size);
                    bytes[0] = static_cast<std::byte>(index & 0xff);
                    cache.insert(index, CachedBlock{std::move(bytes), size});
                }
                if (cache.stats().bytes > kCapacity) over = true;
            }
        });
    }
    for (auto& t : threads) t.join();
    const BlockCache::Stats s = cache.stats();
    EXPECT_FALSE(over);
    EXPECT_LE(s.peak_bytes, kCapacity);
    EXPECT_LE(s.bytes, s.peak_bytes);
    EXPECT_GT(s.peak_bytes, kCapacity / 2);  // it did fill up
}

TEST(BlockCache, BelowOneBlockKeepsNothing) {
    BlockCache cache(4095, 4096);
    EXPECT_FALSE(cache.enabled());
    auto bytes = std::make_shared_for_overwrite<std::byte[]>(10);
    cache.insert(1, CachedBlock{std::move(bytes), 10});
    EXPECT_FALSE(cache.find(1));
    EXPECT_EQ(cache.stats().peak_bytes, 0u);
}

// Text that compresses (so its blocks are stored compressed and go through the cache), and
// differs from file to file and block to block.
std::string content_of(int file, std::size_t size) {
    std::string out;
    out.reserve(size + 64);
    for (int line = 0; out.size() < size; ++line)
        out += fmt::format("file {} line {} of a compressible text\n", file, line);
    out.resize(size);
    return out;
}

TEST(BlockCache, PackReaderStaysWithinItsBoundUnderEightReaders) {
    constexpr int kFiles = 64;
    constexpr uint32_t kBlock = 4096;
    constexpr std::size_t kCapacity = 16 * kBlock;  // 4 shards of 4 blocks; the pack has ~800
    const TempDir dir;
    auto mem = make_mem_backend();
    std::vector<std::string> contents;
    std::mt19937 sizes(7);
    for (int f = 0; f < kFiles; ++f) {
        contents.push_back(content_of(f, 1000 + sizes() % (100 * 1024)));
        ASSERT_TRUE(write_file(*mem, fmt::format("/f{}", f), contents.back()));
    }
    const std::string path = (dir.path / "cache.pack").string();
    for (Compression codec : {Compression::zstd, Compression::lz4}) {
        SCOPED_TRACE(static_cast<int>(codec));
        PackWriteOptions options;
        options.compression = codec;
        options.block_size = kBlock;
        auto built = write_pack(*mem, path, options);
        ASSERT_TRUE(built) << built.error().message();
        for (PackAccess access : {PackAccess::mmap, PackAccess::pread}) {
            auto reader = PackReader::open(
                path, PackOpenOptions{.access = access, .block_cache_bytes = kCapacity});
            ASSERT_TRUE(reader) << reader.error().message();
            const PackReader& r = **reader;
            ASSERT_LE(r.data().cache_stats().capacity, kCapacity);
            ASSERT_GT(r.data().cache_stats().capacity, 0u);
            const Ctx ctx{"read", {}};
            auto root = r.root(ctx);
            ASSERT_TRUE(root);
            std::vector<ContentRef> refs;
            for (int f = 0; f < kFiles; ++f) {
                auto node = r.lookup(*root, fmt::format("f{}", f), ctx);
                ASSERT_TRUE(node && *node);
                auto content = r.content(**node, ctx);
                ASSERT_TRUE(content);
                refs.push_back(*content);
            }
            std::atomic<int> wrong{0}, over{0};
            std::vector<std::thread> threads;
            for (int t = 0; t < kThreads; ++t) {
                threads.emplace_back([&, t] {
                    std::mt19937 rng(static_cast<uint32_t>(t) * 31 + 5);
                    std::vector<std::byte> buf(3 * kBlock);
                    for (int i = 0; i < 1500; ++i) {
                        const int f = static_cast<int>(rng() % kFiles);
                        const std::string& want = contents[static_cast<std::size_t>(f)];
                        const uint64_t offset = rng() % want.size();
                        const std::size_t length = 1 + rng() % buf.size();
                        auto n = r.read(refs[static_cast<std::size_t>(f)], offset,
                                        std::span(buf.data(), length), Ctx{"read", {}});
                        const std::size_t expect =
                            std::min<std::size_t>(length, want.size() - offset);
                        if (!n || *n != expect ||
                            std::memcmp(buf.data(), want.data() + offset, expect) != 0)
                            ++wrong;
                        if (r.data().cache_stats().bytes > kCapacity) ++over;
                    }
                });
            }
            for (auto& t : threads) t.join();
            const BlockCache::Stats s = r.data().cache_stats();
            EXPECT_EQ(wrong.load(), 0);
            EXPECT_EQ(over.load(), 0);
            EXPECT_LE(s.peak_bytes, kCapacity);
            EXPECT_GT(s.peak_bytes, kCapacity / 2);  // the cache was used, and filled
        }
    }
}

// One compressible file of kBlocks blocks in a zstd pack, read through a PackReader.
struct OneFilePack {
    static constexpr uint32_t kBlock = 32 * 1024;
    static constexpr int kBlocks = 64;
    static constexpr uint64_t kHalf = kBlocks / 2;
    // Steps in a row that start decompressing ahead, and how many blocks it goes ahead.
    static constexpr uint64_t kRunSteps = DecompressAhead::kRunBytes / kBlock;
    static constexpr uint64_t kAhead = DecompressAhead::kAheadBytes / kBlock;
    TempDir dir;
    std::string content = content_of(1, kBlocks * kBlock);
    std::string path = (dir.path / "ahead.pack").string();

    OneFilePack() {
        auto mem = make_mem_backend();
        EXPECT_TRUE(write_file(*mem, "/f", content));
        PackWriteOptions options;
        options.compression = Compression::zstd;
        options.block_size = kBlock;
        auto built = write_pack(*mem, path, options);
        EXPECT_TRUE(built) << built.error().message();
    }
    // Reads block after block in `order` (each checked), `pause` after each (a FUSE reader's
    // round trip); the reader's ahead stats then.
    DecompressAhead::Stats read_blocks(const std::vector<int>& order,
                                       std::chrono::microseconds pause = {}) const {
        auto reader = PackReader::open(path, PackOpenOptions{});
        EXPECT_TRUE(reader) << reader.error().message();
        if (!reader) return {};
        const PackReader& r = **reader;
        const Ctx ctx{"read", {}};
        auto root = r.root(ctx);
        auto node = r.lookup(*root, "f", ctx);
        EXPECT_TRUE(node && *node);
        auto ref = r.content(**node, ctx);
        EXPECT_TRUE(ref);
        EXPECT_EQ(ref->offset % kBlock, 0u);  // file block b is stream block b + a constant
        std::vector<std::byte> buf(kBlock);
        for (int b : order) {
            const uint64_t offset = static_cast<uint64_t>(b) * kBlock;
            auto n = r.read(*ref, offset, buf, ctx);
            EXPECT_TRUE(n && *n == kBlock &&
                        std::memcmp(buf.data(), content.data() + offset, kBlock) == 0)
                << "block " << b;
            if (pause.count() > 0) std::this_thread::sleep_for(pause);
        }
        return r.data().ahead_stats();
    }
};

TEST(DecompressAhead, ASequentialReaderHasTheBlocksAheadInflated) {
    const OneFilePack pack;
    ASSERT_GE(OneFilePack::kRunSteps, 2u);
    std::vector<int> order(OneFilePack::kBlocks);
    std::iota(order.begin(), order.end(), 0);
    // From the block that completes a run on, the thread inflates what follows while the
    // reader pauses; whether it is first to each block is the scheduler's call, so a few tries.
    DecompressAhead::Stats s;
    for (int attempt = 0; attempt < 5 && s.inflated < OneFilePack::kHalf; ++attempt)
        s = pack.read_blocks(order, std::chrono::milliseconds(1));
    EXPECT_GE(s.inflated, OneFilePack::kHalf);
    EXPECT_LE(s.inflated, OneFilePack::kBlocks - OneFilePack::kRunSteps - 1);
}

TEST(DecompressAhead, ReadsThatJumpAboutInflateNothingAhead) {
    const OneFilePack pack;
    std::vector<int> order(OneFilePack::kBlocks);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937(11));
    uint64_t run = 0, longest = 0;  // steps in a row to the block after the one read before
    for (std::size_t i = 1; i < order.size(); ++i) {
        run = order[i] == order[i - 1] + 1 ? run + 1 : 0;
        longest = std::max(longest, run);
    }
    ASSERT_LT(longest, OneFilePack::kRunSteps);
    EXPECT_EQ(pack.read_blocks(order).inflated, 0u);
    // Backwards, or every other block: no step at all.
    std::sort(order.begin(), order.end(), std::greater<>());
    EXPECT_EQ(pack.read_blocks(order).inflated, 0u);
    std::vector<int> every_other;
    for (int b = 0; b < OneFilePack::kBlocks; b += 2) every_other.push_back(b);
    EXPECT_EQ(pack.read_blocks(every_other).inflated, 0u);
}

// A child process made while the pack's thread runs (Python's multiprocessing forks) has no
// such thread: its reads inflate their own blocks, never wait for one, and its reader closes.
TEST(DecompressAhead, AForkedChildReadsOnWithoutTheThread) {
    const OneFilePack pack;
    auto reader = PackReader::open(pack.path, PackOpenOptions{});
    ASSERT_TRUE(reader) << reader.error().message();
    const Ctx ctx{"read", {}};
    auto root = (*reader)->root(ctx);
    auto node = (*reader)->lookup(*root, "f", ctx);
    ASSERT_TRUE(node && *node);
    auto ref = (*reader)->content(**node, ctx);
    ASSERT_TRUE(ref);
    const auto read_all = [&](int from) {
        std::vector<std::byte> buf(OneFilePack::kBlock);
        for (int b = from; b < OneFilePack::kBlocks; ++b) {
            const uint64_t offset = static_cast<uint64_t>(b) * OneFilePack::kBlock;
            auto n = (*reader)->read(*ref, offset, buf, ctx);
            if (!n || *n != buf.size() ||
                std::memcmp(buf.data(), pack.content.data() + offset, buf.size()) != 0)
                return false;
        }
        return true;
    };
    // Half the file read in order: the thread is started and working ahead as the fork comes.
    std::vector<std::byte> buf(OneFilePack::kBlock);
    for (int b = 0; b < OneFilePack::kBlocks / 2; ++b)
        ASSERT_TRUE((*reader)->read(*ref, static_cast<uint64_t>(b) * OneFilePack::kBlock, buf, ctx));
    std::fflush(nullptr);  // the child's exit() flushes what is buffered: nothing twice
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        const uint64_t before = (*reader)->data().ahead_stats().inflated;
        const bool ok = read_all(0) && (*reader)->data().ahead_stats().inflated == before;
        reader->reset();  // closed: not joined with a thread that is not here
        // exit(), not _exit(): static destructors run too (a condition variable the parent's
        // thread waited on, destroyed here, would wait for it forever).
        std::exit(ok ? 0 : 1);
    }
    EXPECT_TRUE(read_all(OneFilePack::kBlocks / 2));  // the parent goes on with its thread
    int status = 0;
    for (int i = 0; i < 600 && ::waitpid(child, &status, WNOHANG) == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (::waitpid(child, &status, WNOHANG) == 0) {
        ::kill(child, SIGKILL);
        ::waitpid(child, &status, 0);
        FAIL() << "the child hung";
    }
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "the child read wrong bytes, or waited for the thread";
}

}  // namespace
}  // namespace packfs::pack
