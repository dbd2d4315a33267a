// The Vfs under concurrency (DESIGN §5, §11): snapshots are one consistent instant across
// mounts, and mount/unmount never disturb lookups in flight. Runs in the TSan build too.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "vfs/vfs_test_util.hpp"

namespace packfs::vfs_test {
namespace {

#define ASSERT_OK(expr) ASSERT_TRUE(IsOk((expr))) << #expr

uint64_t generations() { return sanitizer_run() ? 1500 : 20000; }

// One writer sets a generation number in a file on /m1 and then in one on /m2, always in that
// order, through the Vfs's path API (each a single change: a truncate to the generation as
// size, then an xattr holding it). Another thread takes Vfs snapshots the whole time. In each
// snapshot /m2 holds the same generation as /m1 or lags it by exactly one step of the order.
TEST(VfsConcurrency, SnapshotsAreConsistentAcrossMounts) {
    auto vfs = Vfs::create();
    ASSERT_NE(vfs, nullptr);
    auto root = mem(), m1 = mem(), m2 = mem();
    ASSERT_OK(vfs->mount("/", root));
    ASSERT_OK(vfs->mount("/m1", m1));
    ASSERT_OK(vfs->mount("/deeper/m2", m2));
    ASSERT_OK(write_file(*vfs, "/m1/gen", ""));
    ASSERT_OK(write_file(*vfs, "/deeper/m2/gen", ""));
    ASSERT_OK(vfs->setxattr("/m1/gen", "user.gen", "0"));
    ASSERT_OK(vfs->setxattr("/deeper/m2/gen", "user.gen", "0"));

    const uint64_t total = generations();
    std::atomic<bool> done{false};
    std::atomic<uint64_t> writer_errors{0};
    std::thread writer([&] {
        for (uint64_t g = 1; g <= total; ++g) {
            // Order: m1 size, m1 xattr, m2 size, m2 xattr. Each step is one change.
            const std::string v = std::to_string(g);
            if (!vfs->truncate("/m1/gen", g)) ++writer_errors;
            if (!vfs->setxattr("/m1/gen", "user.gen", v)) ++writer_errors;
            if (!vfs->truncate("/deeper/m2/gen", g)) ++writer_errors;
            if (!vfs->setxattr("/deeper/m2/gen", "user.gen", v)) ++writer_errors;
        }
        done = true;
    });

    uint64_t snapshots = 0, torn = 0, regressions = 0, failures = 0, last_m2 = 0;
    std::string first_bad;
    while (!done.load()) {
        auto snap = vfs->snapshot();
        if (!snap) {
            ++failures;
            continue;
        }
        ++snapshots;
        auto s1 = (*snap)->stat("/m1/gen");
        auto s2 = (*snap)->stat("/deeper/m2/gen");
        auto x1 = (*snap)->getxattr("/m1/gen", "user.gen");
        auto x2 = (*snap)->getxattr("/deeper/m2/gen", "user.gen");
        if (!s1 || !s2 || !x1 || !x2) {
            ++failures;
            continue;
        }
        // The four steps as one counter: 4g+k means k steps of generation g+1 are done.
        const uint64_t a_size = s1->size, a_x = std::stoull(*x1);
        const uint64_t b_size = s2->size, b_x = std::stoull(*x2);
        // Valid states, in order: (g,g,g,g) (g+1,g,g,g) (g+1,g+1,g,g) (g+1,g+1,g+1,g).
        const bool ok = (a_size == a_x && a_x == b_size && b_size == b_x) ||
                        (a_size == a_x + 1 && a_x == b_size && b_size == b_x) ||
                        (a_size == a_x && a_x == b_size + 1 && b_size == b_x) ||
                        (a_size == a_x && a_x == b_size && b_size == b_x + 1);
        if (!ok) {
            if (torn++ == 0) {
                first_bad = fmt::format("m1 size={} xattr={}, m2 size={} xattr={}", a_size, a_x,
                                        b_size, b_x);
            }
        }
        if (b_x < last_m2) ++regressions;
        last_m2 = b_x;
        // The snapshot stays put while the writer goes on.
        auto again = (*snap)->stat("/m1/gen");
        if (!again || again->size != a_size) ++torn;
    }
    writer.join();
    fmt::print("{} generations, {} snapshots\n", total, snapshots);
    EXPECT_EQ(writer_errors.load(), 0u);
    EXPECT_EQ(failures, 0u);
    EXPECT_EQ(torn, 0u) << "inconsistent snapshot, first: " << first_bad;
    EXPECT_EQ(regressions, 0u) << "a later snapshot showed an older generation";
    EXPECT_GT(snapshots, 0u);
    auto final1 = vfs->stat("/m1/gen");
    ASSERT_OK(final1);
    EXPECT_EQ(final1->size, total);
}

// The same through handles opened on the Vfs: a pwrite on a handle is a change made through
// the Vfs, so a snapshot must not see /m2 ahead of /m1 either.
TEST(VfsConcurrency, SnapshotsAreConsistentForWritesThroughHandles) {
    auto vfs = Vfs::create();
    ASSERT_NE(vfs, nullptr);
    ASSERT_OK(vfs->mount("/m1", mem()));
    ASSERT_OK(vfs->mount("/m2", mem()));
    auto h1 = vfs->open("/m1/gen", O_RDWR | O_CREAT, 0644);
    auto h2 = vfs->open("/m2/gen", O_RDWR | O_CREAT, 0644);
    ASSERT_OK(h1);
    ASSERT_OK(h2);
    auto put = [](File& f, uint64_t g) {
        return conformance::pwrite_string(f, fmt::format("{:020}", g), 0);
    };
    ASSERT_OK(put(**h1, 0));
    ASSERT_OK(put(**h2, 0));

    const uint64_t total = generations();
    std::atomic<bool> done{false};
    std::atomic<uint64_t> writer_errors{0};
    std::thread writer([&] {
        for (uint64_t g = 1; g <= total; ++g) {
            if (!put(**h1, g)) ++writer_errors;
            if (!put(**h2, g)) ++writer_errors;
        }
        done = true;
    });
    uint64_t snapshots = 0, torn = 0, failures = 0;
    std::string first_bad;
    while (!done.load()) {
        auto snap = vfs->snapshot();
        if (!snap) {
            ++failures;
            continue;
        }
        ++snapshots;
        auto a = read_file(**snap, "/m1/gen");
        auto b = read_file(**snap, "/m2/gen");
        if (!a || !b || a->size() != 20 || b->size() != 20) {
            ++failures;
            continue;
        }
        const uint64_t ga = std::stoull(*a), gb = std::stoull(*b);
        if (!(ga == gb || ga == gb + 1) && torn++ == 0) {
            first_bad = fmt::format("m1={} m2={}", ga, gb);
        }
    }
    writer.join();
    EXPECT_EQ(writer_errors.load(), 0u);
    EXPECT_EQ(failures, 0u);
    EXPECT_EQ(torn, 0u) << "inconsistent snapshot in " << torn << " of " << snapshots
                        << ", first: " << first_bad;
}

// Readers stat, list and read stable paths through the Vfs while another thread mounts and
// unmounts backends at other points (and as extra union members behind a stable one), and a
// writer changes the root mem. The stable answers never change and nothing crashes.
TEST(VfsConcurrency, MountAndUnmountNeverDisturbLookups) {
    auto vfs = Vfs::create();
    ASSERT_NE(vfs, nullptr);
    auto root = mem(), m = mem();
    ASSERT_OK(vfs->mount("/", root));
    ASSERT_OK(vfs->mount("/m", m));
    ASSERT_OK(vfs->mkdir("/stable"));
    ASSERT_OK(write_file(*vfs, "/stable/f", "stable content"));
    ASSERT_OK(write_file(*vfs, "/m/file", "mfile"));
    ASSERT_OK(vfs->mkdir("/m/dir"));

    const int rounds = sanitizer_run() ? 300 : 3000;
    std::atomic<bool> done{false};
    std::atomic<uint64_t> mount_errors{0}, writer_errors{0};
    std::thread mounter([&] {
        for (int i = 0; i < rounds; ++i) {
            auto extra = mem();
            (void)write_file(*extra, "/file", "shadowed");  // behind m: never visible
            (void)write_file(*extra, "/only-extra", "e");
            auto t = mem();
            const std::string at = fmt::format("/tmp/k{}", i % 4);
            const std::string nested = fmt::format("/stable/sub{}", i % 3);
            if (!vfs->mount(at, t)) ++mount_errors;
            if (!vfs->mount("/m", extra)) ++mount_errors;
            if (!vfs->mount(nested, mem(), {.read_only = (i % 2) == 0})) ++mount_errors;
            if (!vfs->mount("/m/dir/inner", mem())) ++mount_errors;
            if (!vfs->unmount(at, t.get())) ++mount_errors;
            if (!vfs->unmount("/m", extra.get())) ++mount_errors;
            if (!vfs->unmount(nested)) ++mount_errors;
            if (!vfs->unmount("/m/dir/inner")) ++mount_errors;
        }
        done = true;
    });
    std::thread writer([&] {
        for (uint64_t i = 0; !done.load(); ++i) {
            if (!write_file(*vfs, fmt::format("/w{}", i % 8), std::to_string(i))) ++writer_errors;
        }
    });

    auto reader = [&](std::atomic<uint64_t>& errors, std::atomic<uint64_t>& reads) {
        auto bad = [&](bool ok) {
            if (!ok) ++errors;
        };
        auto has = [](const Result<std::vector<DirEntry>>& r, std::string_view name) {
            if (!r) return false;
            for (const auto& e : *r) {
                if (e.name == name) return true;
            }
            return false;
        };
        while (!done.load()) {
            auto st = vfs->stat("/stable/f");
            bad(st && st->size == 14 && st->type == FileType::regular);
            auto c = read_file(*vfs, "/stable/f");
            bad(c && *c == "stable content");
            auto mf = read_file(*vfs, "/m/file");
            bad(mf && *mf == "mfile");
            auto md = vfs->stat("/m/dir");
            bad(md && md->type == FileType::directory);
            auto top = vfs->readdir("/");
            bad(has(top, "stable") && has(top, "m"));
            auto ml = vfs->readdir("/m");
            bad(has(ml, "file") && has(ml, "dir"));
            auto sl = vfs->readdir("/stable");
            bad(has(sl, "f"));
            // Transient paths: present or absent, never anything else.
            auto tr = vfs->stat("/tmp/k1");
            bad(tr ? tr->type == FileType::directory : tr.error().code() == ENOENT);
            auto tl = vfs->readdir("/tmp");
            bad(tl || tl.error().code() == ENOENT);
            auto ex = vfs->stat("/m/only-extra");
            bad(ex || ex.error().code() == ENOENT);
            auto in = vfs->stat("/m/dir/inner");
            bad(in ? in->type == FileType::directory : in.error().code() == ENOENT);
            ++reads;
        }
    };
    std::atomic<uint64_t> e1{0}, e2{0}, r1{0}, r2{0};
    std::thread t1(reader, std::ref(e1), std::ref(r1));
    std::thread t2(reader, std::ref(e2), std::ref(r2));
    mounter.join();
    writer.join();
    t1.join();
    t2.join();
    fmt::print("{} mount rounds, {} + {} reader loops\n", rounds, r1.load(), r2.load());
    EXPECT_EQ(mount_errors.load(), 0u);
    EXPECT_EQ(writer_errors.load(), 0u);
    EXPECT_EQ(e1.load(), 0u);
    EXPECT_EQ(e2.load(), 0u);
    EXPECT_GT(r1.load() + r2.load(), 0u);
    // Everything transient is gone again.
    EXPECT_EQ(vfs->mounts().size(), 2u);
    EXPECT_EQ(names_of(*vfs, "/m"), (std::vector<std::string>{"dir", "file"}));
}

}  // namespace
}  // namespace packfs::vfs_test
