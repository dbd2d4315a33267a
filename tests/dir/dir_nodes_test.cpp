// The dir backend's node calls (backend.hpp "Nodes", docs/DIR.md "Nodes"): every answer
// compared with what the host says about the same object (lstat, readlink, getxattr, the
// bytes), never just "it did not fail".
//
// - reads by node (lookup, getattr, list, readlink, open, statfs) against the host;
// - every mutation by node, with the host's view after it; exact modes whatever the umask;
//   owners and the set-group-ID rule (as root);
// - the node table: one id per object (hard links too), ids never reused, forget closes the
//   fd (counted in /proc/self/fd), a held node of an unlinked file still answers getattr
//   (nlink 0), setattr and setxattr, a directory renamed keeps its held children valid;
// - a tree of 255-byte names deeper than 8 KiB, built, changed and removed only through nodes;
// - containment in every mode: a symlink is never followed by a lookup (its node is the link),
//   and nothing outside the root changes whatever is done through a link's node;
// - names "", ".", "..", "a/b" are EINVAL everywhere; a read-only backend answers EROFS;
// - threads looking up, holding and forgetting the same objects (label tsan).
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "dir/host_tree.hpp"
#include "packfs/backend.hpp"
#include "packfs/dir.hpp"
#include "packfs/overlay.hpp"
#include "support/files.hpp"

namespace packfs::dir_test {
namespace {

using test_support::TempDir;

// --- host helpers ----------------------------------------------------------------------------

int open_fd_count() {
    int n = 0;
    DIR* d = ::opendir("/proc/self/fd");
    if (d == nullptr) return -1;
    while (dirent* e = ::readdir(d)) {
        if (e->d_name[0] != '.') ++n;
    }
    ::closedir(d);
    return n - 1;  // the listing's own fd
}

struct stat host_stat_at(int dir, const std::string& name) {
    struct stat st {};
    EXPECT_EQ(::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW), 0)
        << name << ": " << std::strerror(errno);
    return st;
}

struct stat host_stat(const fs::path& p) { return host_stat_at(AT_FDCWD, p.string()); }

// Every field of `st` as the host tells it for the same object.
void expect_same(const Stat& st, const struct stat& h, const std::string& what) {
    SCOPED_TRACE(what);
    EXPECT_EQ(st.ino, h.st_ino);
    EXPECT_EQ(file_type_to_mode_bits(st.type), h.st_mode & S_IFMT);
    EXPECT_EQ(st.mode, h.st_mode & 07777);
    EXPECT_EQ(st.uid, h.st_uid);
    EXPECT_EQ(st.gid, h.st_gid);
    EXPECT_EQ(st.nlink, h.st_nlink);
    EXPECT_EQ(st.size, static_cast<uint64_t>(h.st_size));
    EXPECT_EQ(st.rdev, h.st_rdev);
    EXPECT_EQ(st.mtime.sec, h.st_mtim.tv_sec);
    EXPECT_EQ(st.mtime.nsec, h.st_mtim.tv_nsec);
    EXPECT_EQ(st.ctime.sec, h.st_ctim.tv_sec);
    EXPECT_EQ(st.ctime.nsec, h.st_ctim.tv_nsec);
}

void expect_same(const Stat& st, const fs::path& p) { expect_same(st, host_stat(p), p.string()); }

std::string host_xattr(const fs::path& p, const char* name) {
    char buf[8192];
    ssize_t n = ::lgetxattr(p.c_str(), name, buf, sizeof buf);
    return n < 0 ? fmt::format("<{}>", std::strerror(errno)) : std::string(buf, static_cast<std::size_t>(n));
}

// Removes everything below the directory `dir` with *at calls (a tree deeper than PATH_MAX
// too); false if anything stayed.
bool remove_below(int dir) {
    int fd = ::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return false;
    DIR* d = ::fdopendir(fd);
    if (d == nullptr) {
        ::close(fd);
        return false;
    }
    std::vector<std::pair<std::string, bool>> names;
    while (dirent* e = ::readdir(d)) {
        std::string_view n = e->d_name;
        if (n != "." && n != "..") names.emplace_back(std::string(n), e->d_type == DT_DIR);
    }
    bool ok = true;
    for (const auto& [name, is_dir] : names) {
        if (is_dir) {
            int sub = ::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0) {
                ok = remove_below(sub) && ok;
                ::close(sub);
            }
        }
        ok = ::unlinkat(dir, name.c_str(), is_dir ? AT_REMOVEDIR : 0) == 0 && ok;
    }
    ::closedir(d);
    return ok;
}

std::string read_all(File& f) {
    std::string out;
    std::byte buf[4096];
    for (;;) {
        auto n = f.pread(buf, out.size());
        if (!n || *n == 0) break;
        out.append(reinterpret_cast<const char*>(buf), *n);
    }
    return out;
}

void write_all(File& f, std::string_view data, uint64_t at = 0) {
    auto n = f.pwrite(std::as_bytes(std::span(data.data(), data.size())), at);
    ASSERT_TRUE(n.has_value()) << n.error().message();
    ASSERT_EQ(*n, data.size());
}

#define EXPECT_ERRNO(expr, want)                                                          \
    do {                                                                                  \
        auto r_ = (expr);                                                                 \
        ASSERT_FALSE(r_.has_value()) << #expr << " succeeded, expected " << errno_name(want); \
        EXPECT_EQ(errno_name(r_.error().code()), errno_name(want)) << #expr;                \
    } while (0)

// The result of `expr`, with a test failure (not a return) when it is an error.
template <class T>
Result<T> checked(Result<T> r, const char* what) {
    if (!r) ADD_FAILURE() << what << ": " << r.error().message();
    return r;
}
#define ASSERT_OK(expr) checked((expr), #expr)

// --- the world ------------------------------------------------------------------------------

// T/root (the backend's root) beside T/outside (what an escape would reach).
class DirNodes : public ::testing::Test {
protected:
    void SetUp() override {
        // The backend must give every new entry exactly the mode asked, whatever the umask.
        old_umask_ = ::umask(022);
        root_ = scratch_.path / "root";
        outside_ = scratch_.path / "outside";
        fs::create_directories(root_);
        fs::create_directories(outside_ / "dir");
        ASSERT_TRUE(host_write(outside_ / "secret", "outside bytes", 0644));
        ASSERT_TRUE(host_write(outside_ / "dir" / "secret", "deeper", 0600));
        baseline_fds_ = open_fd_count();
    }
    void TearDown() override {
        fs_.reset();
        int fd = ::open(scratch_.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0) {
            remove_below(fd);  // a tree deeper than PATH_MAX too
            ::close(fd);
        }
        ::umask(old_umask_);
    }

    Backend& open(DirOptions options = {}) {
        auto b = open_dir_backend(root_.string(), options);
        EXPECT_TRUE(b.has_value()) << (b ? "" : b.error().message());
        fs_ = b ? *b : nullptr;
        baseline_fds_ = open_fd_count();
        return *fs_;
    }

    Entry lookup(Node dir, std::string_view name) {
        auto e = fs_->lookup(dir, name);
        EXPECT_TRUE(e.has_value()) << name << ": " << (e ? "" : e.error().message());
        return e ? *e : Entry{};
    }

    TempDir scratch_;
    fs::path root_, outside_;
    std::shared_ptr<Backend> fs_;
    int baseline_fds_ = 0;
    mode_t old_umask_ = 0;
};

// --- reads ----------------------------------------------------------------------------------

TEST_F(DirNodes, ReadsMatchTheHost) {
    fs::create_directories(root_ / "a" / "sub");
    ASSERT_TRUE(host_write(root_ / "a" / "f", "hello, nodes", 0640));
    ASSERT_EQ(::symlink("f", (root_ / "a" / "l").c_str()), 0);
    ASSERT_EQ(::mkfifo((root_ / "a" / "p").c_str(), 0600), 0);
    Backend& fs = open();

    auto root = fs.getattr(kRootNode);
    ASSERT_TRUE(root.has_value());
    expect_same(*root, root_);

    Entry a = lookup(kRootNode, "a");
    expect_same(a.stat, root_ / "a");
    expect_same(ASSERT_OK(fs.getattr(a.node)).value_or(Stat{}), root_ / "a");

    // The listing: every name with the host's inode number and type.
    auto listed = fs.list(a.node);
    ASSERT_TRUE(listed.has_value());
    std::map<std::string, DirEntry> by_name;
    for (const auto& e : *listed) by_name[e.name] = e;
    ASSERT_EQ(by_name.size(), 4u);
    for (const auto& name : host_names(root_ / "a")) {
        ASSERT_TRUE(by_name.contains(name)) << name;
        const struct stat h = host_stat(root_ / "a" / name);
        EXPECT_EQ(by_name[name].ino, h.st_ino) << name;
        EXPECT_EQ(file_type_to_mode_bits(by_name[name].type), h.st_mode & S_IFMT) << name;
    }
    auto root_list = fs.list(kRootNode);
    ASSERT_TRUE(root_list.has_value());
    ASSERT_EQ(root_list->size(), 1u);
    EXPECT_EQ((*root_list)[0].name, "a");

    // A symlink's node is the link; readlink answers its text.
    Entry l = lookup(a.node, "l");
    EXPECT_EQ(l.stat.type, FileType::symlink);
    expect_same(l.stat, root_ / "a" / "l");
    EXPECT_EQ(ASSERT_OK(fs.readlink(l.node)).value_or(""), "f");

    // Open by node: the bytes; what cannot be opened, in the contract's errno.
    Entry f = lookup(a.node, "f");
    expect_same(f.stat, root_ / "a" / "f");
    auto file = fs.open(f.node, O_RDONLY);
    ASSERT_TRUE(file.has_value());
    EXPECT_EQ(read_all(**file), "hello, nodes");
    expect_same(ASSERT_OK((*file)->fstat()).value_or(Stat{}), root_ / "a" / "f");
    EXPECT_ERRNO(fs.open(l.node, O_RDONLY), ELOOP);
    Entry p = lookup(a.node, "p");
    EXPECT_EQ(p.stat.type, FileType::fifo);
    EXPECT_ERRNO(fs.open(p.node, O_RDONLY), ENOTSUP);
    EXPECT_ERRNO(fs.open(a.node, O_WRONLY), EISDIR);
    EXPECT_ERRNO(fs.open(f.node, O_RDONLY | O_DIRECTORY), ENOTDIR);
    auto dir_handle = fs.open(a.node, O_RDONLY | O_DIRECTORY);
    ASSERT_TRUE(dir_handle.has_value());
    expect_same(ASSERT_OK((*dir_handle)->fstat()).value_or(Stat{}), root_ / "a");

    // Errors of the reads.
    EXPECT_ERRNO(fs.lookup(a.node, "missing"), ENOENT);
    EXPECT_ERRNO(fs.lookup(f.node, "x"), ENOTDIR);
    EXPECT_ERRNO(fs.list(f.node), ENOTDIR);
    EXPECT_ERRNO(fs.readlink(f.node), EINVAL);
    EXPECT_ERRNO(fs.getattr(Node{999999}), ESTALE);

    // statfs: the host filesystem's numbers.
    struct statvfs sv;
    ASSERT_EQ(::statvfs(root_.c_str(), &sv), 0);
    auto sf = fs.statfs(a.node);
    ASSERT_TRUE(sf.has_value());
    EXPECT_EQ(sf->block_size, sv.f_frsize);
    EXPECT_EQ(sf->blocks, sv.f_blocks);
    EXPECT_EQ(sf->files, sv.f_files);
    EXPECT_EQ(sf->name_max, sv.f_namemax);

    for (Node n : {a.node, l.node, f.node, p.node}) fs.forget(n, 1);
}

// --- the node table -------------------------------------------------------------------------

TEST_F(DirNodes, OneIdPerObjectAndForgetClosesTheFd) {
    fs::create_directories(root_ / "d");
    for (int i = 0; i < 20; ++i)
        ASSERT_TRUE(host_write(root_ / "d" / fmt::format("f{}", i), fmt::format("{}", i)));
    ASSERT_EQ(::link((root_ / "d" / "f0").c_str(), (root_ / "d" / "hard").c_str()), 0);
    Backend& fs = open();
    const int base = open_fd_count();

    Entry d = lookup(kRootNode, "d");
    EXPECT_EQ(open_fd_count(), base + 1);
    std::vector<Node> files;
    for (int i = 0; i < 20; ++i) files.push_back(lookup(d.node, fmt::format("f{}", i)).node);
    EXPECT_EQ(open_fd_count(), base + 21);

    // Looked up again, and under its other name: the same id, no new fd.
    Entry again = lookup(d.node, "f0");
    Entry hard = lookup(d.node, "hard");
    EXPECT_EQ(again.node, files[0]);
    EXPECT_EQ(hard.node, files[0]);
    EXPECT_EQ(hard.stat.ino, again.stat.ino);
    EXPECT_EQ(hard.stat.nlink, 2u);
    EXPECT_EQ(open_fd_count(), base + 21);
    // Distinct objects, distinct ids.
    std::vector<Node> sorted = files;
    std::sort(sorted.begin(), sorted.end(), [](Node x, Node y) { return x.id < y.id; });
    EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
    EXPECT_NE(d.node, kRootNode);

    // f0 holds three references: two forgets leave it valid, the third closes its fd.
    fs.forget(files[0], 2);
    EXPECT_TRUE(fs.getattr(files[0]).has_value());
    EXPECT_EQ(open_fd_count(), base + 21);
    fs.forget(files[0], 1);
    EXPECT_ERRNO(fs.getattr(files[0]), ESTALE);
    EXPECT_EQ(open_fd_count(), base + 20);

    // A forget of more references than held drops the node; the root is never dropped.
    for (std::size_t i = 1; i < files.size(); ++i) fs.forget(files[i], 5);
    fs.forget(kRootNode, 100);
    EXPECT_TRUE(fs.getattr(kRootNode).has_value());
    EXPECT_TRUE(fs.lookup(kRootNode, "d").has_value());  // one more reference on d
    fs.forget(d.node, 2);
    EXPECT_ERRNO(fs.getattr(d.node), ESTALE);
    EXPECT_EQ(open_fd_count(), base);

    // Looked up anew: a new id (ids are never reused), the same object.
    Entry d2 = lookup(kRootNode, "d");
    EXPECT_GT(d2.node.id, files.back().id);
    EXPECT_EQ(d2.stat.ino, d.stat.ino);
    fs.forget(d2.node, 1);
    EXPECT_EQ(open_fd_count(), base);
}

// list_entries states each entry in the listing and interns it without opening it: the same
// nodes (one per object, hard links too) and attributes as lookup, each usable at once, and an
// entry that has xattrs never reported as having none.
TEST_F(DirNodes, ListEntriesAnswersAsLookupDoes) {
    fs::create_directories(root_ / "d" / "sub");
    ASSERT_TRUE(host_write(root_ / "d" / "a", "alpha"));
    ASSERT_TRUE(host_write(root_ / "d" / "tagged", "t"));
    ASSERT_EQ(::link((root_ / "d" / "a").c_str(), (root_ / "d" / "hard").c_str()), 0);
    ASSERT_EQ(::symlink("a", (root_ / "d" / "link").c_str()), 0);
    ASSERT_EQ(::mkfifo((root_ / "d" / "fifo").c_str(), 0644), 0);
    const bool tagged = ::lsetxattr((root_ / "d" / "tagged").c_str(), "user.k", "v", 1, 0) == 0;
    Backend& fs = open();
    Entry d = lookup(kRootNode, "d");
    auto listed = fs.list_entries(d.node);
    ASSERT_TRUE(listed.has_value()) << listed.error().message();
    std::map<std::string, Node> by_name;
    for (const NamedEntry& e : *listed) {
        SCOPED_TRACE(e.name);
        by_name[e.name] = e.entry.node;
        expect_same(e.entry.stat, root_ / "d" / e.name);
        Entry looked = lookup(d.node, e.name);
        EXPECT_EQ(looked.node, e.entry.node);
        fs.forget(looked.node, 1);
        if (e.name == "tagged" && tagged) {
            EXPECT_FALSE(e.no_xattrs);
        }
    }
    ASSERT_EQ(by_name.size(), 6u);
    EXPECT_EQ(by_name["a"], by_name["hard"]);
    auto file = fs.open(by_name["a"], O_RDONLY);
    ASSERT_TRUE(file.has_value()) << file.error().message();
    EXPECT_EQ(read_all(**file), "alpha");
    EXPECT_EQ(fs.readlink(by_name["link"]).value_or("<error>"), "a");
    auto sub = fs.list(by_name["sub"]);
    ASSERT_TRUE(sub.has_value()) << sub.error().message();
    EXPECT_TRUE(sub->empty());
    EXPECT_ERRNO(fs.open(by_name["fifo"], O_RDONLY), ENOTSUP);
    for (const NamedEntry& e : *listed) fs.forget(e.entry.node, 1);
    fs.forget(d.node, 1);
}

TEST_F(DirNodes, HeldNodeOfAnUnlinkedFileStaysUsable) {
    Backend& fs = open();
    auto made = fs.create(kRootNode, "gone", O_RDWR, 0644);
    ASSERT_TRUE(made.has_value()) << made.error().message();
    write_all(*made->file, "still here");
    made->file.reset();
    const Node n = made->entry.node;
    const uint64_t ino = made->entry.stat.ino;

    ASSERT_TRUE(fs.unlink(kRootNode, "gone").has_value());
    EXPECT_FALSE(host_lstat(root_ / "gone").has_value());

    auto st = fs.getattr(n);
    ASSERT_TRUE(st.has_value()) << st.error().message();
    EXPECT_EQ(st->nlink, 0u);
    EXPECT_EQ(st->ino, ino);
    EXPECT_EQ(st->size, 10u);

    // fchmod and fsetxattr of an open unlinked file, as on ext4.
    auto changed = fs.setattr(n, SetAttr::chmod(0600));
    ASSERT_TRUE(changed.has_value()) << changed.error().message();
    EXPECT_EQ(changed->mode, 0600u);
    EXPECT_EQ(ASSERT_OK(fs.getattr(n)).value_or(Stat{}).mode, 0600u);
    auto set = fs.setxattr(n, "user.kept", "yes");
    if (set || set.error().code() != ENOTSUP) {
        ASSERT_TRUE(set.has_value()) << set.error().message();
        EXPECT_EQ(ASSERT_OK(fs.getxattr(n, "user.kept")).value_or(""), "yes");
        auto names = fs.listxattr(n);
        ASSERT_TRUE(names.has_value());
        EXPECT_NE(std::find(names->begin(), names->end(), "user.kept"), names->end());
    }
    auto times = fs.setattr(n, SetAttr::times(TimeUpdate::at({1234567, 89}), TimeUpdate::omit()));
    ASSERT_TRUE(times.has_value()) << times.error().message();
    EXPECT_EQ(times->atime, (Time{1234567, 89}));
    auto shrunk = fs.setattr(n, SetAttr::resize(5));
    ASSERT_TRUE(shrunk.has_value()) << shrunk.error().message();
    EXPECT_EQ(shrunk->size, 5u);

    // Still readable through the node; no name comes back.
    auto file = fs.open(n, O_RDONLY);
    ASSERT_TRUE(file.has_value()) << file.error().message();
    EXPECT_EQ(read_all(**file), "still");
    file->reset();
    EXPECT_ERRNO(fs.link(n, kRootNode, "back"), ENOENT);
    EXPECT_FALSE(host_lstat(root_ / "back").has_value());

    fs.forget(n, 1);
    EXPECT_ERRNO(fs.getattr(n), ESTALE);
    EXPECT_EQ(open_fd_count(), baseline_fds_);
}

TEST_F(DirNodes, RenamedDirectoryKeepsItsHeldChildren) {
    fs::create_directories(root_ / "d" / "inner");
    ASSERT_TRUE(host_write(root_ / "d" / "c", "child"));
    Backend& fs = open();
    Entry d = lookup(kRootNode, "d");
    Entry c = lookup(d.node, "c");
    Entry inner = lookup(d.node, "inner");
    // The path API caches /d and /d/inner (directory fds) before the move.
    EXPECT_ERRNO(fs.stat("/d/inner/none"), ENOENT);
    ASSERT_TRUE(fs.stat("/d/c").has_value());

    ASSERT_TRUE(fs.rename(kRootNode, "d", kRootNode, "e").has_value());
    EXPECT_FALSE(host_lstat(root_ / "d").has_value());

    // The children answer as before, found under the new name by the host.
    expect_same(ASSERT_OK(fs.getattr(c.node)).value_or(Stat{}), root_ / "e" / "c");
    expect_same(ASSERT_OK(fs.getattr(d.node)).value_or(Stat{}), root_ / "e");
    EXPECT_EQ(lookup(d.node, "c").node, c.node);
    fs.forget(c.node, 1);
    auto file = fs.open(c.node, O_RDONLY);
    ASSERT_TRUE(file.has_value());
    EXPECT_EQ(read_all(**file), "child");
    // Names made through the held directory land in its new place.
    auto made = fs.mkdir(inner.node, "new", 0750);
    ASSERT_TRUE(made.has_value()) << made.error().message();
    expect_same(made->stat, root_ / "e" / "inner" / "new");
    ASSERT_TRUE(fs.rename(d.node, "c", inner.node, "c2").has_value());
    expect_same(ASSERT_OK(fs.getattr(c.node)).value_or(Stat{}), root_ / "e" / "inner" / "c2");
    // The path API sees the same tree (its directory cache noticed the move).
    auto by_path = fs.stat("/e/inner/c2");
    ASSERT_TRUE(by_path.has_value());
    EXPECT_EQ(by_path->ino, c.stat.ino);
    EXPECT_ERRNO(fs.stat("/d/c"), ENOENT);
    EXPECT_ERRNO(fs.stat("/d/inner/c2"), ENOENT);

    for (Node n : {d.node, c.node, inner.node, made->node}) fs.forget(n, 1);
}

// --- mutations ------------------------------------------------------------------------------

TEST_F(DirNodes, CreateOpensNewAndExistingFiles) {
    ASSERT_EQ(::symlink("target", (root_ / "link").c_str()), 0);
    ASSERT_EQ(::mkfifo((root_ / "fifo").c_str(), 0600), 0);
    Backend& fs = open();

    // New: exactly the mode asked (the umask is 022), the handle writes the host file.
    auto made = fs.create(kRootNode, "f", O_RDWR, 0666);
    ASSERT_TRUE(made.has_value()) << made.error().message();
    expect_same(made->entry.stat, root_ / "f");
    EXPECT_EQ(made->entry.stat.mode, 0666u);
    write_all(*made->file, "0123456789");
    EXPECT_EQ(host_read(root_ / "f").value_or(""), "0123456789");

    // Existing, without O_EXCL: the same node, opened (O_TRUNC empties it); with O_EXCL: EEXIST.
    auto again = fs.create(kRootNode, "f", O_RDONLY, 0600);
    ASSERT_TRUE(again.has_value()) << again.error().message();
    EXPECT_EQ(again->entry.node, made->entry.node);
    EXPECT_EQ(read_all(*again->file), "0123456789");
    EXPECT_EQ(again->entry.stat.mode, 0666u);  // the mode of a file that exists stays
    EXPECT_ERRNO(fs.create(kRootNode, "f", O_RDWR | O_EXCL, 0600), EEXIST);
    auto truncated = fs.create(kRootNode, "f", O_WRONLY | O_TRUNC, 0600);
    ASSERT_TRUE(truncated.has_value()) << truncated.error().message();
    EXPECT_EQ(truncated->entry.stat.size, 0u);
    expect_same(truncated->entry.stat, root_ / "f");
    EXPECT_EQ(host_read(root_ / "f").value_or("?"), "");

    // O_APPEND writes at the end whatever the offset.
    auto appending = fs.create(kRootNode, "f", O_WRONLY | O_APPEND, 0600);
    ASSERT_TRUE(appending.has_value());
    write_all(*appending->file, "ab", 0);
    write_all(*appending->file, "cd", 0);
    EXPECT_EQ(host_read(root_ / "f").value_or(""), "abcd");

    // A symlink is not followed (ELOOP), a special file never opened (ENOTSUP); the dangling
    // link's target is not created.
    EXPECT_ERRNO(fs.create(kRootNode, "link", O_RDWR, 0600), ELOOP);
    EXPECT_FALSE(host_lstat(root_ / "target").has_value());
    EXPECT_ERRNO(fs.create(kRootNode, "fifo", O_WRONLY, 0600), ENOTSUP);
    EXPECT_ERRNO(fs.create(kRootNode, "f", O_ACCMODE, 0600), EINVAL);
    Entry f = lookup(kRootNode, "f");
    EXPECT_ERRNO(fs.create(f.node, "x", O_RDWR, 0600), ENOTDIR);

    for (int i = 0; i < 4; ++i) fs.forget(made->entry.node, 1);
    fs.forget(f.node, 1);
    made->file.reset();
    again->file.reset();
    truncated->file.reset();
    appending->file.reset();
    EXPECT_EQ(open_fd_count(), baseline_fds_);
}

TEST_F(DirNodes, MakeEntriesWithExactModes) {
    Backend& fs = open();
    auto dir = fs.mkdir(kRootNode, "dir", 0777);
    ASSERT_TRUE(dir.has_value()) << dir.error().message();
    expect_same(dir->stat, root_ / "dir");
    EXPECT_EQ(dir->stat.type, FileType::directory);
    EXPECT_EQ(dir->stat.mode, 0777u);
    auto sticky = fs.mkdir(dir->node, "sticky", 01770);
    ASSERT_TRUE(sticky.has_value());
    EXPECT_EQ(host_stat(root_ / "dir" / "sticky").st_mode & 07777, 01770u);
    EXPECT_ERRNO(fs.mkdir(kRootNode, "dir", 0700), EEXIST);

    auto fifo = fs.mknod(dir->node, "fifo", FileType::fifo, 0622, 0);
    ASSERT_TRUE(fifo.has_value()) << fifo.error().message();
    expect_same(fifo->stat, root_ / "dir" / "fifo");
    EXPECT_TRUE(S_ISFIFO(host_stat(root_ / "dir" / "fifo").st_mode));
    EXPECT_EQ(fifo->stat.mode, 0622u);
    auto reg = fs.mknod(dir->node, "empty", FileType::regular, 0606, 0);
    ASSERT_TRUE(reg.has_value()) << reg.error().message();
    expect_same(reg->stat, root_ / "dir" / "empty");
    EXPECT_EQ(reg->stat.mode, 0606u);
    EXPECT_EQ(reg->stat.size, 0u);
    auto dev = fs.mknod(dir->node, "null", FileType::char_device, 0600, makedev(1, 3));
    if (!dev && dev.error().code() == EPERM) {
        // No CAP_MKNOD: the host's own answer.
        EXPECT_EQ(::mknod((root_ / "dir" / "null2").c_str(), S_IFCHR | 0600, makedev(1, 3)), -1);
    } else {
        ASSERT_TRUE(dev.has_value()) << dev.error().message();
        expect_same(dev->stat, root_ / "dir" / "null");
        EXPECT_EQ(dev->stat.rdev, makedev(1, 3));
        EXPECT_ERRNO(fs.open(dev->node, O_RDONLY), ENOTSUP);
        fs.forget(dev->node, 1);
    }
    EXPECT_ERRNO(fs.mknod(dir->node, "d", FileType::directory, 0755, 0), EINVAL);
    EXPECT_ERRNO(fs.mknod(dir->node, "s", FileType::symlink, 0755, 0), EINVAL);

    auto link = fs.symlink(dir->node, "sl", "../nowhere/at/all");
    ASSERT_TRUE(link.has_value()) << link.error().message();
    expect_same(link->stat, root_ / "dir" / "sl");
    EXPECT_EQ(fs::read_symlink(root_ / "dir" / "sl").string(), "../nowhere/at/all");
    EXPECT_EQ(ASSERT_OK(fs.readlink(link->node)).value_or(""), "../nowhere/at/all");
    EXPECT_ERRNO(fs.symlink(dir->node, "sl", "x"), EEXIST);
    EXPECT_ERRNO(fs.symlink(dir->node, "empty_target", ""), ENOENT);

    // Links: the same node, one more name on the host.
    auto hard = fs.link(reg->node, kRootNode, "hard");
    ASSERT_TRUE(hard.has_value()) << hard.error().message();
    EXPECT_EQ(hard->node, reg->node);
    EXPECT_EQ(hard->stat.nlink, 2u);
    expect_same(hard->stat, root_ / "hard");
    EXPECT_EQ(host_stat(root_ / "hard").st_ino, host_stat(root_ / "dir" / "empty").st_ino);
    auto link_of_link = fs.link(link->node, kRootNode, "sl2");  // the link itself, not followed
    ASSERT_TRUE(link_of_link.has_value()) << link_of_link.error().message();
    EXPECT_TRUE(S_ISLNK(host_stat(root_ / "sl2").st_mode));
    EXPECT_EQ(host_stat(root_ / "sl2").st_ino, host_stat(root_ / "dir" / "sl").st_ino);
    EXPECT_ERRNO(fs.link(reg->node, kRootNode, "hard"), EEXIST);
    EXPECT_ERRNO(fs.link(dir->node, kRootNode, "dirlink"), EPERM);

    // Removal: what the host says about the names afterwards.
    ASSERT_TRUE(fs.unlink(kRootNode, "hard").has_value());
    EXPECT_FALSE(host_lstat(root_ / "hard").has_value());
    EXPECT_EQ(ASSERT_OK(fs.getattr(reg->node)).value_or(Stat{}).nlink, 1u);
    EXPECT_ERRNO(fs.unlink(kRootNode, "hard"), ENOENT);
    EXPECT_ERRNO(fs.unlink(kRootNode, "dir"), EISDIR);
    EXPECT_ERRNO(fs.rmdir(kRootNode, "dir"), ENOTEMPTY);
    EXPECT_ERRNO(fs.rmdir(dir->node, "fifo"), ENOTDIR);
    ASSERT_TRUE(fs.rmdir(dir->node, "sticky").has_value());
    EXPECT_FALSE(host_lstat(root_ / "dir" / "sticky").has_value());
    // A held directory removed: still answers, with no links left.
    auto gone = fs.getattr(sticky->node);
    ASSERT_TRUE(gone.has_value()) << gone.error().message();
    EXPECT_EQ(gone->nlink, 0u);

    for (const auto* e : {&*dir, &*sticky, &*fifo, &*reg, &*link, &*hard, &*link_of_link})
        fs.forget(e->node, 1);
    EXPECT_EQ(open_fd_count(), baseline_fds_);
}

TEST_F(DirNodes, RenameByNode) {
    fs::create_directories(root_ / "a");
    fs::create_directories(root_ / "b" / "full");
    ASSERT_TRUE(host_write(root_ / "a" / "x", "x"));
    ASSERT_TRUE(host_write(root_ / "a" / "y", "y"));
    ASSERT_TRUE(host_write(root_ / "b" / "full" / "z", "z"));
    Backend& fs = open();
    Entry a = lookup(kRootNode, "a");
    Entry b = lookup(kRootNode, "b");
    const ino_t x_ino = host_stat(root_ / "a" / "x").st_ino;
    const ino_t y_ino = host_stat(root_ / "a" / "y").st_ino;

    ASSERT_TRUE(fs.rename(a.node, "x", b.node, "x2").has_value());
    EXPECT_FALSE(host_lstat(root_ / "a" / "x").has_value());
    EXPECT_EQ(host_stat(root_ / "b" / "x2").st_ino, x_ino);

    EXPECT_ERRNO(fs.rename(a.node, "y", b.node, "x2", RenameFlags::noreplace), EEXIST);
    EXPECT_EQ(host_stat(root_ / "a" / "y").st_ino, y_ino);

    ASSERT_TRUE(fs.rename(a.node, "y", b.node, "x2", RenameFlags::exchange).has_value());
    EXPECT_EQ(host_stat(root_ / "a" / "y").st_ino, x_ino);
    EXPECT_EQ(host_stat(root_ / "b" / "x2").st_ino, y_ino);

    ASSERT_TRUE(fs.rename(a.node, "y", b.node, "x2").has_value());  // replaces
    EXPECT_FALSE(host_lstat(root_ / "a" / "y").has_value());
    EXPECT_EQ(host_stat(root_ / "b" / "x2").st_ino, x_ino);

    EXPECT_ERRNO(fs.rename(a.node, "missing", b.node, "m"), ENOENT);
    fs::create_directories(root_ / "empty");
    EXPECT_ERRNO(fs.rename(b.node, "x2", kRootNode, "empty"), EISDIR);
    EXPECT_ERRNO(fs.rename(b.node, "x2", kRootNode, "b"), ENOTEMPTY);  // b holds x2
    EXPECT_ERRNO(fs.rename(kRootNode, "a", b.node, "full"), ENOTEMPTY);
    EXPECT_ERRNO(fs.rename(kRootNode, "b", b.node, "inside"), EINVAL);
    EXPECT_ERRNO(fs.rename(a.node, "y", b.node, "n", RenameFlags::exchange), ENOENT);
    EXPECT_ERRNO(fs.rename(kRootNode, "a", kRootNode, "c", static_cast<RenameFlags>(3)), EINVAL);
    Entry x = lookup(b.node, "x2");
    EXPECT_ERRNO(fs.rename(x.node, "q", b.node, "r"), ENOTDIR);

    for (Node n : {a.node, b.node, x.node}) fs.forget(n, 1);
}

TEST_F(DirNodes, SetattrAndXattrs) {
    ASSERT_TRUE(host_write(root_ / "f", "0123456789", 0644));
    fs::create_directories(root_ / "d");
    ASSERT_EQ(::symlink("f", (root_ / "l").c_str()), 0);
    Backend& fs = open();
    Entry f = lookup(kRootNode, "f");
    Entry d = lookup(kRootNode, "d");
    Entry l = lookup(kRootNode, "l");

    auto st = fs.setattr(f.node, SetAttr::chmod(04751));
    ASSERT_TRUE(st.has_value()) << st.error().message();
    EXPECT_EQ(host_stat(root_ / "f").st_mode & 07777, 04751u);
    expect_same(*st, root_ / "f");

    st = fs.setattr(f.node, SetAttr::resize(4));
    ASSERT_TRUE(st.has_value()) << st.error().message();
    EXPECT_EQ(host_read(root_ / "f").value_or(""), "0123");
    expect_same(*st, root_ / "f");
    st = fs.setattr(f.node, SetAttr::resize(6));
    ASSERT_TRUE(st.has_value());
    EXPECT_EQ(host_read(root_ / "f").value_or(""), std::string("0123\0\0", 6));

    st = fs.setattr(f.node, SetAttr::times(TimeUpdate::at({1000, 5}), TimeUpdate::at({2000, 7})));
    ASSERT_TRUE(st.has_value());
    EXPECT_EQ(host_stat(root_ / "f").st_atim.tv_sec, 1000);
    EXPECT_EQ(host_stat(root_ / "f").st_atim.tv_nsec, 5);
    EXPECT_EQ(host_stat(root_ / "f").st_mtim.tv_sec, 2000);
    EXPECT_EQ(host_stat(root_ / "f").st_mtim.tv_nsec, 7);
    expect_same(*st, root_ / "f");
    // A symlink's node: its own times, not its target's.
    st = fs.setattr(l.node, SetAttr::times(TimeUpdate::omit(), TimeUpdate::at({3000, 0})));
    ASSERT_TRUE(st.has_value()) << st.error().message();
    EXPECT_EQ(host_stat(root_ / "l").st_mtim.tv_sec, 3000);
    EXPECT_EQ(host_stat(root_ / "f").st_mtim.tv_sec, 2000);
    EXPECT_ERRNO(fs.setattr(l.node, SetAttr::chmod(0600)), EOPNOTSUPP);
    EXPECT_EQ(host_stat(root_ / "f").st_mode & 07777, 04751u);

    if (::geteuid() == 0) {
        st = fs.setattr(f.node, SetAttr::chown(4242, 4343));
        ASSERT_TRUE(st.has_value()) << st.error().message();
        EXPECT_EQ(host_stat(root_ / "f").st_uid, 4242u);
        EXPECT_EQ(host_stat(root_ / "f").st_gid, 4343u);
        SetAttr only_gid;
        only_gid.gid = 4444;
        ASSERT_TRUE(fs.setattr(f.node, only_gid).has_value());
        EXPECT_EQ(host_stat(root_ / "f").st_uid, 4242u);
        EXPECT_EQ(host_stat(root_ / "f").st_gid, 4444u);
        // The link's own owner (lchown), the target's unchanged.
        ASSERT_TRUE(fs.setattr(l.node, SetAttr::chown(77, 78)).has_value());
        EXPECT_EQ(host_stat(root_ / "l").st_uid, 77u);
        EXPECT_EQ(host_stat(root_ / "f").st_uid, 4242u);
    }

    EXPECT_ERRNO(fs.setattr(d.node, SetAttr::resize(0)), EISDIR);
    EXPECT_ERRNO(fs.setattr(l.node, SetAttr::resize(0)), EINVAL);
    EXPECT_ERRNO(fs.setattr(f.node, SetAttr::times(TimeUpdate::at({1, 1'000'000'000}),
                                                   TimeUpdate::omit())),
                 EINVAL);

    // Extended attributes, against the host's own l*xattr answers.
    auto set = fs.setxattr(f.node, "user.color", "blue");
    if (!set && set.error().code() == ENOTSUP) GTEST_SKIP() << "no user xattrs here";
    ASSERT_TRUE(set.has_value()) << set.error().message();
    EXPECT_EQ(host_xattr(root_ / "f", "user.color"), "blue");
    EXPECT_EQ(ASSERT_OK(fs.getxattr(f.node, "user.color")).value_or(""), "blue");
    EXPECT_ERRNO(fs.setxattr(f.node, "user.color", "red", XattrMode::create), EEXIST);
    EXPECT_ERRNO(fs.setxattr(f.node, "user.size", "1", XattrMode::replace), ENODATA);
    ASSERT_TRUE(fs.setxattr(f.node, "user.color", "red", XattrMode::replace).has_value());
    EXPECT_EQ(host_xattr(root_ / "f", "user.color"), "red");
    // Over the first 4 KiB read where the host takes it (ext4 without ea_inode keeps an
    // inode's xattrs in one block: ENOSPC there, as the host itself says).
    std::string big(5000, 'v');
    auto set_big = fs.setxattr(d.node, "user.big", big);
    if (!set_big && set_big.error().code() == ENOSPC) {
        EXPECT_EQ(::lsetxattr((root_ / "d").c_str(), "user.big", big.data(), big.size(), 0), -1);
        EXPECT_EQ(errno, ENOSPC);
        big.resize(3000);
        set_big = fs.setxattr(d.node, "user.big", big);
    }
    ASSERT_TRUE(set_big.has_value()) << set_big.error().message();
    EXPECT_EQ(host_xattr(root_ / "d", "user.big").size(), big.size());
    EXPECT_EQ(ASSERT_OK(fs.getxattr(d.node, "user.big")).value_or(""), big);
    auto names = fs.listxattr(f.node);
    ASSERT_TRUE(names.has_value());
    EXPECT_NE(std::find(names->begin(), names->end(), "user.color"), names->end());
    ASSERT_TRUE(fs.removexattr(f.node, "user.color").has_value());
    EXPECT_EQ(host_xattr(root_ / "f", "user.color"), fmt::format("<{}>", std::strerror(ENODATA)));
    EXPECT_ERRNO(fs.getxattr(f.node, "user.color"), ENODATA);
    EXPECT_ERRNO(fs.removexattr(f.node, "user.color"), ENODATA);
    EXPECT_ERRNO(fs.getxattr(f.node, "nonamespace"), ENOTSUP);
    EXPECT_ERRNO(fs.setxattr(f.node, "user.huge", std::string(65537, 'x')), E2BIG);
    // On a symlink's node: the link's own (Linux keeps no user.* xattrs on links: EPERM), and
    // the target untouched.
    EXPECT_ERRNO(fs.setxattr(l.node, "user.on_link", "x"), EPERM);
    EXPECT_ERRNO(fs.getxattr(l.node, "user.color"), ENODATA);
    if (::geteuid() == 0) {
        ASSERT_TRUE(fs.setxattr(l.node, "trusted.on_link", "t").has_value());
        EXPECT_EQ(host_xattr(root_ / "l", "trusted.on_link"), "t");
        EXPECT_EQ(host_xattr(root_ / "f", "trusted.on_link"),
                  fmt::format("<{}>", std::strerror(ENODATA)));
        EXPECT_EQ(ASSERT_OK(fs.getxattr(l.node, "trusted.on_link")).value_or(""), "t");
    }

    for (Node n : {f.node, d.node, l.node}) fs.forget(n, 1);
}

TEST_F(DirNodes, OwnersAndTheSetGroupIdRule) {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to give files away";
    Backend& fs = open();
    const Owner owner{1234, 5678};

    auto file = fs.create(kRootNode, "file", O_WRONLY, 04755, owner);
    ASSERT_TRUE(file.has_value()) << file.error().message();
    struct stat h = host_stat(root_ / "file");
    EXPECT_EQ(h.st_uid, 1234u);
    EXPECT_EQ(h.st_gid, 5678u);
    EXPECT_EQ(h.st_mode & 07777, 04755u);  // the chown cleared set-uid; put back
    expect_same(file->entry.stat, h, "file");

    auto sym = fs.symlink(kRootNode, "sym", "file", owner);
    ASSERT_TRUE(sym.has_value()) << sym.error().message();
    EXPECT_EQ(host_stat(root_ / "sym").st_uid, 1234u);
    EXPECT_EQ(host_stat(root_ / "sym").st_gid, 5678u);
    expect_same(sym->stat, root_ / "sym");

    // A set-group-ID directory: new entries take its group, a new subdirectory its S_ISGID.
    auto sgid = fs.mkdir(kRootNode, "sgid", 02775, Owner{1, 4321});
    ASSERT_TRUE(sgid.has_value()) << sgid.error().message();
    h = host_stat(root_ / "sgid");
    EXPECT_EQ(h.st_gid, 4321u);
    EXPECT_EQ(h.st_mode & 07777, 02775u);

    auto sub = fs.mkdir(sgid->node, "sub", 0750, owner);
    ASSERT_TRUE(sub.has_value()) << sub.error().message();
    h = host_stat(root_ / "sgid" / "sub");
    EXPECT_EQ(h.st_uid, 1234u);
    EXPECT_EQ(h.st_gid, 4321u);
    EXPECT_EQ(h.st_mode & 07777, 02750u);
    expect_same(sub->stat, h, "sub");

    auto inner = fs.create(sgid->node, "inner", O_RDWR, 0640, owner);
    ASSERT_TRUE(inner.has_value()) << inner.error().message();
    h = host_stat(root_ / "sgid" / "inner");
    EXPECT_EQ(h.st_uid, 1234u);
    EXPECT_EQ(h.st_gid, 4321u);
    EXPECT_EQ(h.st_mode & 07777, 0640u);

    auto node = fs.mknod(sgid->node, "fifo", FileType::fifo, 0600, 0, owner);
    ASSERT_TRUE(node.has_value()) << node.error().message();
    h = host_stat(root_ / "sgid" / "fifo");
    EXPECT_EQ(h.st_uid, 1234u);
    EXPECT_EQ(h.st_gid, 4321u);
    EXPECT_EQ(h.st_mode & 07777, 0600u);

    // Without an owner: the process's, under the same rule.
    auto plain = fs.mkdir(sgid->node, "plain", 0700);
    ASSERT_TRUE(plain.has_value());
    h = host_stat(root_ / "sgid" / "plain");
    EXPECT_EQ(h.st_uid, 0u);
    EXPECT_EQ(h.st_gid, 4321u);
    EXPECT_EQ(h.st_mode & 07777, 02700u);

    for (Node n : {file->entry.node, sym->node, sgid->node, sub->node, inner->entry.node,
                   node->node, plain->node})
        fs.forget(n, 1);
}

// --- depth ----------------------------------------------------------------------------------

TEST_F(DirNodes, TreeDeeperThanPathMaxThroughNodesOnly) {
    Backend& fs = open();
    constexpr int kDepth = 40;  // 40 x 256 bytes: 10 KiB of path
    std::vector<Node> chain{kRootNode};
    std::string host_path_length_probe;
    for (int i = 0; i < kDepth; ++i) {
        std::string name(255, static_cast<char>('a' + i % 26));
        name[0] = static_cast<char>('A' + i % 26);
        auto made = fs.mkdir(chain.back(), name, 0755);
        ASSERT_TRUE(made.has_value()) << "level " << i << ": " << made.error().message();
        EXPECT_EQ(made->stat.mode, 0755u);
        chain.push_back(made->node);
        host_path_length_probe += "/" + name;
    }
    ASSERT_GT(host_path_length_probe.size(), 8192u);
    Node bottom = chain.back();

    // The path API cannot name it; the nodes can.
    EXPECT_ERRNO(fs.stat(host_path_length_probe), ENAMETOOLONG);
    auto made = fs.create(bottom, "f", O_RDWR, 0644);
    ASSERT_TRUE(made.has_value()) << made.error().message();
    write_all(*made->file, "deep bytes");
    made->file.reset();
    const Node f = made->entry.node;
    EXPECT_EQ(ASSERT_OK(fs.getattr(f)).value_or(Stat{}).size, 10u);
    auto chmodded = fs.setattr(f, SetAttr::chmod(0600));
    ASSERT_TRUE(chmodded.has_value());
    auto g = fs.link(f, bottom, "g");
    ASSERT_TRUE(g.has_value()) << g.error().message();
    EXPECT_EQ(g->stat.nlink, 2u);
    ASSERT_TRUE(fs.rename(bottom, "g", chain[kDepth - 1], "h").has_value());
    ASSERT_TRUE(fs.unlink(bottom, "f").has_value());
    auto sub = fs.mkdir(bottom, "sub", 0700);
    ASSERT_TRUE(sub.has_value());
    ASSERT_TRUE(fs.rmdir(bottom, "sub").has_value());
    fs.forget(sub->node, 1);

    // The host, walked one component at a time with *at calls, agrees.
    int dir = ::open(root_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(dir, 0);
    for (int i = 0; i < kDepth - 1; ++i) {
        std::string name(255, static_cast<char>('a' + i % 26));
        name[0] = static_cast<char>('A' + i % 26);
        int next = ::openat(dir, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        ::close(dir);
        ASSERT_GE(next, 0) << "level " << i;
        dir = next;
    }
    const struct stat h = host_stat_at(dir, "h");
    expect_same(ASSERT_OK(fs.getattr(f)).value_or(Stat{}), h, "deep h");
    EXPECT_EQ(h.st_mode & 07777, 0600u);
    EXPECT_EQ(h.st_nlink, 1u);
    auto listed = fs.list(chain[kDepth - 1]);
    ASSERT_TRUE(listed.has_value());
    EXPECT_EQ(listed->size(), 2u);  // the bottom directory and h
    auto file = fs.open(f, O_RDONLY);
    ASSERT_TRUE(file.has_value());
    EXPECT_EQ(read_all(**file), "deep bytes");
    file->reset();

    // Removed again, bottom up, through nodes only.
    ASSERT_TRUE(fs.unlink(chain[kDepth - 1], "h").has_value());
    struct stat none;
    EXPECT_EQ(::fstatat(dir, "h", &none, AT_SYMLINK_NOFOLLOW), -1);
    EXPECT_EQ(errno, ENOENT);
    ::close(dir);
    fs.forget(f, 2);
    for (int i = kDepth; i > 0; --i) {
        auto e = fs.getattr(chain[i]);
        ASSERT_TRUE(e.has_value());
        std::string name(255, static_cast<char>('a' + (i - 1) % 26));
        name[0] = static_cast<char>('A' + (i - 1) % 26);
        ASSERT_TRUE(fs.rmdir(chain[i - 1], name).has_value()) << "level " << i;
        fs.forget(chain[i], 1);
    }
    EXPECT_TRUE(host_names(root_).empty());
    EXPECT_EQ(open_fd_count(), baseline_fds_);
}

// --- containment ----------------------------------------------------------------------------

class DirNodesContainment : public DirNodes,
                            public ::testing::WithParamInterface<Containment> {};

TEST_P(DirNodesContainment, LookupNeverFollowsALink) {
    fs::create_directories(root_ / "in");
    const std::vector<std::pair<std::string, std::string>> links = {
        {"up", "../outside"},
        {"up_file", "../outside/secret"},
        {"abs", outside_.string()},
        {"abs_file", (outside_ / "secret").string()},
        {"dotdot", ".."},
        {"slash", "/"},
        {"proc_root", "/proc/self/root"},
        {"inner", "in"},
    };
    for (const auto& [name, target] : links)
        ASSERT_EQ(::symlink(target.c_str(), (root_ / name).c_str()), 0) << name;
    const HostTree before = snapshot_host_tree(scratch_.path, {"root"});
    Backend& fs = open({.containment = GetParam()});

    for (const auto& [name, target] : links) {
        SCOPED_TRACE(name);
        Entry e = lookup(kRootNode, name);
        ASSERT_TRUE(e.node);
        EXPECT_EQ(e.stat.type, FileType::symlink);
        expect_same(e.stat, root_ / name);  // the link's own attributes
        EXPECT_EQ(ASSERT_OK(fs.readlink(e.node)).value_or(""), target);
        // Nothing goes through it: it is not a directory, and it is not opened.
        EXPECT_ERRNO(fs.lookup(e.node, "secret"), ENOTDIR);
        EXPECT_ERRNO(fs.list(e.node), ENOTDIR);
        EXPECT_ERRNO(fs.open(e.node, O_RDONLY), ELOOP);
        EXPECT_ERRNO(fs.open(e.node, O_WRONLY | O_TRUNC), ELOOP);
        EXPECT_ERRNO(fs.create(e.node, "new", O_RDWR, 0644), ENOTDIR);
        EXPECT_ERRNO(fs.create(kRootNode, name, O_RDWR | O_TRUNC, 0644), ELOOP);
        EXPECT_ERRNO(fs.mkdir(e.node, "new", 0755), ENOTDIR);
        EXPECT_ERRNO(fs.symlink(e.node, "new", "x"), ENOTDIR);
        EXPECT_ERRNO(fs.unlink(e.node, "secret"), ENOTDIR);
        EXPECT_ERRNO(fs.rename(e.node, "secret", kRootNode, "stolen"), ENOTDIR);
        EXPECT_ERRNO(fs.setattr(e.node, SetAttr::resize(0)), EINVAL);
        EXPECT_ERRNO(fs.setattr(e.node, SetAttr::chmod(0777)), EOPNOTSUPP);
        // What acts on the node acts on the link itself.
        ASSERT_TRUE(fs.setattr(e.node, SetAttr::times(TimeUpdate::at({5000, 0}),
                                                      TimeUpdate::at({6000, 0})))
                        .has_value());
        EXPECT_EQ(host_stat(root_ / name).st_mtim.tv_sec, 6000);
        if (::geteuid() == 0) {
            ASSERT_TRUE(fs.setattr(e.node, SetAttr::chown(99, 98)).has_value());
            EXPECT_EQ(host_stat(root_ / name).st_uid, 99u);
            ASSERT_TRUE(fs.setxattr(e.node, "trusted.mark", "m").has_value());
            EXPECT_EQ(host_xattr(root_ / name, "trusted.mark"), "m");
        }
        auto hard = fs.link(e.node, kRootNode, name + ".hard");
        ASSERT_TRUE(hard.has_value()) << hard.error().message();
        EXPECT_TRUE(S_ISLNK(host_stat(root_ / (name + ".hard")).st_mode));
        fs.forget(e.node, 2);
    }
    // The escape suite's check: nothing outside the root changed.
    const HostTree after = snapshot_host_tree(scratch_.path, {"root"});
    EXPECT_TRUE(tree_differences(before, after).empty())
        << join_lines(tree_differences(before, after));
    EXPECT_EQ(open_fd_count(), baseline_fds_);
}

INSTANTIATE_TEST_SUITE_P(Modes, DirNodesContainment,
                         ::testing::Values(Containment::beneath, Containment::in_root,
                                           Containment::no_symlinks),
                         [](const auto& p) { return std::string(containment_name(p.param)); });

TEST_F(DirNodes, NamesThatAreNotOneComponentAreEinval) {
    fs::create_directories(root_ / "a" / "b");
    ASSERT_TRUE(host_write(root_ / "f", "f"));
    Backend& fs = open();
    Entry f = lookup(kRootNode, "f");
    const HostTree before = snapshot_host_tree(scratch_.path);
    for (std::string_view bad : {std::string_view(""), std::string_view("."),
                                 std::string_view(".."), std::string_view("a/b"),
                                 std::string_view("/a"), std::string_view("a/"),
                                 std::string_view("x\0y", 3)}) {
        SCOPED_TRACE(fmt::format("name \"{}\"", bad));
        EXPECT_ERRNO(fs.lookup(kRootNode, bad), EINVAL);
        EXPECT_ERRNO(fs.create(kRootNode, bad, O_RDWR, 0644), EINVAL);
        EXPECT_ERRNO(fs.mkdir(kRootNode, bad, 0755), EINVAL);
        EXPECT_ERRNO(fs.mknod(kRootNode, bad, FileType::fifo, 0644, 0), EINVAL);
        EXPECT_ERRNO(fs.symlink(kRootNode, bad, "target"), EINVAL);
        EXPECT_ERRNO(fs.link(f.node, kRootNode, bad), EINVAL);
        EXPECT_ERRNO(fs.unlink(kRootNode, bad), EINVAL);
        EXPECT_ERRNO(fs.rmdir(kRootNode, bad), EINVAL);
        EXPECT_ERRNO(fs.rename(kRootNode, bad, kRootNode, "z"), EINVAL);
        EXPECT_ERRNO(fs.rename(kRootNode, "f", kRootNode, bad), EINVAL);
    }
    const std::string long_name(256, 'n');
    EXPECT_ERRNO(fs.lookup(kRootNode, long_name), ENAMETOOLONG);
    EXPECT_ERRNO(fs.mkdir(kRootNode, long_name, 0755), ENAMETOOLONG);
    EXPECT_TRUE(tree_differences(before, snapshot_host_tree(scratch_.path)).empty());
    fs.forget(f.node, 1);
}

TEST_F(DirNodes, ReadOnlyBackendRefusesNodeMutations) {
    fs::create_directories(root_ / "d");
    ASSERT_TRUE(host_write(root_ / "f", "ro"));
    const HostTree before = snapshot_host_tree(scratch_.path);
    Backend& fs = open({.read_only = true});
    Entry f = lookup(kRootNode, "f");
    Entry d = lookup(kRootNode, "d");

    auto file = fs.open(f.node, O_RDONLY);
    ASSERT_TRUE(file.has_value());
    EXPECT_EQ(read_all(**file), "ro");
    file->reset();
    EXPECT_ERRNO(fs.open(f.node, O_RDWR), EROFS);
    EXPECT_ERRNO(fs.open(f.node, O_RDONLY | O_TRUNC), EROFS);
    auto existing = fs.create(kRootNode, "f", O_RDONLY, 0644);
    ASSERT_TRUE(existing.has_value()) << existing.error().message();
    EXPECT_EQ(existing->entry.node, f.node);
    existing->file.reset();
    fs.forget(f.node, 1);
    EXPECT_ERRNO(fs.create(kRootNode, "f", O_RDONLY | O_EXCL, 0644), EEXIST);
    EXPECT_ERRNO(fs.create(kRootNode, "new", O_RDWR, 0644), EROFS);
    EXPECT_ERRNO(fs.create(kRootNode, "f", O_WRONLY, 0644), EROFS);
    EXPECT_ERRNO(fs.mkdir(kRootNode, "new", 0755), EROFS);
    EXPECT_ERRNO(fs.mknod(kRootNode, "new", FileType::fifo, 0644, 0), EROFS);
    EXPECT_ERRNO(fs.symlink(kRootNode, "new", "f"), EROFS);
    EXPECT_ERRNO(fs.link(f.node, d.node, "new"), EROFS);
    EXPECT_ERRNO(fs.unlink(kRootNode, "f"), EROFS);
    EXPECT_ERRNO(fs.rmdir(kRootNode, "d"), EROFS);
    EXPECT_ERRNO(fs.rename(kRootNode, "f", d.node, "g"), EROFS);
    EXPECT_ERRNO(fs.setattr(f.node, SetAttr::chmod(0600)), EROFS);
    EXPECT_ERRNO(fs.setxattr(f.node, "user.x", "1"), EROFS);
    EXPECT_ERRNO(fs.removexattr(f.node, "user.x"), EROFS);
    EXPECT_TRUE(tree_differences(before, snapshot_host_tree(scratch_.path)).empty())
        << join_lines(tree_differences(before, snapshot_host_tree(scratch_.path)));
    fs.forget(f.node, 1);
    fs.forget(d.node, 1);
    EXPECT_EQ(open_fd_count(), baseline_fds_);
}

// --- layers over it -------------------------------------------------------------------------

TEST_F(DirNodes, OverlayReadsTheDirectoryThroughNodes) {
    fs::create_directories(root_ / "docs" / "deep");
    ASSERT_TRUE(host_write(root_ / "docs" / "readme", "lower bytes"));
    ASSERT_TRUE(host_write(root_ / "docs" / "deep" / "x", "x"));
    ASSERT_EQ(::symlink("docs/readme", (root_ / "shortcut").c_str()), 0);
    const HostTree before = snapshot_host_tree(scratch_.path);
    auto lower = open_dir_backend(root_.string(), {.read_only = true});
    ASSERT_TRUE(lower.has_value());
    auto overlay = make_overlay(*lower);
    ASSERT_TRUE(overlay.has_value()) << overlay.error().message();
    Backend& ov = **overlay;

    EXPECT_EQ(read_file(ov, "/docs/readme").value_or("?"), "lower bytes");
    EXPECT_EQ(read_file(ov, "/shortcut").value_or("?"), "lower bytes");
    EXPECT_EQ(ov.readlink("/shortcut").value_or("?"), "docs/readme");
    auto entries = ov.readdir("/docs");
    ASSERT_TRUE(entries.has_value()) << entries.error().message();
    std::vector<std::string> names;
    for (const auto& e : *entries) names.push_back(e.name);
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{"deep", "readme"}));
    auto st = ov.stat("/docs/readme");
    ASSERT_TRUE(st.has_value());
    EXPECT_EQ(st->size, 11u);
    EXPECT_EQ(st->mode, host_stat(root_ / "docs" / "readme").st_mode & 07777);

    // Changes stay in the overlay.
    ASSERT_TRUE(write_file(ov, "/docs/readme", "upper bytes").has_value());
    EXPECT_EQ(read_file(ov, "/docs/readme").value_or("?"), "upper bytes");
    ASSERT_TRUE(ov.unlink("/docs/deep/x").has_value());
    EXPECT_ERRNO(ov.stat("/docs/deep/x"), ENOENT);
    EXPECT_TRUE(tree_differences(before, snapshot_host_tree(scratch_.path)).empty());
}

// --- threads --------------------------------------------------------------------------------

TEST_F(DirNodes, ConcurrentLookupsAndForgetsAgree) {
    constexpr int kNames = 8;
    for (int i = 0; i < kNames; ++i) ASSERT_TRUE(host_write(root_ / fmt::format("n{}", i), "x"));
    Backend& fs = open();
    const int rounds = sanitizer_run() ? 300 : 2000;
    std::atomic<int> failures{0};
    auto worker = [&](int seed) {
        std::vector<Entry> held;
        for (int r = 0; r < rounds; ++r) {
            const std::string name = fmt::format("n{}", (r * 7 + seed) % kNames);
            auto e = fs.lookup(kRootNode, name);
            if (!e) {
                ++failures;
                continue;
            }
            // While this thread holds it, the node is that object.
            auto st = fs.getattr(e->node);
            if (!st || st->ino != e->stat.ino) ++failures;
            held.push_back(*e);
            if (held.size() > 5) {
                fs.forget(held.front().node, 1);
                held.erase(held.begin());
            }
        }
        for (const Entry& e : held) fs.forget(e.node, 1);
    };
    // One more thread makes and removes names of its own meanwhile.
    auto churn = [&] {
        for (int r = 0; r < rounds / 4; ++r) {
            auto made = fs.mkdir(kRootNode, "churn", 0700);
            if (!made) {
                ++failures;
                continue;
            }
            if (!fs.rmdir(kRootNode, "churn")) ++failures;
            fs.forget(made->node, 1);
        }
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) threads.emplace_back(worker, t);
    threads.emplace_back(churn);
    for (auto& t : threads) t.join();
    EXPECT_EQ(failures.load(), 0);
    EXPECT_EQ(open_fd_count(), baseline_fds_);

    // And after all of it, one object still has one id.
    Entry a = lookup(kRootNode, "n0");
    Entry b = lookup(kRootNode, "n0");
    EXPECT_EQ(a.node, b.node);
    fs.forget(a.node, 2);
}

// --- a bounded set of descriptors ------------------------------------------------------------

// A tree far larger than the node fd cache (8 here), every object held at once as a kernel that
// remembers them all would: every answer by node is the host's, and the process never holds
// more than the cache's fds (plus the one a call has in hand).
TEST_F(DirNodes, AHeldTreeLargerThanTheFdCacheAnswersLikeTheHost) {
    for (int d = 0; d < 10; ++d) {
        const fs::path sub = root_ / fmt::format("d{}", d) / fmt::format("s{}", d % 3);
        fs::create_directories(sub);
        for (int f = 0; f < 20; ++f)
            ASSERT_TRUE(host_write(sub / fmt::format("f{}", f), fmt::format("{}/{}", d, f)));
    }
    DirOptions options;
    options.node_fds = 8;
    Backend& fs = open(options);
    struct Held {
        Entry entry;
        fs::path host;
    };
    std::vector<Held> held;
    int most_fds = 0;
    for (int d = 0; d < 10; ++d) {
        Entry dir = lookup(kRootNode, fmt::format("d{}", d));
        Entry sub = lookup(dir.node, fmt::format("s{}", d % 3));
        held.push_back({dir, root_ / fmt::format("d{}", d)});
        held.push_back({sub, held.back().host / fmt::format("s{}", d % 3)});
        for (int f = 0; f < 20; ++f) {
            Entry file = lookup(sub.node, fmt::format("f{}", f));
            held.push_back({file, held[held.size() - (f + 1)].host / fmt::format("f{}", f)});
            most_fds = std::max(most_fds, open_fd_count() - baseline_fds_);
        }
    }
    // Everything again, by node only, in another order: reopened from parent and name.
    for (auto it = held.rbegin(); it != held.rend(); ++it) {
        auto st = fs.getattr(it->entry.node);
        ASSERT_TRUE(st.has_value()) << it->host << ": " << st.error().message();
        expect_same(*st, host_stat(it->host), it->host.string());
        if (st->type == FileType::regular) {
            auto file = fs.open(it->entry.node, O_RDONLY);
            ASSERT_TRUE(file.has_value()) << file.error().message();
            EXPECT_EQ(read_all(**file), host_read(it->host).value_or("?"));
        } else {
            auto items = fs.list(it->entry.node);
            ASSERT_TRUE(items.has_value()) << items.error().message();
            EXPECT_EQ(items->size(), static_cast<std::size_t>(std::distance(
                                         fs::directory_iterator(it->host), fs::directory_iterator())));
        }
        most_fds = std::max(most_fds, open_fd_count() - baseline_fds_);
    }
    EXPECT_LE(most_fds, 10) << "more descriptors than the cache holds";
    for (const Held& h : held) fs.forget(h.entry.node, 1);
    EXPECT_EQ(open_fd_count(), baseline_fds_);
}

// Names move with the backend's own calls, so a node whose fd was evicted is found again after
// its directory was renamed and after it was renamed itself; a held node whose name is removed
// keeps working (nlink 0) whether or not its fd was in the cache at that moment.
TEST_F(DirNodes, EvictedNodesFollowRenamesAndOutliveTheirNames) {
    fs::create_directories(root_ / "a" / "b");
    ASSERT_TRUE(host_write(root_ / "a" / "b" / "f", "moving"));
    ASSERT_TRUE(host_write(root_ / "a" / "gone", "unlinked later"));
    for (int i = 0; i < 40; ++i) ASSERT_TRUE(host_write(root_ / fmt::format("x{}", i), "x"));
    DirOptions options;
    options.node_fds = 8;
    Backend& fs = open(options);
    Entry a = lookup(kRootNode, "a");
    Entry b = lookup(a.node, "b");
    Entry f = lookup(b.node, "f");
    Entry gone = lookup(a.node, "gone");
    std::vector<Entry> filler;
    auto evict = [&] {  // looks up 40 other names: every fd above leaves the cache
        for (int i = 0; i < 40; ++i) filler.push_back(lookup(kRootNode, fmt::format("x{}", i)));
    };
    evict();
    ASSERT_TRUE(fs.rename(kRootNode, "a", kRootNode, "A").has_value());
    evict();
    ASSERT_TRUE(fs.rename(b.node, "f", a.node, "g").has_value());
    evict();
    expect_same(ASSERT_OK(fs.getattr(f.node)).value_or(Stat{}), root_ / "A" / "g");
    expect_same(ASSERT_OK(fs.getattr(b.node)).value_or(Stat{}), root_ / "A" / "b");
    auto file = fs.open(f.node, O_RDONLY);
    ASSERT_TRUE(file.has_value()) << file.error().message();
    EXPECT_EQ(read_all(**file), "moving");
    file->reset();
    evict();
    ASSERT_TRUE(fs.unlink(a.node, "gone").has_value());
    evict();
    auto st = fs.getattr(gone.node);
    ASSERT_TRUE(st.has_value()) << st.error().message();
    EXPECT_EQ(st->nlink, 0u);
    EXPECT_TRUE(fs.setattr(gone.node, SetAttr::chmod(0600)).has_value());
    auto still = fs.open(gone.node, O_RDONLY);
    ASSERT_TRUE(still.has_value());
    EXPECT_EQ(read_all(**still), "unlinked later");
    // A name made again where the removed one was is another object, with a node of its own.
    ASSERT_TRUE(host_write(root_ / "A" / "gone", "new"));
    Entry again = lookup(a.node, "gone");
    EXPECT_NE(again.node, gone.node);
    for (const Entry& e : filler) fs.forget(e.node, 1);
    for (const Entry& e : {a, b, f, gone, again}) fs.forget(e.node, 1);
    still->reset();
    EXPECT_EQ(open_fd_count(), baseline_fds_);
}

// Moved behind the backend's back after its fd was evicted: as root, a directory is found by
// its file handle (a working directory is reached by node alone); a file, or a directory
// without that privilege, is stale (ESTALE, never the other object now under its old name).
TEST_F(DirNodes, AnEvictedNodeMovedOnTheHostIsFoundByHandleOrStale) {
    fs::create_directories(root_ / "d" / "sub");
    ASSERT_TRUE(host_write(root_ / "d" / "f", "host moved me"));
    ASSERT_TRUE(host_write(root_ / "d" / "sub" / "inside", "in"));
    for (int i = 0; i < 40; ++i) ASSERT_TRUE(host_write(root_ / fmt::format("x{}", i), "x"));
    DirOptions options;
    options.node_fds = 8;
    Backend& fs = open(options);
    Entry d = lookup(kRootNode, "d");
    Entry f = lookup(d.node, "f");
    Entry sub = lookup(d.node, "sub");
    std::vector<Entry> filler;
    for (int i = 0; i < 40; ++i) filler.push_back(lookup(kRootNode, fmt::format("x{}", i)));
    fs::rename(root_ / "d" / "f", root_ / "moved file");
    fs::rename(root_ / "d" / "sub", root_ / "moved dir");
    ASSERT_TRUE(host_write(root_ / "d" / "f", "an impostor"));  // the old names, other objects
    fs::create_directories(root_ / "d" / "sub");
    EXPECT_ERRNO(fs.getattr(f.node), ESTALE);
    auto st = fs.getattr(sub.node);
    if (::geteuid() == 0) {
        ASSERT_TRUE(st.has_value()) << st.error().message();
        expect_same(*st, host_stat(root_ / "moved dir"), "moved dir");
        Entry inside = lookup(sub.node, "inside");
        expect_same(inside.stat, host_stat(root_ / "moved dir" / "inside"), "inside");
        fs.forget(inside.node, 1);
    } else {
        EXPECT_ERRNO(st, ESTALE);
    }
    for (const Entry& e : filler) fs.forget(e.node, 1);
    for (const Entry& e : {f, sub, d}) fs.forget(e.node, 1);
}

// Out of descriptors (RLIMIT_NOFILE lowered under a cache that would hold more): lookups and
// opens still succeed, the node cache giving its fds back; no caller sees EMFILE.
TEST_F(DirNodes, RunningOutOfDescriptorsIsNeverAnErrorACallerSees) {
    for (int i = 0; i < 300; ++i) ASSERT_TRUE(host_write(root_ / fmt::format("n{}", i), "n"));
    DirOptions options;
    options.node_fds = 4096;
    Backend& fs = open(options);
    rlimit saved{};
    ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
    rlimit tight = saved;
    tight.rlim_cur = static_cast<rlim_t>(baseline_fds_ + 64);
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &tight), 0);
    std::vector<Entry> held;
    int errors = 0;
    for (int i = 0; i < 300; ++i) {
        auto e = fs.lookup(kRootNode, fmt::format("n{}", i));
        if (!e) {
            ++errors;
            continue;
        }
        held.push_back(*e);
        auto file = fs.open(e->node, O_RDONLY);
        if (!file || read_all(**file) != "n") ++errors;
    }
    for (const Entry& e : held) {
        if (!fs.getattr(e.node)) ++errors;
    }
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
    EXPECT_EQ(errors, 0);
    EXPECT_EQ(held.size(), 300u);
    for (const Entry& e : held) fs.forget(e.node, 1);
}

}  // namespace
}  // namespace packfs::dir_test
