// The Vfs's own behaviour (DESIGN §11, include/packfs/vfs.hpp): longest-prefix dispatch,
// path normalisation, virtual directories above mount points, unions, read-only mounts,
// EXDEV across mounts, mount/unmount bookkeeping, and snapshots across mounts. Every test
// asserts exact results and errnos, and checks the member backends directly to see where a
// change really landed.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <set>

#include <fmt/format.h>

#include "vfs/vfs_test_util.hpp"

namespace packfs::vfs_test {
namespace {

#define EXPECT_OK(expr) EXPECT_TRUE(IsOk((expr))) << #expr
#define ASSERT_OK(expr) ASSERT_TRUE(IsOk((expr))) << #expr
#define EXPECT_ERRNO(expr, code) EXPECT_TRUE(FailsWith((expr), (code))) << #expr

using Names = std::vector<std::string>;

class VfsTest : public ::testing::Test {
protected:
    void SetUp() override {
        vfs_ = Vfs::create();
        ASSERT_NE(vfs_, nullptr);
    }
    Vfs& vfs() { return *vfs_; }
    std::shared_ptr<Vfs> vfs_;
};

// --- an empty Vfs ----------------------------------------------------------------------

TEST_F(VfsTest, EmptyVfsHasOnlyTheRoot) {
    auto st = vfs().stat("/");
    ASSERT_OK(st);
    EXPECT_EQ(st->type, FileType::directory);
    EXPECT_EQ(names_of(vfs(), "/"), Names{});
    EXPECT_ERRNO(vfs().stat("/x"), ENOENT);
    EXPECT_ERRNO(vfs().lstat("/x/y"), ENOENT);
    EXPECT_ERRNO(vfs().open("/x", O_RDONLY), ENOENT);
    EXPECT_TRUE(vfs().mounts().empty());
    EXPECT_FALSE(vfs().read_only());
}

// --- dispatch --------------------------------------------------------------------------

TEST_F(VfsTest, LongestPrefixDispatchByComponent) {
    auto root = mem(), a = mem(), ab = mem();
    ASSERT_OK(vfs().mount("/", root));
    ASSERT_OK(vfs().mount("/a", a));
    ASSERT_OK(vfs().mount("/a/b", ab));

    ASSERT_OK(write_file(vfs(), "/a/b/x", "in ab"));
    ASSERT_OK(write_file(vfs(), "/a/bx", "in a"));
    ASSERT_OK(write_file(vfs(), "/a/c", "also in a"));
    ASSERT_OK(write_file(vfs(), "/top", "in root"));

    // Where each write landed, seen through the members themselves.
    EXPECT_EQ(content_of(*ab, "/x"), "in ab");
    EXPECT_EQ(names_of(*ab, "/"), Names{"x"});
    EXPECT_EQ(content_of(*a, "/bx"), "in a");
    EXPECT_EQ(content_of(*a, "/c"), "also in a");
    EXPECT_EQ(names_of(*a, "/"), (Names{"bx", "c"}));  // "/a/b/x" did not go to a
    EXPECT_EQ(names_of(*root, "/"), Names{"top"});
    // And back through the Vfs.
    EXPECT_EQ(content_of(vfs(), "/a/b/x"), "in ab");
    EXPECT_EQ(content_of(vfs(), "/a/bx"), "in a");
    EXPECT_EQ(content_of(vfs(), "/top"), "in root");
    // A name in a that is spelled like the deeper mount is hidden by it.
    ASSERT_OK(a->mkdir("/b"));
    ASSERT_OK(write_file(*a, "/b/hidden", "shadowed"));
    EXPECT_ERRNO(vfs().stat("/a/b/hidden"), ENOENT);
    // Handles opened through the Vfs write into the member.
    auto f = vfs().open("/a/b/h", O_RDWR | O_CREAT, 0600);
    ASSERT_OK(f);
    ASSERT_OK(conformance::pwrite_string(**f, "handle", 0));
    EXPECT_EQ(content_of(*ab, "/h"), "handle");
    auto fst = (*f)->fstat();
    ASSERT_OK(fst);
    auto direct = ab->lstat("/h");
    ASSERT_OK(direct);
    EXPECT_EQ(fst->ino, direct->ino);
    EXPECT_EQ(fst->mode, 0600u);
}

TEST_F(VfsTest, EveryOperationDispatchesToTheDeepestMount) {
    auto root = mem(), a = mem();
    ASSERT_OK(vfs().mount("/", root));
    ASSERT_OK(vfs().mount("/a", a));
    ASSERT_OK(vfs().mkdir("/a/d", 0700));
    ASSERT_OK(vfs().symlink("d", "/a/l"));
    ASSERT_OK(write_file(vfs(), "/a/f", "0123456789"));
    ASSERT_OK(vfs().truncate("/a/f", 4));
    ASSERT_OK(vfs().chmod("/a/f", 0640));
    ASSERT_OK(vfs().chown("/a/f", 12, 34));
    ASSERT_OK(vfs().utimens("/a/f", TimeUpdate::at({100, 5}), TimeUpdate::at({200, 6})));
    ASSERT_OK(vfs().setxattr("/a/f", "user.k", "v"));
    ASSERT_OK(vfs().mknod("/a/fifo", FileType::fifo, 0644));
    ASSERT_OK(vfs().link("/a/f", "/a/f2"));
    ASSERT_OK(vfs().rename("/a/f2", "/a/d/f3"));

    EXPECT_EQ(names_of(*root, "/"), Names{});
    EXPECT_EQ(names_of(*a, "/"), (Names{"d", "f", "fifo", "l"}));
    EXPECT_EQ(names_of(*a, "/d"), Names{"f3"});
    auto st = a->lstat("/f");
    ASSERT_OK(st);
    EXPECT_EQ(st->size, 4u);
    EXPECT_EQ(st->mode, 0640u);
    EXPECT_EQ(st->uid, 12u);
    EXPECT_EQ(st->gid, 34u);
    EXPECT_EQ(st->nlink, 2u);
    EXPECT_EQ(st->mtime, (Time{200, 6}));
    auto v = a->getxattr("/f", "user.k");
    ASSERT_OK(v);
    EXPECT_EQ(*v, "v");

    // Reads through the Vfs answer what the member answers.
    auto vst = vfs().lstat("/a/f");
    ASSERT_OK(vst);
    EXPECT_EQ(vst->ino, st->ino);
    auto link = vfs().readlink("/a/l");
    ASSERT_OK(link);
    EXPECT_EQ(*link, "d");
    auto through = vfs().stat("/a/l");  // the link resolves inside a
    ASSERT_OK(through);
    EXPECT_EQ(through->type, FileType::directory);
    auto xs = vfs().listxattr("/a/f");
    ASSERT_OK(xs);
    EXPECT_EQ(*xs, std::vector<std::string>{"user.k"});
    ASSERT_OK(vfs().removexattr("/a/f", "user.k"));
    EXPECT_ERRNO(a->getxattr("/f", "user.k"), ENODATA);
    ASSERT_OK(vfs().unlink("/a/d/f3"));
    ASSERT_OK(vfs().unlink("/a/l"));
    ASSERT_OK(vfs().rmdir("/a/d"));
    EXPECT_EQ(names_of(*a, "/"), (Names{"f", "fifo"}));

    // Errors keep the member's codes.
    EXPECT_ERRNO(vfs().stat("/a/missing"), ENOENT);
    EXPECT_ERRNO(vfs().stat("/a/f/x"), ENOTDIR);
    EXPECT_ERRNO(vfs().mkdir("/a/f"), EEXIST);
    EXPECT_ERRNO(vfs().readdir("/a/f"), ENOTDIR);
    EXPECT_ERRNO(vfs().open("/a/fifo", O_RDONLY), ENOTSUP);
}

TEST_F(VfsTest, StatfsDispatchesToTheMount) {
    MemOptions small, big;
    small.capacity_bytes = 1 << 20;
    big.capacity_bytes = 64 << 20;
    auto root = make_mem_backend(big), a = make_mem_backend(small);
    ASSERT_OK(vfs().mount("/", root));
    ASSERT_OK(vfs().mount("/a", a));
    ASSERT_OK(a->mkdir("/d"));
    auto want_a = a->statfs("/");
    auto want_root = root->statfs("/");
    ASSERT_OK(want_a);
    ASSERT_OK(want_root);
    ASSERT_NE(want_a->blocks * want_a->block_size, want_root->blocks * want_root->block_size);
    for (std::string_view p : {"/a", "/a/d", "/a//d/."}) {
        auto s = vfs().statfs(p);
        ASSERT_OK(s);
        EXPECT_EQ(s->blocks * s->block_size, want_a->blocks * want_a->block_size) << p;
    }
    auto s = vfs().statfs("/");
    ASSERT_OK(s);
    EXPECT_EQ(s->blocks * s->block_size, want_root->blocks * want_root->block_size);
    EXPECT_ERRNO(vfs().statfs("/a/missing"), ENOENT);
}

TEST_F(VfsTest, PathsAreNormalisedBeforeDispatch) {
    auto root = mem(), a = mem(), ab = mem();
    ASSERT_OK(vfs().mount("/", root));
    ASSERT_OK(vfs().mount("/a", a));
    ASSERT_OK(vfs().mount("/a/b", ab));
    ASSERT_OK(write_file(*ab, "/x", "deep"));
    ASSERT_OK(write_file(*a, "/y", "shallow"));

    for (std::string_view p : {"/a//b/../b/x", "a/b/x", "/a/./b/x", "//a/b//x", "/a/b/x/../x",
                               "/../a/b/x", "/a/c/../b/x"}) {
        EXPECT_EQ(content_of(vfs(), p), "deep") << p;
    }
    // ".." leaves the deeper mount lexically, before any lookup.
    EXPECT_EQ(content_of(vfs(), "/a/b/../y"), "shallow");
    EXPECT_EQ(content_of(vfs(), "/a/b/x/../../y"), "shallow");
    auto a_root = a->stat("/");
    auto via = vfs().stat("/a/b/..");
    ASSERT_OK(a_root);
    ASSERT_OK(via);
    EXPECT_EQ(via->ino, a_root->ino);
    // Writes through odd spellings land where the normal form says.
    ASSERT_OK(write_file(vfs(), "/a/./b//new", "n"));
    ASSERT_OK(write_file(vfs(), "/a/b/../new2", "m"));
    EXPECT_EQ(names_of(*ab, "/"), (Names{"new", "x"}));
    EXPECT_EQ(names_of(*a, "/"), (Names{"new2", "y"}));
    // Mount paths are normalised too.
    auto c = mem();
    ASSERT_OK(vfs().mount("//c/./d/", c));
    ASSERT_OK(write_file(*c, "/z", "cz"));
    EXPECT_EQ(content_of(vfs(), "/c/d/z"), "cz");
    bool found = false;
    for (const auto& m : vfs().mounts()) found = found || (m.path == "/c/d" && m.backend == c);
    EXPECT_TRUE(found) << "mounts() shows the normal form /c/d";
    // A trailing '/' still demands a directory.
    EXPECT_ERRNO(vfs().stat("/a/b/x/"), ENOTDIR);
    auto dir = vfs().stat("/a/b/");
    EXPECT_OK(dir);
}

// --- mount points and virtual directories ----------------------------------------------

TEST_F(VfsTest, IntermediateDirectoriesAboveAMountExist) {
    auto root = mem(), r = mem();
    ASSERT_OK(vfs().mount("/", root));
    ASSERT_OK(vfs().mount("/p/q/r", r));
    ASSERT_OK(write_file(*r, "/inside", "i"));

    for (std::string_view p : {"/p", "/p/q", "/p/q/r"}) {
        auto st = vfs().stat(p);
        ASSERT_OK(st) << p;
        EXPECT_EQ(st->type, FileType::directory) << p;
        auto lst = vfs().lstat(p);
        ASSERT_OK(lst) << p;
        EXPECT_EQ(lst->type, FileType::directory) << p;
    }
    EXPECT_EQ(names_of(vfs(), "/"), Names{"p"});
    EXPECT_EQ(names_of(vfs(), "/p"), Names{"q"});
    EXPECT_EQ(names_of(vfs(), "/p/q"), Names{"r"});
    EXPECT_EQ(names_of(vfs(), "/p/q/r"), Names{"inside"});
    EXPECT_EQ(content_of(vfs(), "/p/q/r/inside"), "i");
    // The listed entries are directories, and agree with lstat.
    for (std::string_view dir : {"/", "/p", "/p/q"}) {
        auto entries = vfs().readdir(dir);
        ASSERT_OK(entries);
        ASSERT_EQ(entries->size(), 1u);
        EXPECT_EQ((*entries)[0].type, FileType::directory) << dir;
        auto st = vfs().lstat(path_join(dir, (*entries)[0].name));
        ASSERT_OK(st);
        EXPECT_EQ((*entries)[0].ino, st->ino) << dir;
    }
    // Nothing else appears between the mount points.
    EXPECT_ERRNO(vfs().stat("/p/other"), ENOENT);
    EXPECT_ERRNO(vfs().stat("/p/q/other"), ENOENT);
    EXPECT_ERRNO(vfs().mkdir("/p"), EEXIST);
    EXPECT_ERRNO(vfs().mkdir("/p/q"), EEXIST);
    EXPECT_ERRNO(vfs().mkdir("/p/q/r"), EEXIST);
    // The root mem never got those directories.
    EXPECT_EQ(names_of(*root, "/"), Names{});
}

TEST_F(VfsTest, IntermediateDirectoriesWithoutAnyRootMount) {
    auto r = mem();
    ASSERT_OK(vfs().mount("/p/q", r));
    EXPECT_EQ(names_of(vfs(), "/"), Names{"p"});
    EXPECT_EQ(names_of(vfs(), "/p"), Names{"q"});
    auto st = vfs().stat("/p");
    ASSERT_OK(st);
    EXPECT_EQ(st->type, FileType::directory);
    ASSERT_OK(write_file(vfs(), "/p/q/f", "x"));
    EXPECT_EQ(content_of(*r, "/f"), "x");
    EXPECT_ERRNO(vfs().stat("/p/missing"), ENOENT);
    EXPECT_ERRNO(vfs().stat("/elsewhere"), ENOENT);
}

TEST_F(VfsTest, MountPointsMergeWithTheParentsListingWithoutDuplicates) {
    auto root = mem(), m = mem(), n = mem();
    ASSERT_OK(vfs().mount("/", root));
    ASSERT_OK(root->mkdir("/p"));
    ASSERT_OK(write_file(*root, "/p/f", "file"));
    ASSERT_OK(root->mkdir("/p/q"));  // the parent backend has the mount point itself
    ASSERT_OK(write_file(*root, "/top", ""));
    ASSERT_OK(vfs().mount("/p/q", m));
    ASSERT_OK(vfs().mount("/p/new", n));  // and one it lacks

    EXPECT_EQ(names_of(vfs(), "/"), (Names{"p", "top"}));
    EXPECT_EQ(names_of(vfs(), "/p"), (Names{"f", "new", "q"}));
    // The entry for a mount point describes the mounted root.
    auto entries = vfs().readdir("/p");
    ASSERT_OK(entries);
    auto m_root = m->stat("/");
    ASSERT_OK(m_root);
    for (const auto& e : *entries) {
        auto st = vfs().lstat(path_join("/p", e.name));
        ASSERT_OK(st);
        EXPECT_EQ(e.ino, st->ino) << e.name;
        EXPECT_EQ(e.type, st->type) << e.name;
    }
}

TEST_F(VfsTest, StatOfAMountPointIsTheMountedRoot) {
    auto root = mem();
    MemOptions opts;
    opts.root_mode = 0710;
    opts.uid = 7;
    opts.gid = 8;
    auto m = make_mem_backend(opts);
    ASSERT_OK(vfs().mount("/", root));
    ASSERT_OK(root->mkdir("/m", 0755));  // shadowed by the mount
    ASSERT_OK(write_file(*root, "/m/hidden", "h"));
    ASSERT_OK(vfs().mount("/m", m));
    ASSERT_OK(m->mkdir("/sub"));

    auto want = m->stat("/");
    auto got = vfs().stat("/m");
    auto lgot = vfs().lstat("/m");
    ASSERT_OK(want);
    ASSERT_OK(got);
    ASSERT_OK(lgot);
    EXPECT_EQ(got->ino, want->ino);
    EXPECT_EQ(got->mode, 0710u);
    EXPECT_EQ(got->uid, 7u);
    EXPECT_EQ(got->gid, 8u);
    EXPECT_EQ(got->nlink, want->nlink);
    EXPECT_EQ(lgot->ino, want->ino);
    EXPECT_EQ(lgot->mode, 0710u);
    EXPECT_ERRNO(vfs().stat("/m/hidden"), ENOENT);
    EXPECT_EQ(names_of(vfs(), "/m"), Names{"sub"});
    // Changing the mount point's attributes changes the mounted root.
    ASSERT_OK(vfs().chmod("/m", 0750));
    auto after = m->stat("/");
    ASSERT_OK(after);
    EXPECT_EQ(after->mode, 0750u);
    auto shadowed = root->stat("/m");
    ASSERT_OK(shadowed);
    EXPECT_EQ(shadowed->mode, 0755u);
    // A mount point cannot be removed: the member's root is busy.
    EXPECT_ERRNO(vfs().rmdir("/m"), EBUSY);
    // After the unmount the parent's own directory shows again.
    ASSERT_OK(vfs().unmount("/m"));
    EXPECT_EQ(content_of(vfs(), "/m/hidden"), "h");
}

// --- unions ----------------------------------------------------------------------------

TEST_F(VfsTest, UnionLookupsHitTheFirstMemberHoldingThePath) {
    auto u1 = mem(), u2 = mem();
    ASSERT_OK(write_file(*u1, "/a", "one"));
    ASSERT_OK(write_file(*u1, "/shared", "u1"));
    ASSERT_OK(write_file(*u2, "/b", "two"));
    ASSERT_OK(write_file(*u2, "/shared", "u2"));
    ASSERT_OK(u2->mkdir("/d"));
    ASSERT_OK(write_file(*u2, "/d/x", "dx"));
    ASSERT_OK(vfs().mount("/u", u1));
    ASSERT_OK(vfs().mount("/u", u2));

    auto ms = vfs().mounts();
    ASSERT_EQ(ms.size(), 2u);
    EXPECT_EQ(ms[0].backend, u1);
    EXPECT_EQ(ms[1].backend, u2);

    EXPECT_EQ(content_of(vfs(), "/u/a"), "one");
    EXPECT_EQ(content_of(vfs(), "/u/b"), "two");
    EXPECT_EQ(content_of(vfs(), "/u/shared"), "u1");
    EXPECT_EQ(content_of(vfs(), "/u/d/x"), "dx");
    EXPECT_ERRNO(vfs().stat("/u/none"), ENOENT);
    auto st = vfs().lstat("/u/shared");
    auto st1 = u1->lstat("/shared");
    ASSERT_OK(st);
    ASSERT_OK(st1);
    EXPECT_EQ(st->ino, st1->ino);

    // The merged listing: every name once, the first member's entry winning.
    auto entries = vfs().readdir("/u");
    ASSERT_OK(entries);
    std::map<std::string, DirEntry> by_name;
    for (const auto& e : *entries) {
        EXPECT_TRUE(by_name.emplace(e.name, e).second) << "listed twice: " << e.name;
    }
    EXPECT_EQ(by_name.size(), 4u);
    for (const char* n : {"a", "b", "d", "shared"}) EXPECT_TRUE(by_name.contains(n)) << n;
    EXPECT_EQ(by_name["shared"].ino, st1->ino);
    EXPECT_EQ(by_name["d"].type, FileType::directory);
    EXPECT_EQ(names_of(vfs(), "/u/d"), Names{"x"});

    // A change to an existing entry goes to the member holding it.
    ASSERT_OK(write_file(vfs(), "/u/b", "two changed"));
    EXPECT_EQ(content_of(*u2, "/b"), "two changed");
    EXPECT_ERRNO(u1->stat("/b"), ENOENT);
    ASSERT_OK(vfs().chmod("/u/b", 0600));
    auto b2 = u2->stat("/b");
    ASSERT_OK(b2);
    EXPECT_EQ(b2->mode, 0600u);
    ASSERT_OK(vfs().setxattr("/u/d/x", "user.k", "v"));
    EXPECT_OK(u2->getxattr("/d/x", "user.k"));

    // Creation goes to the first writable member.
    ASSERT_OK(write_file(vfs(), "/u/new", "fresh"));
    EXPECT_EQ(content_of(*u1, "/new"), "fresh");
    EXPECT_ERRNO(u2->stat("/new"), ENOENT);
    ASSERT_OK(vfs().mkdir("/u/nd"));
    auto nd = u1->stat("/nd");
    EXPECT_OK(nd);

    // Removing the first member's entry uncovers the next one's.
    ASSERT_OK(vfs().unlink("/u/shared"));
    EXPECT_EQ(content_of(vfs(), "/u/shared"), "u2");
    EXPECT_EQ(content_of(*u2, "/shared"), "u2");
    ASSERT_OK(vfs().unlink("/u/shared"));
    EXPECT_ERRNO(vfs().stat("/u/shared"), ENOENT);
    EXPECT_EQ(names_of(vfs(), "/u"), (Names{"a", "b", "d", "nd", "new"}));
}

// A lookup error other than ENOENT from the member that holds the path's prefix is the answer;
// it is not replaced by a later member's ENOENT, and a symlink is an entry even when it does
// not resolve.
TEST_F(VfsTest, UnionLookupErrorsComeFromTheMemberThatAnswers) {
    auto u1 = mem(), u2 = mem();
    ASSERT_OK(write_file(*u1, "/file", "f"));
    ASSERT_OK(u1->symlink("loop", "/loop"));
    ASSERT_OK(u1->symlink("/u/file/x", "/bad"));  // a target is a Vfs path
    ASSERT_OK(vfs().mount("/u", u1));
    ASSERT_OK(vfs().mount("/u", u2));
    EXPECT_ERRNO(vfs().stat("/u/file/x"), ENOTDIR);
    EXPECT_ERRNO(vfs().stat("/u/loop"), ELOOP);
    EXPECT_ERRNO(vfs().stat("/u/bad"), ENOTDIR);
    auto l = vfs().lstat("/u/loop");
    ASSERT_OK(l);
    EXPECT_EQ(l->type, FileType::symlink);
    EXPECT_ERRNO(vfs().open("/u/loop", O_RDWR | O_CREAT | O_EXCL, 0644), EEXIST);
    EXPECT_ERRNO(vfs().open("/u/bad", O_RDWR | O_CREAT | O_EXCL, 0644), EEXIST);
    EXPECT_ERRNO(vfs().rename("/u/file/x", "/u/y"), ENOTDIR);
    EXPECT_ERRNO(vfs().rename("/u/loop/x", "/u/y"), ELOOP);
    EXPECT_ERRNO(vfs().unlink("/u/file/x"), ENOTDIR);
    EXPECT_ERRNO(vfs().mkdir("/u/file/x"), ENOTDIR);
    // And the same through a single mount, for comparison.
    ASSERT_OK(vfs().mount("/single", u1));
    EXPECT_ERRNO(vfs().open("/single/loop", O_RDWR | O_CREAT | O_EXCL, 0644), EEXIST);
    EXPECT_ERRNO(vfs().rename("/single/file/x", "/single/y"), ENOTDIR);
    EXPECT_EQ(names_of(*u2, "/"), Names{});
}

// A trailing '/' survives dispatch: it still demands a directory of the member.
TEST_F(VfsTest, TrailingSlashDemandsADirectoryThroughAMount) {
    auto a = mem();
    ASSERT_OK(vfs().mount("/a", a));
    ASSERT_OK(write_file(*a, "/f", "x"));
    ASSERT_OK(a->mkdir("/d"));
    ASSERT_OK(a->symlink("d", "/ld"));
    EXPECT_ERRNO(vfs().stat("/a/f/"), ENOTDIR);
    EXPECT_ERRNO(vfs().lstat("/a/f/"), ENOTDIR);
    EXPECT_ERRNO(vfs().open("/a/f/", O_RDONLY), ENOTDIR);
    EXPECT_ERRNO(vfs().unlink("/a/f/"), ENOTDIR);
    EXPECT_ERRNO(vfs().open("/a/new/", O_WRONLY | O_CREAT, 0644), EISDIR);
    EXPECT_ERRNO(a->stat("/new"), ENOENT);
    auto ld = vfs().lstat("/a/ld/");  // a trailing '/' follows the final symlink
    ASSERT_OK(ld);
    EXPECT_EQ(ld->type, FileType::directory);
    EXPECT_OK(vfs().stat("/a/d/"));
    EXPECT_OK(vfs().stat("/a/"));
    EXPECT_OK(a->stat("/f"));
}

// mknod's own argument check comes before the path's length, as in mem.
TEST_F(VfsTest, ErrnoOrderMatchesTheMember) {
    auto a = mem();
    ASSERT_OK(vfs().mount("/", a));
    const std::string long_name = "/" + std::string(256, 'x');
    auto direct = a->mknod(long_name, FileType::directory, 0755);
    ASSERT_FALSE(direct.has_value());
    EXPECT_ERRNO(vfs().mknod(long_name, FileType::directory, 0755), direct.error().code());
}

TEST_F(VfsTest, UnionCreationSkipsReadOnlyMembers) {
    auto ro = mem(), w = mem();
    ASSERT_OK(write_file(*ro, "/ro.txt", "read only"));
    ASSERT_OK(write_file(*ro, "/both", "from ro"));
    ASSERT_OK(write_file(*w, "/both", "from w"));
    ASSERT_OK(write_file(*w, "/w.txt", "writable"));
    ASSERT_OK(vfs().mount("/u", ro, {.read_only = true}));
    ASSERT_OK(vfs().mount("/u", w));

    EXPECT_EQ(content_of(vfs(), "/u/both"), "from ro");
    ASSERT_OK(write_file(vfs(), "/u/created", "c"));
    EXPECT_EQ(content_of(*w, "/created"), "c");
    EXPECT_ERRNO(ro->stat("/created"), ENOENT);
    ASSERT_OK(vfs().mkdir("/u/newdir"));
    EXPECT_OK(w->stat("/newdir"));
    ASSERT_OK(vfs().symlink("target", "/u/sl"));
    EXPECT_OK(w->lstat("/sl"));
    ASSERT_OK(vfs().mknod("/u/fifo", FileType::fifo, 0644));
    EXPECT_OK(w->lstat("/fifo"));

    // The read-only member's entries cannot be changed.
    EXPECT_ERRNO(vfs().open("/u/ro.txt", O_WRONLY), EROFS);
    EXPECT_ERRNO(vfs().open("/u/ro.txt", O_RDWR | O_TRUNC), EROFS);
    EXPECT_ERRNO(vfs().truncate("/u/ro.txt", 0), EROFS);
    EXPECT_ERRNO(vfs().unlink("/u/ro.txt"), EROFS);
    EXPECT_ERRNO(vfs().chmod("/u/ro.txt", 0600), EROFS);
    EXPECT_ERRNO(vfs().chown("/u/ro.txt", 1, 1), EROFS);
    EXPECT_ERRNO(vfs().utimens("/u/ro.txt", TimeUpdate::now(), TimeUpdate::now()), EROFS);
    EXPECT_ERRNO(vfs().setxattr("/u/ro.txt", "user.x", "v"), EROFS);
    EXPECT_ERRNO(vfs().rename("/u/ro.txt", "/u/moved"), EROFS);
    EXPECT_ERRNO(vfs().unlink("/u/both"), EROFS);  // the read-only member holds it first
    EXPECT_EQ(content_of(*ro, "/ro.txt"), "read only");
    EXPECT_EQ(content_of(*ro, "/both"), "from ro");
    // Reads still work, and the writable member's entries still change.
    EXPECT_EQ(content_of(vfs(), "/u/ro.txt"), "read only");
    ASSERT_OK(write_file(vfs(), "/u/w.txt", "changed"));
    EXPECT_EQ(content_of(*w, "/w.txt"), "changed");
    EXPECT_EQ(names_of(vfs(), "/u"),
              (Names{"both", "created", "fifo", "newdir", "ro.txt", "sl", "w.txt"}));
}

TEST_F(VfsTest, UnionSkipsAMemberThatIsItselfReadOnly) {
    auto live = mem(), w = mem();
    ASSERT_OK(write_file(*live, "/frozen", "f"));
    auto snap = live->snapshot();
    ASSERT_OK(snap);
    ASSERT_TRUE((*snap)->read_only());
    ASSERT_OK(vfs().mount("/u", *snap));  // no read_only option: the backend is read-only
    ASSERT_OK(vfs().mount("/u", w));
    ASSERT_OK(write_file(vfs(), "/u/new", "n"));
    EXPECT_EQ(content_of(*w, "/new"), "n");
    EXPECT_ERRNO(vfs().unlink("/u/frozen"), EROFS);
    EXPECT_EQ(content_of(vfs(), "/u/frozen"), "f");
}

TEST_F(VfsTest, UnionWithOnlyReadOnlyMembersRefusesCreation) {
    auto a = mem(), b = mem();
    ASSERT_OK(vfs().mount("/u", a, {.read_only = true}));
    ASSERT_OK(vfs().mount("/u", b, {.read_only = true}));
    EXPECT_ERRNO(write_file(vfs(), "/u/new", "n"), EROFS);
    EXPECT_ERRNO(vfs().mkdir("/u/d"), EROFS);
    EXPECT_EQ(names_of(*a, "/"), Names{});
    EXPECT_EQ(names_of(*b, "/"), Names{});
}

TEST_F(VfsTest, PrependPutsAMemberFirst) {
    auto first = mem(), second = mem(), third = mem();
    ASSERT_OK(write_file(*first, "/x", "first"));
    ASSERT_OK(write_file(*second, "/x", "second"));
    ASSERT_OK(write_file(*third, "/x", "third"));
    ASSERT_OK(vfs().mount("/u", first));
    ASSERT_OK(vfs().mount("/u", second));
    EXPECT_EQ(content_of(vfs(), "/u/x"), "first");
    ASSERT_OK(vfs().mount("/u", third, {.prepend = true}));
    EXPECT_EQ(content_of(vfs(), "/u/x"), "third");
    auto ms = vfs().mounts();
    ASSERT_EQ(ms.size(), 3u);
    EXPECT_EQ(ms[0].backend, third);
    EXPECT_TRUE(ms[0].options.prepend);
    EXPECT_EQ(ms[1].backend, first);
    EXPECT_EQ(ms[2].backend, second);
    ASSERT_OK(write_file(vfs(), "/u/created", "c"));
    EXPECT_OK(third->stat("/created"));
    EXPECT_ERRNO(first->stat("/created"), ENOENT);
    // Unmounting the front member uncovers the next one.
    ASSERT_OK(vfs().unmount("/u", third.get()));
    EXPECT_EQ(content_of(vfs(), "/u/x"), "first");
    EXPECT_ERRNO(vfs().stat("/u/created"), ENOENT);
}

// --- read-only mounts ------------------------------------------------------------------

// Every kind of mutation under `p` (a mount of the fixture tree), with EROFS.
void expect_mutations_erofs(Backend& fs, const std::string& p) {
    EXPECT_ERRNO(fs.mkdir(p + "/newdir"), EROFS);
    EXPECT_ERRNO(fs.mkdir(p + "/docs/nested/new"), EROFS);
    EXPECT_ERRNO(fs.rmdir(p + "/empty"), EROFS);
    EXPECT_ERRNO(fs.unlink(p + "/docs/readme.txt"), EROFS);
    EXPECT_ERRNO(fs.unlink(p + "/links/rel"), EROFS);
    EXPECT_ERRNO(fs.rename(p + "/docs/readme.txt", p + "/moved.txt"), EROFS);
    EXPECT_ERRNO(fs.rename(p + "/docs", p + "/empty"), EROFS);
    EXPECT_ERRNO(fs.rename(p + "/exec.sh", p + "/private.txt", RenameFlags::noreplace), EROFS);
    EXPECT_ERRNO(fs.rename(p + "/exec.sh", p + "/private.txt", RenameFlags::exchange), EROFS);
    EXPECT_ERRNO(fs.symlink("/docs", p + "/newlink"), EROFS);
    EXPECT_ERRNO(fs.link(p + "/docs/readme.txt", p + "/newhard"), EROFS);
    EXPECT_ERRNO(fs.mknod(p + "/newfifo", FileType::fifo, 0644), EROFS);
    EXPECT_ERRNO(fs.mknod(p + "/newfile", FileType::regular, 0644), EROFS);
    EXPECT_ERRNO(fs.chmod(p + "/docs/readme.txt", 0600), EROFS);
    EXPECT_ERRNO(fs.chmod(p.empty() ? "/" : p, 0700), EROFS);
    EXPECT_ERRNO(fs.chown(p + "/docs/readme.txt", 1, 1), EROFS);
    EXPECT_ERRNO(fs.chown(p + "/links/abs", 1, 1, Follow::no), EROFS);
    EXPECT_ERRNO(fs.utimens(p + "/docs/readme.txt", TimeUpdate::now(), TimeUpdate::now()),
                 EROFS);
    EXPECT_ERRNO(fs.truncate(p + "/docs/readme.txt", 0), EROFS);
    EXPECT_ERRNO(fs.open(p + "/docs/readme.txt", O_WRONLY), EROFS);
    EXPECT_ERRNO(fs.open(p + "/docs/readme.txt", O_RDWR), EROFS);
    EXPECT_ERRNO(fs.open(p + "/docs/readme.txt", O_RDONLY | O_TRUNC), EROFS);
    EXPECT_ERRNO(fs.open(p + "/docs/readme.txt", O_WRONLY | O_APPEND), EROFS);
    EXPECT_ERRNO(fs.open(p + "/created.txt", O_WRONLY | O_CREAT, 0644), EROFS);
    EXPECT_ERRNO(fs.open(p + "/docs/readme.txt", O_RDWR | O_CREAT, 0644), EROFS);
    EXPECT_ERRNO(fs.setxattr(p + "/docs/readme.txt", "user.new", "v"), EROFS);
    EXPECT_ERRNO(fs.removexattr(p + "/xattr.txt", "user.text"), EROFS);
    EXPECT_ERRNO(fs.utimens(p + "/docs", TimeUpdate::at({1, 1}), TimeUpdate::omit()), EROFS);
    // A read-only handle reads; its writes are EBADF.
    auto f = fs.open(p + "/docs/readme.txt", O_RDONLY);
    ASSERT_OK(f);
    EXPECT_ERRNO((*f)->pwrite(conformance::as_bytes("x"), 0), EBADF);
    auto content = conformance::read_all(**f);
    ASSERT_OK(content);
    EXPECT_EQ(*content, conformance::kReadme);
}

TEST_F(VfsTest, ReadOnlyMountAnswersEveryMutationWithErofs) {
    auto root = mem(), tree = mem();
    conformance::Capabilities caps;
    ASSERT_OK(conformance::build_fixture_tree(*tree, caps));
    ASSERT_OK(vfs().mount("/", root));
    ASSERT_OK(vfs().mount("/ro", tree, {.read_only = true}));

    auto before = conformance::describe_tree(*tree, true);
    ASSERT_OK(before);
    auto via_before = conformance::describe_tree(vfs(), true, "/ro");
    ASSERT_OK(via_before);
    std::map<std::string, std::string> rebased;
    for (const auto& [path, line] : *via_before) {
        rebased[path == "/ro" ? std::string("/") : path.substr(3)] = line;
    }
    EXPECT_EQ(rebased, *before) << "the Vfs shows the member's tree as it is";
    expect_mutations_erofs(vfs(), "/ro");
    auto after = conformance::describe_tree(*tree, true);
    ASSERT_OK(after);
    EXPECT_TRUE(*before == *after) << "a read-only mount changed under refused mutations";

    // Reads work.
    EXPECT_EQ(content_of(vfs(), "/ro/docs/readme.txt"), conformance::kReadme);
    // A link's target is resolved from the Vfs's root, as a walk by node (FUSE) resolves it:
    // "/docs/readme.txt" is not there; "../docs/readme.txt" from /ro/links is /ro/docs/readme.txt.
    EXPECT_ERRNO(vfs().stat("/ro/links/abs"), ENOENT);
    EXPECT_EQ(content_of(vfs(), "/ro/links/rel"), conformance::kReadme);
    EXPECT_EQ(names_of(vfs(), "/ro/hard"), (Names{"a", "b"}));
    auto x = vfs().getxattr("/ro/xattr.txt", "user.text");
    ASSERT_OK(x);
    EXPECT_EQ(*x, "value");
    EXPECT_OK(vfs().statfs("/ro"));
    // The member itself stays writable, and the rest of the Vfs too.
    EXPECT_FALSE(tree->read_only());
    ASSERT_OK(write_file(*tree, "/direct", "d"));
    EXPECT_EQ(content_of(vfs(), "/ro/direct"), "d");
    ASSERT_OK(write_file(vfs(), "/outside", "o"));
    EXPECT_EQ(content_of(*root, "/outside"), "o");
    auto ms = vfs().mounts();
    ASSERT_EQ(ms.size(), 2u);
    EXPECT_TRUE(ms[1].options.read_only);
    EXPECT_FALSE(ms[0].options.read_only);
}

TEST_F(VfsTest, ReadOnlyRootMountRefusesEverything) {
    auto tree = mem();
    conformance::Capabilities caps;
    ASSERT_OK(conformance::build_fixture_tree(*tree, caps));
    ASSERT_OK(vfs().mount("/", tree, {.read_only = true}));
    auto before = conformance::describe_tree(*tree, true);
    ASSERT_OK(before);
    expect_mutations_erofs(vfs(), "");
    auto after = conformance::describe_tree(*tree, true);
    ASSERT_OK(after);
    EXPECT_TRUE(*before == *after);
}

// --- EXDEV -----------------------------------------------------------------------------

TEST_F(VfsTest, RenameAndLinkAcrossMountsAreExdev) {
    auto root = mem(), a = mem(), b = mem();
    ASSERT_OK(vfs().mount("/", root));
    ASSERT_OK(vfs().mount("/a", a));
    ASSERT_OK(vfs().mount("/a/b", b));
    ASSERT_OK(write_file(vfs(), "/f", "root f"));
    ASSERT_OK(write_file(vfs(), "/a/g", "a g"));
    ASSERT_OK(write_file(vfs(), "/a/b/h", "b h"));
    ASSERT_OK(vfs().mkdir("/dir"));
    ASSERT_OK(vfs().mkdir("/a/adir"));
    auto before_root = conformance::describe_tree(*root, true);
    auto before_a = conformance::describe_tree(*a, true);
    auto before_b = conformance::describe_tree(*b, true);
    ASSERT_OK(before_root);
    ASSERT_OK(before_a);
    ASSERT_OK(before_b);

    struct Pair {
        const char* from;
        const char* to;
    };
    for (Pair p : {Pair{"/f", "/a/f"}, Pair{"/a/g", "/g"}, Pair{"/f", "/a/g"},
                   Pair{"/a/g", "/a/b/g"}, Pair{"/a/b/h", "/a/h"}, Pair{"/a/b/h", "/h"},
                   Pair{"/dir", "/a/dir"}, Pair{"/a/adir", "/adir"}, Pair{"/f", "/a/b/h"}}) {
        EXPECT_ERRNO(vfs().rename(p.from, p.to), EXDEV) << p.from << " -> " << p.to;
        EXPECT_ERRNO(vfs().rename(p.from, p.to, RenameFlags::noreplace), EXDEV)
            << p.from << " -> " << p.to;
        EXPECT_ERRNO(vfs().link(p.from, p.to), EXDEV) << p.from << " -> " << p.to;
    }
    EXPECT_ERRNO(vfs().rename("/f", "/a/g", RenameFlags::exchange), EXDEV);
    EXPECT_ERRNO(vfs().rename("/a/b/h", "/a/g", RenameFlags::exchange), EXDEV);
    // A directory into another mount, and into a fresh directory there.
    EXPECT_ERRNO(vfs().rename("/dir", "/a/adir/dir"), EXDEV);
    EXPECT_EQ(*conformance::describe_tree(*root, true), *before_root);
    EXPECT_EQ(*conformance::describe_tree(*a, true), *before_a);
    EXPECT_EQ(*conformance::describe_tree(*b, true), *before_b);
    // Within one mount both still work.
    ASSERT_OK(vfs().rename("/a/g", "/a/adir/g"));
    ASSERT_OK(vfs().link("/a/adir/g", "/a/g2"));
    EXPECT_EQ(content_of(*a, "/g2"), "a g");
    ASSERT_OK(vfs().rename("/f", "/dir/f"));
    EXPECT_EQ(content_of(*root, "/dir/f"), "root f");
}

TEST_F(VfsTest, RenameAndLinkBetweenUnionMembersAreExdev) {
    auto u1 = mem(), u2 = mem();
    ASSERT_OK(write_file(*u1, "/x", "x1"));
    ASSERT_OK(write_file(*u2, "/y", "y2"));
    ASSERT_OK(vfs().mount("/u", u1));
    ASSERT_OK(vfs().mount("/u", u2));
    EXPECT_ERRNO(vfs().rename("/u/x", "/u/y"), EXDEV);
    EXPECT_ERRNO(vfs().rename("/u/y", "/u/x"), EXDEV);
    EXPECT_ERRNO(vfs().rename("/u/x", "/u/y", RenameFlags::exchange), EXDEV);
    EXPECT_EQ(content_of(*u1, "/x"), "x1");
    EXPECT_EQ(content_of(*u2, "/y"), "y2");
    EXPECT_ERRNO(u1->stat("/y"), ENOENT);
    EXPECT_ERRNO(u2->stat("/x"), ENOENT);
    // Inside the one member that holds both names, rename works.
    ASSERT_OK(write_file(*u1, "/x2", "x2"));
    ASSERT_OK(vfs().rename("/u/x", "/u/x2"));
    EXPECT_EQ(content_of(*u1, "/x2"), "x1");
}

TEST_F(VfsTest, RenameOfAMountPointFails) {
    auto root = mem(), a = mem();
    ASSERT_OK(vfs().mount("/", root));
    ASSERT_OK(vfs().mount("/a", a));
    ASSERT_OK(root->mkdir("/dir"));
    EXPECT_TRUE(FailsWithOneOf(vfs().rename("/a", "/b"), {EBUSY, EXDEV}));
    EXPECT_TRUE(FailsWithOneOf(vfs().rename("/dir", "/a"), {EBUSY, EXDEV}));
    EXPECT_OK(vfs().stat("/a"));
    EXPECT_ERRNO(vfs().stat("/b"), ENOENT);
}

// --- mount and unmount -----------------------------------------------------------------

TEST_F(VfsTest, MountsListsEveryMountOrderedByPath) {
    auto root = mem(), a = mem(), b = mem(), c = mem(), d = mem();
    ASSERT_OK(vfs().mount("/z", a));
    ASSERT_OK(vfs().mount("/", root));
    ASSERT_OK(vfs().mount("/b/c", b, {.read_only = true}));
    ASSERT_OK(vfs().mount("/b", c));
    ASSERT_OK(vfs().mount("/b", d));
    auto ms = vfs().mounts();
    ASSERT_EQ(ms.size(), 5u);
    std::vector<std::pair<std::string, Backend*>> got;
    for (const auto& m : ms) got.emplace_back(m.path, m.backend.get());
    std::vector<std::pair<std::string, Backend*>> want{
        {"/", root.get()}, {"/b", c.get()}, {"/b", d.get()}, {"/b/c", b.get()}, {"/z", a.get()}};
    EXPECT_EQ(got, want);
    EXPECT_TRUE(ms[3].options.read_only);
    EXPECT_FALSE(ms[1].options.read_only);
}

TEST_F(VfsTest, UnmountOneMemberOrAllAtAPoint) {
    auto root = mem(), u1 = mem(), u2 = mem(), other = mem();
    ASSERT_OK(write_file(*u1, "/one", "1"));
    ASSERT_OK(write_file(*u2, "/two", "2"));
    ASSERT_OK(vfs().mount("/", root));
    ASSERT_OK(vfs().mount("/u", u1));
    ASSERT_OK(vfs().mount("/u", u2));
    ASSERT_OK(vfs().mount("/o", other));
    EXPECT_EQ(names_of(vfs(), "/u"), (Names{"one", "two"}));

    ASSERT_OK(vfs().unmount("/u", u1.get()));
    EXPECT_EQ(names_of(vfs(), "/u"), Names{"two"});
    EXPECT_ERRNO(vfs().stat("/u/one"), ENOENT);
    ASSERT_EQ(vfs().mounts().size(), 3u);
    // Not there any more, and never there: EINVAL, nothing changes.
    EXPECT_ERRNO(vfs().unmount("/u", u1.get()), EINVAL);
    EXPECT_ERRNO(vfs().unmount("/u", other.get()), EINVAL);
    EXPECT_ERRNO(vfs().unmount("/nothing"), EINVAL);
    EXPECT_ERRNO(vfs().unmount("/nothing", u2.get()), EINVAL);
    EXPECT_ERRNO(vfs().unmount("/u/two"), EINVAL);  // inside a mount is not a mount point
    ASSERT_EQ(vfs().mounts().size(), 3u);

    ASSERT_OK(vfs().mount("/u", u1));  // back, now last
    EXPECT_EQ(names_of(vfs(), "/u"), (Names{"one", "two"}));
    ASSERT_OK(vfs().unmount("/u"));  // every member
    EXPECT_ERRNO(vfs().stat("/u"), ENOENT);
    EXPECT_ERRNO(vfs().stat("/u/two"), ENOENT);
    EXPECT_EQ(names_of(vfs(), "/"), Names{"o"});
    EXPECT_ERRNO(vfs().unmount("/u"), EINVAL);
    ASSERT_EQ(vfs().mounts().size(), 2u);
    // The unmounted backends keep their contents.
    EXPECT_EQ(content_of(*u1, "/one"), "1");
    EXPECT_EQ(content_of(*u2, "/two"), "2");
    // Unmounting the root mount leaves the Vfs's own root, and the other mounts.
    ASSERT_OK(vfs().unmount("/", root.get()));
    EXPECT_EQ(names_of(vfs(), "/"), Names{"o"});
    auto st = vfs().stat("/");
    ASSERT_OK(st);
    EXPECT_EQ(st->type, FileType::directory);
    // An unmount through a non-normal spelling of the path.
    ASSERT_OK(vfs().unmount("//o/./"));
    EXPECT_TRUE(vfs().mounts().empty());
    EXPECT_EQ(names_of(vfs(), "/"), Names{});
}

TEST_F(VfsTest, UnmountingAParentKeepsDeeperMounts) {
    auto a = mem(), ab = mem();
    ASSERT_OK(vfs().mount("/a", a));
    ASSERT_OK(vfs().mount("/a/b", ab));
    ASSERT_OK(write_file(*ab, "/x", "x"));
    ASSERT_OK(write_file(*a, "/y", "y"));
    ASSERT_OK(vfs().unmount("/a"));
    EXPECT_EQ(content_of(vfs(), "/a/b/x"), "x");
    EXPECT_ERRNO(vfs().stat("/a/y"), ENOENT);
    EXPECT_EQ(names_of(vfs(), "/a"), Names{"b"});
}

TEST_F(VfsTest, OneBackendMountedTwice) {
    auto shared = mem();
    ASSERT_OK(vfs().mount("/one", shared));
    ASSERT_OK(vfs().mount("/two", shared));
    ASSERT_OK(write_file(vfs(), "/one/f", "via one"));
    EXPECT_EQ(content_of(vfs(), "/two/f"), "via one");
    ASSERT_OK(vfs().unmount("/one", shared.get()));
    EXPECT_EQ(content_of(vfs(), "/two/f"), "via one");
    EXPECT_ERRNO(vfs().stat("/one/f"), ENOENT);
}

TEST_F(VfsTest, HandlesOutliveTheirUnmount) {
    auto a = mem();
    ASSERT_OK(vfs().mount("/a", a));
    auto f = vfs().open("/a/f", O_RDWR | O_CREAT, 0644);
    ASSERT_OK(f);
    ASSERT_OK(vfs().unmount("/a"));
    ASSERT_OK(conformance::pwrite_string(**f, "after", 0));
    EXPECT_EQ(content_of(*a, "/f"), "after");
}

// --- snapshots -------------------------------------------------------------------------

TEST_F(VfsTest, SnapshotIsReadOnlyAndFrozenAcrossEveryMount) {
    auto root = mem(), a = mem(), u1 = mem(), u2 = mem(), ro = mem();
    ASSERT_OK(vfs().mount("/", root));
    ASSERT_OK(vfs().mount("/a", a));
    ASSERT_OK(vfs().mount("/u", u1));
    ASSERT_OK(vfs().mount("/u", u2));
    ASSERT_OK(write_file(*ro, "/r", "r"));
    ASSERT_OK(vfs().mount("/deep/ro", ro, {.read_only = true}));
    ASSERT_OK(write_file(vfs(), "/rootfile", "root v1"));
    ASSERT_OK(write_file(vfs(), "/a/afile", "a v1"));
    ASSERT_OK(write_file(vfs(), "/u/ufile", "u v1"));
    ASSERT_OK(write_file(*u2, "/u2file", "u2 v1"));
    ASSERT_OK(vfs().mkdir("/a/dir"));

    auto snap_r = vfs().snapshot();
    ASSERT_OK(snap_r);
    auto snap = *snap_r;
    ASSERT_NE(snap, nullptr);
    EXPECT_TRUE(snap->read_only());
    auto frozen = conformance::describe_tree(*snap, true);
    ASSERT_OK(frozen);
    auto live = conformance::describe_tree(vfs(), true);
    ASSERT_OK(live);
    EXPECT_EQ(*frozen, *live);
    EXPECT_EQ(names_of(*snap, "/"), (Names{"a", "deep", "rootfile", "u"}));
    EXPECT_EQ(names_of(*snap, "/u"), (Names{"u2file", "ufile"}));

    // Every mutation on the snapshot is EROFS, in every mount.
    for (std::string_view p : {"/rootfile", "/a/afile", "/u/ufile", "/u/u2file", "/deep/ro/r"}) {
        EXPECT_ERRNO(snap->open(p, O_WRONLY), EROFS) << p;
        EXPECT_ERRNO(snap->unlink(p), EROFS) << p;
        EXPECT_ERRNO(snap->chmod(p, 0600), EROFS) << p;
        EXPECT_ERRNO(snap->truncate(p, 0), EROFS) << p;
    }
    for (std::string_view p : {"/new", "/a/new", "/u/new", "/deep/ro/new"}) {
        EXPECT_ERRNO(snap->open(p, O_WRONLY | O_CREAT, 0644), EROFS) << p;
        EXPECT_ERRNO(snap->mkdir(p), EROFS) << p;
    }
    EXPECT_ERRNO(snap->rename("/a/afile", "/a/moved"), EROFS);
    EXPECT_ERRNO(snap->rmdir("/a/dir"), EROFS);

    // Later changes in every mount, and to the table, leave the snapshot alone.
    ASSERT_OK(write_file(vfs(), "/rootfile", "root v2"));
    ASSERT_OK(write_file(vfs(), "/a/afile", "a v2 longer"));
    ASSERT_OK(vfs().unlink("/u/ufile"));
    ASSERT_OK(write_file(vfs(), "/u/u2file", "u2 v2"));
    ASSERT_OK(vfs().rmdir("/a/dir"));
    ASSERT_OK(write_file(*ro, "/r", "r changed directly"));
    ASSERT_OK(vfs().mount("/later", mem()));
    ASSERT_OK(vfs().unmount("/a"));
    auto again = conformance::describe_tree(*snap, true);
    ASSERT_OK(again);
    EXPECT_TRUE(*again == *frozen) << "a snapshot changed after later writes";
    EXPECT_EQ(content_of(*snap, "/rootfile"), "root v1");
    EXPECT_EQ(content_of(*snap, "/a/afile"), "a v1");
    EXPECT_EQ(content_of(*snap, "/u/ufile"), "u v1");
    EXPECT_EQ(content_of(*snap, "/u/u2file"), "u2 v1");
    EXPECT_EQ(content_of(*snap, "/deep/ro/r"), "r");
    EXPECT_ERRNO(snap->stat("/later"), ENOENT);
    // The live Vfs did change.
    EXPECT_EQ(content_of(vfs(), "/rootfile"), "root v2");
    EXPECT_ERRNO(vfs().stat("/a/afile"), ENOENT);
    // A snapshot of a snapshot is the same frozen state.
    auto snap2 = snap->snapshot();
    ASSERT_OK(snap2);
    auto frozen2 = conformance::describe_tree(**snap2, true);
    ASSERT_OK(frozen2);
    EXPECT_EQ(*frozen2, *frozen);
}

TEST_F(VfsTest, SnapshotOfAnEmptyVfs) {
    auto snap = vfs().snapshot();
    ASSERT_OK(snap);
    EXPECT_TRUE((*snap)->read_only());
    EXPECT_EQ(names_of(**snap, "/"), Names{});
    ASSERT_OK(vfs().mount("/a", mem()));
    EXPECT_EQ(names_of(**snap, "/"), Names{});
}

// --- scaling: dispatch does not scan the mounts ----------------------------------------

TEST_F(VfsTest, ManyMountsDispatchWithoutScanning) {
    const int count = sanitizer_run() ? 2000 : 20000;
    auto root = mem();
    ASSERT_OK(vfs().mount("/", root));
    ASSERT_OK(write_file(*root, "/probe", "p"));
    auto target = mem();
    ASSERT_OK(write_file(*target, "/f", "target"));
    ASSERT_OK(vfs().mount("/n/target", target));

    auto time_lookups = [&](int rounds) {
        auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < rounds; ++i) {
            auto st = vfs().lstat("/n/target/f");
            if (!st) ADD_FAILURE() << "lookup failed";
            auto p = vfs().lstat("/probe");
            if (!p) ADD_FAILURE() << "lookup failed";
        }
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    const int rounds = 20000;
    time_lookups(rounds / 10);  // warm up
    double few = time_lookups(rounds);

    std::vector<std::shared_ptr<Backend>> backends;
    for (int i = 0; i < count; ++i) {
        backends.push_back(mem());
        ASSERT_OK(vfs().mount(fmt::format("/n/m{:05}", i), backends.back()));
    }
    ASSERT_OK(write_file(vfs(), fmt::format("/n/m{:05}/x", count / 2), "mid"));
    EXPECT_EQ(content_of(*backends[count / 2], "/x"), "mid");
    EXPECT_EQ(vfs().mounts().size(), static_cast<std::size_t>(count + 2));
    EXPECT_EQ(names_of(vfs(), "/n").size(), static_cast<std::size_t>(count + 1));
    double many = time_lookups(rounds);
    EXPECT_EQ(content_of(vfs(), "/n/target/f"), "target");
    fmt::print("lookups with 2 mounts: {:.1f} ms, with {} mounts: {:.1f} ms\n", few * 1e3,
               count + 2, many * 1e3);
    // A scan of 20,000 mounts per lookup would cost ~1000x; a table probe per component
    // stays within a small factor (cache misses of a bigger table).
    if (!sanitizer_run()) {
        EXPECT_LT(many, few * 10 + 0.05) << "lookups slow down with the number of mounts";
    }
}

}  // namespace
}  // namespace packfs::vfs_test
