// The Vfs's node calls (docs/VFS.md "Nodes", src/vfs/vfs_nodes.cpp): for several layouts (one
// mem at "/", mounts at /a and /a/b/c under a synthetic "/", a union of two members at one point,
// read-only mounts), the whole tree walked by nodes (lookup, list, getattr, readlink, open and
// read, xattrs) is compared with what the path calls answer for the same paths; mutations by
// node land in the member that holds the entry and fail with the path calls' errnos (EXDEV
// across mounts, EROFS on read-only mounts, EBUSY on mount points); every member reference the
// Vfs takes is given back (members wrapped in a counting ForwardingBackend); a node held across
// an unmount keeps answering.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "packfs/forwarding.hpp"
#include "vfs/vfs_test_util.hpp"

namespace packfs::vfs_test {
namespace {

#define EXPECT_OK(expr) EXPECT_TRUE(IsOk((expr))) << #expr
#define ASSERT_OK(expr) ASSERT_TRUE(IsOk((expr))) << #expr
#define EXPECT_ERRNO(expr, code) EXPECT_TRUE(FailsWith((expr), (code))) << #expr

using Names = std::vector<std::string>;

// A member that counts the node references it hands out (lookup, create, mkdir, mknod, symlink,
// link, lookup_ino) and those given back (forget), per node.
class CountingBackend final : public ForwardingBackend {
public:
    using ForwardingBackend::ForwardingBackend;
    using ForwardingBackend::link;
    using ForwardingBackend::mkdir;
    using ForwardingBackend::mknod;
    using ForwardingBackend::symlink;

    Result<Entry> lookup(Node dir, std::string_view name) override {
        return counted(ForwardingBackend::lookup(dir, name));
    }
    Result<Entry> lookup_ino(uint64_t ino) override {
        return counted(ForwardingBackend::lookup_ino(ino));
    }
    Result<Created> create(Node dir, std::string_view name, int flags, uint32_t mode,
                           std::optional<Owner> owner) override {
        auto r = ForwardingBackend::create(dir, name, flags, mode, owner);
        if (r) add(r->entry.node, 1);
        return r;
    }
    Result<Entry> mkdir(Node dir, std::string_view name, uint32_t mode,
                        std::optional<Owner> owner) override {
        return counted(ForwardingBackend::mkdir(dir, name, mode, owner));
    }
    Result<Entry> mknod(Node dir, std::string_view name, FileType type, uint32_t mode,
                        uint64_t rdev, std::optional<Owner> owner) override {
        return counted(ForwardingBackend::mknod(dir, name, type, mode, rdev, owner));
    }
    Result<Entry> symlink(Node dir, std::string_view name, std::string_view target,
                          std::optional<Owner> owner) override {
        return counted(ForwardingBackend::symlink(dir, name, target, owner));
    }
    Result<Entry> link(Node node, Node dir, std::string_view name) override {
        return counted(ForwardingBackend::link(node, dir, name));
    }
    void forget(Node node, uint64_t count) noexcept override {
        add(node, -static_cast<int64_t>(count));
        ForwardingBackend::forget(node, count);
    }

    // References handed out and not given back, over every node.
    int64_t outstanding() const {
        std::lock_guard lock(mutex_);
        int64_t sum = 0;
        for (const auto& [id, n] : held_) sum += n;
        return sum;
    }
    // Whether some node was forgotten more often than it was handed out.
    bool over_forgotten() const {
        std::lock_guard lock(mutex_);
        return std::any_of(held_.begin(), held_.end(), [](const auto& kv) { return kv.second < 0; });
    }
    int64_t held(Node node) const {
        std::lock_guard lock(mutex_);
        auto it = held_.find(node.id);
        return it == held_.end() ? 0 : it->second;
    }
    uint64_t handed() const {
        std::lock_guard lock(mutex_);
        return handed_;
    }

private:
    Result<Entry> counted(Result<Entry> r) {
        if (r) add(r->node, 1);
        return r;
    }
    void add(Node node, int64_t n) {
        if (!node || node == kRootNode) return;
        std::lock_guard lock(mutex_);
        held_[node.id] += n;
        if (n > 0) handed_ += static_cast<uint64_t>(n);
    }

    mutable std::mutex mutex_;
    std::map<uint64_t, int64_t> held_;
    uint64_t handed_ = 0;
};

std::shared_ptr<CountingBackend> counting(std::shared_ptr<Backend> inner = mem()) {
    return std::make_shared<CountingBackend>(std::move(inner));
}

// A Vfs and its members, by name.
struct Layout {
    std::shared_ptr<Vfs> vfs;
    std::map<std::string, std::shared_ptr<CountingBackend>> members;

    void expect_all_given_back() const {
        for (const auto& [name, m] : members) {
            EXPECT_EQ(m->outstanding(), 0) << "member " << name;
            EXPECT_FALSE(m->over_forgotten()) << "member " << name;
        }
    }
};

// --- the layouts -----------------------------------------------------------------------------

// One mem at "/", holding the conformance fixture tree (every kind of entry).
Layout mem_root() {
    Layout l{Vfs::create(), {{"root", counting()}}};
    EXPECT_OK(l.vfs->mount("/", l.members["root"]));
    EXPECT_OK(conformance::build_fixture_tree(*l.vfs, conformance::Capabilities{}));
    return l;
}

// Nothing at "/" (a synthetic root), mems at /a and /a/b/c. a has a directory /b of its own
// (so /a/b is one of a's directories with a mount below it) holding a file named "c" (covered
// by the mount); /a/b/c holds the fixture tree.
Layout nested() {
    Layout l{Vfs::create(), {{"a", counting()}, {"c", counting()}}};
    Backend& a = *l.members["a"];
    EXPECT_OK(write_file(a, "/readme", "in a\n"));
    EXPECT_OK(a.mkdir("/dir"));
    EXPECT_OK(write_file(a, "/dir/f", "a's f\n"));
    EXPECT_OK(a.symlink("dir/f", "/ln"));
    EXPECT_OK(a.mkdir("/b"));
    EXPECT_OK(write_file(a, "/b/own", "a's own file in b\n"));
    EXPECT_OK(write_file(a, "/b/c", "covered by the mount\n"));
    EXPECT_OK(a.mkdir("/b/sub"));
    EXPECT_OK(conformance::build_fixture_tree(*l.members["c"], conformance::Capabilities{}));
    EXPECT_OK(l.vfs->mount("/a", l.members["a"]));
    EXPECT_OK(l.vfs->mount("/a/b/c", l.members["c"]));
    return l;
}

// A mem at "/", and a union at /u of `upper` then `lower` (both writable unless
// `upper_read_only`): names in both (the upper's wins), a directory in both (merged), a
// directory in the upper where the lower has a file, and a mount below the merged directory.
Layout union_of_two(bool upper_read_only = false) {
    Layout l{Vfs::create(),
             {{"root", counting()}, {"upper", counting()}, {"lower", counting()},
              {"deep", counting()}}};
    Backend& root = *l.members["root"];
    Backend& up = *l.members["upper"];
    Backend& low = *l.members["lower"];
    EXPECT_OK(write_file(root, "/top", "root's\n"));
    EXPECT_OK(root.mkdir("/u"));
    EXPECT_OK(write_file(root, "/u/hidden", "under the mount\n"));

    EXPECT_OK(write_file(up, "/both", "upper's both\n"));
    EXPECT_OK(write_file(low, "/both", "lower's both, longer\n"));
    EXPECT_OK(write_file(up, "/up-only", "upper only\n"));
    EXPECT_OK(write_file(low, "/low-only", "lower only\n"));
    EXPECT_OK(low.mkdir("/low-dir"));
    EXPECT_OK(write_file(low, "/low-dir/x", "x\n"));
    for (Backend* m : {&up, &low}) {
        EXPECT_OK(m->mkdir("/d"));
        EXPECT_OK(m->mkdir("/d/sub"));
    }
    EXPECT_OK(write_file(up, "/d/same", "upper's same\n"));
    EXPECT_OK(write_file(low, "/d/same", "lower's same\n"));
    EXPECT_OK(write_file(up, "/d/u", "u\n"));
    EXPECT_OK(write_file(low, "/d/l", "l\n"));
    EXPECT_OK(write_file(low, "/d/sub/deeper", "deeper\n"));
    EXPECT_OK(up.symlink("../both", "/d/link"));
    EXPECT_OK(up.mkdir("/mixed"));
    EXPECT_OK(write_file(up, "/mixed/in", "in\n"));
    EXPECT_OK(write_file(low, "/mixed", "a file below a directory\n"));
    EXPECT_OK(write_file(*l.members["deep"], "/deep-file", "deep\n"));

    EXPECT_OK(l.vfs->mount("/", l.members["root"]));
    EXPECT_OK(l.vfs->mount("/u", l.members["upper"], {.read_only = upper_read_only}));
    EXPECT_OK(l.vfs->mount("/u", l.members["lower"]));
    EXPECT_OK(l.vfs->mount("/u/d/m", l.members["deep"]));
    return l;
}

// A mem at "/", the fixture tree mounted read-only at /ro, and a snapshot (a read-only backend)
// of another fixture tree at /snap.
Layout read_only_mounts() {
    auto source = mem();
    EXPECT_OK(conformance::build_fixture_tree(*source, conformance::Capabilities{}));
    auto snap = source->snapshot();
    EXPECT_OK(snap);
    Layout l{Vfs::create(), {{"root", counting()}, {"ro", counting()}, {"snap", counting(*snap)}}};
    EXPECT_OK(write_file(*l.members["root"], "/top", "root's\n"));
    EXPECT_OK(conformance::build_fixture_tree(*l.members["ro"], conformance::Capabilities{}));
    EXPECT_OK(l.vfs->mount("/", l.members["root"]));
    EXPECT_OK(l.vfs->mount("/ro", l.members["ro"], {.read_only = true}));
    EXPECT_OK(l.vfs->mount("/snap", l.members["snap"]));
    return l;
}

// --- the walk --------------------------------------------------------------------------------

void expect_same_stat(const Stat& a, const Stat& b, const std::string& what) {
    EXPECT_EQ(a.ino, b.ino) << what;
    EXPECT_EQ(a.type, b.type) << what;
    EXPECT_EQ(a.mode, b.mode) << what;
    EXPECT_EQ(a.uid, b.uid) << what;
    EXPECT_EQ(a.gid, b.gid) << what;
    EXPECT_EQ(a.nlink, b.nlink) << what;
    EXPECT_EQ(a.size, b.size) << what;
    EXPECT_EQ(a.rdev, b.rdev) << what;
    EXPECT_EQ(a.blocks, b.blocks) << what;
    EXPECT_TRUE(a.atime == b.atime) << what;
    EXPECT_TRUE(a.mtime == b.mtime) << what;
    EXPECT_TRUE(a.ctime == b.ctime) << what;
}

std::vector<DirEntry> by_name(std::vector<DirEntry> v) {
    std::sort(v.begin(), v.end(), [](const auto& x, const auto& y) { return x.name < y.name; });
    return v;
}

std::string read_node(Backend& fs, Node node) {
    auto file = fs.open(node, O_RDONLY);
    if (!file) return "<" + std::string(errno_name(file.error().code())) + ">";
    auto all = conformance::read_all(**file);
    if (!all) return "<" + std::string(errno_name(all.error().code())) + ">";
    return *all;
}

// Walks `dir` (at `path`) by nodes and compares every answer with the path calls'. Returns the
// paths visited.
void walk(Backend& fs, Node dir, const std::string& path, std::set<std::string>& seen) {
    auto listed = fs.list(dir);
    ASSERT_OK(listed) << path;
    auto read = fs.readdir(path);
    ASSERT_OK(read) << path;
    const std::vector<DirEntry> entries = by_name(*listed);
    EXPECT_EQ(entries, by_name(*read)) << "listing of " << path;
    for (const DirEntry& e : entries) {
        const std::string child = path_join(path, e.name);
        seen.insert(child);
        auto by_path = fs.lstat(child);
        ASSERT_OK(by_path) << child;
        auto found = fs.lookup(dir, e.name);
        ASSERT_OK(found) << child;
        HeldNode held(fs, found->node);
        EXPECT_NE(found->node, kRootNode) << child;
        expect_same_stat(found->stat, *by_path, child + " (lookup)");
        auto attrs = fs.getattr(found->node);
        ASSERT_OK(attrs) << child;
        expect_same_stat(*attrs, *by_path, child + " (getattr)");
        EXPECT_EQ(e.type, found->stat.type) << child;

        auto xa = fs.listxattr(found->node);
        auto xb = fs.listxattr(child);
        ASSERT_EQ(xa.has_value(), xb.has_value()) << child;
        if (xa) {
            std::sort(xa->begin(), xa->end());
            std::sort(xb->begin(), xb->end());
            EXPECT_EQ(*xa, *xb) << child;
            for (const std::string& name : *xa) {
                auto va = fs.getxattr(found->node, name);
                auto vb = fs.getxattr(child, name);
                ASSERT_OK(va) << child << " " << name;
                ASSERT_OK(vb) << child << " " << name;
                EXPECT_EQ(*va, *vb) << child << " " << name;
            }
        }

        switch (found->stat.type) {
            case FileType::directory:
                walk(fs, found->node, child, seen);
                break;
            case FileType::symlink: {
                auto a = fs.readlink(found->node);
                auto b = fs.readlink(child);
                ASSERT_OK(a) << child;
                ASSERT_OK(b) << child;
                EXPECT_EQ(*a, *b) << child;
                EXPECT_ERRNO(fs.open(found->node, O_RDONLY), ELOOP);
                break;
            }
            case FileType::regular:
                EXPECT_EQ(read_node(fs, found->node), content_of(fs, child)) << child;
                EXPECT_ERRNO(fs.readlink(found->node), EINVAL);
                break;
            default:
                EXPECT_ERRNO(fs.open(found->node, O_RDONLY), ENOTSUP);
                break;
        }
    }
}

std::set<std::string> walk_all(Backend& fs) {
    std::set<std::string> seen;
    auto root = fs.getattr(kRootNode);
    EXPECT_OK(root);
    auto by_path = fs.stat("/");
    EXPECT_OK(by_path);
    if (root && by_path) expect_same_stat(*root, *by_path, "/");
    walk(fs, kRootNode, "/", seen);
    return seen;
}

bool has(const std::set<std::string>& seen, const std::string& path) { return seen.contains(path); }

TEST(VfsNodes, WalkOneMemAtRoot) {
    Layout l = mem_root();
    auto seen = walk_all(*l.vfs);
    EXPECT_GT(seen.size(), std::size_t(conformance::kWideCount));
    for (const char* p : {"/docs/nested/deep/leaf.txt", "/links/loop_a", "/special/blk",
                          "/wide/entry_299", "/hard/b", "/xattr.txt"})
        EXPECT_TRUE(has(seen, p)) << p;
    l.expect_all_given_back();
    EXPECT_GT(l.members["root"]->handed(), 0u);
}

TEST(VfsNodes, WalkNestedMountsUnderASyntheticRoot) {
    Layout l = nested();
    auto seen = walk_all(*l.vfs);
    for (const char* p : {"/a", "/a/readme", "/a/ln", "/a/dir/f", "/a/b", "/a/b/own", "/a/b/sub",
                          "/a/b/c", "/a/b/c/docs/nested/deep/leaf.txt", "/a/b/c/special/fifo"})
        EXPECT_TRUE(has(seen, p)) << p;
    // "/" is synthetic; /a a mount point; /a/b a's directory with a mount below; /a/b/c the
    // mounted root, over a's file of that name.
    EXPECT_EQ(names_of(*l.vfs, "/"), Names{"a"});
    auto a = lookup_path(*l.vfs, "/a");
    ASSERT_OK(a);
    HeldNode held_a(*l.vfs, a->node);
    auto b = l.vfs->lookup(a->node, "b");
    ASSERT_OK(b);
    HeldNode held_b(*l.vfs, b->node);
    auto c = l.vfs->lookup(b->node, "c");
    ASSERT_OK(c);
    HeldNode held_c(*l.vfs, c->node);
    EXPECT_EQ(c->stat.type, FileType::directory);
    auto c_root = l.members["c"]->getattr(kRootNode);
    ASSERT_OK(c_root);
    EXPECT_EQ(c->stat.ino, c_root->ino);
    // One id per node while held: the same lookup answers the same id.
    auto again = l.vfs->lookup(b->node, "c");
    ASSERT_OK(again);
    EXPECT_EQ(again->node, c->node);
    l.vfs->forget(again->node, 1);
    // A name no member has is ENOENT; a name is checked.
    EXPECT_ERRNO(l.vfs->lookup(kRootNode, "nothing"), ENOENT);
    EXPECT_ERRNO(l.vfs->lookup(kRootNode, ".."), EINVAL);
    EXPECT_ERRNO(l.vfs->lookup(kRootNode, std::string(256, 'x')), ENAMETOOLONG);
    auto file = l.vfs->lookup(a->node, "readme");
    ASSERT_OK(file);
    EXPECT_ERRNO(l.vfs->lookup(file->node, "x"), ENOTDIR);
    EXPECT_ERRNO(l.vfs->list(file->node), ENOTDIR);
    l.vfs->forget(file->node, 1);
    // The synthetic root: a directory, opened for reading only.
    EXPECT_OK(l.vfs->open(kRootNode, O_RDONLY | O_DIRECTORY));
    EXPECT_ERRNO(l.vfs->open(kRootNode, O_RDWR), EISDIR);
    EXPECT_ERRNO(l.vfs->readlink(kRootNode), EINVAL);
    EXPECT_OK(l.vfs->statfs(kRootNode));
    held_a.reset();
    held_b.reset();
    held_c.reset();
    l.expect_all_given_back();
}

TEST(VfsNodes, WalkAUnionOfTwoMembers) {
    Layout l = union_of_two();
    auto seen = walk_all(*l.vfs);
    for (const char* p : {"/top", "/u/both", "/u/up-only", "/u/low-only", "/u/low-dir/x", "/u/d/same",
                          "/u/d/u", "/u/d/l", "/u/d/sub/deeper", "/u/d/link", "/u/d/m/deep-file",
                          "/u/mixed/in"})
        EXPECT_TRUE(has(seen, p)) << p;
    EXPECT_FALSE(has(seen, "/u/hidden"));  // under the mount
    // The upper member's entry wins a name; the merged directory lists both members.
    EXPECT_EQ(content_of(*l.vfs, "/u/both"), "upper's both\n");
    EXPECT_EQ(names_of(*l.vfs, "/u/d"), (Names{"l", "link", "m", "same", "sub", "u"}));
    l.expect_all_given_back();
}

TEST(VfsNodes, WalkReadOnlyMounts) {
    Layout l = read_only_mounts();
    auto seen = walk_all(*l.vfs);
    for (const char* p : {"/top", "/ro/docs/readme.txt", "/ro/wide/entry_000", "/snap/hard/a",
                          "/snap/links/abs", "/snap/special/null"})
        EXPECT_TRUE(has(seen, p)) << p;
    l.expect_all_given_back();
}

TEST(VfsNodes, WalkASnapshotOfTheVfs) {
    Layout l = union_of_two();
    auto snap = l.vfs->snapshot();
    ASSERT_OK(snap);
    auto live = walk_all(*l.vfs);
    auto frozen = walk_all(**snap);
    EXPECT_EQ(live, frozen);
    EXPECT_ERRNO((*snap)->mkdir(kRootNode, "x", 0755, std::nullopt), EROFS);
}

// A Vfs snapshot answers for the live nodes held when it was taken (under their ids, frozen),
// across mounts and merged directories; later nodes, and nodes of members no longer mounted,
// have no counterpart there.
TEST(VfsNodes, ASnapshotAnswersForTheLiveNodesFrozen) {
    Layout l = union_of_two();
    Vfs& vfs = *l.vfs;
    auto both = lookup_path(vfs, "/u/both");
    ASSERT_OK(both);
    auto d = lookup_path(vfs, "/u/d");  // merged, with a mount below
    ASSERT_OK(d);
    auto deep = lookup_path(vfs, "/u/d/m/deep-file");
    ASSERT_OK(deep);
    auto gone_member = counting();
    ASSERT_OK(vfs.mount("/gone", gone_member));
    auto gone = lookup_path(vfs, "/gone");
    ASSERT_OK(gone);
    ASSERT_OK(vfs.unmount("/gone"));
    const auto d_before = by_name(*vfs.list(d->node));

    auto snap = vfs.snapshot();
    ASSERT_OK(snap);
    Backend& frozen = **snap;
    ASSERT_OK(write_file(vfs, "/u/both", "changed after the snapshot"));
    ASSERT_OK(vfs.unlink(d->node, "u"));
    ASSERT_OK(write_file(vfs, "/u/d/m/deep-file", "changed too"));
    auto later = lookup_path(vfs, "/u/d/l");
    ASSERT_OK(later);

    EXPECT_EQ(read_node(frozen, both->node), "upper's both\n");
    EXPECT_EQ(read_node(frozen, deep->node), "deep\n");
    auto listed = frozen.list(d->node);
    ASSERT_OK(listed);
    EXPECT_EQ(by_name(*listed), d_before);
    EXPECT_EQ(by_name(*frozen.readdir("/u/d")), d_before);
    auto same = frozen.lookup(d->node, "m");
    ASSERT_OK(same);
    frozen.forget(same->node, 1);
    auto again = lookup_path(frozen, "/u/both");
    ASSERT_OK(again);
    EXPECT_EQ(again->node, both->node);  // the frozen node, found by walking the snapshot
    frozen.forget(again->node, 1);
    EXPECT_OK(frozen.getattr(both->node));  // pinned: forget does not let it go
    EXPECT_ERRNO(frozen.getattr(later->node), ESTALE);
    EXPECT_ERRNO(frozen.getattr(gone->node), ESTALE);
    EXPECT_ERRNO(frozen.setattr(both->node, SetAttr::chmod(0600)), EROFS);
    EXPECT_EQ(read_node(vfs, both->node), "changed after the snapshot");

    for (Node n : {both->node, d->node, deep->node, gone->node, later->node}) vfs.forget(n, 1);
    snap->reset();
    l.expect_all_given_back();
    EXPECT_EQ(gone_member->outstanding(), 0);
}

// --- references --------------------------------------------------------------------------------

TEST(VfsNodes, ForgetGivesBackMemberReferences) {
    Layout l = nested();
    Vfs& vfs = *l.vfs;
    CountingBackend& a = *l.members["a"];
    auto mount_point = vfs.lookup(kRootNode, "a");
    ASSERT_OK(mount_point);
    EXPECT_EQ(a.outstanding(), 0);  // a member's root needs no reference

    auto dir = vfs.lookup(mount_point->node, "dir");
    ASSERT_OK(dir);
    auto member_dir = a.lookup(kRootNode, "dir");
    ASSERT_OK(member_dir);
    a.forget(member_dir->node, 1);
    EXPECT_EQ(a.held(member_dir->node), 1);  // the Vfs node's one reference
    // Looking it up again gives the same node, and no second member reference is kept.
    auto again = vfs.lookup(mount_point->node, "dir");
    ASSERT_OK(again);
    EXPECT_EQ(again->node, dir->node);
    EXPECT_EQ(a.held(member_dir->node), 1);
    vfs.forget(dir->node, 1);
    EXPECT_EQ(a.held(member_dir->node), 1);  // one Vfs reference left
    EXPECT_OK(vfs.getattr(dir->node));
    vfs.forget(dir->node, 1);
    EXPECT_EQ(a.held(member_dir->node), 0);
    EXPECT_ERRNO(vfs.getattr(dir->node), ESTALE);
    EXPECT_ERRNO(vfs.lookup(dir->node, "f"), ESTALE);

    // Several references given back at once; ids are not reused.
    auto f1 = lookup_path(vfs, "/a/dir/f");
    ASSERT_OK(f1);
    auto f2 = lookup_path(vfs, "/a/dir/f");
    ASSERT_OK(f2);
    EXPECT_EQ(f1->node, f2->node);
    EXPECT_GT(f1->node.id, dir->node.id);
    EXPECT_GT(a.outstanding(), 0);
    vfs.forget(f1->node, 2);
    EXPECT_EQ(a.outstanding(), 0);

    // What the mutations hand out is given back too.
    auto made_dir = vfs.mkdir(mount_point->node, "new-dir", 0755, std::nullopt);
    ASSERT_OK(made_dir);
    auto made_file = vfs.create(made_dir->node, "file", O_RDWR | O_CREAT, 0644, std::nullopt);
    ASSERT_OK(made_file);
    auto made_link = vfs.symlink(made_dir->node, "sym", "file", std::nullopt);
    ASSERT_OK(made_link);
    auto made_fifo = vfs.mknod(made_dir->node, "fifo", FileType::fifo, 0644, 0, std::nullopt);
    ASSERT_OK(made_fifo);
    auto hard = vfs.link(made_file->entry.node, mount_point->node, "hard");
    ASSERT_OK(hard);
    EXPECT_EQ(hard->node, made_file->entry.node);  // one object, one node
    EXPECT_EQ(hard->stat.nlink, 2u);
    EXPECT_GT(a.outstanding(), 0);
    for (Node n : {made_dir->node, made_file->entry.node, made_file->entry.node, made_link->node,
                   made_fifo->node})
        vfs.forget(n, 1);
    vfs.forget(mount_point->node, 1);
    l.expect_all_given_back();
}

TEST(VfsNodes, AnUnlinkedFileStaysWhileItsNodeIsHeld) {
    Layout l = nested();
    Vfs& vfs = *l.vfs;
    auto file = lookup_path(vfs, "/a/readme");
    ASSERT_OK(file);
    auto a = lookup_path(vfs, "/a");
    ASSERT_OK(a);
    EXPECT_OK(vfs.unlink(a->node, "readme"));
    EXPECT_ERRNO(vfs.lstat("/a/readme"), ENOENT);
    auto st = vfs.getattr(file->node);
    ASSERT_OK(st);
    EXPECT_EQ(st->nlink, 0u);
    EXPECT_EQ(read_node(vfs, file->node), "in a\n");
    vfs.forget(file->node, 1);
    vfs.forget(a->node, 1);
    l.expect_all_given_back();
}

TEST(VfsNodes, NodesHeldAcrossAnUnmountKeepAnswering) {
    Layout l = nested();
    Vfs& vfs = *l.vfs;
    std::weak_ptr<CountingBackend> a_weak = l.members["a"];
    auto mount_point = lookup_path(vfs, "/a");
    ASSERT_OK(mount_point);
    auto file = lookup_path(vfs, "/a/dir/f");
    ASSERT_OK(file);
    auto before = vfs.getattr(file->node);
    ASSERT_OK(before);
    EXPECT_GT(l.members["a"]->outstanding(), 0);

    ASSERT_OK(vfs.unmount("/a"));
    l.members.erase("a");  // the Vfs's nodes are now all that keep a alive
    ASSERT_FALSE(a_weak.expired());
    // Still answering...
    auto after = vfs.getattr(file->node);
    ASSERT_OK(after);
    expect_same_stat(*after, *before, "/a/dir/f");
    EXPECT_EQ(read_node(vfs, file->node), "a's f\n");
    EXPECT_OK(vfs.getattr(mount_point->node));
    auto inside = vfs.lookup(mount_point->node, "readme");
    ASSERT_OK(inside);
    vfs.forget(inside->node, 1);
    // ...but no longer reachable: /a now only leads to /a/b/c, a synthetic directory.
    EXPECT_ERRNO(vfs.lstat("/a/dir/f"), ENOENT);
    auto now = vfs.lookup(kRootNode, "a");
    ASSERT_OK(now);
    EXPECT_NE(now->node, mount_point->node);
    EXPECT_ERRNO(vfs.lookup(now->node, "dir"), ENOENT);
    auto listed = vfs.list(now->node);
    ASSERT_OK(listed);
    ASSERT_EQ(listed->size(), 1u);
    EXPECT_EQ(listed->front().name, "b");
    vfs.forget(now->node, 1);

    // Every member reference comes back with the nodes; once the last node goes, so does the
    // member.
    vfs.forget(file->node, 1);
    ASSERT_FALSE(a_weak.expired());
    EXPECT_EQ(a_weak.lock()->outstanding(), 0);
    EXPECT_FALSE(a_weak.lock()->over_forgotten());
    vfs.forget(mount_point->node, 1);
    EXPECT_TRUE(a_weak.expired());
    l.expect_all_given_back();
}

TEST(VfsNodes, ANewMountIsSeenByTheNextLookup) {
    Layout l = nested();
    Vfs& vfs = *l.vfs;
    auto a = lookup_path(vfs, "/a");
    ASSERT_OK(a);
    auto dir = vfs.lookup(a->node, "dir");
    ASSERT_OK(dir);
    auto x = counting();
    ASSERT_OK(write_file(*x, "/x-file", "x\n"));
    ASSERT_OK(vfs.mount("/a/new", x));
    ASSERT_OK(vfs.mount("/zz/top", counting()));
    auto names = vfs.list(kRootNode);
    ASSERT_OK(names);
    EXPECT_EQ(by_name(*names).back().name, "zz");
    auto crossed = vfs.lookup(a->node, "new");
    ASSERT_OK(crossed);
    auto inner = vfs.lookup(crossed->node, "x-file");
    ASSERT_OK(inner);
    EXPECT_EQ(read_node(vfs, inner->node), "x\n");
    // A mount over an existing member directory covers it for the next lookup from above.
    ASSERT_OK(vfs.mount("/a/dir", counting()));
    auto covered = vfs.lookup(a->node, "dir");
    ASSERT_OK(covered);
    EXPECT_NE(covered->node, dir->node);
    EXPECT_ERRNO(vfs.lookup(covered->node, "f"), ENOENT);
    auto still = vfs.lookup(dir->node, "f");  // the held node is the member's directory still
    ASSERT_OK(still);
    vfs.forget(still->node, 1);
    for (Node n : {a->node, dir->node, crossed->node, inner->node, covered->node}) vfs.forget(n, 1);
    l.expect_all_given_back();
    EXPECT_EQ(x->outstanding(), 0);
}

// A walk by node follows symlinks from the Vfs's root, so a link can lead into another mount;
// the path calls are that walk, and answer the same (docs/VFS.md "Symlinks").
TEST(VfsNodes, AWalkByNodeFollowsSymlinksAcrossMounts) {
    Layout l = union_of_two();
    Vfs& vfs = *l.vfs;
    ASSERT_OK(l.members["root"]->symlink("/u/d/m/deep-file", "/to-deep"));
    ASSERT_OK(l.members["root"]->symlink("u/up-only", "/to-upper"));
    auto deep = lookup_path(vfs, "/to-deep");
    ASSERT_OK(deep);
    EXPECT_EQ(read_node(vfs, deep->node), "deep\n");
    vfs.forget(deep->node, 1);
    auto upper = lookup_path(vfs, "/to-upper");
    ASSERT_OK(upper);
    EXPECT_EQ(read_node(vfs, upper->node), "upper only\n");
    vfs.forget(upper->node, 1);
    // By path the same: the "/" member has no /u/d/m/deep-file, but the Vfs has.
    auto deep_by_path = read_file(vfs, "/to-deep");
    ASSERT_OK(deep_by_path);
    EXPECT_EQ(*deep_by_path, "deep\n");
    auto upper_by_path = read_file(vfs, "/to-upper");
    ASSERT_OK(upper_by_path);
    EXPECT_EQ(*upper_by_path, "upper only\n");
    auto deep_stat = vfs.stat("/to-deep");
    ASSERT_OK(deep_stat);
    EXPECT_EQ(deep_stat->type, FileType::regular);
    auto link = lookup_path(vfs, "/to-deep", Follow::no);
    ASSERT_OK(link);
    EXPECT_EQ(link->stat.type, FileType::symlink);
    vfs.forget(link->node, 1);
    l.expect_all_given_back();
}

// A path call may start its walk at a mount point the table names (nothing mounted above it):
// a link that climbs out of that mount with ".." still climbs into the directories above it,
// and lands where the walk from the root lands.
TEST(VfsNodes, AWalkStartedAtAMountPointClimbsOutOfIt) {
    auto vfs = Vfs::create();
    auto a = mem(), b = mem();
    ASSERT_OK(write_file(*a, "/f", "a's f"));
    ASSERT_OK(b->mkdir("/d"));
    ASSERT_OK(b->symlink("../../a/f", "/d/up"));  // from /m/b/d: ../.. is /m
    ASSERT_OK(b->symlink("/m/a/f", "/d/abs"));
    ASSERT_OK(vfs->mount("/m/a", a));
    ASSERT_OK(vfs->mount("/m/b", b));
    for (const char* path : {"/m/b/d/up", "/m/b/d/abs"}) {
        auto by_path = read_file(*vfs, path);
        ASSERT_OK(by_path);
        EXPECT_EQ(*by_path, "a's f") << path;
        auto node = lookup_path(*vfs, path);
        ASSERT_OK(node);
        EXPECT_EQ(read_node(*vfs, node->node), "a's f") << path;
        vfs->forget(node->node, 1);
    }
    auto link = vfs->lstat("/m/b/d/up");
    ASSERT_OK(link);
    EXPECT_EQ(link->type, FileType::symlink);
    EXPECT_ERRNO(vfs->stat("/m/b/d/missing"), ENOENT);
    EXPECT_ERRNO(vfs->stat("/m/b/d/up/x"), ENOTDIR);
}

// Where the path calls once had answers of their own (they dispatched by mount prefix to the
// members' path calls), they now answer as the walk by node does: each case by path and by node.
TEST(VfsNodes, PathAndNodeAnswerAlikeWhereTheyOnceDiffered) {
    // A directory that only leads to a mount (/a/s, which a does not have) makes nothing, even
    // where a member (a, at /a) covers its path: EROFS, not a's ENOENT.
    {
        auto vfs = Vfs::create();
        auto a = mem();
        ASSERT_OK(vfs->mount("/a", a));
        ASSERT_OK(vfs->mount("/a/s/t", mem()));
        EXPECT_ERRNO(vfs->mkdir("/a/s/x"), EROFS);
        EXPECT_ERRNO(write_file(*vfs, "/a/s/f", "f"), EROFS);
        auto s = lookup_path(*vfs, "/a/s");
        ASSERT_OK(s);
        EXPECT_ERRNO(vfs->mkdir(s->node, "x", 0755, std::nullopt), EROFS);
        EXPECT_ERRNO(vfs->create(s->node, "f", O_WRONLY | O_CREAT, 0644, std::nullopt), EROFS);
        vfs->forget(s->node, 1);
    }
    // A rename or link into a directory of the union that the source's member does not have:
    // EXDEV (the upper has /up-only, only the lower has /low-dir), not the member's ENOENT.
    {
        Layout l = union_of_two();
        Vfs& vfs = *l.vfs;
        EXPECT_ERRNO(vfs.rename("/u/up-only", "/u/low-dir/moved"), EXDEV);
        EXPECT_ERRNO(vfs.link("/u/up-only", "/u/low-dir/linked"), EXDEV);
        auto u = lookup_path(vfs, "/u");
        ASSERT_OK(u);
        auto low_dir = lookup_path(vfs, "/u/low-dir");
        ASSERT_OK(low_dir);
        auto up_only = lookup_path(vfs, "/u/up-only");
        ASSERT_OK(up_only);
        EXPECT_ERRNO(vfs.rename(u->node, "up-only", low_dir->node, "moved", RenameFlags::none),
                     EXDEV);
        EXPECT_ERRNO(vfs.link(up_only->node, low_dir->node, "linked"), EXDEV);
        for (Node n : {u->node, low_dir->node, up_only->node}) vfs.forget(n, 1);
        EXPECT_OK(vfs.stat("/u/up-only"));
        l.expect_all_given_back();
    }
    // O_CREAT on a name that exists in a read-only mount opens it for reading, by path as by node
    // (create without O_EXCL opens what is there); a new name is EROFS.
    {
        Layout l = read_only_mounts();
        Vfs& vfs = *l.vfs;
        auto by_path = vfs.open("/ro/docs/readme.txt", O_RDONLY | O_CREAT, 0644);
        ASSERT_OK(by_path);
        auto content = conformance::read_all(**by_path);
        ASSERT_OK(content);
        EXPECT_EQ(*content, conformance::kReadme);
        by_path->reset();
        EXPECT_ERRNO(vfs.open("/ro/docs/new.txt", O_RDONLY | O_CREAT, 0644), EROFS);
        EXPECT_ERRNO(vfs.open("/ro/docs/readme.txt", O_WRONLY | O_CREAT, 0644), EROFS);
        auto docs = lookup_path(vfs, "/ro/docs");
        ASSERT_OK(docs);
        auto by_node = vfs.create(docs->node, "readme.txt", O_RDONLY, 0644, std::nullopt);
        ASSERT_OK(by_node);
        vfs.forget(by_node->entry.node, 1);
        EXPECT_ERRNO(vfs.create(docs->node, "new.txt", O_RDONLY, 0644, std::nullopt), EROFS);
        EXPECT_ERRNO(vfs.create(docs->node, "readme.txt", O_WRONLY, 0644, std::nullopt), EROFS);
        vfs.forget(docs->node, 1);
        l.expect_all_given_back();
    }
}

// --- mutations ---------------------------------------------------------------------------------

// Each mutation by node next to the same by path, on fresh layouts: same errno, same effect.
TEST(VfsNodes, MutationsLandInTheMemberThatHoldsTheNode) {
    Layout l = nested();
    Vfs& vfs = *l.vfs;
    Backend& a = *l.members["a"];
    Backend& c = *l.members["c"];
    auto a_node = lookup_path(vfs, "/a");
    ASSERT_OK(a_node);
    auto b_node = lookup_path(vfs, "/a/b");
    ASSERT_OK(b_node);
    auto c_node = lookup_path(vfs, "/a/b/c");
    ASSERT_OK(c_node);
    auto dir_node = lookup_path(vfs, "/a/dir");
    ASSERT_OK(dir_node);

    // New entries.
    auto made = vfs.mkdir(b_node->node, "made", 0750, std::nullopt);
    ASSERT_OK(made);
    EXPECT_EQ(made->stat.mode, 0750u);
    EXPECT_OK(a.lstat("/b/made"));
    vfs.forget(made->node, 1);
    auto created = vfs.create(c_node->node, "new.txt", O_RDWR | O_CREAT | O_EXCL, 0640,
                              std::nullopt);
    ASSERT_OK(created);
    ASSERT_OK(conformance::pwrite_string(*created->file, "written by node", 0));
    EXPECT_EQ(content_of(c, "/new.txt"), "written by node");
    EXPECT_EQ(content_of(vfs, "/a/b/c/new.txt"), "written by node");
    vfs.forget(created->entry.node, 1);
    EXPECT_ERRNO(vfs.create(c_node->node, "new.txt", O_RDWR | O_CREAT | O_EXCL, 0640,
                            std::nullopt),
                 EEXIST);

    // Renames and links inside one member.
    ASSERT_OK(vfs.rename(a_node->node, "readme", dir_node->node, "moved", RenameFlags::none));
    EXPECT_EQ(content_of(a, "/dir/moved"), "in a\n");
    EXPECT_ERRNO(a.lstat("/readme"), ENOENT);
    auto f = vfs.lookup(dir_node->node, "f");
    ASSERT_OK(f);
    auto linked = vfs.link(f->node, b_node->node, "f-link");
    ASSERT_OK(linked);
    EXPECT_EQ(content_of(a, "/b/f-link"), "a's f\n");
    vfs.forget(linked->node, 1);

    // Across mounts: EXDEV, as by path.
    EXPECT_ERRNO(vfs.rename(dir_node->node, "f", c_node->node, "f", RenameFlags::none), EXDEV);
    EXPECT_ERRNO(vfs.rename("/a/dir/f", "/a/b/c/f"), EXDEV);
    EXPECT_ERRNO(vfs.link(f->node, c_node->node, "f"), EXDEV);
    EXPECT_ERRNO(vfs.link("/a/dir/f", "/a/b/c/f"), EXDEV);
    // Into the synthetic root: nothing is mounted there to hold it.
    EXPECT_ERRNO(vfs.rename(dir_node->node, "f", kRootNode, "f", RenameFlags::none), EXDEV);
    vfs.forget(f->node, 1);

    // Mount points and what leads to them stay where they are.
    EXPECT_ERRNO(vfs.rename(b_node->node, "c", a_node->node, "c2", RenameFlags::none), EBUSY);
    EXPECT_ERRNO(vfs.rename("/a/b/c", "/a/c2"), EBUSY);
    EXPECT_ERRNO(vfs.rename(a_node->node, "b", a_node->node, "b2", RenameFlags::none), EBUSY);
    EXPECT_ERRNO(vfs.rename("/a/b", "/a/b2"), EBUSY);
    EXPECT_ERRNO(vfs.rename(a_node->node, "ln", b_node->node, "c", RenameFlags::none), EBUSY);
    EXPECT_ERRNO(vfs.rename("/a/ln", "/a/b/c"), EBUSY);
    EXPECT_ERRNO(vfs.rmdir(b_node->node, "c"), EBUSY);
    EXPECT_ERRNO(vfs.rmdir("/a/b/c"), EBUSY);
    EXPECT_ERRNO(vfs.unlink(b_node->node, "c"), EISDIR);
    EXPECT_ERRNO(vfs.unlink("/a/b/c"), EISDIR);
    EXPECT_ERRNO(vfs.mkdir(b_node->node, "c", 0755, std::nullopt), EEXIST);
    EXPECT_ERRNO(vfs.mkdir("/a/b/c"), EEXIST);
    EXPECT_ERRNO(vfs.mkdir(kRootNode, "a", 0755, std::nullopt), EEXIST);
    EXPECT_ERRNO(vfs.mkdir("/a"), EEXIST);
    EXPECT_ERRNO(vfs.create(b_node->node, "c", O_RDWR | O_CREAT, 0644, std::nullopt), EISDIR);
    EXPECT_ERRNO(vfs.open("/a/b/c", O_RDWR | O_CREAT, 0644), EISDIR);
    // The synthetic root makes nothing.
    EXPECT_ERRNO(vfs.mkdir(kRootNode, "x", 0755, std::nullopt), EROFS);
    EXPECT_ERRNO(vfs.mkdir("/x"), EROFS);
    EXPECT_ERRNO(vfs.setattr(kRootNode, SetAttr::chmod(0700)), EROFS);
    EXPECT_ERRNO(vfs.chmod("/", 0700), EROFS);
    EXPECT_ERRNO(vfs.unlink(kRootNode, "nothing"), ENOENT);
    EXPECT_ERRNO(vfs.unlink("/nothing"), ENOENT);

    // Attributes and xattrs of a member node.
    auto moved = vfs.lookup(dir_node->node, "moved");
    ASSERT_OK(moved);
    auto st = vfs.setattr(moved->node, SetAttr::chmod(0600));
    ASSERT_OK(st);
    EXPECT_EQ(st->mode, 0600u);
    EXPECT_EQ(a.lstat("/dir/moved")->mode, 0600u);
    ASSERT_OK(vfs.setattr(moved->node, SetAttr::resize(2)));
    EXPECT_EQ(content_of(a, "/dir/moved"), "in");
    ASSERT_OK(vfs.setxattr(moved->node, "user.k", "v", XattrMode::create));
    EXPECT_EQ(*a.getxattr("/dir/moved", "user.k"), "v");
    EXPECT_EQ(*vfs.getxattr(moved->node, "user.k"), "v");
    ASSERT_OK(vfs.removexattr(moved->node, "user.k"));
    EXPECT_ERRNO(a.getxattr("/dir/moved", "user.k"), ENODATA);
    // Opened for writing by node: the member's file.
    {
        auto file = vfs.open(moved->node, O_WRONLY | O_TRUNC);
        ASSERT_OK(file);
        ASSERT_OK(conformance::pwrite_string(**file, "rewritten", 0));
    }
    EXPECT_EQ(content_of(a, "/dir/moved"), "rewritten");
    vfs.forget(moved->node, 1);

    // Removal.
    ASSERT_OK(vfs.unlink(dir_node->node, "moved"));
    EXPECT_ERRNO(a.lstat("/dir/moved"), ENOENT);
    EXPECT_ERRNO(vfs.rmdir(a_node->node, "dir"), ENOTEMPTY);
    EXPECT_ERRNO(vfs.rmdir("/a/dir"), ENOTEMPTY);
    ASSERT_OK(vfs.unlink(dir_node->node, "f"));
    ASSERT_OK(vfs.rmdir(a_node->node, "dir"));
    EXPECT_ERRNO(a.lstat("/dir"), ENOENT);
    EXPECT_OK(vfs.getattr(dir_node->node));  // removed, but held: still answering

    for (Node n : {a_node->node, b_node->node, c_node->node, dir_node->node}) vfs.forget(n, 1);
    l.expect_all_given_back();
}

TEST(VfsNodes, UnionMutationsFollowThePathCalls) {
    Layout l = union_of_two();
    Vfs& vfs = *l.vfs;
    Backend& up = *l.members["upper"];
    Backend& low = *l.members["lower"];
    auto u = lookup_path(vfs, "/u");
    ASSERT_OK(u);
    auto d = lookup_path(vfs, "/u/d");
    ASSERT_OK(d);

    // New names go to the first writable member.
    auto made = vfs.create(u->node, "new", O_WRONLY | O_CREAT, 0644, std::nullopt);
    ASSERT_OK(made);
    EXPECT_OK(up.lstat("/new"));
    EXPECT_ERRNO(low.lstat("/new"), ENOENT);
    vfs.forget(made->entry.node, 1);
    auto sub = vfs.mkdir(d->node, "made-in-d", 0755, std::nullopt);
    ASSERT_OK(sub);
    EXPECT_OK(up.lstat("/d/made-in-d"));
    vfs.forget(sub->node, 1);
    // A name either member has exists.
    EXPECT_ERRNO(vfs.mkdir(u->node, "low-only", 0755, std::nullopt), EEXIST);
    EXPECT_ERRNO(vfs.mkdir("/u/low-only"), EEXIST);
    // An existing name is changed where it is: the lower member's file in the lower member.
    auto low_only = vfs.lookup(u->node, "low-only");
    ASSERT_OK(low_only);
    ASSERT_OK(vfs.setattr(low_only->node, SetAttr::chmod(0611)));
    EXPECT_EQ(low.lstat("/low-only")->mode, 0611u);
    vfs.forget(low_only->node, 1);
    auto opened = vfs.create(d->node, "l", O_WRONLY | O_APPEND | O_CREAT, 0644, std::nullopt);
    ASSERT_OK(opened);
    ASSERT_OK(conformance::pwrite_string(*opened->file, "more\n", 0));
    EXPECT_EQ(content_of(low, "/d/l"), "l\nmore\n");
    EXPECT_ERRNO(up.lstat("/d/l"), ENOENT);
    vfs.forget(opened->entry.node, 1);
    // A rename within the lower member works; onto a name the upper member holds it is EXDEV.
    ASSERT_OK(vfs.rename(d->node, "l", u->node, "l-moved", RenameFlags::none));
    EXPECT_OK(low.lstat("/l-moved"));
    EXPECT_ERRNO(vfs.rename(u->node, "l-moved", u->node, "up-only", RenameFlags::none), EXDEV);
    EXPECT_ERRNO(vfs.rename("/u/l-moved", "/u/up-only"), EXDEV);
    EXPECT_ERRNO(vfs.link("/u/l-moved", "/u/up-only"), EXDEV);
    auto moved = vfs.lookup(u->node, "l-moved");
    ASSERT_OK(moved);
    EXPECT_ERRNO(vfs.link(moved->node, u->node, "up-only"), EXDEV);
    vfs.forget(moved->node, 1);
    // Across the union and the mount below it, or the "/" member: EXDEV.
    auto m = vfs.lookup(d->node, "m");
    ASSERT_OK(m);
    EXPECT_ERRNO(vfs.rename(u->node, "both", m->node, "both", RenameFlags::none), EXDEV);
    EXPECT_ERRNO(vfs.rename("/u/both", "/u/d/m/both"), EXDEV);
    EXPECT_ERRNO(vfs.rename(u->node, "both", kRootNode, "both", RenameFlags::none), EXDEV);
    EXPECT_ERRNO(vfs.rename("/u/both", "/both"), EXDEV);
    vfs.forget(m->node, 1);
    // unlink removes the entry of the member that holds it (the upper one's "both"), and the
    // lower one's shows through.
    ASSERT_OK(vfs.unlink(u->node, "both"));
    EXPECT_ERRNO(up.lstat("/both"), ENOENT);
    EXPECT_EQ(content_of(vfs, "/u/both"), "lower's both, longer\n");
    auto both = vfs.lookup(u->node, "both");
    ASSERT_OK(both);
    EXPECT_EQ(read_node(vfs, both->node), "lower's both, longer\n");
    vfs.forget(both->node, 1);

    vfs.forget(u->node, 1);
    vfs.forget(d->node, 1);
    l.expect_all_given_back();
}

TEST(VfsNodes, UnionWithAReadOnlyUpperMember) {
    Layout l = union_of_two(/*upper_read_only=*/true);
    Vfs& vfs = *l.vfs;
    Backend& up = *l.members["upper"];
    Backend& low = *l.members["lower"];
    auto u = lookup_path(vfs, "/u");
    ASSERT_OK(u);
    // A new name goes to the first writable member: the lower one.
    auto made = vfs.mkdir(u->node, "new-dir", 0755, std::nullopt);
    ASSERT_OK(made);
    EXPECT_OK(low.lstat("/new-dir"));
    EXPECT_ERRNO(up.lstat("/new-dir"), ENOENT);
    ASSERT_OK(vfs.mkdir("/u/new-by-path"));
    EXPECT_OK(low.lstat("/new-by-path"));
    vfs.forget(made->node, 1);
    // What the read-only member holds cannot change: EROFS, as by path; it opens for reading.
    EXPECT_ERRNO(vfs.unlink(u->node, "up-only"), EROFS);
    EXPECT_ERRNO(vfs.unlink("/u/up-only"), EROFS);
    EXPECT_ERRNO(vfs.mkdir(u->node, "up-only", 0755, std::nullopt), EEXIST);
    EXPECT_ERRNO(vfs.mkdir("/u/up-only"), EEXIST);
    EXPECT_ERRNO(vfs.rename(u->node, "up-only", u->node, "renamed", RenameFlags::none), EROFS);
    EXPECT_ERRNO(vfs.rename("/u/up-only", "/u/renamed"), EROFS);
    EXPECT_ERRNO(vfs.create(u->node, "up-only", O_RDWR | O_CREAT, 0644, std::nullopt), EROFS);
    EXPECT_ERRNO(vfs.open("/u/up-only", O_RDWR | O_CREAT, 0644), EROFS);
    EXPECT_ERRNO(vfs.create(u->node, "up-only", O_RDONLY | O_CREAT | O_EXCL, 0644, std::nullopt),
                 EEXIST);
    EXPECT_ERRNO(vfs.open("/u/up-only", O_RDONLY | O_CREAT | O_EXCL, 0644), EEXIST);
    auto ro = vfs.create(u->node, "up-only", O_RDONLY | O_CREAT, 0644, std::nullopt);
    ASSERT_OK(ro);
    EXPECT_EQ(conformance::read_all(*ro->file).value_or("<error>"), "upper only\n");
    vfs.forget(ro->entry.node, 1);
    auto up_only = vfs.lookup(u->node, "up-only");
    ASSERT_OK(up_only);
    EXPECT_ERRNO(vfs.setattr(up_only->node, SetAttr::chmod(0600)), EROFS);
    EXPECT_ERRNO(vfs.chmod("/u/up-only", 0600), EROFS);
    EXPECT_ERRNO(vfs.open(up_only->node, O_WRONLY), EROFS);
    EXPECT_ERRNO(vfs.open("/u/up-only", O_WRONLY), EROFS);
    EXPECT_EQ(read_node(vfs, up_only->node), "upper only\n");
    vfs.forget(up_only->node, 1);
    // The merged directory's upper part is read-only: its attributes too.
    auto d = vfs.lookup(u->node, "d");
    ASSERT_OK(d);
    EXPECT_ERRNO(vfs.setattr(d->node, SetAttr::chmod(0700)), EROFS);
    EXPECT_ERRNO(vfs.chmod("/u/d", 0700), EROFS);
    // ...but the lower member's entries in it change in the lower member.
    ASSERT_OK(vfs.unlink(d->node, "l"));
    EXPECT_ERRNO(low.lstat("/d/l"), ENOENT);
    vfs.forget(d->node, 1);
    vfs.forget(u->node, 1);
    l.expect_all_given_back();
}

TEST(VfsNodes, ReadOnlyMountsRefuseEveryChange) {
    Layout l = read_only_mounts();
    Vfs& vfs = *l.vfs;
    for (const char* mount_point : {"/ro", "/snap"}) {
        const std::string at = mount_point;
        SCOPED_TRACE(at);
        auto root = lookup_path(vfs, at);
        ASSERT_OK(root);
        auto docs = vfs.lookup(root->node, "docs");
        ASSERT_OK(docs);
        auto readme = vfs.lookup(docs->node, "readme.txt");
        ASSERT_OK(readme);
        const Node r = root->node, f = readme->node;
        const std::string p = at + "/docs/readme.txt";
        EXPECT_ERRNO(vfs.create(r, "new", O_WRONLY | O_CREAT, 0644, std::nullopt), EROFS);
        EXPECT_ERRNO(vfs.open(at + "/new", O_WRONLY | O_CREAT, 0644), EROFS);
        EXPECT_ERRNO(vfs.mkdir(r, "new", 0755, std::nullopt), EROFS);
        EXPECT_ERRNO(vfs.mkdir(at + "/new"), EROFS);
        EXPECT_ERRNO(vfs.mknod(r, "new", FileType::fifo, 0644, 0, std::nullopt), EROFS);
        EXPECT_ERRNO(vfs.mknod(at + "/new", FileType::fifo, 0644), EROFS);
        EXPECT_ERRNO(vfs.symlink(r, "new", "x", std::nullopt), EROFS);
        EXPECT_ERRNO(vfs.symlink("x", at + "/new"), EROFS);
        EXPECT_ERRNO(vfs.link(f, r, "new"), EROFS);
        EXPECT_ERRNO(vfs.link(p, at + "/new"), EROFS);
        EXPECT_ERRNO(vfs.unlink(docs->node, "readme.txt"), EROFS);
        EXPECT_ERRNO(vfs.unlink(p), EROFS);
        EXPECT_ERRNO(vfs.rmdir(r, "empty"), EROFS);
        EXPECT_ERRNO(vfs.rmdir(at + "/empty"), EROFS);
        EXPECT_ERRNO(vfs.rename(docs->node, "readme.txt", r, "moved", RenameFlags::none), EROFS);
        EXPECT_ERRNO(vfs.rename(p, at + "/moved"), EROFS);
        EXPECT_ERRNO(vfs.setattr(f, SetAttr::chmod(0600)), EROFS);
        EXPECT_ERRNO(vfs.chmod(p, 0600), EROFS);
        EXPECT_ERRNO(vfs.setattr(f, SetAttr::resize(0)), EROFS);
        EXPECT_ERRNO(vfs.truncate(p, 0), EROFS);
        EXPECT_ERRNO(vfs.setxattr(f, "user.x", "y", XattrMode::any), EROFS);
        EXPECT_ERRNO(vfs.setxattr(p, "user.x", "y"), EROFS);
        EXPECT_ERRNO(vfs.removexattr(f, "user.x"), EROFS);
        EXPECT_ERRNO(vfs.removexattr(p, "user.x"), EROFS);
        EXPECT_ERRNO(vfs.open(f, O_WRONLY), EROFS);
        EXPECT_ERRNO(vfs.open(p, O_WRONLY), EROFS);
        EXPECT_ERRNO(vfs.open(f, O_RDONLY | O_TRUNC), EROFS);
        EXPECT_ERRNO(vfs.open(docs->node, O_WRONLY), EISDIR);
        EXPECT_ERRNO(vfs.open(at + "/docs", O_WRONLY), EISDIR);
        EXPECT_EQ(read_node(vfs, f), std::string(conformance::kReadme));
        // Across into the writable "/" member: EXDEV before EROFS, as by path.
        EXPECT_ERRNO(vfs.rename(docs->node, "readme.txt", kRootNode, "moved", RenameFlags::none),
                     EXDEV);
        EXPECT_ERRNO(vfs.rename(p, "/moved"), EXDEV);
        auto fs = vfs.statfs(f);
        auto fs_path = vfs.statfs(p);
        ASSERT_OK(fs);
        ASSERT_OK(fs_path);
        EXPECT_EQ(fs->blocks, fs_path->blocks);
        EXPECT_EQ(fs->files, fs_path->files);
        for (Node n : {root->node, docs->node, readme->node}) vfs.forget(n, 1);
    }
    // The mounts' members are unchanged, and the writable "/" member still changes.
    EXPECT_OK(l.members["ro"]->lstat("/docs/readme.txt"));
    auto made = vfs.mkdir(kRootNode, "new", 0755, std::nullopt);
    ASSERT_OK(made);
    EXPECT_OK(l.members["root"]->lstat("/new"));
    vfs.forget(made->node, 1);
    l.expect_all_given_back();
}

// --- threads -----------------------------------------------------------------------------------

// Lookups, reads and forgets from several threads while mounts come and go: every answer is one
// the Vfs could give, and every member reference comes back.
TEST(VfsNodes, ConcurrentLookupsForgetsAndMounts) {
    Layout l = nested();
    Vfs& vfs = *l.vfs;
    auto extra = counting();
    ASSERT_OK(write_file(*extra, "/e", "e\n"));
    const int rounds = sanitizer_run() ? 200 : 2000;
    std::atomic<bool> failed{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < rounds; ++i) {
                auto a = vfs.lookup(kRootNode, "a");
                if (!a) continue;  // unmounted meanwhile
                HeldNode held_a(vfs, a->node);
                for (const char* name : {"dir", "b", "readme", "x"}) {
                    auto e = vfs.lookup(a->node, name);
                    if (!e) continue;
                    HeldNode held(vfs, e->node);
                    if (!vfs.getattr(e->node)) failed = true;
                    if (e->stat.type == FileType::directory && !vfs.list(e->node)) failed = true;
                }
                if ((i + t) % 7 == 0) {
                    auto c = lookup_path(vfs, "/a/b/c/docs/readme.txt");
                    if (c) {
                        if (read_node(vfs, c->node) != conformance::kReadme) failed = true;
                        vfs.forget(c->node, 1);
                    }
                }
            }
        });
    }
    threads.emplace_back([&] {
        for (int i = 0; i < rounds / 10; ++i) {
            if (!vfs.mount("/a/x", extra)) failed = true;
            if (!vfs.unmount("/a/x")) failed = true;
            if (i % 5 == 0) {
                if (!vfs.unmount("/a")) failed = true;
                if (!vfs.mount("/a", l.members["a"])) failed = true;
            }
        }
    });
    for (auto& th : threads) th.join();
    EXPECT_FALSE(failed);
    l.expect_all_given_back();
    EXPECT_EQ(extra->outstanding(), 0);
}

}  // namespace
}  // namespace packfs::vfs_test
