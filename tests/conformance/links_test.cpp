// Hard links and symbolic links (DESIGN §4).
#include <fmt/format.h>

#include "conformance/conformance_suite.hpp"

namespace packfs::conformance {

// --- hard links ------------------------------------------------------------------------

TEST_P(Links, HardLinkSharesInodeAndCountsNames) {
    PACKFS_ASSERT_OK(write_file(fs(), "/a", "shared"));
    PACKFS_ASSERT_OK(fs().mkdir("/d"));
    PACKFS_ASSERT_OK(fs().link("/a", "/d/b"));
    auto a = fs().lstat("/a");
    auto b = fs().lstat("/d/b");
    PACKFS_ASSERT_OK(a);
    PACKFS_ASSERT_OK(b);
    EXPECT_EQ(a->ino, b->ino);
    EXPECT_EQ(a->nlink, 2u);
    EXPECT_EQ(b->nlink, 2u);
    PACKFS_ASSERT_OK(fs().link("/a", "/c"));
    auto c = fs().lstat("/c");
    PACKFS_ASSERT_OK(c);
    EXPECT_EQ(c->nlink, 3u);
    auto entries = fs().readdir("/d");
    PACKFS_ASSERT_OK(entries);
    ASSERT_EQ(entries->size(), 1u);
    EXPECT_EQ((*entries)[0].ino, a->ino);
}

TEST_P(Links, ContentIsSharedThroughBothNames) {
    PACKFS_ASSERT_OK(write_file(fs(), "/a", "first"));
    PACKFS_ASSERT_OK(fs().link("/a", "/b"));
    PACKFS_ASSERT_OK(write_file(fs(), "/b", "written through b"));
    auto a = read_file(fs(), "/a");
    PACKFS_ASSERT_OK(a);
    EXPECT_EQ(*a, "written through b");
    PACKFS_ASSERT_OK(fs().chmod("/a", 0600));
    auto b = fs().stat("/b");
    PACKFS_ASSERT_OK(b);
    EXPECT_EQ(b->mode, 0600u);
    PACKFS_ASSERT_OK(fs().truncate("/a", 3));
    auto b2 = read_file(fs(), "/b");
    PACKFS_ASSERT_OK(b2);
    EXPECT_EQ(*b2, "wri");
}

TEST_P(Links, UnlinkOneNameKeepsTheOther) {
    PACKFS_ASSERT_OK(write_file(fs(), "/a", "data"));
    PACKFS_ASSERT_OK(fs().link("/a", "/b"));
    PACKFS_ASSERT_OK(fs().unlink("/a"));
    auto b = fs().lstat("/b");
    PACKFS_ASSERT_OK(b);
    EXPECT_EQ(b->nlink, 1u);
    auto content = read_file(fs(), "/b");
    PACKFS_ASSERT_OK(content);
    EXPECT_EQ(*content, "data");
}

TEST_P(Links, LinkToDirectoryIsNotPermitted) {
    PACKFS_ASSERT_OK(fs().mkdir("/d"));
    PACKFS_EXPECT_ERRNO(fs().link("/d", "/e"), EPERM);
    PACKFS_EXPECT_ERRNO(fs().lstat("/e"), ENOENT);
}

TEST_P(Links, LinkOntoExistingNameFails) {
    PACKFS_ASSERT_OK(write_file(fs(), "/a", "a"));
    PACKFS_ASSERT_OK(write_file(fs(), "/b", "b"));
    PACKFS_EXPECT_ERRNO(fs().link("/a", "/b"), EEXIST);
    auto b = read_file(fs(), "/b");
    PACKFS_ASSERT_OK(b);
    EXPECT_EQ(*b, "b");
}

TEST_P(Links, LinkOfMissingSourceIsNotFound) {
    PACKFS_EXPECT_ERRNO(fs().link("/missing", "/b"), ENOENT);
    PACKFS_ASSERT_OK(write_file(fs(), "/a", "a"));
    PACKFS_EXPECT_ERRNO(fs().link("/a", "/no/dir/b"), ENOENT);
}

TEST_P(Links, HardLinkSurvivesRenameOfTheOtherName) {
    PACKFS_ASSERT_OK(write_file(fs(), "/a", "x"));
    PACKFS_ASSERT_OK(fs().link("/a", "/b"));
    PACKFS_ASSERT_OK(fs().mkdir("/d"));
    PACKFS_ASSERT_OK(fs().rename("/a", "/d/a"));
    auto a = fs().lstat("/d/a");
    auto b = fs().lstat("/b");
    PACKFS_ASSERT_OK(a);
    PACKFS_ASSERT_OK(b);
    EXPECT_EQ(a->ino, b->ino);
    EXPECT_EQ(b->nlink, 2u);
}

// --- symbolic links --------------------------------------------------------------------

TEST_P(Links, ReadlinkReturnsTargetVerbatim) {
    int i = 0;
    for (std::string_view target : {"plain", "/abs/path", "../up", "a//b/./c/..", "/nowhere/",
                                    "with space", "\xc3\xbc"}) {
        std::string link = fmt::format("/l{}", i++);
        PACKFS_ASSERT_OK(fs().symlink(target, link));
        auto back = fs().readlink(link);
        PACKFS_EXPECT_OK(back) << link;
        if (back) {
            EXPECT_EQ(*back, target);
        }
        auto st = fs().lstat(link);
        PACKFS_EXPECT_OK(st);
        if (st) {
            EXPECT_EQ(st->type, FileType::symlink);
            EXPECT_EQ(st->size, target.size()) << "a symlink's size is its target's length";
        }
    }
}

TEST_P(Links, ReadlinkOfNonSymlinkIsInvalid) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x"));
    PACKFS_ASSERT_OK(fs().mkdir("/d"));
    PACKFS_EXPECT_ERRNO(fs().readlink("/f"), EINVAL);
    PACKFS_EXPECT_ERRNO(fs().readlink("/d"), EINVAL);
    PACKFS_EXPECT_ERRNO(fs().readlink("/missing"), ENOENT);
}

TEST_P(Links, StatFollowsSymlinkAndLstatDoesNot) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "12345"));
    PACKFS_ASSERT_OK(fs().symlink("f", "/l"));
    auto f = fs().stat("/f");
    auto s = fs().stat("/l");
    auto l = fs().lstat("/l");
    PACKFS_ASSERT_OK(f);
    PACKFS_EXPECT_FOLLOWS(s, caps(), Via::relative);
    PACKFS_ASSERT_OK(l);
    if (s) {
        EXPECT_EQ(s->ino, f->ino);
        EXPECT_EQ(s->type, FileType::regular);
        EXPECT_EQ(s->size, 5u);
    }
    EXPECT_NE(l->ino, f->ino);
    EXPECT_EQ(l->type, FileType::symlink);
    EXPECT_EQ(l->size, 1u);
    EXPECT_TRUE(ReadsThrough(fs(), caps(), "/l", Via::relative, "12345"));
}

TEST_P(Links, DanglingSymlinkIsListedButNotFollowed) {
    PACKFS_ASSERT_OK(fs().symlink("/nowhere", "/dangling"));
    PACKFS_ASSERT_OK(fs().symlink("nowhere", "/rel_dangling"));
    for (auto [link, via] :
         {std::pair{"/dangling", Via::absolute}, std::pair{"/rel_dangling", Via::relative}}) {
        auto l = fs().lstat(link);
        PACKFS_EXPECT_OK(l) << " " << link;
        if (l) {
            EXPECT_EQ(l->type, FileType::symlink) << link;
        }
        PACKFS_EXPECT_FOLLOWS_ERRNO(fs().stat(link), caps(), via, ENOENT) << " " << link;
        PACKFS_EXPECT_FOLLOWS_ERRNO(fs().open(link, O_RDONLY), caps(), via, ENOENT) << " " << link;
    }
    auto entries = fs().readdir("/");
    PACKFS_ASSERT_OK(entries);
    ASSERT_EQ(entries->size(), 2u);
    EXPECT_EQ((*entries)[0].type, FileType::symlink);
    EXPECT_EQ((*entries)[1].type, FileType::symlink);
}

TEST_P(Links, CreateThroughDanglingSymlinkCreatesTarget) {
    PACKFS_ASSERT_OK(fs().mkdir("/d"));
    PACKFS_ASSERT_OK(fs().symlink("/d/target", "/abs"));
    PACKFS_ASSERT_OK(fs().symlink("d/rel_target", "/rel"));
    struct Case {
        const char* link;
        const char* target;
        Via via;
    };
    for (const Case& c : {Case{"/abs", "/d/target", Via::absolute},
                          Case{"/rel", "/d/rel_target", Via::relative}}) {
        PACKFS_EXPECT_FOLLOWS(write_file(fs(), c.link, "via link"), caps(), c.via) << " " << c.link;
        if (follows_via(caps(), c.via)) {
            auto t = read_file(fs(), c.target);
            PACKFS_EXPECT_OK(t) << " " << c.target;
            if (t) {
                EXPECT_EQ(*t, "via link") << c.target;
            }
        } else {
            PACKFS_EXPECT_ERRNO(fs().lstat(c.target), ENOENT) << " nothing made at the target";
        }
        auto l = fs().lstat(c.link);
        PACKFS_EXPECT_OK(l) << " " << c.link;
        if (l) {
            EXPECT_EQ(l->type, FileType::symlink) << c.link;
        }
    }
}

TEST_P(Links, ExclusiveCreateOnSymlinkFails) {
    PACKFS_ASSERT_OK(fs().symlink("/nowhere", "/dangling"));
    PACKFS_EXPECT_ERRNO(fs().open("/dangling", O_WRONLY | O_CREAT | O_EXCL), EEXIST);
    PACKFS_EXPECT_ERRNO(fs().stat("/nowhere"), ENOENT);
}

TEST_P(Links, SymlinkLoopIsTooManyLevels) {
    PACKFS_ASSERT_OK(fs().symlink("b", "/a"));
    PACKFS_ASSERT_OK(fs().symlink("a", "/b"));
    PACKFS_ASSERT_OK(fs().symlink("self", "/self"));
    PACKFS_EXPECT_ERRNO(fs().stat("/a"), ELOOP);
    PACKFS_EXPECT_ERRNO(fs().stat("/self"), ELOOP);
    PACKFS_EXPECT_ERRNO(fs().open("/a", O_RDONLY), ELOOP);
    PACKFS_EXPECT_ERRNO(fs().stat("/a/x"), ELOOP);
    PACKFS_EXPECT_ERRNO(fs().mkdir("/self/x"), ELOOP);
    PACKFS_EXPECT_OK(fs().lstat("/a"));
}

TEST_P(Links, ChainOfSymlinksResolves) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "end"));
    PACKFS_ASSERT_OK(fs().symlink("f", "/l0"));
    for (int i = 1; i < 8; ++i)
        PACKFS_ASSERT_OK(fs().symlink(fmt::format("l{}", i - 1), fmt::format("/l{}", i)));
    EXPECT_TRUE(ReadsThrough(fs(), caps(), "/l7", Via::relative, "end"));
}

TEST_P(Links, SymlinkInIntermediateComponentIsFollowed) {
    PACKFS_ASSERT_OK(fs().mkdir("/real"));
    PACKFS_ASSERT_OK(fs().mkdir("/real/sub"));
    PACKFS_ASSERT_OK(write_file(fs(), "/real/sub/f", "found"));
    PACKFS_ASSERT_OK(fs().symlink("/real", "/abs"));
    PACKFS_ASSERT_OK(fs().symlink("real/sub", "/rel"));
    EXPECT_TRUE(ReadsThrough(fs(), caps(), "/abs/sub/f", Via::absolute, "found"));
    EXPECT_TRUE(ReadsThrough(fs(), caps(), "/rel/f", Via::relative, "found"));
    PACKFS_EXPECT_FOLLOWS(fs().mkdir("/abs/new"), caps(), Via::absolute);
    PACKFS_EXPECT_FOLLOWS(write_file(fs(), "/rel/g", "g"), caps(), Via::relative);
    // What was made through a link is where it points; nothing was made where it was refused.
    std::vector<std::string> real = {"sub"};
    std::vector<std::string> sub = {"f"};
    if (follows_via(caps(), Via::absolute)) real.insert(real.begin(), "new");
    if (follows_via(caps(), Via::relative)) sub.push_back("g");
    auto real_names = sorted_names(fs(), "/real");
    auto sub_names = sorted_names(fs(), "/real/sub");
    PACKFS_ASSERT_OK(real_names);
    PACKFS_ASSERT_OK(sub_names);
    EXPECT_EQ(*real_names, real);
    EXPECT_EQ(*sub_names, sub);
    auto through = sorted_names(fs(), "/abs/sub");
    PACKFS_EXPECT_FOLLOWS(through, caps(), Via::absolute);
    if (through) {
        EXPECT_EQ(*through, sub);
    }
}

TEST_P(Links, RelativeTargetResolvesFromTheLinksDirectory) {
    PACKFS_ASSERT_OK(fs().mkdir("/a"));
    PACKFS_ASSERT_OK(fs().mkdir("/a/b"));
    PACKFS_ASSERT_OK(write_file(fs(), "/a/target", "up"));
    PACKFS_ASSERT_OK(write_file(fs(), "/target", "root"));
    PACKFS_ASSERT_OK(fs().symlink("../target", "/a/b/l"));
    EXPECT_TRUE(ReadsThrough(fs(), caps(), "/a/b/l", Via::relative, "up"));
}

TEST_P(Links, AbsoluteTargetResolvesFromBackendRoot) {
    PACKFS_ASSERT_OK(fs().mkdir("/a"));
    PACKFS_ASSERT_OK(write_file(fs(), "/target", "root"));
    PACKFS_ASSERT_OK(fs().symlink("/target", "/a/l"));
    EXPECT_TRUE(ReadsThrough(fs(), caps(), "/a/l", Via::absolute, "root"));
}

TEST_P(Links, DotDotInTargetNeverClimbsAboveRoot) {
    PACKFS_ASSERT_OK(write_file(fs(), "/target", "root"));
    PACKFS_ASSERT_OK(fs().symlink("../../../../target", "/l"));
    // In root the ".." stop at "/"; beneath, climbing above it is refused (EXDEV).
    EXPECT_TRUE(ReadsThrough(fs(), caps(), "/l", Via::absolute, "root"));
}

TEST_P(Links, DotDotAfterSymlinkIsLexical) {
    PACKFS_ASSERT_OK(fs().mkdir("/a"));
    PACKFS_ASSERT_OK(fs().mkdir("/a/b"));
    PACKFS_ASSERT_OK(fs().mkdir("/links"));
    PACKFS_ASSERT_OK(fs().symlink("/a/b", "/links/l"));
    auto via = fs().stat("/links/l/..");
    // Lexically no symlink is met at all, so every mode answers; physically /links/l is followed.
    ASSERT_TRUE(caps().lexical_dotdot ? IsOk(via) : Follows(via, caps(), Via::absolute));
    if (!via) return;
    auto expected = fs().stat(caps().lexical_dotdot ? "/links" : "/a");
    PACKFS_ASSERT_OK(expected);
    EXPECT_EQ(via->ino, expected->ino)
        << (caps().lexical_dotdot ? "lexical: /links/l/.. is /links" : "physical: it is /a");
}

TEST_P(Links, NoFollowOnSymlinkIsLoop) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x"));
    PACKFS_ASSERT_OK(fs().symlink("f", "/l"));
    PACKFS_EXPECT_ERRNO(fs().open("/l", O_RDONLY | O_NOFOLLOW), ELOOP);
    PACKFS_EXPECT_ERRNO(fs().open("/l", O_WRONLY | O_NOFOLLOW), ELOOP);
    PACKFS_EXPECT_OK(fs().open("/f", O_RDONLY | O_NOFOLLOW));
    // Only the final component: an intermediate symlink is still followed.
    PACKFS_ASSERT_OK(fs().mkdir("/d"));
    PACKFS_ASSERT_OK(write_file(fs(), "/d/g", "g"));
    PACKFS_ASSERT_OK(fs().symlink("d", "/ld"));
    PACKFS_EXPECT_FOLLOWS(fs().open("/ld/g", O_RDONLY | O_NOFOLLOW), caps(), Via::relative);
}

TEST_P(Links, SymlinkOverExistingNameFails) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x"));
    PACKFS_ASSERT_OK(fs().symlink("f", "/l"));
    PACKFS_EXPECT_ERRNO(fs().symlink("x", "/f"), EEXIST);
    PACKFS_EXPECT_ERRNO(fs().symlink("x", "/l"), EEXIST);
    PACKFS_EXPECT_ERRNO(fs().symlink("x", "/"), EEXIST);
    auto l = fs().readlink("/l");
    PACKFS_ASSERT_OK(l);
    EXPECT_EQ(*l, "f");
}

TEST_P(Links, UnlinkOfSymlinkRemovesTheLinkOnly) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x"));
    PACKFS_ASSERT_OK(fs().symlink("f", "/l"));
    PACKFS_ASSERT_OK(fs().unlink("/l"));
    PACKFS_EXPECT_ERRNO(fs().lstat("/l"), ENOENT);
    PACKFS_EXPECT_OK(fs().stat("/f"));
}

TEST_P(Links, EmptySymlinkTargetIsNotFound) {
    PACKFS_EXPECT_ERRNO(fs().symlink("", "/l"), ENOENT);
    PACKFS_EXPECT_ERRNO(fs().lstat("/l"), ENOENT);
}

}  // namespace packfs::conformance
