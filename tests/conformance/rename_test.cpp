// rename (DESIGN §4): atomic replacement, the directory rules, NOREPLACE and EXCHANGE.
#include "conformance/conformance_suite.hpp"

namespace packfs::conformance {

namespace {

std::string content_of(Backend& fs, std::string_view path) {
    auto r = read_file(fs, path);
    return r ? *r : "<" + describe(r.error()) + ">";
}

}  // namespace

TEST_P(Rename, RenameMovesFileAndKeepsInode) {
    PACKFS_ASSERT_OK(write_file(fs(), "/a", "data"));
    auto before = fs().lstat("/a");
    PACKFS_ASSERT_OK(before);
    PACKFS_ASSERT_OK(fs().mkdir("/d"));
    PACKFS_ASSERT_OK(fs().rename("/a", "/d/b"));
    PACKFS_EXPECT_ERRNO(fs().lstat("/a"), ENOENT);
    auto after = fs().lstat("/d/b");
    PACKFS_ASSERT_OK(after);
    EXPECT_EQ(after->ino, before->ino);
    EXPECT_EQ(content_of(fs(), "/d/b"), "data");
}

TEST_P(Rename, RenameOntoItselfIsNoOp) {
    PACKFS_ASSERT_OK(write_file(fs(), "/a", "data"));
    PACKFS_ASSERT_OK(fs().mkdir("/d"));
    PACKFS_EXPECT_OK(fs().rename("/a", "/a"));
    PACKFS_EXPECT_OK(fs().rename("/d", "/d"));
    PACKFS_EXPECT_OK(fs().rename("/a", "//a"));
    EXPECT_EQ(content_of(fs(), "/a"), "data");
    PACKFS_EXPECT_OK(fs().stat("/d"));
}

TEST_P(Rename, RenameBetweenHardLinksOfOneFileIsNoOp) {
    // POSIX: when both names refer to the same file, rename does nothing; both names remain.
    PACKFS_ASSERT_OK(write_file(fs(), "/a", "data"));
    PACKFS_ASSERT_OK(fs().link("/a", "/b"));
    PACKFS_EXPECT_OK(fs().rename("/a", "/b"));
    PACKFS_EXPECT_OK(fs().lstat("/a"));
    auto st = fs().lstat("/b");
    PACKFS_ASSERT_OK(st);
    EXPECT_EQ(st->nlink, 2u);
}

TEST_P(Rename, RenameDirectoryIntoItsOwnSubtreeIsInvalid) {
    PACKFS_ASSERT_OK(fs().mkdir("/a"));
    PACKFS_ASSERT_OK(fs().mkdir("/a/b"));
    PACKFS_EXPECT_ERRNO(fs().rename("/a", "/a/b/c"), EINVAL);
    PACKFS_EXPECT_ERRNO(fs().rename("/a", "/a/c"), EINVAL);
    PACKFS_EXPECT_OK(fs().stat("/a/b"));
    PACKFS_EXPECT_ERRNO(fs().stat("/a/c"), ENOENT);
}

TEST_P(Rename, RenameOverExistingFileReplacesIt) {
    PACKFS_ASSERT_OK(write_file(fs(), "/a", "new"));
    PACKFS_ASSERT_OK(write_file(fs(), "/b", "old"));
    auto a = fs().lstat("/a");
    PACKFS_ASSERT_OK(a);
    PACKFS_ASSERT_OK(fs().rename("/a", "/b"));
    PACKFS_EXPECT_ERRNO(fs().lstat("/a"), ENOENT);
    auto b = fs().lstat("/b");
    PACKFS_ASSERT_OK(b);
    EXPECT_EQ(b->ino, a->ino);
    EXPECT_EQ(content_of(fs(), "/b"), "new");
    auto names = sorted_names(fs(), "/");
    PACKFS_ASSERT_OK(names);
    EXPECT_EQ(*names, std::vector<std::string>{"b"});
}

TEST_P(Rename, RenameOverNonEmptyDirFails) {
    PACKFS_ASSERT_OK(fs().mkdir("/a"));
    PACKFS_ASSERT_OK(fs().mkdir("/b"));
    PACKFS_ASSERT_OK(write_file(fs(), "/b/f", "x"));
    PACKFS_EXPECT_ERRNO(fs().rename("/a", "/b"), ENOTEMPTY);
    PACKFS_EXPECT_OK(fs().stat("/a"));
    EXPECT_EQ(content_of(fs(), "/b/f"), "x");
}

TEST_P(Rename, RenameDirOverEmptyDirReplacesIt) {
    PACKFS_ASSERT_OK(fs().mkdir("/a"));
    PACKFS_ASSERT_OK(write_file(fs(), "/a/f", "x"));
    PACKFS_ASSERT_OK(fs().mkdir("/b"));
    PACKFS_ASSERT_OK(fs().rename("/a", "/b"));
    PACKFS_EXPECT_ERRNO(fs().stat("/a"), ENOENT);
    EXPECT_EQ(content_of(fs(), "/b/f"), "x");
}

TEST_P(Rename, RenameFileOverDirIsDir) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x"));
    PACKFS_ASSERT_OK(fs().mkdir("/d"));
    PACKFS_EXPECT_ERRNO(fs().rename("/f", "/d"), EISDIR);
    PACKFS_EXPECT_OK(fs().stat("/f"));
    auto d = fs().stat("/d");
    PACKFS_ASSERT_OK(d);
    EXPECT_EQ(d->type, FileType::directory);
}

TEST_P(Rename, RenameDirOverFileIsNotDir) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x"));
    PACKFS_ASSERT_OK(fs().mkdir("/d"));
    PACKFS_EXPECT_ERRNO(fs().rename("/d", "/f"), ENOTDIR);
    EXPECT_EQ(content_of(fs(), "/f"), "x");
}

TEST_P(Rename, RenameMissingSourceIsNotFound) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x"));
    PACKFS_EXPECT_ERRNO(fs().rename("/missing", "/g"), ENOENT);
    PACKFS_EXPECT_ERRNO(fs().rename("/f", "/no/such/dir"), ENOENT);
    PACKFS_EXPECT_OK(fs().stat("/f"));
}

TEST_P(Rename, RenameOfRootIsBusy) {
    PACKFS_ASSERT_OK(fs().mkdir("/d"));
    PACKFS_EXPECT_ERRNO(fs().rename("/", "/d/x"), EBUSY);
    PACKFS_EXPECT_ERRNO(fs().rename("/d", "/"), EBUSY);
}

TEST_P(Rename, NoReplaceOntoExistingFails) {
    PACKFS_ASSERT_OK(write_file(fs(), "/a", "a"));
    PACKFS_ASSERT_OK(write_file(fs(), "/b", "b"));
    PACKFS_EXPECT_ERRNO(fs().rename("/a", "/b", RenameFlags::noreplace), EEXIST);
    EXPECT_EQ(content_of(fs(), "/a"), "a");
    EXPECT_EQ(content_of(fs(), "/b"), "b");
    PACKFS_EXPECT_OK(fs().rename("/a", "/c", RenameFlags::noreplace));
    EXPECT_EQ(content_of(fs(), "/c"), "a");
    PACKFS_EXPECT_ERRNO(fs().lstat("/a"), ENOENT);
}

TEST_P(Rename, NoReplaceOntoDanglingSymlinkFails) {
    PACKFS_ASSERT_OK(write_file(fs(), "/a", "a"));
    PACKFS_ASSERT_OK(fs().symlink("/nowhere", "/l"));
    PACKFS_EXPECT_ERRNO(fs().rename("/a", "/l", RenameFlags::noreplace), EEXIST);
}

TEST_P(Rename, ExchangeSwapsTwoFiles) {
    PACKFS_ASSERT_OK(write_file(fs(), "/a", "A"));
    PACKFS_ASSERT_OK(write_file(fs(), "/b", "B"));
    auto a = fs().lstat("/a");
    auto b = fs().lstat("/b");
    PACKFS_ASSERT_OK(a);
    PACKFS_ASSERT_OK(b);
    PACKFS_ASSERT_OK(fs().rename("/a", "/b", RenameFlags::exchange));
    EXPECT_EQ(content_of(fs(), "/a"), "B");
    EXPECT_EQ(content_of(fs(), "/b"), "A");
    auto a2 = fs().lstat("/a");
    auto b2 = fs().lstat("/b");
    PACKFS_ASSERT_OK(a2);
    PACKFS_ASSERT_OK(b2);
    EXPECT_EQ(a2->ino, b->ino);
    EXPECT_EQ(b2->ino, a->ino);
}

TEST_P(Rename, ExchangeSwapsFileAndDirectory) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "F"));
    PACKFS_ASSERT_OK(fs().mkdir("/d"));
    PACKFS_ASSERT_OK(write_file(fs(), "/d/inner", "I"));
    PACKFS_ASSERT_OK(fs().mkdir("/other"));
    PACKFS_ASSERT_OK(fs().rename("/f", "/other/d", RenameFlags::noreplace));
    PACKFS_ASSERT_OK(fs().rename("/other/d", "/d", RenameFlags::exchange));
    // Now /d is the file and /other/d the directory.
    auto d = fs().lstat("/d");
    PACKFS_ASSERT_OK(d);
    EXPECT_EQ(d->type, FileType::regular);
    EXPECT_EQ(content_of(fs(), "/d"), "F");
    EXPECT_EQ(content_of(fs(), "/other/d/inner"), "I");
    auto names = sorted_names(fs(), "/other/d");
    PACKFS_ASSERT_OK(names);
    EXPECT_EQ(*names, std::vector<std::string>{"inner"});
}

TEST_P(Rename, ExchangeWithMissingTargetIsNotFound) {
    PACKFS_ASSERT_OK(write_file(fs(), "/a", "A"));
    PACKFS_EXPECT_ERRNO(fs().rename("/a", "/missing", RenameFlags::exchange), ENOENT);
    PACKFS_EXPECT_ERRNO(fs().rename("/missing", "/a", RenameFlags::exchange), ENOENT);
    EXPECT_EQ(content_of(fs(), "/a"), "A");
    PACKFS_EXPECT_ERRNO(fs().lstat("/missing"), ENOENT);
}

TEST_P(Rename, ExchangeOfDirectoryWithItsOwnDescendantIsInvalid) {
    PACKFS_ASSERT_OK(fs().mkdir("/a"));
    PACKFS_ASSERT_OK(fs().mkdir("/a/b"));
    PACKFS_EXPECT_ERRNO(fs().rename("/a", "/a/b", RenameFlags::exchange), EINVAL);
    PACKFS_EXPECT_ERRNO(fs().rename("/a/b", "/a", RenameFlags::exchange), EINVAL);
    PACKFS_EXPECT_OK(fs().stat("/a/b"));
}

TEST_P(Rename, RenamedDirectoryKeepsItsSubtreeReachable) {
    PACKFS_ASSERT_OK(fs().mkdir("/a"));
    PACKFS_ASSERT_OK(fs().mkdir("/a/b"));
    PACKFS_ASSERT_OK(fs().mkdir("/a/b/c"));
    PACKFS_ASSERT_OK(write_file(fs(), "/a/b/c/f", "deep"));
    PACKFS_ASSERT_OK(write_file(fs(), "/a/top", "top"));
    auto f_before = fs().lstat("/a/b/c/f");
    PACKFS_ASSERT_OK(f_before);
    PACKFS_ASSERT_OK(fs().mkdir("/x"));
    PACKFS_ASSERT_OK(fs().rename("/a", "/x/renamed"));
    EXPECT_EQ(content_of(fs(), "/x/renamed/b/c/f"), "deep");
    EXPECT_EQ(content_of(fs(), "/x/renamed/top"), "top");
    auto f_after = fs().lstat("/x/renamed/b/c/f");
    PACKFS_ASSERT_OK(f_after);
    EXPECT_EQ(f_after->ino, f_before->ino);
    PACKFS_EXPECT_ERRNO(fs().stat("/a/b/c/f"), ENOENT);
    PACKFS_EXPECT_OK(write_file(fs(), "/x/renamed/b/new", "n")) << "the moved subtree is writable";
    auto names = sorted_names(fs(), "/x/renamed/b");
    PACKFS_ASSERT_OK(names);
    EXPECT_EQ(*names, (std::vector<std::string>{"c", "new"}));
}

TEST_P(Rename, RenameOfOpenFileKeepsHandleWorking) {
    PACKFS_ASSERT_OK(write_file(fs(), "/a", "one"));
    auto f = fs().open("/a", O_RDWR);
    PACKFS_ASSERT_OK(f);
    PACKFS_ASSERT_OK(fs().rename("/a", "/b"));
    PACKFS_ASSERT_OK(pwrite_string(**f, "two", 3));
    EXPECT_EQ(content_of(fs(), "/b"), "onetwo");
}

TEST_P(Rename, RenameSymlinkMovesTheLinkNotItsTarget) {
    PACKFS_ASSERT_OK(write_file(fs(), "/target", "t"));
    PACKFS_ASSERT_OK(fs().symlink("target", "/l"));
    PACKFS_ASSERT_OK(fs().rename("/l", "/m"));
    auto link = fs().readlink("/m");
    PACKFS_ASSERT_OK(link);
    EXPECT_EQ(*link, "target");
    EXPECT_EQ(content_of(fs(), "/target"), "t");
    EXPECT_TRUE(ReadsThrough(fs(), caps(), "/m", Via::relative, "t"));
}

}  // namespace packfs::conformance
