// The node calls (DESIGN §4, backend.hpp "Nodes"): lookup, getattr, list, open and readlink by
// node answer what the path calls answer; every mutation by (directory node, name) does what
// its path call does, with the same errno; a node held stays valid across a rename of its
// directory and (where the backend keeps held objects) across the removal of its last name;
// and a snapshot's nodes are the live tree's numbers, frozen; list_entries is list plus a lookup
// of each name.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "conformance/conformance_suite.hpp"
#include "packfs/path.hpp"

namespace packfs::conformance {

void Nodes::SetUp() {
    if (!caps().nodes) GTEST_SKIP() << "backend '" << GetParam().name << "' has no node calls";
    WritableTest::SetUp();
}

void NodesOfTree::SetUp() {
    if (!caps().nodes) GTEST_SKIP() << "backend '" << GetParam().name << "' has no node calls";
    FixtureTreeTest::SetUp();
}

namespace {

// A reference taken by a node call, given back at the end of the scope.
struct Held {
    Backend* fs = nullptr;
    Entry entry{};
    Held() = default;
    Held(Backend& b, Entry e) : fs(&b), entry(e) {}
    Held(Held&& o) noexcept : fs(o.fs), entry(o.entry) { o.fs = nullptr; }
    Held& operator=(Held&& o) noexcept {
        std::swap(fs, o.fs);
        std::swap(entry, o.entry);
        return *this;
    }
    ~Held() {
        if (fs && entry.node != kRootNode) fs->forget(entry.node, 1);
    }
    Node node() const { return entry.node; }
};

// Walks `path` (normal, no symlink on the way) one lookup per component.
Result<Held> walk(Backend& fs, std::string_view path) {
    Held at(fs, Entry{kRootNode, {}});
    auto root = fs.getattr(kRootNode);
    if (!root) return std::unexpected(root.error());
    at.entry.stat = *root;
    for (std::string_view name : PathComponents(path)) {
        auto next = fs.lookup(at.node(), name);
        if (!next) return std::unexpected(next.error());
        at = Held(fs, *next);
    }
    return at;
}

// The fields a node's attributes and a path's lstat must agree on.
std::string attrs(const Stat& st) {
    return fmt::format("ino={} type={} mode={:o} uid={} gid={} nlink={} size={} rdev={} mtime={}.{}",
                       st.ino, file_type_name(st.type), st.mode, st.uid, st.gid, st.nlink,
                       st.size, st.rdev, st.mtime.sec, st.mtime.nsec);
}

std::vector<std::string> names_of(std::vector<DirEntry> entries) {
    std::vector<std::string> out;
    for (auto& e : entries) out.push_back(e.name);
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

// --- a writable backend -----------------------------------------------------------------------

TEST_P(Nodes, LookupGetattrListReadlinkAndOpenAnswerWhatPathsAnswer) {
    PACKFS_ASSERT_OK(fs().mkdir("/d"));
    PACKFS_ASSERT_OK(write_file(fs(), "/d/f", "file bytes"));
    PACKFS_ASSERT_OK(fs().symlink("f", "/d/l"));
    PACKFS_ASSERT_OK(fs().mkdir("/d/sub"));
    auto d = walk(fs(), "/d");
    ASSERT_TRUE(IsOk(d));
    for (const char* name : {"f", "l", "sub"}) {
        auto e = fs().lookup(d->node(), name);
        ASSERT_TRUE(IsOk(e)) << name;
        Held held(fs(), *e);
        auto st = fs().lstat(path_join("/d", name));
        ASSERT_TRUE(IsOk(st));
        EXPECT_EQ(attrs(e->stat), attrs(*st)) << name;
        auto again = fs().getattr(e->node);
        ASSERT_TRUE(IsOk(again));
        EXPECT_EQ(attrs(*again), attrs(*st)) << name;
    }
    auto listed = fs().list(d->node());
    ASSERT_TRUE(IsOk(listed));
    auto by_path = fs().readdir("/d");
    ASSERT_TRUE(IsOk(by_path));
    EXPECT_EQ(names_of(*listed), names_of(*by_path));
    auto l = walk(fs(), "/d/l");
    ASSERT_TRUE(IsOk(l));
    auto target = fs().readlink(l->node());
    ASSERT_TRUE(IsOk(target));
    EXPECT_EQ(*target, "f");
    auto f = walk(fs(), "/d/f");
    ASSERT_TRUE(IsOk(f));
    auto file = fs().open(f->node(), O_RDONLY);
    ASSERT_TRUE(IsOk(file));
    EXPECT_EQ(read_all(**file).value_or("<error>"), "file bytes");
    // A symlink's node is the link: opening it is ELOOP, as O_NOFOLLOW.
    PACKFS_EXPECT_ERRNO(fs().open(l->node(), O_RDONLY), ELOOP);
    PACKFS_EXPECT_ERRNO(fs().readlink(f->node()), EINVAL);
}

TEST_P(Nodes, NamesAreOneComponent) {
    for (std::string_view bad : {"", ".", "..", "a/b"}) {
        PACKFS_EXPECT_ERRNO(fs().lookup(kRootNode, bad), EINVAL) << "'" << bad << "'";
    }
    PACKFS_EXPECT_ERRNO(fs().lookup(kRootNode, std::string(256, 'n')), ENAMETOOLONG);
    PACKFS_EXPECT_ERRNO(fs().mkdir(kRootNode, "..", 0755), EINVAL);
    PACKFS_EXPECT_ERRNO(fs().lookup(kRootNode, "missing"), ENOENT);
    PACKFS_ASSERT_OK(write_file(fs(), "/file", "x"));
    auto file = walk(fs(), "/file");
    ASSERT_TRUE(IsOk(file));
    PACKFS_EXPECT_ERRNO(fs().lookup(file->node(), "x"), ENOTDIR);
    PACKFS_EXPECT_ERRNO(fs().list(file->node()), ENOTDIR);
}

TEST_P(Nodes, MutationsByNodeDoWhatTheirPathCallsDo) {
    auto made = fs().mkdir(kRootNode, "dir", 0750);
    ASSERT_TRUE(IsOk(made));
    Held dir(fs(), *made);
    EXPECT_EQ(made->stat.type, FileType::directory);
    EXPECT_EQ(made->stat.mode, 0750u);
    auto created = fs().create(dir.node(), "new", O_RDWR | O_CREAT | O_EXCL, 0640);
    ASSERT_TRUE(IsOk(created));
    Held file(fs(), created->entry);
    PACKFS_EXPECT_OK(pwrite_string(*created->file, "written by node", 0));
    created->file.reset();
    EXPECT_EQ(read_file(fs(), "/dir/new").value_or("<error>"), "written by node");
    EXPECT_EQ(fs().lstat("/dir/new")->mode, 0640u);
    auto link = fs().symlink(dir.node(), "sym", "new");
    ASSERT_TRUE(IsOk(link));
    Held held_link(fs(), *link);
    EXPECT_EQ(fs().readlink("/dir/sym").value_or(""), "new");
    auto hard = fs().link(file.node(), kRootNode, "hard");
    ASSERT_TRUE(IsOk(hard));
    Held held_hard(fs(), *hard);
    EXPECT_EQ(hard->stat.ino, created->entry.stat.ino);
    EXPECT_EQ(fs().lstat("/hard")->nlink, 2u);
    if (caps().special_files) {
        auto fifo = fs().mknod(dir.node(), "fifo", FileType::fifo, 0600, 0);
        ASSERT_TRUE(IsOk(fifo));
        Held held_fifo(fs(), *fifo);
        EXPECT_EQ(fs().lstat("/dir/fifo")->type, FileType::fifo);
    }
    auto st = fs().setattr(file.node(), SetAttr::chmod(0600));
    ASSERT_TRUE(IsOk(st));
    EXPECT_EQ(st->mode, 0600u);
    EXPECT_EQ(fs().lstat("/dir/new")->mode, 0600u);
    st = fs().setattr(file.node(), SetAttr::resize(4));
    ASSERT_TRUE(IsOk(st));
    EXPECT_EQ(read_file(fs(), "/dir/new").value_or("<error>"), "writ");
    st = fs().setattr(file.node(), SetAttr::times(TimeUpdate::at(Time{7, 8}), TimeUpdate::at(Time{9, 10})));
    ASSERT_TRUE(IsOk(st));
    EXPECT_EQ(fs().lstat("/dir/new")->mtime, (Time{9, 10}));
    if (caps().xattrs) {
        PACKFS_EXPECT_OK(fs().setxattr(file.node(), "user.n", "v"));
        EXPECT_EQ(fs().getxattr("/dir/new", "user.n").value_or(""), "v");
        EXPECT_EQ(fs().getxattr(file.node(), "user.n").value_or(""), "v");
        PACKFS_EXPECT_OK(fs().removexattr(file.node(), "user.n"));
        PACKFS_EXPECT_ERRNO(fs().getxattr("/dir/new", "user.n"), ENODATA);
    }
    PACKFS_EXPECT_OK(fs().rename(dir.node(), "new", kRootNode, "moved"));
    EXPECT_EQ(read_file(fs(), "/moved").value_or("<error>"), "writ");
    PACKFS_EXPECT_ERRNO(fs().lstat("/dir/new"), ENOENT);
    PACKFS_EXPECT_OK(fs().unlink(kRootNode, "moved"));
    PACKFS_EXPECT_OK(fs().unlink(dir.node(), "sym"));
    if (caps().special_files) {
        PACKFS_EXPECT_OK(fs().unlink(dir.node(), "fifo"));
    }
    PACKFS_EXPECT_OK(fs().rmdir(kRootNode, "dir"));
    PACKFS_EXPECT_ERRNO(fs().lstat("/dir"), ENOENT);
}

TEST_P(Nodes, ErrorsByNodeAreThePathCallsErrors) {
    PACKFS_ASSERT_OK(fs().mkdir("/a"));
    PACKFS_ASSERT_OK(fs().mkdir("/a/b"));
    PACKFS_ASSERT_OK(write_file(fs(), "/a/b/f", "f"));
    auto a = walk(fs(), "/a");
    auto b = walk(fs(), "/a/b");
    ASSERT_TRUE(IsOk(a) && IsOk(b));
    PACKFS_EXPECT_ERRNO(fs().mkdir(a->node(), "b", 0755), EEXIST);
    PACKFS_EXPECT_ERRNO(fs().rmdir(a->node(), "b"), ENOTEMPTY);
    PACKFS_EXPECT_ERRNO(fs().rmdir(b->node(), "f"), ENOTDIR);
    PACKFS_EXPECT_ERRNO(fs().unlink(a->node(), "b"), EISDIR);
    PACKFS_EXPECT_ERRNO(fs().unlink(a->node(), "missing"), ENOENT);
    PACKFS_EXPECT_ERRNO(fs().link(b->node(), kRootNode, "dirlink"), EPERM);
    PACKFS_EXPECT_ERRNO(fs().create(b->node(), "f", O_RDWR | O_CREAT | O_EXCL, 0644), EEXIST);
    // A directory into its own subtree, with nothing but nodes to tell it.
    PACKFS_EXPECT_ERRNO(fs().rename(kRootNode, "a", b->node(), "inside"), EINVAL);
    PACKFS_EXPECT_ERRNO(fs().rename(kRootNode, "a", a->node(), "self"), EINVAL);
    PACKFS_EXPECT_ERRNO(fs().rename(a->node(), "b", kRootNode, "a", RenameFlags::noreplace), EEXIST);
    PACKFS_EXPECT_ERRNO(fs().rename(kRootNode, "missing", kRootNode, "x"), ENOENT);
    PACKFS_EXPECT_ERRNO(fs().setattr(a->node(), SetAttr::resize(0)), EISDIR);
    EXPECT_TRUE(IsOk(fs().lstat("/a/b/f")));
}

TEST_P(Nodes, ANodeHeldStaysItsObjectAcrossARenameOfItsDirectory) {
    PACKFS_ASSERT_OK(fs().mkdir("/from"));
    PACKFS_ASSERT_OK(write_file(fs(), "/from/f", "kept"));
    auto f = walk(fs(), "/from/f");
    ASSERT_TRUE(IsOk(f));
    PACKFS_ASSERT_OK(fs().rename("/from", "/to"));
    auto st = fs().getattr(f->node());
    ASSERT_TRUE(IsOk(st));
    EXPECT_EQ(attrs(*st), attrs(*fs().lstat("/to/f")));
    auto file = fs().open(f->node(), O_RDONLY);
    ASSERT_TRUE(IsOk(file));
    EXPECT_EQ(read_all(**file).value_or("<error>"), "kept");
    // Names looked up again from the moved directory's node find what moved with it.
    auto to = walk(fs(), "/to");
    ASSERT_TRUE(IsOk(to));
    auto again = fs().lookup(to->node(), "f");
    ASSERT_TRUE(IsOk(again));
    Held held(fs(), *again);
    EXPECT_EQ(again->stat.ino, st->ino);
}

TEST_P(Nodes, ANodeHeldOutlivesItsLastName) {
    if (!caps().held_nodes_outlive_names)
        GTEST_SKIP() << "backend '" << GetParam().name << "' lets an unnamed node go";
    PACKFS_ASSERT_OK(write_file(fs(), "/doomed", "still here"));
    auto f = walk(fs(), "/doomed");
    ASSERT_TRUE(IsOk(f));
    PACKFS_ASSERT_OK(fs().unlink("/doomed"));
    PACKFS_EXPECT_ERRNO(fs().lstat("/doomed"), ENOENT);
    auto st = fs().getattr(f->node());
    ASSERT_TRUE(IsOk(st));
    EXPECT_EQ(st->nlink, 0u);
    EXPECT_EQ(st->size, 10u);
    // fchmod, futimens and fsetxattr of an open unlinked file reach the node this way.
    auto changed = fs().setattr(f->node(), SetAttr::chmod(0604));
    ASSERT_TRUE(IsOk(changed));
    EXPECT_EQ(changed->mode, 0604u);
    if (caps().xattrs) {
        PACKFS_EXPECT_OK(fs().setxattr(f->node(), "user.after", "1"));
        EXPECT_EQ(fs().getxattr(f->node(), "user.after").value_or(""), "1");
    }
    auto file = fs().open(f->node(), O_RDONLY);
    ASSERT_TRUE(IsOk(file));
    EXPECT_EQ(read_all(**file).value_or("<error>"), "still here");
}

// A directory removed while held (a process's working directory, a kernel reference) takes no
// new names: ENOENT, as Linux answers; and it stays empty.
TEST_P(Nodes, ARemovedDirectoryHeldTakesNoNewNames) {
    if (!caps().held_nodes_outlive_names)
        GTEST_SKIP() << "backend '" << GetParam().name << "' lets an unnamed node go";
    PACKFS_ASSERT_OK(fs().mkdir("/gone"));
    PACKFS_ASSERT_OK(write_file(fs(), "/file", "x"));
    auto gone = walk(fs(), "/gone");
    ASSERT_TRUE(IsOk(gone));
    auto file = walk(fs(), "/file");
    ASSERT_TRUE(IsOk(file));
    PACKFS_ASSERT_OK(fs().rmdir("/gone"));
    const Node d = gone->node();
    auto made = fs().create(d, "f", O_WRONLY, 0644);
    PACKFS_EXPECT_ERRNO(made, ENOENT);
    PACKFS_EXPECT_ERRNO(fs().mkdir(d, "sub", 0755), ENOENT);
    PACKFS_EXPECT_ERRNO(fs().symlink(d, "l", "target"), ENOENT);
    if (caps().special_files) {
        PACKFS_EXPECT_ERRNO(fs().mknod(d, "p", FileType::fifo, 0644, 0), ENOENT);
    }
    PACKFS_EXPECT_ERRNO(fs().link(file->node(), d, "hard"), ENOENT);
    PACKFS_EXPECT_ERRNO(fs().rename(kRootNode, "file", d, "moved"), ENOENT);
    EXPECT_TRUE(IsOk(fs().lstat("/file")));  // the failed rename left it where it was
    auto listed = fs().list(d);
    if (listed) {
        EXPECT_TRUE(listed->empty());
    }
}

TEST_P(Nodes, ASnapshotsNodesAreTheLiveNumbersFrozen) {
    if (!caps().snapshots) GTEST_SKIP() << "backend '" << GetParam().name << "' has no snapshots";
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "before"));
    auto f = walk(fs(), "/f");
    ASSERT_TRUE(IsOk(f));
    auto snap = fs().snapshot();
    ASSERT_TRUE(IsOk(snap));
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "after, and longer"));
    PACKFS_ASSERT_OK(fs().chmod("/f", 0600));
    PACKFS_ASSERT_OK(write_file(fs(), "/born_later", "x"));
    auto in_snap = (*snap)->getattr(f->node());
    ASSERT_TRUE(IsOk(in_snap));
    EXPECT_EQ(in_snap->size, 6u);
    EXPECT_EQ(attrs(*in_snap), attrs(*(*snap)->lstat("/f")));
    auto file = (*snap)->open(f->node(), O_RDONLY);
    ASSERT_TRUE(IsOk(file));
    EXPECT_EQ(read_all(**file).value_or("<error>"), "before");
    // What did not exist then has no node there.
    auto later = walk(fs(), "/born_later");
    ASSERT_TRUE(IsOk(later));
    PACKFS_EXPECT_ERRNO((*snap)->getattr(later->node()), ESTALE);
    // And the snapshot's walk by node finds the frozen tree.
    auto found = (*snap)->lookup(kRootNode, "f");
    ASSERT_TRUE(IsOk(found));
    EXPECT_EQ(found->stat.size, 6u);
    (*snap)->forget(found->node, 1);
    PACKFS_EXPECT_ERRNO((*snap)->lookup(kRootNode, "born_later"), ENOENT);
}

// --- the fixture tree, by node ------------------------------------------------------------------

TEST_P(NodesOfTree, EveryEntryWalkedByNodeMatchesThePathCalls) {
    std::map<std::string, std::string> by_node, by_path;
    std::vector<std::pair<std::string, Held>> pending;
    pending.emplace_back("/", Held(fs(), Entry{kRootNode, *fs().getattr(kRootNode)}));
    std::size_t files = 0;
    while (!pending.empty()) {
        auto [dir_path, dir] = std::move(pending.back());
        pending.pop_back();
        auto listed = fs().list(dir.node());
        ASSERT_TRUE(IsOk(listed)) << dir_path;
        auto readdir = fs().readdir(dir_path);
        ASSERT_TRUE(IsOk(readdir)) << dir_path;
        EXPECT_EQ(names_of(*listed), names_of(*readdir)) << dir_path;
        for (const DirEntry& d : *listed) {
            const std::string path = path_join(dir_path, d.name);
            auto e = fs().lookup(dir.node(), d.name);
            ASSERT_TRUE(IsOk(e)) << path;
            Held held(fs(), *e);
            EXPECT_EQ(e->stat.ino, d.ino) << path;
            EXPECT_EQ(e->stat.type, d.type) << path;
            by_node[path] = attrs(e->stat);
            by_path[path] = attrs(*fs().lstat(path));
            if (e->stat.type == FileType::regular && e->stat.size < (1 << 20)) {
                auto file = fs().open(e->node, O_RDONLY);
                ASSERT_TRUE(IsOk(file)) << path;
                EXPECT_EQ(read_all(**file).value_or("<error>"),
                          read_file(fs(), path).value_or("<path error>"))
                    << path;
                ++files;
            } else if (e->stat.type == FileType::symlink) {
                EXPECT_EQ(fs().readlink(e->node).value_or("<error>"),
                          fs().readlink(path).value_or("<path error>"))
                    << path;
            } else if (e->stat.type == FileType::directory) {
                pending.emplace_back(path, std::move(held));
            }
            if (caps().xattrs && d.name == "xattr.txt") {
                EXPECT_EQ(fs().getxattr(e->node, "user.text").value_or(""), "value");
            }
        }
    }
    EXPECT_EQ(by_node, by_path);
    EXPECT_GT(files, 300u);  // /wide alone holds 300
}

// list_entries (readdirplus) answers what list and a lookup of each name answer, each entry
// held once (given back here with forget), and an entry that is not xattr-free is never said
// to be.
TEST_P(NodesOfTree, ListEntriesIsListAndALookupOfEachName) {
    std::vector<std::pair<std::string, Held>> pending;
    pending.emplace_back("/", Held(fs(), Entry{kRootNode, *fs().getattr(kRootNode)}));
    std::size_t entries = 0;
    while (!pending.empty()) {
        auto [dir_path, dir] = std::move(pending.back());
        pending.pop_back();
        auto plus = fs().list_entries(dir.node());
        ASSERT_TRUE(IsOk(plus)) << dir_path;
        auto listed = fs().list(dir.node());
        ASSERT_TRUE(IsOk(listed)) << dir_path;
        std::map<std::string, std::string> want, got;
        for (const DirEntry& d : *listed) {
            auto e = fs().lookup(dir.node(), d.name);
            ASSERT_TRUE(IsOk(e)) << path_join(dir_path, d.name);
            want[d.name] = attrs(e->stat);
            fs().forget(e->node, 1);
        }
        for (NamedEntry& e : *plus) {
            const std::string path = path_join(dir_path, e.name);
            Held held(fs(), e.entry);
            got[e.name] = attrs(e.entry.stat);
            auto again = fs().lookup(dir.node(), e.name);
            ASSERT_TRUE(IsOk(again)) << path;
            EXPECT_EQ(e.entry.node.id, again->node.id) << path;
            fs().forget(again->node, 1);
            if (e.no_xattrs) {
                auto names = fs().listxattr(path);
                EXPECT_TRUE(!names || names->empty()) << path << ": said to have no xattrs";
            }
            if (e.entry.stat.type == FileType::directory)
                pending.emplace_back(path, std::move(held));
            ++entries;
        }
        EXPECT_EQ(got, want) << dir_path;
    }
    EXPECT_GT(entries, 300u);
}

TEST_P(NodesOfTree, MutationsByNodeOfAReadOnlyTreeAreErofs) {
    if (!caps().read_only) GTEST_SKIP() << "a writable backend: Nodes covers its mutations";
    auto docs = fs().lookup(kRootNode, "docs");
    ASSERT_TRUE(IsOk(docs));
    Held held(fs(), *docs);
    PACKFS_EXPECT_ERRNO(fs().mkdir(docs->node, "x", 0755), EROFS);
    PACKFS_EXPECT_ERRNO(fs().create(docs->node, "x", O_RDWR | O_CREAT, 0644), EROFS);
    PACKFS_EXPECT_ERRNO(fs().unlink(docs->node, "readme.txt"), EROFS);
    PACKFS_EXPECT_ERRNO(fs().rename(docs->node, "readme.txt", kRootNode, "r"), EROFS);
    PACKFS_EXPECT_ERRNO(fs().setattr(docs->node, SetAttr::chmod(0700)), EROFS);
    auto readme = fs().lookup(docs->node, "readme.txt");
    ASSERT_TRUE(IsOk(readme));
    Held held_readme(fs(), *readme);
    PACKFS_EXPECT_ERRNO(fs().open(readme->node, O_RDWR), EROFS);
    EXPECT_EQ(read_file(fs(), "/docs/readme.txt").value_or(""), kReadme);
}

}  // namespace packfs::conformance
