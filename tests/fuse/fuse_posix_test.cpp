// POSIX behaviour through a mount, with plain syscalls: a fresh volume mounted read-write, and
// a host directory mounted read-write (the dir backend). Each scenario is written once and
// run twice, under the mount and under a plain host directory, and both transcripts must equal
// the expected one: the kernel's own filesystem is the reference, the expectation says exactly
// what it answers. Last, a mounted pack (and a volume mounted -o ro) answers EROFS.
//
// One mount per kind serves the whole run (a fresh subdirectory per test); the tests that
// unmount and mount again make their own.
#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fuse/fuse_mount.hpp"
#include "packfs/error.hpp"
#include "packfs/mem.hpp"
#include "packfs/pack.hpp"
#include "packfs/volume.hpp"

namespace packfs::fuse_test {
namespace {

constexpr long kFuseSuperMagic = 0x65735546;

enum class Kind { volume, host_dir };

std::string kind_name(const ::testing::TestParamInfo<Kind>& info) {
    return info.param == Kind::volume ? "volume" : "host_dir";
}
void PrintTo(Kind kind, std::ostream* os) {
    *os << kind_name({kind, 0});
}

// --- syscall helpers -------------------------------------------------------------------

// "0" (or the count) for success, the errno's name for failure.
std::string outcome(long rc) {
    return rc < 0 ? std::string(errno_name(errno)) : std::to_string(rc);
}

// Writes a whole file (created or truncated), mode as given (the umask is 0 here).
::testing::AssertionResult put(const std::string& path, std::string_view data, mode_t mode = 0644) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0)
        return ::testing::AssertionFailure() << "open " << path << ": " << errno_name(errno);
    const ssize_t n = ::write(fd, data.data(), data.size());
    const int e = errno;
    ::close(fd);
    if (n != static_cast<ssize_t>(data.size()))
        return ::testing::AssertionFailure() << "write " << path << ": " << errno_name(e);
    return ::testing::AssertionSuccess();
}

std::string read_fd_at(int fd, off_t offset, std::size_t limit = 1 << 20) {
    std::string out(limit, '\0');
    const ssize_t n = ::pread(fd, out.data(), out.size(), offset);
    if (n < 0) return "<" + std::string(errno_name(errno)) + ">";
    out.resize(static_cast<std::size_t>(n));
    return out;
}

// The whole content of a file, or "<ERRNO>".
std::string get(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return "<" + std::string(errno_name(errno)) + ">";
    std::string out = read_fd_at(fd, 0);
    ::close(fd);
    return out;
}

struct stat lstat_of(const std::string& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) st.st_ino = 0;
    return st;
}

// The names in a directory (without . and ..), sorted, with their d_type letters: "a:f b:d".
std::string listing(const std::string& dir) {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return "<" + std::string(errno_name(errno)) + ">";
    std::vector<std::string> names;
    while (const dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        if (name == "." || name == "..") continue;
        char type = '?';
        switch (e->d_type) {
            case DT_REG:
                type = 'f';
                break;
            case DT_DIR:
                type = 'd';
                break;
            case DT_LNK:
                type = 'l';
                break;
            case DT_FIFO:
                type = 'p';
                break;
            case DT_SOCK:
                type = 's';
                break;
            case DT_CHR:
                type = 'c';
                break;
            case DT_BLK:
                type = 'b';
                break;
            default:
                break;
        }
        names.push_back(name + ":" + type);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : " ") + n;
    return out;
}

// The d_ino readdir reports for `name` in `dir` (0: not listed).
ino_t listed_ino(const std::string& dir, const std::string& name) {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return 0;
    ino_t ino = 0;
    while (const dirent* e = ::readdir(d))
        if (name == e->d_name) ino = e->d_ino;
    ::closedir(d);
    return ino;
}

// What a scenario observed, step by step: "rename=0 b=A stat_a=ENOENT ".
class Trace {
public:
    void rc(std::string_view step, long r) { add(step, outcome(r)); }
    void val(std::string_view step, const std::string& v) { add(step, v); }
    void yes(std::string_view step, bool v) { add(step, v ? "yes" : "no"); }
    void oct(std::string_view step, unsigned v) { add(step, fmt::format("{:o}", v)); }
    const std::string& str() const { return text_; }

private:
    void add(std::string_view step, const std::string& v) {
        text_ += fmt::format("{}={}\n", step, v);
    }
    std::string text_;
};

using Scenario = std::function<void(const std::string& root, Trace&)>;

// --- the mounts ------------------------------------------------------------------------

// A source and its mount, for one kind.
struct Served {
    std::unique_ptr<ScratchDir> dir;
    std::string source;
    std::unique_ptr<FuseMount> mount;
};

// Makes a fresh source of `kind` under `dir` (a volume, or a plain directory).
::testing::AssertionResult make_source(Kind kind, const ScratchDir& dir, std::string& source) {
    source = dir / (kind == Kind::volume ? "vol" : "tree");
    if (kind == Kind::volume) {
        auto created = Volume::create(source, {});
        if (!created) return ::testing::AssertionFailure() << created.error().message();
        return ::testing::AssertionSuccess();
    }
    if (::mkdir(source.c_str(), 0755) != 0)
        return ::testing::AssertionFailure() << "mkdir " << source << ": " << errno_name(errno);
    return ::testing::AssertionSuccess();
}

std::map<Kind, Served>& served() {
    static std::map<Kind, Served> s;
    return s;
}

class MountsEnvironment : public ::testing::Environment {
public:
    void SetUp() override { ::umask(0); }
    void TearDown() override {
        for (auto& [kind, s] : served()) {
            if (s.mount && s.mount->mounted()) {
                EXPECT_TRUE(s.mount->unmount()) << s.mount->error();
            }
            s.mount.reset();
            s.dir.reset();
        }
    }
};
[[maybe_unused]] const auto* const kEnvironment =
    ::testing::AddGlobalTestEnvironment(new MountsEnvironment);

class FusePosix : public ::testing::TestWithParam<Kind> {
protected:
    void SetUp() override {
        Served& s = served()[GetParam()];
        if (!s.mount) {
            s.dir = std::make_unique<ScratchDir>("posix-src");
            ASSERT_TRUE(make_source(GetParam(), *s.dir, s.source));
            s.mount = std::make_unique<FuseMount>(s.source);
        }
        PACKFS_REQUIRE_MOUNT(*s.mount);
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        std::string name = info->name();  // "Case/volume"
        std::replace(name.begin(), name.end(), '/', '_');
        root_ = *s.mount / name;
        ASSERT_EQ(::mkdir(root_.c_str(), 0755), 0) << root_ << ": " << errno_name(errno);
        plain_ = plain_dir_ / name;
        ASSERT_EQ(::mkdir(plain_.c_str(), 0755), 0) << plain_ << ": " << errno_name(errno);
    }

    // Runs `scenario` under the mount and under a plain directory; both must say `expected`.
    void expect_trace(const Scenario& scenario, const std::string& expected) {
        Trace mounted, plain;
        scenario(root_, mounted);
        scenario(plain_, plain);
        EXPECT_EQ(mounted.str(), expected)
            << "through the mount (" << kind_name({GetParam(), 0}) << ")";
        EXPECT_EQ(plain.str(), expected) << "on a plain host directory (the reference)";
    }

    std::string at(const std::string& name) const { return root_ + "/" + name; }

    std::string root_, plain_;

private:
    ScratchDir plain_dir_{"posix-plain"};
};

// --- rename ----------------------------------------------------------------------------

TEST_P(FusePosix, RenameOverAnExistingFileReplacesIt) {
    expect_trace(
        [](const std::string& r, Trace& t) {
            ASSERT_TRUE(put(r + "/a", "A"));
            ASSERT_TRUE(put(r + "/b", "B"));
            const ino_t a_ino = lstat_of(r + "/a").st_ino;
            const int old_b = ::open((r + "/b").c_str(), O_RDONLY | O_CLOEXEC);
            t.rc("rename", ::rename((r + "/a").c_str(), (r + "/b").c_str()));
            t.val("b", get(r + "/b"));
            t.rc("stat_a", ::access((r + "/a").c_str(), F_OK));
            t.yes("b_is_a's_inode", lstat_of(r + "/b").st_ino == a_ino);
            t.val("old_b_fd_reads", read_fd_at(old_b, 0));
            ::close(old_b);
            t.val("list", listing(r));
        },
        "rename=0\nb=A\nstat_a=ENOENT\nb_is_a's_inode=yes\nold_b_fd_reads=B\nlist=b:f\n");
}

TEST_P(FusePosix, RenameOverAnEmptyDirReplacesIt) {
    expect_trace(
        [](const std::string& r, Trace& t) {
            ASSERT_EQ(::mkdir((r + "/d1").c_str(), 0755), 0);
            ASSERT_TRUE(put(r + "/d1/f", "F"));
            ASSERT_EQ(::mkdir((r + "/d2").c_str(), 0755), 0);
            ASSERT_EQ(::mkdir((r + "/e").c_str(), 0755), 0);
            ASSERT_TRUE(put(r + "/x", "X"));
            t.rc("rename_dir_over_empty_dir", ::rename((r + "/d1").c_str(), (r + "/d2").c_str()));
            t.val("d2/f", get(r + "/d2/f"));
            t.rc("stat_d1", ::access((r + "/d1").c_str(), F_OK));
            t.rc("rename_file_over_dir", ::rename((r + "/x").c_str(), (r + "/e").c_str()));
            t.rc("rename_dir_over_file", ::rename((r + "/e").c_str(), (r + "/x").c_str()));
            t.val("list", listing(r));
        },
        "rename_dir_over_empty_dir=0\nd2/f=F\nstat_d1=ENOENT\nrename_file_over_dir=EISDIR\n"
        "rename_dir_over_file=ENOTDIR\nlist=d2:d e:d x:f\n");
}

TEST_P(FusePosix, RenameOntoANonEmptyDirIsENOTEMPTY) {
    expect_trace(
        [](const std::string& r, Trace& t) {
            ASSERT_EQ(::mkdir((r + "/a").c_str(), 0755), 0);
            ASSERT_TRUE(put(r + "/a/mine", "1"));
            ASSERT_EQ(::mkdir((r + "/b").c_str(), 0755), 0);
            ASSERT_TRUE(put(r + "/b/f", "2"));
            t.rc("rename", ::rename((r + "/a").c_str(), (r + "/b").c_str()));
            t.val("a", listing(r + "/a"));
            t.val("b", listing(r + "/b"));
        },
        "rename=ENOTEMPTY\na=mine:f\nb=f:f\n");
}

TEST_P(FusePosix, RenameIntoItsOwnSubtreeIsEINVAL) {
    expect_trace(
        [](const std::string& r, Trace& t) {
            ASSERT_EQ(::mkdir((r + "/a").c_str(), 0755), 0);
            ASSERT_EQ(::mkdir((r + "/a/b").c_str(), 0755), 0);
            t.rc("into_grandchild", ::rename((r + "/a").c_str(), (r + "/a/b/c").c_str()));
            t.rc("onto_child", ::rename((r + "/a").c_str(), (r + "/a/b").c_str()));
            t.rc("onto_itself", ::rename((r + "/a").c_str(), (r + "/a").c_str()));
            t.val("list", listing(r) + " | " + listing(r + "/a"));
        },
        "into_grandchild=EINVAL\nonto_child=EINVAL\nonto_itself=0\nlist=a:d | b:d\n");
}

TEST_P(FusePosix, RenameNoreplaceRefusesAnExistingTarget) {
    expect_trace(
        [](const std::string& r, Trace& t) {
            ASSERT_TRUE(put(r + "/a", "A"));
            ASSERT_TRUE(put(r + "/b", "B"));
            t.rc("onto_existing", ::renameat2(AT_FDCWD, (r + "/a").c_str(), AT_FDCWD,
                                              (r + "/b").c_str(), RENAME_NOREPLACE));
            t.val("a", get(r + "/a"));
            t.val("b", get(r + "/b"));
            t.rc("onto_new", ::renameat2(AT_FDCWD, (r + "/a").c_str(), AT_FDCWD, (r + "/c").c_str(),
                                         RENAME_NOREPLACE));
            t.val("c", get(r + "/c"));
            t.val("list", listing(r));
        },
        "onto_existing=EEXIST\na=A\nb=B\nonto_new=0\nc=A\nlist=b:f c:f\n");
}

TEST_P(FusePosix, RenameExchangeSwapsTwoEntries) {
    expect_trace(
        [](const std::string& r, Trace& t) {
            ASSERT_TRUE(put(r + "/a", "A"));
            ASSERT_EQ(::mkdir((r + "/d").c_str(), 0755), 0);
            ASSERT_TRUE(put(r + "/d/f", "F"));
            ASSERT_EQ(::mkdir((r + "/sub").c_str(), 0755), 0);
            ASSERT_TRUE(put(r + "/sub/s", "S"));
            const ino_t a_ino = lstat_of(r + "/a").st_ino, d_ino = lstat_of(r + "/d").st_ino;
            t.rc("file_with_dir", ::renameat2(AT_FDCWD, (r + "/a").c_str(), AT_FDCWD,
                                              (r + "/d").c_str(), RENAME_EXCHANGE));
            t.val("a/f", get(r + "/a/f"));
            t.val("d", get(r + "/d"));
            t.yes("inodes_swapped",
                  lstat_of(r + "/a").st_ino == d_ino && lstat_of(r + "/d").st_ino == a_ino);
            t.rc("across_dirs", ::renameat2(AT_FDCWD, (r + "/d").c_str(), AT_FDCWD,
                                            (r + "/sub/s").c_str(), RENAME_EXCHANGE));
            t.val("d", get(r + "/d"));
            t.val("sub/s", get(r + "/sub/s"));
            t.rc("with_missing", ::renameat2(AT_FDCWD, (r + "/d").c_str(), AT_FDCWD,
                                             (r + "/none").c_str(), RENAME_EXCHANGE));
            t.rc("both_flags", ::renameat2(AT_FDCWD, (r + "/d").c_str(), AT_FDCWD,
                                           (r + "/a").c_str(), RENAME_EXCHANGE | RENAME_NOREPLACE));
            t.val("list", listing(r) + " | " + listing(r + "/a") + " | " + listing(r + "/sub"));
        },
        "file_with_dir=0\na/f=F\nd=A\ninodes_swapped=yes\nacross_dirs=0\nd=S\nsub/s=A\n"
        "with_missing=ENOENT\nboth_flags=EINVAL\nlist=a:d d:f sub:d | f:f | s:f\n");
}

// --- removal ---------------------------------------------------------------------------

TEST_P(FusePosix, RmdirOfANonEmptyDirIsENOTEMPTY) {
    expect_trace(
        [](const std::string& r, Trace& t) {
            ASSERT_EQ(::mkdir((r + "/d").c_str(), 0755), 0);
            ASSERT_TRUE(put(r + "/d/f", "F"));
            t.rc("rmdir_nonempty", ::rmdir((r + "/d").c_str()));
            t.rc("rmdir_file", ::rmdir((r + "/d/f").c_str()));
            t.rc("unlink_dir", ::unlink((r + "/d").c_str()));
            t.rc("unlink_file", ::unlink((r + "/d/f").c_str()));
            t.rc("rmdir_empty", ::rmdir((r + "/d").c_str()));
            t.rc("rmdir_gone", ::rmdir((r + "/d").c_str()));
            t.val("list", listing(r));
        },
        "rmdir_nonempty=ENOTEMPTY\nrmdir_file=ENOTDIR\nunlink_dir=EISDIR\nunlink_file=0\n"
        "rmdir_empty=0\nrmdir_gone=ENOENT\nlist=\n");
}

TEST_P(FusePosix, AnUnlinkedOpenFileLivesOnThroughItsDescriptor) {
    expect_trace(
        [](const std::string& r, Trace& t) {
            const std::string f = r + "/f";
            const int fd = ::open(f.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
            ASSERT_GE(fd, 0);
            t.rc("write", ::write(fd, "hello", 5));
            t.rc("unlink", ::unlink(f.c_str()));
            t.rc("name_gone", ::access(f.c_str(), F_OK));
            t.val("list", listing(r));
            struct stat st {};
            t.rc("fstat", ::fstat(fd, &st));
            t.val("nlink", std::to_string(st.st_nlink));
            t.rc("pwrite", ::pwrite(fd, " world", 6, 5));
            t.val("pread", read_fd_at(fd, 0));
            t.rc("ftruncate", ::ftruncate(fd, 4));
            t.rc("fstat2", ::fstat(fd, &st));
            t.val("size", std::to_string(st.st_size));
            t.val("pread2", read_fd_at(fd, 0));
            // The name is free again, for an unrelated file.
            ASSERT_TRUE(put(f, "new"));
            t.val("new_file", get(f));
            t.val("old_fd", read_fd_at(fd, 0));
            t.rc("close", ::close(fd));
        },
        "write=5\nunlink=0\nname_gone=ENOENT\nlist=\nfstat=0\nnlink=0\npwrite=6\n"
        "pread=hello world\nftruncate=0\nfstat2=0\nsize=4\npread2=hell\nnew_file=new\n"
        "old_fd=hell\nclose=0\n");
}

// SEEK_HOLE and SEEK_DATA reach the backend (without the lseek op the kernel answers "no
// holes": the only hole at the end). A file with 1 MiB between two writes: a hole before the
// second, data found again exactly at 1 MiB (a volume's holes are 64 KiB chunks, a host
// directory's its filesystem's blocks), ENXIO at the end.
TEST_P(FusePosix, SeekHoleAndSeekDataFindTheBackendsHoles) {
    const std::string f = at("sparse");
    const int fd = ::open(f.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    const off_t far = 1 << 20;
    ASSERT_EQ(::pwrite(fd, "head", 4, 0), 4);
    ASSERT_EQ(::pwrite(fd, "tail", 4, far), 4);
    ASSERT_EQ(::fsync(fd), 0);
    const off_t hole = ::lseek(fd, 0, SEEK_HOLE);
    EXPECT_GT(hole, 0);
    EXPECT_LT(hole, far) << "no hole found: SEEK_HOLE did not reach the backend";
    EXPECT_EQ(::lseek(fd, hole, SEEK_DATA), far);
    EXPECT_EQ(::lseek(fd, far, SEEK_HOLE), far + 4);
    errno = 0;
    EXPECT_EQ(::lseek(fd, far + 4, SEEK_DATA), -1);
    EXPECT_EQ(errno, ENXIO);
    ::close(fd);
}

// fallocate through the mount, compared with a plain directory: mode 0 grows the file, a
// punched range reads as zeros and keeps the size, ZERO_RANGE grows it, PUNCH_HOLE without
// KEEP_SIZE is EOPNOTSUPP; and the punched range is a hole (SEEK_HOLE lands inside it).
TEST_P(FusePosix, FallocateModesBehaveAsOnTheHost) {
    expect_trace(
        [](const std::string& r, Trace& t) {
            const std::string f = r + "/falloc";
            const int fd = ::open(f.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
            ASSERT_GE(fd, 0);
            const std::string data(3 << 20, 'z');
            ASSERT_EQ(::pwrite(fd, data.data(), data.size(), 0), ssize_t(data.size()));
            struct stat st {};
            t.rc("grow", ::fallocate(fd, 0, 0, 4 << 20));
            t.rc("fstat", ::fstat(fd, &st));
            t.val("size", std::to_string(st.st_size));
            t.rc("punch",
                 ::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 1 << 20, 1 << 20));
            t.rc("fstat2", ::fstat(fd, &st));
            t.val("size2", std::to_string(st.st_size));
            std::string back(4 << 20, 'x');
            ASSERT_EQ(::pread(fd, back.data(), back.size(), 0), ssize_t(back.size()));
            const bool zeros = back.find_first_not_of('\0', 1 << 20) == (2u << 20);
            t.val("punched_reads_zeros", zeros ? "yes" : "no");
            t.val("rest_kept",
                  back.substr(0, 1 << 20) == data.substr(0, 1 << 20) &&
                          back.substr(2 << 20, 1 << 20) == data.substr(2 << 20, 1 << 20)
                      ? "yes"
                      : "no");
            const off_t hole = ::lseek(fd, 0, SEEK_HOLE);
            t.val("hole_in_punched_range",
                  hole >= (1 << 20) && hole < (2 << 20) ? "yes" : std::to_string(hole));
            t.rc("zero_range", ::fallocate(fd, FALLOC_FL_ZERO_RANGE, (4 << 20) - 10, 110));
            t.rc("fstat3", ::fstat(fd, &st));
            t.val("size3", std::to_string(st.st_size));
            t.rc("punch_without_keep_size", ::fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, 10));
            ::close(fd);
        },
        "grow=0\nfstat=0\nsize=4194304\npunch=0\nfstat2=0\nsize2=4194304\n"
        "punched_reads_zeros=yes\nrest_kept=yes\nhole_in_punched_range=yes\nzero_range=0\n"
        "fstat3=0\nsize3=4194404\npunch_without_keep_size=ENOTSUP\n");
}

// --- links -----------------------------------------------------------------------------

TEST_P(FusePosix, HardLinksCountAndShareOneInode) {
    expect_trace(
        [](const std::string& r, Trace& t) {
            ASSERT_TRUE(put(r + "/a", "one"));
            auto nlinks = [&] {
                std::string out;
                for (const char* n : {"a", "b", "c"}) {
                    const struct stat st = lstat_of(r + "/" + n);
                    out += fmt::format("{}:{} ", n, st.st_ino ? std::to_string(st.st_nlink) : "-");
                }
                return out;
            };
            t.val("start", nlinks());
            t.rc("link_b", ::link((r + "/a").c_str(), (r + "/b").c_str()));
            t.val("after_b", nlinks());
            t.rc("link_c", ::link((r + "/b").c_str(), (r + "/c").c_str()));
            t.val("after_c", nlinks());
            t.yes("one_inode", lstat_of(r + "/a").st_ino == lstat_of(r + "/b").st_ino &&
                                   lstat_of(r + "/b").st_ino == lstat_of(r + "/c").st_ino);
            t.rc("unlink_b", ::unlink((r + "/b").c_str()));
            t.val("after_unlink", nlinks());
            ASSERT_TRUE(put(r + "/c", "two"));
            t.val("a_sees_c's_write", get(r + "/a"));
            t.rc("link_onto_existing", ::link((r + "/a").c_str(), (r + "/c").c_str()));
            ASSERT_EQ(::mkdir((r + "/d").c_str(), 0755), 0);
            t.rc("link_dir", ::link((r + "/d").c_str(), (r + "/d2").c_str()));
            t.rc("link_missing", ::link((r + "/none").c_str(), (r + "/z").c_str()));
            t.val("list", listing(r));
        },
        "start=a:1 b:- c:- \nlink_b=0\nafter_b=a:2 b:2 c:- \nlink_c=0\nafter_c=a:3 b:3 c:3 \n"
        "one_inode=yes\nunlink_b=0\nafter_unlink=a:2 b:- c:2 \na_sees_c's_write=two\n"
        "link_onto_existing=EEXIST\nlink_dir=EPERM\nlink_missing=ENOENT\nlist=a:f c:f d:d\n");
}

TEST_P(FusePosix, SymlinksStoreTheirTargetAndResolve) {
    expect_trace(
        [](const std::string& r, Trace& t) {
            ASSERT_TRUE(put(r + "/f", "F"));
            t.rc("symlink", ::symlink("some/target", (r + "/l").c_str()));
            char buf[4096];
            const ssize_t n = ::readlink((r + "/l").c_str(), buf, sizeof buf);
            t.val("readlink", n < 0 ? outcome(n) : std::string(buf, static_cast<std::size_t>(n)));
            const struct stat st = lstat_of(r + "/l");
            t.yes("lstat_is_link", S_ISLNK(st.st_mode));
            t.val("lstat_size", std::to_string(st.st_size));
            t.rc("symlink_onto_existing", ::symlink("x", (r + "/l").c_str()));
            t.rc("readlink_regular", ::readlink((r + "/f").c_str(), buf, sizeof buf));
            t.rc("symlink_to_f", ::symlink("f", (r + "/lf").c_str()));
            t.val("read_through", get(r + "/lf"));
            struct stat through {};
            t.rc("stat_through", ::stat((r + "/lf").c_str(), &through));
            t.yes("same_inode_as_f", through.st_ino == lstat_of(r + "/f").st_ino);
            t.rc("open_nofollow", ::open((r + "/lf").c_str(), O_RDONLY | O_NOFOLLOW));
            t.rc("stat_dangling", ::stat((r + "/l").c_str(), &through));
            const std::string long_target(4000, 't');
            t.rc("long_target", ::symlink(long_target.c_str(), (r + "/long").c_str()));
            const ssize_t m = ::readlink((r + "/long").c_str(), buf, sizeof buf);
            t.yes("long_target_kept", m == 4000 && std::string(buf, 4000) == long_target);
            t.val("list", listing(r));
        },
        "symlink=0\nreadlink=some/target\nlstat_is_link=yes\nlstat_size=11\n"
        "symlink_onto_existing=EEXIST\nreadlink_regular=EINVAL\nsymlink_to_f=0\nread_through=F\n"
        "stat_through=0\nsame_inode_as_f=yes\nopen_nofollow=ELOOP\nstat_dangling=ENOENT\n"
        "long_target=0\nlong_target_kept=yes\nlist=f:f l:l lf:l long:l\n");
}

// --- open flags --------------------------------------------------------------------------

TEST_P(FusePosix, OExclOnAnExistingNameIsEEXIST) {
    expect_trace(
        [](const std::string& r, Trace& t) {
            ASSERT_TRUE(put(r + "/f", "x"));
            ASSERT_EQ(::symlink("nowhere", (r + "/dangling").c_str()), 0);
            ASSERT_EQ(::mkdir((r + "/d").c_str(), 0755), 0);
            const int flags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC;
            t.rc("excl_file", ::open((r + "/f").c_str(), flags, 0644));
            t.rc("excl_dangling_link", ::open((r + "/dangling").c_str(), flags, 0644));
            t.rc("excl_dir", ::open((r + "/d").c_str(), flags, 0644));
            const int fd = ::open((r + "/f").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
            t.yes("creat_without_excl_opens", fd >= 0);
            if (fd >= 0) ::close(fd);
            t.val("content_kept", get(r + "/f"));
            const int made = ::open((r + "/new").c_str(), flags, 0640);
            t.yes("excl_new", made >= 0);
            if (made >= 0) ::close(made);
            t.oct("new_mode", lstat_of(r + "/new").st_mode);
            t.val("list", listing(r));
        },
        "excl_file=EEXIST\nexcl_dangling_link=EEXIST\nexcl_dir=EEXIST\n"
        "creat_without_excl_opens=yes\ncontent_kept=x\nexcl_new=yes\nnew_mode=100640\n"
        "list=d:d dangling:l f:f new:f\n");
}

TEST_P(FusePosix, OAppendWritesLandAtTheEnd) {
    expect_trace(
        [](const std::string& r, Trace& t) {
            const std::string f = r + "/f";
            ASSERT_TRUE(put(f, "0123456789"));
            const int app = ::open(f.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
            const int rw = ::open(f.c_str(), O_RDWR | O_CLOEXEC);
            ASSERT_GE(app, 0);
            ASSERT_GE(rw, 0);
            t.rc("append", ::write(app, "abc", 3));
            t.rc("pwrite_start_other_fd", ::pwrite(rw, "XY", 2, 0));
            t.rc("pwrite_grow_other_fd", ::pwrite(rw, "zz", 2, 13));
            t.rc("append_after_growth", ::write(app, "def", 3));
            // Linux: pwrite on an O_APPEND descriptor appends, whatever the offset (and, a
            // pwrite, leaves the file offset where the last write() put it).
            t.rc("pwrite_on_append_fd", ::pwrite(app, "!", 1, 0));
            t.rc("offset", ::lseek(app, 0, SEEK_CUR));
            t.val("content", get(f));
            const int app2 = ::open(f.c_str(), O_RDWR | O_APPEND | O_CLOEXEC);
            t.rc("second_append_fd", ::write(app2, "+", 1));
            t.rc("first_append_fd", ::write(app, "-", 1));
            t.val("content2", get(f));
            ::close(app);
            ::close(app2);
            ::close(rw);
        },
        "append=3\npwrite_start_other_fd=2\npwrite_grow_other_fd=2\nappend_after_growth=3\n"
        "pwrite_on_append_fd=1\noffset=18\ncontent=XY23456789abczzdef!\nsecond_append_fd=1\n"
        "first_append_fd=1\ncontent2=XY23456789abczzdef!+-\n");
}

TEST_P(FusePosix, OTruncEmptiesTheFile) {
    expect_trace(
        [](const std::string& r, Trace& t) {
            const std::string f = r + "/f";
            ASSERT_TRUE(put(f, "hello world"));
            const int reader = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
            ASSERT_GE(reader, 0);
            t.val("before", read_fd_at(reader, 0));
            const int fd = ::open(f.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
            ASSERT_GE(fd, 0);
            struct stat st {};
            t.rc("fstat", ::fstat(fd, &st));
            t.val("size_fstat", std::to_string(st.st_size));
            t.val("size_stat", std::to_string(lstat_of(f).st_size));
            t.val("other_reader_sees", read_fd_at(reader, 0));
            t.rc("write", ::write(fd, "hi", 2));
            t.val("content", get(f));
            t.val("other_reader_then", read_fd_at(reader, 0));
            ::close(fd);
            ::close(reader);
        },
        "before=hello world\nfstat=0\nsize_fstat=0\nsize_stat=0\nother_reader_sees=\nwrite=2\n"
        "content=hi\nother_reader_then=hi\n");
}

TEST_P(FusePosix, TruncateUpZeroFillsAndDownCuts) {
    expect_trace(
        [](const std::string& r, Trace& t) {
            const std::string f = r + "/f";
            ASSERT_TRUE(put(f, "abc"));
            t.rc("up", ::truncate(f.c_str(), 8192));
            const std::string grown = get(f);
            t.val("size", std::to_string(lstat_of(f).st_size));
            t.yes("zero_filled", grown == std::string("abc") + std::string(8189, '\0'));
            t.rc("down", ::truncate(f.c_str(), 2));
            t.val("cut", get(f));
            const int fd = ::open(f.c_str(), O_RDWR | O_CLOEXEC);
            t.rc("ftruncate_up", ::ftruncate(fd, 5));
            t.yes("ftruncate_zeros", read_fd_at(fd, 0) == std::string("ab\0\0\0", 5));
            // Growing past old bytes that were cut: they must not come back.
            t.rc("ftruncate_down", ::ftruncate(fd, 1));
            t.rc("ftruncate_up_again", ::ftruncate(fd, 3));
            t.yes("no_stale_bytes", read_fd_at(fd, 0) == std::string("a\0\0", 3));
            ::close(fd);
            ASSERT_EQ(::mkdir((r + "/d").c_str(), 0755), 0);
            t.rc("dir", ::truncate((r + "/d").c_str(), 0));
            t.rc("missing", ::truncate((r + "/none").c_str(), 0));
            t.rc("negative", ::truncate(f.c_str(), -1));
        },
        "up=0\nsize=8192\nzero_filled=yes\ndown=0\ncut=ab\nftruncate_up=0\nftruncate_zeros=yes\n"
        "ftruncate_down=0\nftruncate_up_again=0\nno_stale_bytes=yes\ndir=EISDIR\nmissing=ENOENT\n"
        "negative=EINVAL\n");
}

// --- attributes ------------------------------------------------------------------------

std::string time_of(const timespec& ts) {
    return fmt::format("{}.{:09}", ts.tv_sec, ts.tv_nsec);
}

bool near_now(const timespec& ts) {
    timespec now{};
    ::clock_gettime(CLOCK_REALTIME, &now);
    return ts.tv_sec >= now.tv_sec - 5 && ts.tv_sec <= now.tv_sec + 1;
}

TEST_P(FusePosix, UtimensatKeepsNanosecondsAndHonoursNowAndOmit) {
    expect_trace(
        [](const std::string& r, Trace& t) {
            const std::string f = r + "/f";
            ASSERT_TRUE(put(f, "x"));
            const timespec set[2] = {{1000000000, 123456789}, {1234567890, 987654321}};
            t.rc("set", ::utimensat(AT_FDCWD, f.c_str(), set, 0));
            struct stat st = lstat_of(f);
            t.val("atime", time_of(st.st_atim));
            t.val("mtime", time_of(st.st_mtim));
            const timespec omit_now[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
            t.rc("omit_now", ::utimensat(AT_FDCWD, f.c_str(), omit_now, 0));
            st = lstat_of(f);
            t.val("atime_kept", time_of(st.st_atim));
            t.yes("mtime_now", near_now(st.st_mtim));
            const timespec mtime_after_now = st.st_mtim;
            const timespec now_omit[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
            t.rc("now_omit", ::utimensat(AT_FDCWD, f.c_str(), now_omit, 0));
            st = lstat_of(f);
            t.yes("atime_now", near_now(st.st_atim));
            t.yes("mtime_kept", time_of(st.st_mtim) == time_of(mtime_after_now));
            const timespec both_omit[2] = {{0, UTIME_OMIT}, {0, UTIME_OMIT}};
            const struct stat before = lstat_of(f);
            t.rc("omit_omit", ::utimensat(AT_FDCWD, f.c_str(), both_omit, 0));
            st = lstat_of(f);
            t.yes("unchanged", time_of(st.st_atim) == time_of(before.st_atim) &&
                                   time_of(st.st_mtim) == time_of(before.st_mtim));
            // Through a descriptor, and on a symlink itself.
            const int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
            const timespec fset[2] = {{5, 1}, {6, 999999999}};
            t.rc("futimens", ::futimens(fd, fset));
            ::close(fd);
            st = lstat_of(f);
            t.val("f_times", time_of(st.st_atim) + " " + time_of(st.st_mtim));
            ASSERT_EQ(::symlink("f", (r + "/l").c_str()), 0);
            const timespec lset[2] = {{7, 7}, {8, 8}};
            t.rc("nofollow", ::utimensat(AT_FDCWD, (r + "/l").c_str(), lset, AT_SYMLINK_NOFOLLOW));
            st = lstat_of(r + "/l");
            t.val("link_mtime", time_of(st.st_mtim));
            t.val("target_mtime", time_of(lstat_of(f).st_mtim));
        },
        "set=0\natime=1000000000.123456789\nmtime=1234567890.987654321\nomit_now=0\n"
        "atime_kept=1000000000.123456789\nmtime_now=yes\nnow_omit=0\natime_now=yes\n"
        "mtime_kept=yes\nomit_omit=0\nunchanged=yes\nfutimens=0\n"
        "f_times=5.000000001 6.999999999\nnofollow=0\nlink_mtime=8.000000008\n"
        "target_mtime=6.999999999\n");
}

TEST_P(FusePosix, ChmodSetsEveryModeBit) {
    expect_trace(
        [](const std::string& r, Trace& t) {
            const std::string f = r + "/f";
            ASSERT_TRUE(put(f, "x", 0644));
            t.oct("created", lstat_of(f).st_mode);
            t.rc("chmod", ::chmod(f.c_str(), 0600));
            t.oct("mode", lstat_of(f).st_mode);
            t.rc("chmod_special_bits", ::chmod(f.c_str(), 07751));
            t.oct("mode2", lstat_of(f).st_mode);
            const int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
            t.rc("fchmod", ::fchmod(fd, 0640));
            struct stat st {};
            ::fstat(fd, &st);
            ::close(fd);
            t.oct("fstat_mode", st.st_mode);
            ASSERT_EQ(::mkdir((r + "/d").c_str(), 0755), 0);
            t.rc("chmod_dir", ::chmod((r + "/d").c_str(), 01700));
            t.oct("dir_mode", lstat_of(r + "/d").st_mode);
            ASSERT_EQ(::symlink("f", (r + "/l").c_str()), 0);
            t.rc("chmod_through_link", ::chmod((r + "/l").c_str(), 0444));
            t.oct("target_mode", lstat_of(f).st_mode);
            t.yes("link_still_link", S_ISLNK(lstat_of(r + "/l").st_mode));
        },
        "created=100644\nchmod=0\nmode=100600\nchmod_special_bits=0\nmode2=107751\nfchmod=0\n"
        "fstat_mode=100640\nchmod_dir=0\ndir_mode=41700\nchmod_through_link=0\n"
        "target_mode=100444\nlink_still_link=yes\n");
}

TEST_P(FusePosix, ChownAsRootGivesFilesAway) {
    if (::geteuid() != 0) GTEST_SKIP() << "chown to arbitrary ids needs root";
    expect_trace(
        [](const std::string& r, Trace& t) {
            const std::string f = r + "/f";
            ASSERT_TRUE(put(f, "x", 0755));
            t.val("created", fmt::format("{}:{}", lstat_of(f).st_uid, lstat_of(f).st_gid));
            t.rc("chown", ::chown(f.c_str(), 1234, 5678));
            t.val("ids", fmt::format("{}:{}", lstat_of(f).st_uid, lstat_of(f).st_gid));
            t.rc("gid_only", ::chown(f.c_str(), static_cast<uid_t>(-1), 42));
            t.val("ids2", fmt::format("{}:{}", lstat_of(f).st_uid, lstat_of(f).st_gid));
            ASSERT_EQ(::symlink("f", (r + "/l").c_str()), 0);
            t.rc("lchown", ::lchown((r + "/l").c_str(), 7, 8));
            t.val("link_ids",
                  fmt::format("{}:{}", lstat_of(r + "/l").st_uid, lstat_of(r + "/l").st_gid));
            t.val("target_ids", fmt::format("{}:{}", lstat_of(f).st_uid, lstat_of(f).st_gid));
            // A chown clears set-user-ID (and set-group-ID with group exec) on a file.
            t.rc("chmod_setid", ::chmod(f.c_str(), 06755));
            t.rc("chown_again", ::chown(f.c_str(), 1, 1));
            t.oct("mode_after_chown", lstat_of(f).st_mode);
            const int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
            t.rc("fchown", ::fchown(fd, 0, 0));
            ::close(fd);
            t.val("ids3", fmt::format("{}:{}", lstat_of(f).st_uid, lstat_of(f).st_gid));
            // New files belong to whoever makes them (root here).
            ASSERT_EQ(::mkdir((r + "/d").c_str(), 0755), 0);
            t.val("dir_ids",
                  fmt::format("{}:{}", lstat_of(r + "/d").st_uid, lstat_of(r + "/d").st_gid));
        },
        "created=0:0\nchown=0\nids=1234:5678\ngid_only=0\nids2=1234:42\nlchown=0\nlink_ids=7:8\n"
        "target_ids=1234:42\nchmod_setid=0\nchown_again=0\nmode_after_chown=100755\nfchown=0\n"
        "ids3=0:0\ndir_ids=0:0\n");
}

TEST_P(FusePosix, MknodAndMkfifoMakeSpecialFiles) {
    const bool root = ::geteuid() == 0;
    expect_trace(
        [root](const std::string& r, Trace& t) {
            t.rc("mkfifo", ::mkfifo((r + "/fifo").c_str(), 0644));
            const struct stat fifo = lstat_of(r + "/fifo");
            t.yes("fifo_type", S_ISFIFO(fifo.st_mode));
            t.oct("fifo_perm", fifo.st_mode & 07777);
            t.rc("sock", ::mknod((r + "/sock").c_str(), S_IFSOCK | 0600, 0));
            t.yes("sock_type", S_ISSOCK(lstat_of(r + "/sock").st_mode));
            t.rc("reg", ::mknod((r + "/reg").c_str(), S_IFREG | 0600, 0));
            t.val("reg", fmt::format("{:o} size {}", lstat_of(r + "/reg").st_mode,
                                     lstat_of(r + "/reg").st_size));
            t.rc("dir_type", ::mknod((r + "/dir").c_str(), S_IFDIR | 0755, 0));
            t.rc("existing", ::mkfifo((r + "/fifo").c_str(), 0644));
            if (root) {
                t.rc("chr", ::mknod((r + "/chr").c_str(), S_IFCHR | 0600, makedev(1, 3)));
                const struct stat chr = lstat_of(r + "/chr");
                t.yes("chr_type", S_ISCHR(chr.st_mode));
                t.yes("chr_rdev", chr.st_rdev == makedev(1, 3));
                t.rc("blk", ::mknod((r + "/blk").c_str(), S_IFBLK | 0600, makedev(7, 9)));
                t.yes("blk_rdev", lstat_of(r + "/blk").st_rdev == makedev(7, 9));
            }
            // The kernel's own pipe: a reader and a writer meet through it.
            const int rd = ::open((r + "/fifo").c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
            t.yes("open_reader", rd >= 0);
            const int wr = ::open((r + "/fifo").c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
            t.yes("open_writer", wr >= 0);
            t.rc("write_pipe", ::write(wr, "ping", 4));
            char buf[8] = {};
            t.rc("read_pipe", ::read(rd, buf, sizeof buf));
            t.val("piped", buf);
            ::close(wr);
            ::close(rd);
            t.val("list", listing(r));
        },
        std::string("mkfifo=0\nfifo_type=yes\nfifo_perm=644\nsock=0\nsock_type=yes\nreg=0\n"
                    "reg=100600 size 0\ndir_type=EPERM\nexisting=EEXIST\n") +
            (root ? "chr=0\nchr_type=yes\nchr_rdev=yes\nblk=0\nblk_rdev=yes\n" : "") +
            "open_reader=yes\nopen_writer=yes\nwrite_pipe=4\nread_pipe=4\npiped=ping\n" +
            (root ? "list=blk:b chr:c fifo:p reg:f sock:s\n" : "list=fifo:p reg:f sock:s\n"));
}

TEST_P(FusePosix, NamesOf255BytesWorkAnd256AreENAMETOOLONG) {
    expect_trace(
        [](const std::string& r, Trace& t) {
            const std::string n255(255, 'n'), m255(255, 'm'), n256(256, 'n');
            t.rc("create_255", ::mknod((r + "/" + n255).c_str(), S_IFREG | 0644, 0));
            ASSERT_TRUE(put(r + "/" + n255, "long"));
            t.val("read_255", get(r + "/" + n255));
            t.rc("rename_255", ::rename((r + "/" + n255).c_str(), (r + "/" + m255).c_str()));
            t.rc("mkdir_255", ::mkdir((r + "/" + n255).c_str(), 0755));
            t.val("list", listing(r) == m255 + ":f " + n255 + ":d" ? "both" : listing(r));
            t.rc("open_256",
                 ::open((r + "/" + n256).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
            t.rc("mkdir_256", ::mkdir((r + "/" + n256).c_str(), 0755));
            t.rc("access_256", ::access((r + "/" + n256).c_str(), F_OK));
            t.rc("rename_to_256", ::rename((r + "/" + m255).c_str(), (r + "/" + n256).c_str()));
            t.rc("symlink_256", ::symlink("x", (r + "/" + n256).c_str()));
            t.rc("link_256", ::link((r + "/" + m255).c_str(), (r + "/" + n256).c_str()));
            t.rc("unlink_255", ::unlink((r + "/" + m255).c_str()));
        },
        "create_255=0\nread_255=long\nrename_255=0\nmkdir_255=0\nlist=both\n"
        "open_256=ENAMETOOLONG\nmkdir_256=ENAMETOOLONG\naccess_256=ENAMETOOLONG\n"
        "rename_to_256=ENAMETOOLONG\nsymlink_256=ENAMETOOLONG\nlink_256=ENAMETOOLONG\n"
        "unlink_255=0\n");
}

TEST_P(FusePosix, StatfsDescribesTheMount) {
    struct statvfs vfs {};
    ASSERT_EQ(::statvfs(root_.c_str(), &vfs), 0) << errno_name(errno);
    EXPECT_GT(vfs.f_bsize, 0u);
    EXPECT_GT(vfs.f_frsize, 0u);
    EXPECT_EQ(vfs.f_namemax, 255u);
    EXPECT_GE(vfs.f_blocks, vfs.f_bfree);
    EXPECT_GE(vfs.f_bfree, vfs.f_bavail);
    EXPECT_EQ(vfs.f_flag & ST_RDONLY, 0u);
    struct statfs fs {};
    ASSERT_EQ(::statfs(root_.c_str(), &fs), 0) << errno_name(errno);
    EXPECT_EQ(fs.f_type, kFuseSuperMagic);
    // Through a descriptor too, and the same answer.
    const int fd = ::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    struct statvfs by_fd {};
    EXPECT_EQ(::fstatvfs(fd, &by_fd), 0) << errno_name(errno);
    ::close(fd);
    EXPECT_EQ(by_fd.f_namemax, vfs.f_namemax);
    EXPECT_EQ(by_fd.f_bsize, vfs.f_bsize);
    EXPECT_EQ(by_fd.f_blocks, vfs.f_blocks);
}

// --- inode numbers ---------------------------------------------------------------------

TEST_P(FusePosix, InodeNumbersAreStableAcrossLookupsAndRenames) {
    expect_trace(
        [](const std::string& r, Trace& t) {
            ASSERT_TRUE(put(r + "/f", "x"));
            ASSERT_EQ(::mkdir((r + "/d").c_str(), 0755), 0);
            const ino_t f = lstat_of(r + "/f").st_ino, d = lstat_of(r + "/d").st_ino;
            t.yes("distinct", f != d && f != 0 && d != 0);
            t.yes("again", lstat_of(r + "/f").st_ino == f);
            t.yes("readdir", listed_ino(r, "f") == f && listed_ino(r, "d") == d);
            const int fd = ::open((r + "/f").c_str(), O_RDONLY | O_CLOEXEC);
            struct stat st {};
            ::fstat(fd, &st);
            ::close(fd);
            t.yes("fstat", st.st_ino == f);
            t.yes("dot", lstat_of(r + "/d/.").st_ino == d);
            ASSERT_EQ(::mkdir((r + "/d/sub").c_str(), 0755), 0);
            t.yes("dotdot", lstat_of(r + "/d/sub/..").st_ino == d);
            t.rc("rename_file", ::rename((r + "/f").c_str(), (r + "/d/g").c_str()));
            t.yes("renamed_file", lstat_of(r + "/d/g").st_ino == f);
            t.rc("rename_dir", ::rename((r + "/d").c_str(), (r + "/e").c_str()));
            t.yes("renamed_dir", lstat_of(r + "/e").st_ino == d);
            t.yes("child_of_renamed_dir", lstat_of(r + "/e/g").st_ino == f);
            t.rc("link", ::link((r + "/e/g").c_str(), (r + "/h").c_str()));
            t.yes("link", lstat_of(r + "/h").st_ino == f);
            t.yes("readdir_after", listed_ino(r + "/e", "g") == f && listed_ino(r, "h") == f);
        },
        "distinct=yes\nagain=yes\nreaddir=yes\nfstat=yes\ndot=yes\ndotdot=yes\nrename_file=0\n"
        "renamed_file=yes\nrename_dir=0\nrenamed_dir=yes\nchild_of_renamed_dir=yes\nlink=0\n"
        "link=yes\nreaddir_after=yes\n");
}

// Unmounting and mounting again: every inode number, and the tree, as before.
TEST_P(FusePosix, InodeNumbersSurviveARemount) {
    ScratchDir dir("posix-remount");
    std::string source;
    ASSERT_TRUE(make_source(GetParam(), dir, source));
    FuseMount m(source);
    PACKFS_REQUIRE_MOUNT(m);
    ASSERT_EQ(::mkdir((m / "d").c_str(), 0755), 0);
    ASSERT_TRUE(put(m / "d/f", "content"));
    ASSERT_EQ(::link((m / "d/f").c_str(), (m / "hard").c_str()), 0);
    ASSERT_EQ(::symlink("d/f", (m / "sym").c_str()), 0);
    ASSERT_EQ(::mkfifo((m / "fifo").c_str(), 0600), 0);
    std::map<std::string, ino_t> before;
    for (const char* n : {"", "d", "d/f", "hard", "sym", "fifo"})
        before[n] = lstat_of(m / n).st_ino;
    ASSERT_TRUE(m.unmount()) << m.error();
    EXPECT_FALSE(is_mounted(m.path()));
    ASSERT_TRUE(m.remount()) << m.error();
    for (const auto& [name, ino] : before) {
        EXPECT_EQ(lstat_of(m / name).st_ino, ino) << "'" << name << "'";
    }
    EXPECT_EQ(listed_ino(m.path(), "hard"), before["hard"]);
    EXPECT_EQ(get(m / "hard"), "content");
    EXPECT_EQ(get(m / "sym"), "content");
    EXPECT_EQ(lstat_of(m / "d/f").st_nlink, 2u);
}

// --- xattrs ----------------------------------------------------------------------------

std::string list_xattrs(const std::string& path) {
    char buf[4096];
    const ssize_t n = ::listxattr(path.c_str(), buf, sizeof buf);
    if (n < 0) return "<" + std::string(errno_name(errno)) + ">";
    std::vector<std::string> names;
    for (ssize_t at = 0; at < n;) {
        std::string name(buf + at);
        at += static_cast<ssize_t>(name.size()) + 1;
        if (name.starts_with("user.")) names.push_back(name);  // not security.*, system.*
    }
    std::sort(names.begin(), names.end());
    std::string out;
    for (const auto& name : names) out += (out.empty() ? "" : ",") + name;
    return out;
}

std::string get_xattr(const std::string& path, const char* name) {
    std::string value(1024, '\0');
    const ssize_t n = ::getxattr(path.c_str(), name, value.data(), value.size());
    if (n < 0) return "<" + std::string(errno_name(errno)) + ">";
    value.resize(static_cast<std::size_t>(n));
    return value;
}

TEST_P(FusePosix, UserXattrsSetGetListRemove) {
    {
        // The reference must have them; the volume always does.
        const std::string probe = plain_ + "/probe";
        ASSERT_TRUE(put(probe, ""));
        const bool host_has = ::setxattr(probe.c_str(), "user.p", "1", 1, 0) == 0;
        ::unlink(probe.c_str());
        if (!host_has) GTEST_SKIP() << "the host filesystem under $TMPDIR has no user xattrs";
    }
    std::string binary;
    for (int i = 0; i < 256; ++i) binary.push_back(static_cast<char>(i));
    expect_trace(
        [&binary](const std::string& r, Trace& t) {
            const std::string f = r + "/f";
            ASSERT_TRUE(put(f, "x"));
            t.val("none", list_xattrs(f));
            t.rc("set", ::setxattr(f.c_str(), "user.a", "value", 5, 0));
            t.rc("size_query", ::getxattr(f.c_str(), "user.a", nullptr, 0));
            t.val("get", get_xattr(f, "user.a"));
            char small[2];
            t.rc("too_small", ::getxattr(f.c_str(), "user.a", small, sizeof small));
            t.rc("set_binary", ::setxattr(f.c_str(), "user.bin", binary.data(), binary.size(), 0));
            t.yes("binary_kept", get_xattr(f, "user.bin") == binary);
            t.rc("set_empty", ::setxattr(f.c_str(), "user.empty", "", 0, 0));
            t.val("empty", get_xattr(f, "user.empty"));
            t.rc("create_existing", ::setxattr(f.c_str(), "user.a", "v", 1, XATTR_CREATE));
            t.rc("replace_missing", ::setxattr(f.c_str(), "user.z", "v", 1, XATTR_REPLACE));
            t.rc("replace", ::setxattr(f.c_str(), "user.a", "new", 3, XATTR_REPLACE));
            t.val("replaced", get_xattr(f, "user.a"));
            t.val("list", list_xattrs(f));
            t.rc("list_size_query", ::listxattr(f.c_str(), nullptr, 0) >= 26 ? 0 : -1);
            t.rc("remove", ::removexattr(f.c_str(), "user.a"));
            t.val("get_removed", get_xattr(f, "user.a"));
            t.rc("remove_again", ::removexattr(f.c_str(), "user.a"));
            t.val("list2", list_xattrs(f));
            ASSERT_EQ(::mkdir((r + "/d").c_str(), 0755), 0);
            t.rc("dir_set", ::setxattr((r + "/d").c_str(), "user.d", "dv", 2, 0));
            t.val("dir_get", get_xattr(r + "/d", "user.d"));
            // Kept across a rename, through a descriptor too.
            t.rc("rename", ::rename(f.c_str(), (r + "/g").c_str()));
            const int fd = ::open((r + "/g").c_str(), O_RDONLY | O_CLOEXEC);
            char buf[16] = {};
            t.rc("fgetxattr", ::fgetxattr(fd, "user.empty", buf, sizeof buf));
            t.rc("fsetxattr", ::fsetxattr(fd, "user.f", "fv", 2, 0));
            ::close(fd);
            t.val("list3", list_xattrs(r + "/g"));
        },
        "none=\nset=0\nsize_query=5\nget=value\ntoo_small=ERANGE\nset_binary=0\nbinary_kept=yes\n"
        "set_empty=0\nempty=\ncreate_existing=EEXIST\nreplace_missing=ENODATA\nreplace=0\n"
        "replaced=new\nlist=user.a,user.bin,user.empty\nlist_size_query=0\nremove=0\n"
        "get_removed=<ENODATA>\nremove_again=ENODATA\nlist2=user.bin,user.empty\ndir_set=0\n"
        "dir_get=dv\nrename=0\nfgetxattr=0\nfsetxattr=0\nlist3=user.bin,user.empty,user.f\n");
}

// --- more of the kernel's semantics through the node table ---------------------------------

// ".." on a mount is the parent of the directory reached, not a lexical step back.
TEST_P(FusePosix, DotDotIsThePhysicalParent) {
    expect_trace(
        [](const std::string& r, Trace& t) {
            ASSERT_EQ(::mkdir((r + "/a").c_str(), 0755), 0);
            ASSERT_EQ(::mkdir((r + "/a/deep").c_str(), 0755), 0);
            ASSERT_EQ(::mkdir((r + "/b").c_str(), 0755), 0);
            ASSERT_TRUE(put(r + "/a/in_a", "A"));
            ASSERT_EQ(::symlink("../a/deep", (r + "/b/l").c_str()), 0);
            t.val("through_link", get(r + "/b/l/../in_a"));
            t.yes("dotdot_is_a", lstat_of(r + "/b/l/..").st_ino == lstat_of(r + "/a").st_ino);
            ASSERT_TRUE(put(r + "/file", "F"));
            t.rc("file_dotdot", ::access((r + "/file/..").c_str(), F_OK));
            // A renamed directory's ".." follows it.
            ASSERT_EQ(::rename((r + "/a/deep").c_str(), (r + "/b/moved").c_str()), 0);
            t.yes("moved_dotdot_is_b",
                  lstat_of(r + "/b/moved/..").st_ino == lstat_of(r + "/b").st_ino);
        },
        "through_link=A\ndotdot_is_a=yes\nfile_dotdot=ENOTDIR\nmoved_dotdot_is_b=yes\n");
}

// A large directory read in pieces: telldir/seekdir come back to the same entries, each
// entry is listed once.
TEST_P(FusePosix, SeekdirReturnsToTheSameEntries) {
    expect_trace(
        [](const std::string& r, Trace& t) {
            ASSERT_EQ(::mkdir((r + "/wide").c_str(), 0755), 0);
            for (int i = 0; i < 300; ++i) ASSERT_TRUE(put(fmt::format("{}/wide/e{:03}", r, i), ""));
            DIR* d = ::opendir((r + "/wide").c_str());
            ASSERT_NE(d, nullptr);
            std::vector<std::string> first;
            long mark = -1;
            std::string at_mark;
            for (;;) {
                if (first.size() == 150) mark = ::telldir(d);
                const dirent* e = ::readdir(d);
                if (e == nullptr) break;
                first.push_back(e->d_name);
                if (first.size() == 151) at_mark = e->d_name;
            }
            ::seekdir(d, mark);
            const dirent* again = ::readdir(d);
            t.yes("seekdir_same_entry", again != nullptr && at_mark == again->d_name);
            ::rewinddir(d);
            std::size_t count = 0;
            while (::readdir(d) != nullptr) ++count;
            ::closedir(d);
            std::sort(first.begin(), first.end());
            t.yes("unique", std::adjacent_find(first.begin(), first.end()) == first.end());
            t.val("count", std::to_string(first.size()) + " " + std::to_string(count));
        },
        "seekdir_same_entry=yes\nunique=yes\ncount=302 302\n");
}

// Writes through a shared mapping reach the file.
TEST_P(FusePosix, SharedMappingWritesReachTheFile) {
    expect_trace(
        [](const std::string& r, Trace& t) {
            const std::string f = r + "/m";
            ASSERT_TRUE(put(f, std::string(8192, '.')));
            const int fd = ::open(f.c_str(), O_RDWR | O_CLOEXEC);
            ASSERT_GE(fd, 0);
            void* map = ::mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            ASSERT_NE(map, MAP_FAILED) << errno_name(errno);
            std::memcpy(static_cast<char*>(map) + 4000, "mapped", 6);
            t.rc("msync", ::msync(map, 8192, MS_SYNC));
            ::munmap(map, 8192);
            ::close(fd);
            const std::string content = get(f);
            t.val("content", content.substr(3998, 10));
            t.val("size", std::to_string(content.size()));
        },
        "msync=0\ncontent=..mapped..\nsize=8192\n");
}

// The host reuses a removed file's inode number at once; the kernel may still hold the
// removed file (here through an O_PATH descriptor, which the daemon never sees). The new file
// must be a new file to the kernel, and the old one stay what it was: nlink 0, its size.
TEST_P(FusePosix, AReusedInodeNumberIsANewFile) {
    const std::string a = at("a");
    ASSERT_TRUE(put(a, "old content"));
    const ino_t old_ino = lstat_of(a).st_ino;
    const int held = ::open(a.c_str(), O_PATH | O_CLOEXEC);
    ASSERT_GE(held, 0);
    ASSERT_EQ(::unlink(a.c_str()), 0);
    std::string reused;
    for (int i = 0; i < 64 && reused.empty(); ++i) {
        const std::string b = at(fmt::format("b{}", i));
        ASSERT_TRUE(put(b, "new"));
        if (lstat_of(b).st_ino == old_ino) reused = b;
    }
    if (reused.empty()) {
        ::close(held);
        GTEST_SKIP() << "the source never reused inode number " << old_ino
                     << (GetParam() == Kind::volume ? " (a volume never does)" : "");
    }
    struct stat st {};
    ASSERT_EQ(::fstat(held, &st), 0) << errno_name(errno);
    EXPECT_EQ(st.st_nlink, 0u) << "the removed file";
    EXPECT_EQ(st.st_size, 11) << "the removed file";
    const struct stat now = lstat_of(reused);
    EXPECT_EQ(now.st_nlink, 1u);
    EXPECT_EQ(now.st_size, 3);
    EXPECT_EQ(::link(reused.c_str(), at("c").c_str()), 0) << errno_name(errno);
    EXPECT_EQ(lstat_of(reused).st_nlink, 2u);
    EXPECT_EQ(get(at("c")), "new");
    ASSERT_EQ(::fstat(held, &st), 0) << errno_name(errno);
    EXPECT_EQ(st.st_nlink, 0u) << "the removed file, after the new one got a link";
    ::close(held);
}

// Threads working side by side, each in its own directory (inode numbers freed and reused
// all the time on a host directory): every call succeeds.
TEST_P(FusePosix, ConcurrentWorkersInSeparateDirectoriesNeverFail) {
    constexpr int kThreads = 4, kRounds = 150;
    std::vector<std::string> failures[kThreads];
    std::vector<std::thread> threads;
    for (int k = 0; k < kThreads; ++k) {
        threads.emplace_back([&, k] {
            const std::string d = at(fmt::format("w{}", k));
            auto check = [&](const char* what, int i, long rc) {
                if (rc < 0)
                    failures[k].push_back(fmt::format("{} #{}: {}", what, i, errno_name(errno)));
            };
            check("mkdir", 0, ::mkdir(d.c_str(), 0755));
            for (int i = 0; i < kRounds; ++i) {
                const std::string f = fmt::format("{}/f{}", d, i % 7),
                                  g = fmt::format("{}/g{}", d, i % 5),
                                  h = fmt::format("{}/h{}", d, i);
                const int fd = ::open(f.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                check("create", i, fd);
                if (fd >= 0) {
                    check("write", i, ::write(fd, "data", 4));
                    ::close(fd);
                }
                check("rename over", i, ::rename(f.c_str(), g.c_str()));
                check("link", i, ::link(g.c_str(), h.c_str()));
                check("unlink", i, ::unlink(h.c_str()));
                check("setxattr", i, ::setxattr(g.c_str(), "user.k", "v", 1, 0));
                if (i % 10 == 0) {
                    check("rename dir", i, ::rename(d.c_str(), (d + "_t").c_str()));
                    check("rename dir back", i, ::rename((d + "_t").c_str(), d.c_str()));
                }
            }
        });
    }
    for (auto& th : threads) th.join();
    for (int k = 0; k < kThreads; ++k) {
        EXPECT_TRUE(failures[k].empty()) << "thread " << k << ": " << failures[k].size()
                                         << " failures, first: " << failures[k].front();
        EXPECT_EQ(listing(at(fmt::format("w{}", k))), "g0:f g1:f g2:f g3:f g4:f");
    }
}

// Files made by another user (the mount is -o allow_other) belong to that user, and the
// kernel checks permissions (default_permissions) as on any filesystem.
TEST_P(FusePosix, AnotherUsersNewFilesAreTheirsAndPermissionsHold) {
    if (::geteuid() != 0) GTEST_SKIP() << "acting as another user needs root";
    ScratchDir dir("posix-users");
    std::string source;
    ASSERT_TRUE(make_source(GetParam(), dir, source));
    FuseMount m(source, {"-o", "allow_other"});
    PACKFS_REQUIRE_MOUNT(m);
    const Scenario scenario = [](const std::string& r, Trace& t) {
        ASSERT_TRUE(put(r + "/secret", "s", 0600));
        ASSERT_TRUE(put(r + "/public", "p", 0644));
        ASSERT_EQ(::mkdir((r + "/closed").c_str(), 0700), 0);
        ASSERT_EQ(::mkdir((r + "/open").c_str(), 0777), 0);
        int pipe_fds[2];
        ASSERT_EQ(::pipe(pipe_fds), 0);
        const pid_t pid = ::fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            ::close(pipe_fds[0]);
            Trace c;
            if (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
                ::setresuid(65534, 65534, 65534) != 0)
                std::_Exit(2);
            auto ids = [](const std::string& p) {
                const struct stat st = lstat_of(p);
                return fmt::format("{}:{}", st.st_uid, st.st_gid);
            };
            c.rc("read_secret", ::open((r + "/secret").c_str(), O_RDONLY | O_CLOEXEC));
            c.val("read_public", get(r + "/public"));
            c.rc("write_public", ::open((r + "/public").c_str(), O_WRONLY | O_CLOEXEC));
            c.rc("create_in_closed",
                 ::open((r + "/closed/x").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
            c.rc("create_in_root", ::mkdir((r + "/mine").c_str(), 0755));
            const int fd = ::open((r + "/open/file").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0640);
            c.yes("create_in_open", fd >= 0);
            if (fd >= 0) ::close(fd);
            c.val("file_ids", ids(r + "/open/file"));
            c.rc("mkdir", ::mkdir((r + "/open/dir").c_str(), 0750));
            c.val("dir_ids", ids(r + "/open/dir"));
            c.rc("symlink", ::symlink("file", (r + "/open/link").c_str()));
            c.val("link_ids", ids(r + "/open/link"));
            c.rc("mkfifo", ::mkfifo((r + "/open/fifo").c_str(), 0600));
            c.val("fifo_ids", ids(r + "/open/fifo"));
            c.rc("chmod_own", ::chmod((r + "/open/file").c_str(), 0600));
            c.rc("chmod_others", ::chmod((r + "/public").c_str(), 0777));
            c.rc("chown_own", ::chown((r + "/open/file").c_str(), 0, 0));
            c.rc("unlink_others", ::unlink((r + "/public").c_str()));
            c.rc("utime_others", ::utimensat(AT_FDCWD, (r + "/public").c_str(), nullptr, 0));
            const std::string& text = c.str();
            if (::write(pipe_fds[1], text.data(), text.size()) < 0) std::_Exit(3);
            std::_Exit(0);
        }
        ::close(pipe_fds[1]);
        std::string text;
        char buf[4096];
        for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof buf)) > 0;)
            text.append(buf, static_cast<std::size_t>(n));
        ::close(pipe_fds[0]);
        int status = 0;
        ::waitpid(pid, &status, 0);
        t.val("child", WIFEXITED(status) ? std::to_string(WEXITSTATUS(status)) : "killed");
        t.val("trace", "\n" + text);
        t.val("root_sees", listing(r + "/open"));
    };
    Trace mounted, plain;
    scenario(m.path(), mounted);
    ScratchDir reference("posix-users-plain");
    ::chmod(reference.path().c_str(), 0755);  // mkdtemp makes it 0700
    scenario(reference.path(), plain);
    const std::string expected =
        "child=0\ntrace=\nread_secret=EACCES\nread_public=p\nwrite_public=EACCES\n"
        "create_in_closed=EACCES\ncreate_in_root=EACCES\ncreate_in_open=yes\n"
        "file_ids=65534:65534\nmkdir=0\ndir_ids=65534:65534\nsymlink=0\nlink_ids=65534:65534\n"
        "mkfifo=0\nfifo_ids=65534:65534\nchmod_own=0\nchmod_others=EPERM\nchown_own=EPERM\n"
        "unlink_others=EACCES\nutime_others=EACCES\n\n"
        "root_sees=dir:d fifo:p file:f link:l\n";
    EXPECT_EQ(mounted.str(), expected) << "through the mount";
    EXPECT_EQ(plain.str(), expected) << "on a plain host directory (the reference)";
}

// A new entry in a set-group-ID directory takes the directory's group (and a new
// subdirectory the S_ISGID bit too), as on any filesystem.
TEST_P(FusePosix, NewEntriesInASetgidDirectoryTakeItsGroup) {
    if (::geteuid() != 0) GTEST_SKIP() << "chown to another group needs root";
    expect_trace(
        [](const std::string& r, Trace& t) {
            const std::string d = r + "/sg";
            ASSERT_EQ(::mkdir(d.c_str(), 0755), 0);
            ASSERT_EQ(::chown(d.c_str(), 0, 4242), 0);
            ASSERT_EQ(::chmod(d.c_str(), 02775), 0);
            ASSERT_TRUE(put(d + "/f", ""));
            ASSERT_EQ(::mkdir((d + "/sub").c_str(), 0755), 0);
            t.val("file_gid", std::to_string(lstat_of(d + "/f").st_gid));
            t.val("subdir_gid", std::to_string(lstat_of(d + "/sub").st_gid));
            t.oct("subdir_mode", lstat_of(d + "/sub").st_mode);
        },
        "file_gid=4242\nsubdir_gid=4242\nsubdir_mode=42755\n");
}

// The kernel sends fchmod, futimens and fsetxattr of an open file with no handle, by node: a
// node the kernel holds stays valid after its last name is gone (backend.hpp, "Nodes"), so
// they succeed as on a kernel filesystem.
TEST_P(FusePosix, AttributesChangeThroughAnUnlinkedFilesDescriptor) {
    expect_trace(
        [](const std::string& r, Trace& t) {
            const std::string f = r + "/f";
            const int fd = ::open(f.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
            ASSERT_GE(fd, 0);
            ASSERT_EQ(::unlink(f.c_str()), 0);
            t.rc("fchmod", ::fchmod(fd, 0600));
            const timespec times[2] = {{5, 0}, {6, 0}};
            t.rc("futimens", ::futimens(fd, times));
            t.rc("fsetxattr", ::fsetxattr(fd, "user.a", "1", 1, 0));
            struct stat st {};
            ::fstat(fd, &st);
            t.oct("mode", st.st_mode);
            t.val("mtime", std::to_string(st.st_mtim.tv_sec));
            ::close(fd);
        },
        "fchmod=0\nfutimens=0\nfsetxattr=0\nmode=100600\nmtime=6\n");
}

// A tree deeper than PATH_MAX from the mount root (DESIGN §12): a chain of 255-byte names past
// 8 KiB, reached through relative paths (each step an *at call on the directory above, as
// POSIX test suites chdir down), where every call works as on the host: the driver works by
// node and never builds a path.
TEST_P(FusePosix, TreesDeeperThanPathMaxWorkThroughRelativePaths) {
    expect_trace(
        [](const std::string& r, Trace& t) {
            const std::string name(255, 'd');
            std::vector<int> fds;
            int dir = ::open(r.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            ASSERT_GE(dir, 0);
            fds.push_back(dir);
            std::size_t depth_bytes = 0;
            int made = 0;
            while (depth_bytes <= 8192 + 512) {
                if (::mkdirat(dir, name.c_str(), 0755) != 0) break;
                dir = ::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (dir < 0) break;
                fds.push_back(dir);
                depth_bytes += name.size() + 1;
                ++made;
            }
            t.val("levels", std::to_string(made));
            t.val("deeper_than_8k", depth_bytes > 8192 ? "yes" : "no");
            const int fd = ::openat(dir, "f", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
            t.rc("create", fd < 0 ? -1 : 0);
            t.rc("write", fd >= 0 && ::write(fd, "deep", 4) == 4 ? 0 : -1);
            if (fd >= 0) ::close(fd);
            struct stat st {};
            t.rc("stat", ::fstatat(dir, "f", &st, AT_SYMLINK_NOFOLLOW));
            t.val("size", std::to_string(st.st_size));
            t.rc("chmod", ::fchmodat(dir, "f", 0600, 0));
            ::fstatat(dir, "f", &st, AT_SYMLINK_NOFOLLOW);
            t.oct("mode", st.st_mode);
            t.rc("link", ::linkat(dir, "f", dir, "g", 0));
            ::fstatat(dir, "f", &st, AT_SYMLINK_NOFOLLOW);
            t.val("nlink", std::to_string(st.st_nlink));
            t.rc("rename", ::renameat(dir, "g", fds[fds.size() - 2], "moved"));
            t.rc("unlink_f", ::unlinkat(dir, "f", 0));
            t.rc("unlink_moved", ::unlinkat(fds[fds.size() - 2], "moved", 0));
            // Back up, removing every level.
            bool removed = true;
            for (std::size_t i = fds.size() - 1; i > 0; --i) {
                ::close(fds[i]);
                removed = removed && ::unlinkat(fds[i - 1], name.c_str(), AT_REMOVEDIR) == 0;
            }
            ::close(fds[0]);
            t.val("all_removed", removed ? "yes" : "no");
        },
        "levels=35\ndeeper_than_8k=yes\ncreate=0\nwrite=0\nstat=0\nsize=4\nchmod=0\n"
        "mode=100600\nlink=0\nnlink=2\nrename=0\nunlink_f=0\nunlink_moved=0\n"
        "all_removed=yes\n");
}

INSTANTIATE_TEST_SUITE_P(Mount, FusePosix, ::testing::Values(Kind::volume, Kind::host_dir),
                         kind_name);

// A host directory may change beside its mount: a file made there is seen at once (a missing
// name is never cached), one renamed there is gone from its old name once the kernel's
// short-lived cache expires (1 s).
TEST(FuseHostDir, ChangesMadeBesideTheMountAreSeen) {
    ScratchDir dir("posix-beside");
    const std::string source = dir / "tree";
    ASSERT_EQ(::mkdir(source.c_str(), 0755), 0);
    FuseMount m(source);
    PACKFS_REQUIRE_MOUNT(m);
    EXPECT_EQ(get(m / "beside"), "<ENOENT>");
    ASSERT_TRUE(put(source + "/beside", "made beside"));
    EXPECT_EQ(get(m / "beside"), "made beside");
    ASSERT_EQ(::rename((source + "/beside").c_str(), (source + "/moved").c_str()), 0);
    EXPECT_EQ(get(m / "moved"), "made beside");
    ::usleep(1'100'000);
    EXPECT_EQ(get(m / "beside"), "<ENOENT>");
    EXPECT_EQ(listing(m.path()), "moved:f");
}

// --- read-only mounts --------------------------------------------------------------------

// Every kind of mutation on a read-only mount answers EROFS; reads work.
void expect_every_mutation_is_erofs(const FuseMount& m) {
    const std::string a = m / "a.txt";
    EXPECT_EQ(get(a), "alpha");
    Trace t;
    t.rc("open_wronly", ::open(a.c_str(), O_WRONLY | O_CLOEXEC));
    t.rc("open_rdwr", ::open(a.c_str(), O_RDWR | O_CLOEXEC));
    t.rc("open_trunc", ::open(a.c_str(), O_RDONLY | O_TRUNC | O_CLOEXEC));
    t.rc("create", ::open((m / "new").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    t.rc("mkdir", ::mkdir((m / "newdir").c_str(), 0755));
    t.rc("rmdir", ::rmdir((m / "d").c_str()));
    t.rc("unlink", ::unlink(a.c_str()));
    t.rc("rename", ::rename(a.c_str(), (m / "moved").c_str()));
    t.rc("symlink", ::symlink("a.txt", (m / "l").c_str()));
    t.rc("link", ::link(a.c_str(), (m / "hard").c_str()));
    t.rc("mkfifo", ::mkfifo((m / "fifo").c_str(), 0644));
    t.rc("chmod", ::chmod(a.c_str(), 0600));
    t.rc("chown", ::chown(a.c_str(), 1, 1));
    t.rc("truncate", ::truncate(a.c_str(), 0));
    t.rc("utimensat", ::utimensat(AT_FDCWD, a.c_str(), nullptr, 0));
    t.rc("setxattr", ::setxattr(a.c_str(), "user.x", "1", 1, 0));
    t.rc("removexattr", ::removexattr(a.c_str(), "user.x"));
    EXPECT_EQ(t.str(),
              "open_wronly=EROFS\nopen_rdwr=EROFS\nopen_trunc=EROFS\ncreate=EROFS\nmkdir=EROFS\n"
              "rmdir=EROFS\nunlink=EROFS\nrename=EROFS\nsymlink=EROFS\nlink=EROFS\n"
              "mkfifo=EROFS\nchmod=EROFS\nchown=EROFS\ntruncate=EROFS\nutimensat=EROFS\n"
              "setxattr=EROFS\nremovexattr=EROFS\n");
    struct statvfs vfs {};
    ASSERT_EQ(::statvfs(m.path().c_str(), &vfs), 0);
    EXPECT_NE(vfs.f_flag & ST_RDONLY, 0u);
    EXPECT_EQ(listing(m.path()), "a.txt:f d:d");
    EXPECT_EQ(get(m / "d/b.txt"), "beta");
    // fsync of a file open for reading (coreutils' `sync FILE`) succeeds, with or without a
    // handle behind it (a pack's opens are stateless), and the mount goes on serving.
    const int fd = ::open(a.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    EXPECT_EQ(::fsync(fd), 0) << std::strerror(errno);
    EXPECT_EQ(::fdatasync(fd), 0) << std::strerror(errno);
    EXPECT_EQ(::fsync(fd), 0) << std::strerror(errno);
    ::close(fd);
    EXPECT_EQ(get(a), "alpha");
}

Result<void> build_small_tree(Backend& fs) {
    if (auto r = write_file(fs, "/a.txt", "alpha"); !r) return r;
    if (auto r = fs.mkdir("/d"); !r) return r;
    return write_file(fs, "/d/b.txt", "beta");
}

TEST(FuseReadOnly, AMountedPackAnswersEROFS) {
    ScratchDir dir("posix-pack");
    auto mem = make_mem_backend();
    ASSERT_TRUE(build_small_tree(*mem));
    const std::string pack = dir / "small.pack";
    auto written = write_pack(*mem, pack);
    ASSERT_TRUE(written) << written.error().message();
    FuseMount m(pack);
    PACKFS_REQUIRE_MOUNT(m);
    expect_every_mutation_is_erofs(m);
}

TEST(FuseReadOnly, AVolumeMountedReadOnlyAnswersEROFS) {
    ScratchDir dir("posix-rovol");
    const std::string vol = dir / "vol";
    ASSERT_TRUE(Volume::create(vol, {}));
    {
        auto v = Volume::open(vol);
        ASSERT_TRUE(v);
        ASSERT_TRUE(build_small_tree(**v));
        ASSERT_TRUE((*v)->sync());
    }
    FuseMount m(vol, {"-o", "ro"});
    PACKFS_REQUIRE_MOUNT(m);
    expect_every_mutation_is_erofs(m);
}

}  // namespace
}  // namespace packfs::fuse_test
