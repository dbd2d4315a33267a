// Path grammar (DESIGN §3): normalisation at the API edge, limits, NUL, trailing slashes.
#include "conformance/conformance_suite.hpp"

namespace packfs::conformance {

namespace {

// Sets up /a/b/f ("file") and returns b's and f's inode numbers.
struct Tree {
    uint64_t b_ino = 0;
    uint64_t f_ino = 0;
};

Result<Tree> make_abf(Backend& fs) {
    if (auto r = fs.mkdir("/a"); !r) return std::unexpected(r.error());
    if (auto r = fs.mkdir("/a/b"); !r) return std::unexpected(r.error());
    if (auto r = write_file(fs, "/a/b/f", "file"); !r) return std::unexpected(r.error());
    auto b = fs.lstat("/a/b");
    if (!b) return std::unexpected(b.error());
    auto f = fs.lstat("/a/b/f");
    if (!f) return std::unexpected(f.error());
    return Tree{b->ino, f->ino};
}

}  // namespace

TEST_P(Paths, RootIsADirectory) {
    auto st = fs().stat("/");
    PACKFS_ASSERT_OK(st);
    EXPECT_EQ(st->type, FileType::directory);
    auto names = sorted_names(fs(), "/");
    PACKFS_ASSERT_OK(names);
    EXPECT_TRUE(names->empty()) << "a new backend's root is empty";
}

TEST_P(Paths, RepeatedSlashesCollapse) {
    auto tree = make_abf(fs());
    PACKFS_ASSERT_OK(tree);
    for (std::string_view p : {"//a//b///f", "/a/b//f", "///a/b/f"}) {
        auto st = fs().lstat(p);
        PACKFS_EXPECT_OK(st) << " path " << p;
        if (st) {
            EXPECT_EQ(st->ino, tree->f_ino) << p;
        }
    }
}

TEST_P(Paths, DotComponentsAreDropped) {
    auto tree = make_abf(fs());
    PACKFS_ASSERT_OK(tree);
    for (std::string_view p : {"/./a/./b/./f", "/a/b/./f", "/./a/b/f"}) {
        auto st = fs().lstat(p);
        PACKFS_EXPECT_OK(st) << " path " << p;
        if (st) {
            EXPECT_EQ(st->ino, tree->f_ino) << p;
        }
    }
    auto root = fs().stat("/.");
    PACKFS_EXPECT_OK(root);
}

TEST_P(Paths, DotDotClimbsOneDirectory) {
    auto tree = make_abf(fs());
    PACKFS_ASSERT_OK(tree);
    for (std::string_view p : {"/a/b/f/../../b/f", "/a/x/../b/f"}) {
        // "/a/x/.." goes through a missing x: lexically fine, physically ENOENT; f/.. is
        // ENOTDIR to the kernel.
        auto st = fs().lstat(p);
        if (caps().lexical_dotdot) {
            PACKFS_EXPECT_OK(st) << " path " << p;
            if (st) {
                EXPECT_EQ(st->ino, tree->f_ino) << p;
            }
        } else {
            EXPECT_FALSE(st.has_value()) << p;
        }
    }
    auto st = fs().lstat("/a/b/c/..");
    if (caps().lexical_dotdot) {
        PACKFS_EXPECT_OK(st);
        if (st) {
            EXPECT_EQ(st->ino, tree->b_ino);
        }
    } else {
        PACKFS_EXPECT_ERRNO(st, ENOENT);
    }
    auto through_dirs = fs().lstat("/a/b/../b/f");
    PACKFS_EXPECT_OK(through_dirs);
    if (through_dirs) {
        EXPECT_EQ(through_dirs->ino, tree->f_ino);
    }
}

TEST_P(Paths, DotDotNeverClimbsAboveRoot) {
    auto tree = make_abf(fs());
    PACKFS_ASSERT_OK(tree);
    auto root = fs().stat("/");
    PACKFS_ASSERT_OK(root);
    for (std::string_view p : {"/..", "/../..", "/../../.."}) {
        auto st = fs().stat(p);
        PACKFS_EXPECT_OK(st) << " path " << p;
        if (st) {
            EXPECT_EQ(st->ino, root->ino) << p;
        }
    }
    auto f = fs().lstat("/../../a/b/f");
    PACKFS_EXPECT_OK(f);
    if (f) {
        EXPECT_EQ(f->ino, tree->f_ino);
    }
}

TEST_P(Paths, DotDotAfterFileIsLexicalOrNotDir) {
    ASSERT_TRUE(IsOk(write_file(fs(), "/file", "x")));
    auto st = fs().stat("/file/..");
    if (caps().lexical_dotdot) {
        PACKFS_EXPECT_OK(st);  // "/file/.." is "/" before any lookup
    } else {
        PACKFS_EXPECT_ERRNO(st, ENOTDIR);
    }
}

TEST_P(Paths, RelativePathIsTakenFromRoot) {
    auto tree = make_abf(fs());
    PACKFS_ASSERT_OK(tree);
    auto st = fs().lstat("a/b/f");
    PACKFS_EXPECT_OK(st);
    if (st) {
        EXPECT_EQ(st->ino, tree->f_ino);
    }
    PACKFS_EXPECT_OK(fs().mkdir("rel"));
    PACKFS_EXPECT_OK(fs().stat("/rel"));
    auto content = read_file(fs(), "a/b/f");
    PACKFS_EXPECT_OK(content);
    if (content) {
        EXPECT_EQ(*content, "file");
    }
}

TEST_P(Paths, CreateThroughUnnormalisedPathLandsAtNormalForm) {
    PACKFS_ASSERT_OK(fs().mkdir("/a"));
    PACKFS_ASSERT_OK(write_file(fs(), "//a/./new.txt", "n"));
    auto names = sorted_names(fs(), "/a");
    PACKFS_ASSERT_OK(names);
    EXPECT_EQ(*names, std::vector<std::string>{"new.txt"});
    PACKFS_EXPECT_OK(fs().mkdir("/a/sub/"));
    auto sub = fs().stat("/a/sub");
    PACKFS_EXPECT_OK(sub);
    if (sub) {
        EXPECT_EQ(sub->type, FileType::directory);
    }
}

TEST_P(Paths, EmptyPathIsNotFound) {
    PACKFS_EXPECT_ERRNO(fs().stat(""), ENOENT);
    PACKFS_EXPECT_ERRNO(fs().mkdir(""), ENOENT);
    PACKFS_EXPECT_ERRNO(fs().open("", O_RDONLY), ENOENT);
}

TEST_P(Paths, NulByteIsInvalid) {
    using namespace std::string_view_literals;
    PACKFS_ASSERT_OK(write_file(fs(), "/a", "x"));
    PACKFS_EXPECT_ERRNO(fs().stat("/a\0b"sv), EINVAL);
    PACKFS_EXPECT_ERRNO(fs().lstat("/a\0"sv), EINVAL);
    PACKFS_EXPECT_ERRNO(fs().mkdir("/d\0ir"sv), EINVAL);
    PACKFS_EXPECT_ERRNO(fs().open("/n\0ew"sv, O_WRONLY | O_CREAT), EINVAL);
    PACKFS_EXPECT_ERRNO(fs().unlink("/a\0"sv), EINVAL);
    PACKFS_EXPECT_ERRNO(fs().rename("/a", "/b\0"sv), EINVAL);
    PACKFS_EXPECT_ERRNO(fs().symlink("/a", "/l\0"sv), EINVAL);
    // Nothing was created under a truncated name.
    auto names = sorted_names(fs(), "/");
    PACKFS_ASSERT_OK(names);
    EXPECT_EQ(*names, std::vector<std::string>{"a"});
}

TEST_P(Paths, NameOf255BytesIsAccepted) {
    std::string name(255, 'n');
    PACKFS_ASSERT_OK(write_file(fs(), "/" + name, "long"));
    PACKFS_EXPECT_OK(fs().mkdir("/" + std::string(255, 'd')));
    auto names = sorted_names(fs(), "/");
    PACKFS_ASSERT_OK(names);
    EXPECT_EQ(names->size(), 2u);
    auto content = read_file(fs(), "/" + name);
    PACKFS_EXPECT_OK(content);
}

TEST_P(Paths, NameOf256BytesIsTooLong) {
    std::string name(256, 'n');
    PACKFS_EXPECT_ERRNO(fs().open("/" + name, O_WRONLY | O_CREAT), ENAMETOOLONG);
    PACKFS_EXPECT_ERRNO(fs().mkdir("/" + name), ENAMETOOLONG);
    PACKFS_EXPECT_ERRNO(fs().stat("/" + name), ENAMETOOLONG);
    PACKFS_EXPECT_ERRNO(fs().lstat("/" + name + "/x"), ENAMETOOLONG);
    PACKFS_EXPECT_ERRNO(fs().symlink("/x", "/" + name), ENAMETOOLONG);
    auto names = sorted_names(fs(), "/");
    PACKFS_ASSERT_OK(names);
    EXPECT_TRUE(names->empty());
}

TEST_P(Paths, PathOf4096BytesIsTooLong) {
    // 4096 bytes that would normalise to a short path: the limit is on what the caller gave.
    PACKFS_ASSERT_OK(fs().mkdir("/a"));
    std::string p = "/";
    while (p.size() < 4096 - 1) p += "./";
    p.resize(4096 - 1);
    p += "a";
    ASSERT_EQ(p.size(), 4096u);
    PACKFS_EXPECT_ERRNO(fs().stat(p), ENAMETOOLONG);
    std::string q = "/a";
    while (q.size() + 2 <= 4096) q += "/a";
    q.resize(4096, 'a');
    ASSERT_EQ(q.size(), 4096u);
    PACKFS_EXPECT_ERRNO(fs().mkdir(q), ENAMETOOLONG);
}

TEST_P(Paths, PathOf4095BytesIsAccepted) {
    PACKFS_ASSERT_OK(fs().mkdir("/ab"));
    std::string p = "/";
    while (p.size() < 4095 - 2) p += "./";
    p.resize(4095 - 2);
    p += "ab";
    ASSERT_EQ(p.size(), 4095u);
    auto st = fs().stat(p);
    PACKFS_EXPECT_OK(st);
}

TEST_P(Paths, TrailingSlashOnFileIsNotDir) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x"));
    PACKFS_EXPECT_ERRNO(fs().stat("/f/"), ENOTDIR);
    PACKFS_EXPECT_ERRNO(fs().lstat("/f/"), ENOTDIR);
    PACKFS_EXPECT_ERRNO(fs().stat("/f/."), ENOTDIR);
    PACKFS_EXPECT_ERRNO(fs().open("/f/", O_RDONLY), ENOTDIR);
    PACKFS_EXPECT_ERRNO(fs().unlink("/f/"), ENOTDIR);
    PACKFS_EXPECT_OK(fs().stat("/f"));  // still there
}

TEST_P(Paths, TrailingSlashOnDirectoryIsAccepted) {
    PACKFS_ASSERT_OK(fs().mkdir("/d"));
    auto st = fs().stat("/d/");
    PACKFS_EXPECT_OK(st);
    if (st) {
        EXPECT_EQ(st->type, FileType::directory);
    }
    PACKFS_EXPECT_OK(fs().readdir("/d/"));
    PACKFS_EXPECT_OK(fs().rename("/d/", "/e/"));
    PACKFS_EXPECT_OK(fs().rmdir("/e/"));
    PACKFS_EXPECT_ERRNO(fs().stat("/e"), ENOENT);
}

TEST_P(Paths, TrailingSlashFollowsSymlinkToDirectory) {
    PACKFS_ASSERT_OK(fs().mkdir("/d"));
    PACKFS_ASSERT_OK(fs().symlink("/d", "/abs"));
    PACKFS_ASSERT_OK(fs().symlink("d", "/rel"));
    for (auto [link, via] : {std::pair{"/abs/", Via::absolute}, std::pair{"/rel/", Via::relative}}) {
        auto st = fs().lstat(link);
        PACKFS_EXPECT_FOLLOWS(st, caps(), via) << " " << link;
        if (st) {
            EXPECT_EQ(st->type, FileType::directory) << link;
        }
    }
}

TEST_P(Paths, CreatingFileWithTrailingSlashIsDir) {
    // Linux answers EISDIR for open("new/", O_CREAT): the name demands a directory.
    PACKFS_EXPECT_ERRNO(fs().open("/new/", O_WRONLY | O_CREAT, 0644), EISDIR);
    PACKFS_EXPECT_ERRNO(fs().stat("/new"), ENOENT);
}

TEST_P(Paths, UnusualNamesAreOrdinaryBytes) {
    const std::vector<std::string> names = {"...", " lead", "trail ", "-dash", "new\nline",
                                            "\xc3\xbc\xc3\xb1\xc3\xaf", "\xff\xfe", "a:b*c?"};
    for (const auto& n : names) {
        PACKFS_EXPECT_OK(write_file(fs(), "/" + n, n)) << " name " << n;
    }
    auto listed = sorted_names(fs(), "/");
    PACKFS_ASSERT_OK(listed);
    auto expected = names;
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(*listed, expected);
    for (const auto& n : names) {
        auto content = read_file(fs(), "/" + n);
        PACKFS_EXPECT_OK(content) << " name " << n;
        if (content) {
            EXPECT_EQ(*content, n);
        }
    }
}

}  // namespace packfs::conformance
