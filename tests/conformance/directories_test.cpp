// Directory reads (DESIGN §4): readdir lists every entry once, with its type and inode number,
// never "." or "..".
#include <sys/sysmacros.h>

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "conformance/conformance_suite.hpp"

namespace packfs::conformance {

TEST_P(Directories, EmptyDirectoryListsNothing) {
    PACKFS_ASSERT_OK(fs().mkdir("/d"));
    auto entries = fs().readdir("/d");
    PACKFS_ASSERT_OK(entries);
    EXPECT_TRUE(entries->empty()) << "first entry: " << (entries->empty() ? "" : (*entries)[0].name);
}

TEST_P(Directories, ManyEntriesAreEachListedOnce) {
    PACKFS_ASSERT_OK(fs().mkdir("/d"));
    constexpr int kCount = 1000;
    std::vector<std::string> expected;
    for (int i = 0; i < kCount; ++i) {
        std::string name = fmt::format("f{:04}", i);
        if (i % 10 == 0) {
            PACKFS_ASSERT_OK(fs().mkdir("/d/" + name));
        } else {
            PACKFS_ASSERT_OK(write_file(fs(), "/d/" + name, ""));
        }
        expected.push_back(name);
    }
    auto names = sorted_names(fs(), "/d");
    PACKFS_ASSERT_OK(names);
    EXPECT_EQ(names->size(), expected.size());
    EXPECT_TRUE(*names == expected) << "listing differs from the created names";
}

TEST_P(Directories, ListingNeverHoldsDotOrDotDot) {
    PACKFS_ASSERT_OK(fs().mkdir("/d"));
    PACKFS_ASSERT_OK(write_file(fs(), "/d/x", ""));
    for (std::string_view dir : {"/", "/d"}) {
        auto entries = fs().readdir(dir);
        PACKFS_ASSERT_OK(entries);
        for (const auto& e : *entries) {
            EXPECT_NE(e.name, ".") << dir;
            EXPECT_NE(e.name, "..") << dir;
            EXPECT_FALSE(e.name.empty()) << dir;
            EXPECT_EQ(e.name.find('/'), std::string::npos) << dir;
        }
    }
}

TEST_P(Directories, EntryTypesAndInodesMatchLstat) {
    PACKFS_ASSERT_OK(fs().mkdir("/d"));
    PACKFS_ASSERT_OK(fs().mkdir("/d/sub"));
    PACKFS_ASSERT_OK(write_file(fs(), "/d/file", "x"));
    PACKFS_ASSERT_OK(fs().symlink("file", "/d/link"));
    PACKFS_ASSERT_OK(fs().link("/d/file", "/d/hard"));
    if (caps().special_files) {
        PACKFS_ASSERT_OK(fs().mknod("/d/fifo", FileType::fifo, 0644));
        PACKFS_ASSERT_OK(fs().mknod("/d/sock", FileType::socket, 0644));
    }
    if (caps().device_nodes) {
        PACKFS_ASSERT_OK(fs().mknod("/d/chr", FileType::char_device, 0644, makedev(1, 3)));
        PACKFS_ASSERT_OK(fs().mknod("/d/blk", FileType::block_device, 0644, makedev(7, 0)));
    }
    auto entries = fs().readdir("/d");
    PACKFS_ASSERT_OK(entries);
    std::set<std::string> seen;
    for (const auto& e : *entries) {
        seen.insert(e.name);
        auto st = fs().lstat("/d/" + e.name);
        PACKFS_EXPECT_OK(st) << " entry " << e.name;
        if (!st) continue;
        EXPECT_EQ(e.type, st->type) << e.name << ": readdir says " << file_type_name(e.type)
                                    << ", lstat " << file_type_name(st->type);
        EXPECT_EQ(e.ino, st->ino) << e.name;
    }
    std::set<std::string> expected = {"sub", "file", "link", "hard"};
    if (caps().special_files) expected.insert({"fifo", "sock"});
    if (caps().device_nodes) expected.insert({"chr", "blk"});
    EXPECT_EQ(seen, expected);
    EXPECT_EQ(entries->size(), expected.size()) << "an entry was listed twice";
}

TEST_P(Directories, DistinctFilesHaveDistinctInodes) {
    std::set<uint64_t> inos;
    PACKFS_ASSERT_OK(fs().mkdir("/d"));
    for (int i = 0; i < 50; ++i) {
        std::string p = fmt::format("/d/f{}", i);
        PACKFS_ASSERT_OK(write_file(fs(), p, ""));
        auto st = fs().lstat(p);
        PACKFS_ASSERT_OK(st);
        EXPECT_TRUE(inos.insert(st->ino).second) << p << " reuses inode " << st->ino;
    }
    auto d = fs().lstat("/d");
    auto root = fs().lstat("/");
    PACKFS_ASSERT_OK(d);
    PACKFS_ASSERT_OK(root);
    EXPECT_TRUE(inos.insert(d->ino).second);
    EXPECT_TRUE(inos.insert(root->ino).second);
}

TEST_P(Directories, InodeNumberIsStableAcrossCallsAndRename) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x"));
    auto a = fs().lstat("/f");
    auto b = fs().lstat("/f");
    PACKFS_ASSERT_OK(a);
    PACKFS_ASSERT_OK(b);
    EXPECT_EQ(a->ino, b->ino);
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "rewritten"));
    PACKFS_ASSERT_OK(fs().rename("/f", "/g"));
    auto c = fs().lstat("/g");
    PACKFS_ASSERT_OK(c);
    EXPECT_EQ(a->ino, c->ino);
}

TEST_P(Directories, ListingFollowsCreateUnlinkAndRename) {
    PACKFS_ASSERT_OK(fs().mkdir("/d"));
    PACKFS_ASSERT_OK(write_file(fs(), "/d/a", ""));
    PACKFS_ASSERT_OK(write_file(fs(), "/d/b", ""));
    PACKFS_ASSERT_OK(fs().unlink("/d/a"));
    PACKFS_ASSERT_OK(fs().rename("/d/b", "/d/c"));
    PACKFS_ASSERT_OK(fs().mkdir("/d/e"));
    auto names = sorted_names(fs(), "/d");
    PACKFS_ASSERT_OK(names);
    EXPECT_EQ(*names, (std::vector<std::string>{"c", "e"}));
}

TEST_P(Directories, ReaddirFollowsSymlinkToDirectory) {
    PACKFS_ASSERT_OK(fs().mkdir("/d"));
    PACKFS_ASSERT_OK(write_file(fs(), "/d/x", ""));
    PACKFS_ASSERT_OK(fs().symlink("/d", "/abs"));
    PACKFS_ASSERT_OK(fs().symlink("d", "/rel"));
    for (auto [link, via] : {std::pair{"/abs", Via::absolute}, std::pair{"/rel", Via::relative}}) {
        auto names = sorted_names(fs(), link);
        PACKFS_EXPECT_FOLLOWS(names, caps(), via) << " " << link;
        if (names) {
            EXPECT_EQ(*names, std::vector<std::string>{"x"}) << link;
        }
    }
}

TEST_P(Directories, ReaddirOfFileIsNotDir) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", ""));
    PACKFS_EXPECT_ERRNO(fs().readdir("/f"), ENOTDIR);
    PACKFS_EXPECT_ERRNO(fs().readdir("/missing"), ENOENT);
}

TEST_P(Directories, DeepNestingResolves) {
    std::string p;
    for (int i = 0; i < 64; ++i) {
        p += fmt::format("/d{}", i);
        PACKFS_ASSERT_OK(fs().mkdir(p));
    }
    PACKFS_ASSERT_OK(write_file(fs(), p + "/leaf", "deep"));
    auto content = read_file(fs(), p + "/leaf");
    PACKFS_ASSERT_OK(content);
    EXPECT_EQ(*content, "deep");
}

TEST_P(Directories, MkdirCreatesDirectoryWithMode) {
    PACKFS_ASSERT_OK(fs().mkdir("/d", 0750));
    auto st = fs().stat("/d");
    PACKFS_ASSERT_OK(st);
    EXPECT_EQ(st->type, FileType::directory);
    EXPECT_EQ(st->mode, 0750u);
}

TEST_P(Directories, DirectoryLinkCountCountsSubdirectories) {
    if (!caps().dir_nlink) GTEST_SKIP() << "backend does not count directory links";
    PACKFS_ASSERT_OK(fs().mkdir("/d"));
    auto st = fs().stat("/d");
    PACKFS_ASSERT_OK(st);
    EXPECT_EQ(st->nlink, 2u);
    PACKFS_ASSERT_OK(fs().mkdir("/d/a"));
    PACKFS_ASSERT_OK(fs().mkdir("/d/b"));
    PACKFS_ASSERT_OK(write_file(fs(), "/d/f", ""));
    st = fs().stat("/d");
    PACKFS_ASSERT_OK(st);
    EXPECT_EQ(st->nlink, 4u);
    PACKFS_ASSERT_OK(fs().rmdir("/d/a"));
    PACKFS_ASSERT_OK(fs().rename("/d/b", "/b"));
    st = fs().stat("/d");
    PACKFS_ASSERT_OK(st);
    EXPECT_EQ(st->nlink, 2u);
}

TEST_P(Directories, StatfsReportsLimits) {
    auto s = fs().statfs("/");
    PACKFS_ASSERT_OK(s);
    EXPECT_EQ(s->name_max, 255u);
    EXPECT_GT(s->block_size, 0u);
    EXPECT_LE(s->blocks_free, s->blocks);
    PACKFS_EXPECT_ERRNO(fs().statfs("/missing"), ENOENT);
}

}  // namespace packfs::conformance
