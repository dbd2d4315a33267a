// Snapshots (DESIGN §5): O(1), read-only, frozen at their instant, contents included.
#include <fmt/format.h>

#include "conformance/conformance_suite.hpp"

namespace packfs::conformance {

namespace {

// Builds the fixture tree and takes a snapshot of it.
Result<std::shared_ptr<Backend>> snapshot_of_fixture(Backend& fs, const Capabilities& caps) {
    auto built = build_fixture_tree(fs, caps);
    if (!built) return std::unexpected(built.error());
    return fs.snapshot();
}

// Changes every kind of thing in the live fixture tree.
void mutate_everything(Backend& fs, const Capabilities& caps) {
    PACKFS_EXPECT_OK(write_file(fs, "/docs/readme.txt", "rewritten"));
    auto f = fs.open("/data/65537.bin", O_RDWR);
    PACKFS_EXPECT_OK(f);
    if (f) {
        PACKFS_EXPECT_OK(pwrite_string(**f, "patched in place", 100));
        PACKFS_EXPECT_OK(pwrite_string(**f, "appended", 65537));
    }
    PACKFS_EXPECT_OK(fs.truncate("/data/196609.bin", 10));
    PACKFS_EXPECT_OK(fs.truncate("/data/4096.bin", 100000));
    PACKFS_EXPECT_OK(fs.rename("/docs/nested", "/moved_nested"));
    PACKFS_EXPECT_OK(fs.rename("/exec.sh", "/private.txt"));
    PACKFS_EXPECT_OK(fs.rename("/data/dup_a.bin", "/data/dup_b.bin", RenameFlags::exchange));
    PACKFS_EXPECT_OK(fs.unlink("/hard/a"));
    PACKFS_EXPECT_OK(fs.unlink("/wide/entry_007"));
    PACKFS_EXPECT_OK(fs.rmdir("/empty"));
    PACKFS_EXPECT_OK(fs.unlink("/links/rel"));
    PACKFS_EXPECT_OK(fs.symlink("/elsewhere", "/links/rel"));
    PACKFS_EXPECT_OK(fs.mkdir("/brand_new"));
    PACKFS_EXPECT_OK(write_file(fs, "/brand_new/file", "new"));
    PACKFS_EXPECT_OK(fs.link("/hard/b", "/hard/c"));
    PACKFS_EXPECT_OK(fs.chmod("/docs/empty.txt", 0000));
    PACKFS_EXPECT_OK(fs.utimens("/times.txt", TimeUpdate::at(Time{1, 1}), TimeUpdate::at(Time{2, 2})));
    if (caps.chown) {
        PACKFS_EXPECT_OK(fs.chown("/docs/empty.txt", 99, 99));
    }
    if (caps.xattrs) {
        PACKFS_EXPECT_OK(fs.setxattr("/xattr.txt", "user.text", "changed"));
        PACKFS_EXPECT_OK(fs.removexattr("/xattr.txt", "user.bin"));
        PACKFS_EXPECT_OK(fs.setxattr("/xattr.txt", "user.added", "a"));
    }
    if (caps.special_files) {
        PACKFS_EXPECT_OK(fs.unlink("/special/fifo"));
    }
}

}  // namespace

TEST_P(Snapshots, SnapshotWithoutSupportIsNotSupported) {
    if (caps().snapshots) GTEST_SKIP() << "backend supports snapshots";
    PACKFS_EXPECT_ERRNO(fs().snapshot(), ENOTSUP);
}

TEST_P(Snapshots, SnapshotIsReadOnly) {
    if (!caps().snapshots) GTEST_SKIP() << "backend has no snapshots";
    auto snap = snapshot_of_fixture(fs(), caps());
    PACKFS_ASSERT_OK(snap);
    ASSERT_NE(*snap, nullptr);
    EXPECT_FALSE(fs().read_only());
    expect_every_mutation_fails_with_erofs(**snap, caps());
    // And refusing them changed nothing in the live backend either.
    auto readme = read_file(fs(), "/docs/readme.txt");
    PACKFS_ASSERT_OK(readme);
    EXPECT_EQ(*readme, kReadme);
}

TEST_P(Snapshots, SnapshotEqualsTheLiveTreeWhenTaken) {
    if (!caps().snapshots) GTEST_SKIP() << "backend has no snapshots";
    auto snap = snapshot_of_fixture(fs(), caps());
    PACKFS_ASSERT_OK(snap);
    auto live = describe_tree(fs(), caps().xattrs);
    auto frozen = describe_tree(**snap, caps().xattrs);
    PACKFS_ASSERT_OK(live);
    PACKFS_ASSERT_OK(frozen);
    EXPECT_TRUE(*live == *frozen);
    auto st = (*snap)->lstat("/docs/readme.txt");
    auto live_st = fs().lstat("/docs/readme.txt");
    PACKFS_ASSERT_OK(st);
    PACKFS_ASSERT_OK(live_st);
    EXPECT_EQ(st->ino, live_st->ino) << "a snapshot keeps inode numbers";
}

TEST_P(Snapshots, SnapshotIsUnchangedByLaterMutations) {
    if (!caps().snapshots) GTEST_SKIP() << "backend has no snapshots";
    auto snap = snapshot_of_fixture(fs(), caps());
    PACKFS_ASSERT_OK(snap);
    auto frozen = describe_tree(**snap, caps().xattrs);
    PACKFS_ASSERT_OK(frozen);
    mutate_everything(fs(), caps());
    auto later = describe_tree(**snap, caps().xattrs);
    PACKFS_ASSERT_OK(later);
    for (const auto& [path, line] : *frozen) {
        auto it = later->find(path);
        if (it == later->end()) {
            ADD_FAILURE() << path << " vanished from the snapshot";
        } else {
            EXPECT_EQ(it->second, line) << path;
        }
    }
    for (const auto& [path, line] : *later) {
        EXPECT_TRUE(frozen->contains(path)) << path << " appeared in the snapshot";
    }
    // The contents themselves, byte for byte.
    auto readme = read_file(**snap, "/docs/readme.txt");
    PACKFS_ASSERT_OK(readme);
    EXPECT_EQ(*readme, kReadme);
    auto big = read_file(**snap, "/data/65537.bin");
    PACKFS_ASSERT_OK(big);
    PACKFS_EXPECT_BYTES_EQ(*big, pattern_bytes(65537, 65537 % 251));
    auto cut = read_file(**snap, "/data/196609.bin");
    PACKFS_ASSERT_OK(cut);
    PACKFS_EXPECT_BYTES_EQ(*cut, pattern_bytes(196609, 196609 % 251));
}

TEST_P(Snapshots, SnapshotHandleReadsFrozenContent) {
    if (!caps().snapshots) GTEST_SKIP() << "backend has no snapshots";
    std::string data = pattern_bytes(3 * 65536, 12);
    PACKFS_ASSERT_OK(write_file(fs(), "/f", data));
    auto live = fs().open("/f", O_RDWR);
    PACKFS_ASSERT_OK(live);
    auto snap = fs().snapshot();
    PACKFS_ASSERT_OK(snap);
    auto frozen = (*snap)->open("/f", O_RDONLY);
    PACKFS_ASSERT_OK(frozen);
    // Writes through a handle opened before the snapshot, in place and appended.
    PACKFS_ASSERT_OK(pwrite_string(**live, std::string(1000, 'X'), 65000));
    PACKFS_ASSERT_OK(pwrite_string(**live, "tail", data.size()));
    auto back = read_all(**frozen);
    PACKFS_ASSERT_OK(back);
    PACKFS_EXPECT_BYTES_EQ(*back, data);
    auto st = (*frozen)->fstat();
    PACKFS_ASSERT_OK(st);
    EXPECT_EQ(st->size, data.size());
    PACKFS_EXPECT_ERRNO((*frozen)->pwrite(as_bytes("x"), 0), EBADF);
    auto now = read_file(fs(), "/f");
    PACKFS_ASSERT_OK(now);
    EXPECT_EQ(now->size(), data.size() + 4);
}

TEST_P(Snapshots, SnapshotKeepsUnlinkedFileContent) {
    if (!caps().snapshots) GTEST_SKIP() << "backend has no snapshots";
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "keep me"));
    auto snap = fs().snapshot();
    PACKFS_ASSERT_OK(snap);
    PACKFS_ASSERT_OK(fs().unlink("/f"));
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "impostor"));
    auto back = read_file(**snap, "/f");
    PACKFS_ASSERT_OK(back);
    EXPECT_EQ(*back, "keep me");
}

TEST_P(Snapshots, SnapshotOfSnapshotIsTheSameVersion) {
    if (!caps().snapshots) GTEST_SKIP() << "backend has no snapshots";
    auto snap = snapshot_of_fixture(fs(), caps());
    PACKFS_ASSERT_OK(snap);
    auto snap2 = (*snap)->snapshot();
    PACKFS_ASSERT_OK(snap2);
    ASSERT_NE(*snap2, nullptr);
    EXPECT_TRUE((*snap2)->read_only());
    mutate_everything(fs(), caps());
    auto a = describe_tree(**snap, caps().xattrs);
    auto b = describe_tree(**snap2, caps().xattrs);
    PACKFS_ASSERT_OK(a);
    PACKFS_ASSERT_OK(b);
    EXPECT_TRUE(*a == *b);
    PACKFS_EXPECT_ERRNO((*snap2)->mkdir("/x"), EROFS);
}

TEST_P(Snapshots, SuccessiveSnapshotsSeeSuccessiveVersions) {
    if (!caps().snapshots) GTEST_SKIP() << "backend has no snapshots";
    std::vector<std::shared_ptr<Backend>> snaps;
    for (int i = 0; i < 5; ++i) {
        PACKFS_ASSERT_OK(write_file(fs(), "/counter", fmt::format("{}", i)));
        PACKFS_ASSERT_OK(fs().mkdir(fmt::format("/dir{}", i)));
        auto s = fs().snapshot();
        PACKFS_ASSERT_OK(s);
        snaps.push_back(*s);
    }
    for (int i = 0; i < 5; ++i) {
        auto c = read_file(*snaps[i], "/counter");
        PACKFS_EXPECT_OK(c);
        if (c) {
            EXPECT_EQ(*c, fmt::format("{}", i));
        }
        auto names = sorted_names(*snaps[i], "/");
        PACKFS_ASSERT_OK(names);
        EXPECT_EQ(names->size(), static_cast<std::size_t>(i + 2)) << "snapshot " << i;
    }
}

TEST_P(Snapshots, SnapshotOutlivesItsBackend) {
    if (!caps().snapshots) GTEST_SKIP() << "backend has no snapshots";
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "survivor"));
    auto snap = fs().snapshot();
    PACKFS_ASSERT_OK(snap);
    backend().reset();
    auto back = read_file(**snap, "/f");
    PACKFS_ASSERT_OK(back);
    EXPECT_EQ(*back, "survivor");
}

}  // namespace packfs::conformance
