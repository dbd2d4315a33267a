// What a mutation of the mem engine allocates (DESIGN §5): on a tree no snapshot has seen since
// its nodes were made, a constant number of objects whatever the tree's size (the writer
// changes its own nodes in place); with a snapshot held, the path it copies grows as the log
// of the directory's size. Counted with a global operator new and the engine's arena hook
// (tests/map/alloc_counter.cpp).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "packfs/mem.hpp"

uint64_t packfs_test_allocations() noexcept;
uint64_t packfs_test_allocated_bytes() noexcept;

namespace packfs {
namespace {

std::shared_ptr<Backend> tree_of(int files) {
    auto fs = make_mem_backend();
    EXPECT_TRUE(fs->mkdir("/d"));
    for (int i = 0; i < files; ++i) {
        auto f = fs->open(fmt::format("/d/file-{}", i), O_WRONLY | O_CREAT | O_EXCL, 0644);
        EXPECT_TRUE(f);
    }
    return fs;
}

// Allocations of `op` averaged over `rounds` calls of it (each with its round number).
template <class Op>
double allocations_per(int rounds, Op&& op) {
    uint64_t total = 0;
    for (int r = 0; r < rounds; ++r) {
        const uint64_t before = packfs_test_allocations();
        op(r);
        total += packfs_test_allocations() - before;
    }
    return static_cast<double>(total) / rounds;
}

struct Costs {
    double chmod, create, unlink;
};

Costs without_snapshots(int files) {
    auto fs = tree_of(files);
    Costs c;
    c.chmod = allocations_per(200, [&](int r) {
        EXPECT_TRUE(fs->chmod(fmt::format("/d/file-{}", r % files), 0600 + (r & 7)));
    });
    c.create = allocations_per(200, [&](int r) {
        auto f = fs->open(fmt::format("/d/new-{}", r), O_WRONLY | O_CREAT | O_EXCL, 0644);
        EXPECT_TRUE(f);
    });
    c.unlink = allocations_per(200, [&](int r) { EXPECT_TRUE(fs->unlink(fmt::format("/d/new-{}", r))); });
    return c;
}

Costs with_a_snapshot_each_time(int files) {
    auto fs = tree_of(files);
    std::shared_ptr<Backend> snap;
    Costs c;
    auto fresh_snapshot = [&] {
        snap.reset();
        snap = *fs->snapshot();
    };
    c.chmod = 0;
    for (int r = 0; r < 50; ++r) {
        fresh_snapshot();
        const std::string path = fmt::format("/d/file-{}", r % files);
        const uint64_t before = packfs_test_allocations();
        EXPECT_TRUE(fs->chmod(path, 0600 + (r & 7)));
        c.chmod += static_cast<double>(packfs_test_allocations() - before) / 50;
    }
    c.create = 0;
    for (int r = 0; r < 50; ++r) {
        fresh_snapshot();
        const std::string path = fmt::format("/d/new-{}", r);
        const uint64_t before = packfs_test_allocations();
        auto f = fs->open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
        c.create += static_cast<double>(packfs_test_allocations() - before) / 50;
        EXPECT_TRUE(f);
    }
    c.unlink = 0;
    return c;
}

TEST(MemAllocations, AMutationNoSnapshotSawAllocatesTheSameAtAnySize) {
    const Costs small = without_snapshots(1000);
    const Costs big = without_snapshots(64000);
    fmt::print("per op, 1k / 64k entries: chmod {} / {}, create {} / {}, unlink {} / {}\n",
               small.chmod, big.chmod, small.create, big.create, small.unlink, big.unlink);
    // In place: a chmod allocates nothing; a create makes its inode, its entry and its handle
    // (and now and then a trie node); an unlink frees.
    EXPECT_LT(small.chmod, 0.5);
    EXPECT_LT(big.chmod, 0.5);
    EXPECT_LT(small.create, 6.0);
    EXPECT_NEAR(big.create, small.create, 1.0);
    EXPECT_LT(big.unlink, 1.0);
}

TEST(MemAllocations, WithASnapshotHeldTheCopiedPathGrowsAsTheLog) {
    const Costs n1 = with_a_snapshot_each_time(1000);
    const Costs n16 = with_a_snapshot_each_time(16000);
    const Costs n256 = with_a_snapshot_each_time(256000);
    fmt::print("per create after a snapshot, 1k / 16k / 256k entries: {} / {} / {}\n", n1.create,
               n16.create, n256.create);
    // The directory's kept version and its trie path (one 16-way level per 16x entries),
    // plus what a create always makes.
    EXPECT_LE(n1.create, n16.create + 0.5);
    EXPECT_LE(n16.create, n256.create + 0.5);
    EXPECT_LE(n256.create - n1.create, 3.0);  // 256x the entries: two more levels
    EXPECT_GT(n1.create, without_snapshots(1000).create);  // the copy is real
    // A chmod after a snapshot keeps one version of the inode and copies nothing else.
    EXPECT_LT(n256.chmod, n1.chmod + 0.5);
}

TEST(MemAllocations, AnOverwriteUnderASnapshotCopiesOneChunkNotTheFile) {
    auto fs = make_mem_backend();
    const std::string old_bytes(16 << 20, 'd');
    {
        auto f = fs->open("/big", O_WRONLY | O_CREAT | O_EXCL, 0644);
        ASSERT_TRUE(f);
        ASSERT_TRUE((*f)->pwrite(std::as_bytes(std::span(old_bytes)), 0));
    }
    auto snap = fs->snapshot();  // every chunk is now shared with it
    ASSERT_TRUE(snap);
    auto f = fs->open("/big", O_RDWR);
    ASSERT_TRUE(f);
    const std::string_view patch = "one byte";
    const uint64_t before = packfs_test_allocated_bytes();
    ASSERT_TRUE((*f)->pwrite(std::as_bytes(std::span(patch)), 5'000'000));
    const uint64_t copied = packfs_test_allocated_bytes() - before;
    fmt::print("bytes allocated by an 8-byte overwrite of a shared 16 MiB file: {}\n", copied);
    EXPECT_LE(copied, 2u * 64 * 1024);  // one 64 KiB chunk (and a map node or two), not 16 MiB
    // The snapshot still reads the old bytes there.
    auto old = (*snap)->open("/big", O_RDONLY);
    ASSERT_TRUE(old);
    std::string got(patch.size(), '\0');
    ASSERT_TRUE((*old)->pread(std::as_writable_bytes(std::span(got)), 5'000'000));
    EXPECT_EQ(got, old_bytes.substr(0, patch.size()));
}

}  // namespace
}  // namespace packfs
