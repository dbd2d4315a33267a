// Path grammar (DESIGN §3): normal form, limits, and the helpers built on it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "packfs/path.hpp"

using namespace packfs;

namespace {
std::string norm(std::string_view p) {
    auto r = normalize_path(p);
    return r ? *r : "ERR:" + std::string(errno_name(r.error().code()));
}
}  // namespace

TEST(Path, NormalisesSeparatorsDotsAndDotDots) {
    EXPECT_EQ(norm("/"), "/");
    EXPECT_EQ(norm("//"), "/");
    EXPECT_EQ(norm("/a//b/"), "/a/b");
    EXPECT_EQ(norm("/a/./b/."), "/a/b");
    EXPECT_EQ(norm("/a/b/.."), "/a");
    EXPECT_EQ(norm("/a/b/../../.."), "/");
    EXPECT_EQ(norm("/../a"), "/a");
    EXPECT_EQ(norm("a/b"), "/a/b");
    EXPECT_EQ(norm("."), "/");
    EXPECT_EQ(norm("/...") , "/...");
    EXPECT_EQ(norm("/..a/.b"), "/..a/.b");
}

TEST(Path, RejectsEmptyNulAndOverlongInput) {
    EXPECT_EQ(norm(""), "ERR:ENOENT");
    EXPECT_EQ(norm(std::string_view("/a\0b", 4)), "ERR:EINVAL");
    EXPECT_EQ(norm("/" + std::string(255, 'n')), "/" + std::string(255, 'n'));
    EXPECT_EQ(norm("/" + std::string(256, 'n')), "ERR:ENAMETOOLONG");
    std::string long_path;
    while (long_path.size() < 4096) long_path += "/abcdefg";
    EXPECT_EQ(norm(long_path.substr(0, 4095)).substr(0, 4), "/abc");
    EXPECT_EQ(norm(long_path.substr(0, 4096)), "ERR:ENAMETOOLONG");
    // A relative path is taken from the root: 4095 bytes become 4096, one too many (found by
    // fuzz/fuzz_path.cpp's invariant that every result is itself normal).
    EXPECT_EQ(norm(long_path.substr(1, 4095)), "ERR:ENAMETOOLONG");
    EXPECT_EQ(norm(long_path.substr(1, 4094)).substr(0, 4), "/abc");
}

TEST(Path, ErrorsNameOperationAndPath) {
    auto r = normalize_path("/" + std::string(300, 'x'), "mkdir");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().op(), "mkdir");
    EXPECT_NE(r.error().message().find("mkdir /xxx"), std::string::npos);
}

TEST(Path, IsNormalPathAgreesWithNormalize) {
    for (std::string_view p : {"/", "/a", "/a/b", "/a/", "//a", "/a/.", "/./a", "/a/..", "a", "",
                               "/a//b", "/.x", "/x.", "/.."}) {
        auto n = normalize_path(p);
        bool normal = is_normal_path(p);
        EXPECT_EQ(normal, n && *n == p) << p;
    }
}

TEST(Path, TrailingSlashMeansDirectory) {
    EXPECT_TRUE(has_trailing_slash("/a/"));
    EXPECT_TRUE(has_trailing_slash("a/."));
    EXPECT_TRUE(has_trailing_slash("/a/.."));
    EXPECT_FALSE(has_trailing_slash("/"));
    EXPECT_FALSE(has_trailing_slash("//"));
    EXPECT_FALSE(has_trailing_slash("/a"));
}

TEST(Path, ParentBasenameJoinAndComponents) {
    EXPECT_EQ(path_parent("/a/b/c"), "/a/b");
    EXPECT_EQ(path_parent("/a"), "/");
    EXPECT_EQ(path_basename("/a/b/c"), "c");
    EXPECT_EQ(path_basename("/"), "");
    EXPECT_EQ(path_join("/", "a"), "/a");
    EXPECT_EQ(path_join("/a", "b"), "/a/b");
    std::vector<std::string> parts;
    for (auto c : PathComponents("/usr/local/bin")) parts.emplace_back(c);
    EXPECT_EQ(parts, (std::vector<std::string>{"usr", "local", "bin"}));
    parts.clear();
    for (auto c : PathComponents("/")) parts.emplace_back(c);
    EXPECT_TRUE(parts.empty());
}
