// Extended attributes (DESIGN §4), in the user.* namespace, with l*xattr semantics.
#include <algorithm>

#include "conformance/conformance_suite.hpp"

namespace packfs::conformance {

namespace {

std::vector<std::string> sorted(std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
}

}  // namespace

TEST_P(Xattrs, SetGetListRemove) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x"));
    auto none = fs().listxattr("/f");
    PACKFS_ASSERT_OK(none);
    EXPECT_TRUE(none->empty());
    PACKFS_ASSERT_OK(fs().setxattr("/f", "user.one", "1"));
    PACKFS_ASSERT_OK(fs().setxattr("/f", "user.two", "22"));
    auto one = fs().getxattr("/f", "user.one");
    PACKFS_EXPECT_OK(one);
    if (one) {
        EXPECT_EQ(*one, "1");
    }
    auto two = fs().getxattr("/f", "user.two");
    PACKFS_EXPECT_OK(two);
    if (two) {
        EXPECT_EQ(*two, "22");
    }
    auto names = fs().listxattr("/f");
    PACKFS_ASSERT_OK(names);
    EXPECT_EQ(sorted(*names), (std::vector<std::string>{"user.one", "user.two"}));
    PACKFS_ASSERT_OK(fs().removexattr("/f", "user.one"));
    PACKFS_EXPECT_ERRNO(fs().getxattr("/f", "user.one"), ENODATA);
    names = fs().listxattr("/f");
    PACKFS_ASSERT_OK(names);
    EXPECT_EQ(*names, std::vector<std::string>{"user.two"});
}

TEST_P(Xattrs, SetReplacesValue) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x"));
    PACKFS_ASSERT_OK(fs().setxattr("/f", "user.k", "first value"));
    PACKFS_ASSERT_OK(fs().setxattr("/f", "user.k", "2nd"));
    auto v = fs().getxattr("/f", "user.k");
    PACKFS_ASSERT_OK(v);
    EXPECT_EQ(*v, "2nd");
}

TEST_P(Xattrs, CreateOnExistingFails) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x"));
    PACKFS_ASSERT_OK(fs().setxattr("/f", "user.k", "v", XattrMode::create));
    PACKFS_EXPECT_ERRNO(fs().setxattr("/f", "user.k", "w", XattrMode::create), EEXIST);
    auto v = fs().getxattr("/f", "user.k");
    PACKFS_ASSERT_OK(v);
    EXPECT_EQ(*v, "v");
}

TEST_P(Xattrs, ReplaceOnMissingFails) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x"));
    PACKFS_EXPECT_ERRNO(fs().setxattr("/f", "user.k", "v", XattrMode::replace), ENODATA);
    PACKFS_EXPECT_ERRNO(fs().getxattr("/f", "user.k"), ENODATA);
    PACKFS_ASSERT_OK(fs().setxattr("/f", "user.k", "v"));
    PACKFS_EXPECT_OK(fs().setxattr("/f", "user.k", "w", XattrMode::replace));
    auto v = fs().getxattr("/f", "user.k");
    PACKFS_ASSERT_OK(v);
    EXPECT_EQ(*v, "w");
}

TEST_P(Xattrs, GetOrRemoveMissingIsNoData) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x"));
    PACKFS_EXPECT_ERRNO(fs().getxattr("/f", "user.missing"), ENODATA);
    PACKFS_EXPECT_ERRNO(fs().removexattr("/f", "user.missing"), ENODATA);
}

TEST_P(Xattrs, EmptyValueIsKept) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x"));
    PACKFS_ASSERT_OK(fs().setxattr("/f", "user.empty", ""));
    auto v = fs().getxattr("/f", "user.empty");
    PACKFS_ASSERT_OK(v);
    EXPECT_EQ(*v, "");
    auto names = fs().listxattr("/f");
    PACKFS_ASSERT_OK(names);
    EXPECT_EQ(*names, std::vector<std::string>{"user.empty"});
}

TEST_P(Xattrs, BinaryValueRoundTrips) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x"));
    std::string value = fixture_binary_value();
    PACKFS_ASSERT_OK(fs().setxattr("/f", "user.bin", value));
    auto v = fs().getxattr("/f", "user.bin");
    PACKFS_ASSERT_OK(v);
    EXPECT_EQ(v->size(), 256u);
    EXPECT_TRUE(*v == value);
    std::string big = pattern_bytes(3000, 8);
    PACKFS_ASSERT_OK(fs().setxattr("/f", "user.big", big));
    auto b = fs().getxattr("/f", "user.big");
    PACKFS_ASSERT_OK(b);
    EXPECT_TRUE(*b == big);
}

TEST_P(Xattrs, DirectoriesCarryXattrs) {
    PACKFS_ASSERT_OK(fs().mkdir("/d"));
    PACKFS_ASSERT_OK(fs().setxattr("/d", "user.d", "dir"));
    auto v = fs().getxattr("/d", "user.d");
    PACKFS_ASSERT_OK(v);
    EXPECT_EQ(*v, "dir");
}

TEST_P(Xattrs, XattrsBelongToTheInode) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x"));
    PACKFS_ASSERT_OK(fs().setxattr("/f", "user.k", "v"));
    PACKFS_ASSERT_OK(fs().link("/f", "/hard"));
    PACKFS_ASSERT_OK(fs().rename("/f", "/moved"));
    auto moved = fs().getxattr("/moved", "user.k");
    PACKFS_EXPECT_OK(moved);
    if (moved) {
        EXPECT_EQ(*moved, "v");
    }
    PACKFS_ASSERT_OK(fs().setxattr("/hard", "user.k", "through hard link"));
    auto via = fs().getxattr("/moved", "user.k");
    PACKFS_ASSERT_OK(via);
    EXPECT_EQ(*via, "through hard link");
}

TEST_P(Xattrs, XattrsOnMissingPathAreNotFound) {
    PACKFS_EXPECT_ERRNO(fs().getxattr("/missing", "user.k"), ENOENT);
    PACKFS_EXPECT_ERRNO(fs().setxattr("/missing", "user.k", "v"), ENOENT);
    PACKFS_EXPECT_ERRNO(fs().listxattr("/missing"), ENOENT);
    PACKFS_EXPECT_ERRNO(fs().removexattr("/missing", "user.k"), ENOENT);
}

TEST_P(Xattrs, XattrsDoNotFollowFinalSymlink) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x"));
    PACKFS_ASSERT_OK(fs().setxattr("/f", "user.k", "v"));
    PACKFS_ASSERT_OK(fs().symlink("f", "/l"));
    // l*xattr: the link itself has no user.k (and Linux allows no user.* on symlinks).
    PACKFS_EXPECT_ERRNO(fs().getxattr("/l", "user.k"), ENODATA);
    auto names = fs().listxattr("/l");
    PACKFS_ASSERT_OK(names);
    EXPECT_TRUE(std::find(names->begin(), names->end(), "user.k") == names->end());
}

TEST_P(Xattrs, SetxattrChangesCtime) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x"));
    auto before = fs().stat("/f");
    PACKFS_ASSERT_OK(before);
    let_clock_tick();
    PACKFS_ASSERT_OK(fs().setxattr("/f", "user.k", "v"));
    auto after = fs().stat("/f");
    PACKFS_ASSERT_OK(after);
    EXPECT_GT(after->ctime, before->ctime);
    EXPECT_EQ(after->mtime, before->mtime);
}

}  // namespace packfs::conformance
