// The Backend conformance suite: the executable form of DESIGN §4.
//
// One set of value-parameterised GoogleTest suites, one per topic, run against any Backend
// through a BackendFactory. A backend instantiates the whole suite in one line:
//
//     PACKFS_INSTANTIATE_CONFORMANCE(Mem, packfs::conformance::BackendFactory{
//         "mem", [] { return packfs::make_mem_backend(); }, {.snapshots = true}});
//
// and links the suite's object library (see tests/conformance/CMakeLists.txt,
// packfs_conformance_test()). Every test gets a fresh backend from the factory.
//
// Two kinds of backend:
// - Writable (caps.read_only == false): make() returns an empty backend; every topic runs.
// - Read-only (caps.read_only == true, e.g. a pack, or a snapshot): make() must return a
//   backend holding the standard fixture tree (build_fixture_tree(), built through the
//   Backend API into a writable backend and then converted). Only the ReadOnlyTree topic
//   runs (the writable topics skip with a message); it checks the fixture's contents and that
//   every mutation answers EROFS. Writable backends run ReadOnlyTree too, over a fixture they
//   build themselves, so the read checks are verified against the kernel by the host run.
//
// Capabilities say what a backend can do, or where PackFS deliberately differs from a kernel
// run; a test that needs a capability the backend lacks skips with a message saying so.
// Tests EXPECT where continuing is safe, so one run reports every failure.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "packfs/backend.hpp"
#include "packfs/error.hpp"
#include "packfs/types.hpp"

namespace packfs::conformance {

// How a backend follows the symlinks it meets while resolving a path (the dir backend's
// Containment, dir.hpp). What acts on a symlink itself (lstat, readlink, unlink, rename, link,
// O_NOFOLLOW, O_EXCL, Follow::no, the xattr calls) is the same in every mode.
enum class SymlinkFollow : uint8_t {
    // As in a virtual tree: an absolute target starts at "/" and ".." stops at "/" (chroot).
    in_root,
    // Only what stays beneath "/": a relative target is followed, an absolute one, or one
    // whose ".." climbs above "/", is EXDEV.
    beneath,
    // Following any symlink, on the way or at the end, is ELOOP.
    none,
};

struct Capabilities {
    // Fifos and sockets can be created with mknod, and are listed with their types.
    bool special_files = true;
    // Character and block devices can be created (on a host: needs CAP_MKNOD).
    bool device_nodes = true;
    // open() on a special file answers ENOTSUP (the contract). False for a kernel mount, where
    // the kernel opens fifos and devices itself; the open tests then skip.
    bool special_open_enotsup = true;
    // Extended attributes in the user.* namespace.
    bool xattrs = true;
    // chown to arbitrary uids and gids (on a host: needs root).
    bool chown = true;
    // snapshot() returns a frozen read-only backend; without it snapshot() must be ENOTSUP.
    bool snapshots = false;
    // The backend is read-only and holds the standard fixture tree (see above).
    bool read_only = false;
    // ".." is resolved lexically on the path string, before any lookup (the PackFS API,
    // DESIGN §3): "/link/.." is "/" even when /link is a symlink to a directory elsewhere, and
    // "/file/.." is "/". False for a kernel mount, where ".." follows the resolved directory.
    bool lexical_dotdot = true;
    // A directory's nlink is 2 + its number of subdirectories (ext4, tmpfs; not btrfs).
    bool dir_nlink = true;
    // What following a symlink does: see SymlinkFollow, and Follows() below.
    SymlinkFollow symlinks = SymlinkFollow::in_root;
    // The node calls (backend.hpp) answer; false for a kernel reached only through paths (the
    // reference runs on a host directory or a FUSE mount), where the Nodes topics skip.
    bool nodes = true;
    // A node held across the removal of its last name still answers getattr and setattr (mem,
    // overlays, volumes, the dir backend), as an open unlinked file does on ext4.
    bool held_nodes_outlive_names = true;
};

struct BackendFactory {
    std::string name;  // [A-Za-z0-9_]: used in test names
    std::function<std::shared_ptr<Backend>()> make;
    Capabilities caps;
};

// For the parameterised test names: "Mem/Rename.RenameOverNonEmptyDirFails/mem".
std::string factory_name(const ::testing::TestParamInfo<BackendFactory>& info);
void PrintTo(const BackendFactory& factory, std::ostream* os);

// --- assertions on Results -------------------------------------------------------------

std::string describe(const Error& e);

template <class T>
::testing::AssertionResult IsOk(const Result<T>& r) {
    if (r) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "failed with " << describe(r.error());
}

template <class T>
::testing::AssertionResult FailsWith(const Result<T>& r, int code) {
    if (!r) {
        if (r.error().code() == code) return ::testing::AssertionSuccess();
        return ::testing::AssertionFailure()
               << "expected " << errno_name(code) << ", got " << describe(r.error());
    }
    return ::testing::AssertionFailure() << "expected " << errno_name(code) << ", got success";
}

template <class T>
::testing::AssertionResult FailsWithOneOf(const Result<T>& r, std::initializer_list<int> codes) {
    std::string want;
    for (int c : codes) {
        if (!r && r.error().code() == c) return ::testing::AssertionSuccess();
        want += want.empty() ? "" : " or ";
        want += errno_name(c);
    }
    return ::testing::AssertionFailure()
           << "expected " << want << ", got " << (r ? std::string("success") : describe(r.error()));
}

// --- following symlinks ----------------------------------------------------------------

// The symlinks a path goes through: all relative and staying beneath "/", or at least one
// that only SymlinkFollow::in_root resolves (an absolute target, or ".." climbing above "/").
enum class Via : uint8_t { relative, absolute };

// The errno a path through symlinks `via` fails with under caps.symlinks, where in_root would
// follow them; 0 where the backend follows them too.
int follow_errno(const Capabilities& caps, Via via);
inline bool follows_via(const Capabilities& caps, Via via) { return follow_errno(caps, via) == 0; }

// `r` came from resolving a path through symlinks `via`. Where the backend follows them it
// must succeed, or fail with `in_root_code` when that is given (ENOENT for a dangling link);
// elsewhere it must fail with follow_errno().
template <class T>
::testing::AssertionResult Follows(const Result<T>& r, const Capabilities& caps, Via via,
                                   int in_root_code = 0) {
    int code = follow_errno(caps, via);
    if (code == 0) code = in_root_code;
    return code == 0 ? IsOk(r) : FailsWith(r, code);
}

// read_file(path) through symlinks `via`: `want` where the backend follows them, else the
// mode's errno.
::testing::AssertionResult ReadsThrough(Backend& fs, const Capabilities& caps,
                                        std::string_view path, Via via, std::string_view want);

#define PACKFS_EXPECT_OK(expr) EXPECT_TRUE(::packfs::conformance::IsOk((expr))) << #expr
#define PACKFS_ASSERT_OK(expr) ASSERT_TRUE(::packfs::conformance::IsOk((expr))) << #expr
#define PACKFS_EXPECT_ERRNO(expr, code) \
    EXPECT_TRUE(::packfs::conformance::FailsWith((expr), (code))) << #expr
#define PACKFS_ASSERT_ERRNO(expr, code) \
    ASSERT_TRUE(::packfs::conformance::FailsWith((expr), (code))) << #expr
#define PACKFS_EXPECT_FOLLOWS(expr, caps, via) \
    EXPECT_TRUE(::packfs::conformance::Follows((expr), (caps), (via))) << #expr
#define PACKFS_EXPECT_FOLLOWS_ERRNO(expr, caps, via, in_root_code) \
    EXPECT_TRUE(::packfs::conformance::Follows((expr), (caps), (via), (in_root_code))) << #expr

// --- helpers ---------------------------------------------------------------------------

// `size` bytes of a pattern that differs per seed and has no period near a chunk size, so a
// misplaced chunk never compares equal.
std::string pattern_bytes(std::size_t size, uint32_t seed);

inline std::span<const std::byte> as_bytes(std::string_view s) {
    return std::as_bytes(std::span(s.data(), s.size()));
}

// Reads [offset, offset+size) through a handle in one pread, or the pread's error.
Result<std::string> pread_string(File& file, uint64_t offset, std::size_t size);
// Writes `data` at `offset` through a handle; fails unless every byte was written.
Result<void> pwrite_string(File& file, std::string_view data, uint64_t offset);
// Reads a whole file through a handle in slices of `slice` bytes.
Result<std::string> read_all(File& file, std::size_t slice = 64 * 1024);
// The names in a directory, sorted.
Result<std::vector<std::string>> sorted_names(Backend& fs, std::string_view dir);
// Waits long enough for a coarse kernel clock (jiffies) to tick, so that a time update
// after it compares strictly greater.
void let_clock_tick();
// First index where a and b differ (or the shorter size), for failure messages.
std::size_t first_difference(std::string_view a, std::string_view b);

#define PACKFS_EXPECT_BYTES_EQ(actual, expected)                                           \
    do {                                                                                    \
        const std::string& a_ = (actual);                                                   \
        const std::string& e_ = (expected);                                                 \
        EXPECT_TRUE(a_ == e_) << "sizes " << a_.size() << " vs " << e_.size()               \
                              << ", first difference at byte "                              \
                              << ::packfs::conformance::first_difference(a_, e_);           \
    } while (0)

// --- the standard fixture tree ---------------------------------------------------------

// The tree every read-only check runs on. Built through the Backend API only, so any
// writable backend can build it and a read-only backend can be made from one that did.
// Parts that need a capability (special files, devices, xattrs) are made only with it.
//
//   /empty/                         empty directory
//   /docs/readme.txt                kReadme, mode 0644
//   /docs/empty.txt                 0 bytes
//   /docs/nested/deep/leaf.txt      "leaf\n"
//   /data/<size>.bin                pattern_bytes(size, size % 251) for each kFixtureSizes
//   /data/dup_a.bin, dup_b.bin      the same 10000 bytes (two inodes, equal content)
//   /exec.sh                        "#!/bin/sh\necho hi\n", mode 0755
//   /private.txt                    "secret", mode 0600
//   /hard/a, /hard/b                one inode, two names, "shared\n"
//   /links/rel -> ../docs/readme.txt, /links/abs -> /docs/readme.txt,
//   /links/dir -> /docs/nested, /links/dangling -> /nowhere,
//   /links/loop_a -> loop_b, /links/loop_b -> loop_a
//   /wide/entry_000 .. entry_299    300 files holding their own name
//   /names/<kLongName>              a 255-byte name; also "sp ace", "ünï", "...", "-dash"
//   /special/fifo, /special/sock    (special_files); /special/null char 1:3,
//   /special/zero char 0:0, /special/blk block 7:0 (device_nodes)
//   /xattr.txt                      user.text="value", user.empty="", user.bin=kBinaryValue
//                                   (xattrs)
//   /times.txt                      atime kFixtureAtime, mtime kFixtureMtime
Result<void> build_fixture_tree(Backend& fs, const Capabilities& caps);

inline constexpr std::string_view kReadme = "PackFS fixture tree\nsecond line\n";
inline constexpr std::size_t kFixtureSizes[] = {0,     1,     4095,  4096,      4097,
                                                65535, 65536, 65537, 3 * 65536 + 1};
inline constexpr int kWideCount = 300;
inline constexpr Time kFixtureAtime{1000000000, 1};
inline constexpr Time kFixtureMtime{1234567890, 123456789};
std::string fixture_long_name();        // 255 bytes
std::string fixture_binary_value();     // bytes 0..255, NUL included

// Every entry under `root` (recursively, not following symlinks) described in one line each:
// type, mode, ids, nlink, size, rdev, mtime, ctime, content or link target, and xattrs. Two
// backends (or versions) hold the same tree when their descriptions are equal.
Result<std::map<std::string, std::string>> describe_tree(Backend& fs, bool with_xattrs,
                                                         std::string_view root = "/");

// On a backend holding the fixture tree and answering read_only(): every mutation, of every
// kind, fails with EROFS, and the tree is unchanged afterwards.
void expect_every_mutation_fails_with_erofs(Backend& fs, const Capabilities& caps);

// --- the fixtures ----------------------------------------------------------------------

class ConformanceTest : public ::testing::TestWithParam<BackendFactory> {
protected:
    void SetUp() override;
    Backend& fs() { return *fs_; }
    std::shared_ptr<Backend>& backend() { return fs_; }
    const Capabilities& caps() const { return GetParam().caps; }

private:
    std::shared_ptr<Backend> fs_;
};

// Topics that mutate: they skip on a read-only backend.
class WritableTest : public ConformanceTest {
protected:
    void SetUp() override;
};

// The read-only checks: over the fixture tree (built here when the backend is writable).
class FixtureTreeTest : public ConformanceTest {
protected:
    void SetUp() override;
};

// One suite per topic, each in its own .cpp file.
class Paths : public WritableTest {};
class Directories : public WritableTest {};
class FileIo : public WritableTest {};
class CreateRemove : public WritableTest {};
class Rename : public WritableTest {};
class Links : public WritableTest {};
class MetadataTimes : public WritableTest {};
class Xattrs : public WritableTest {
protected:
    void SetUp() override;
};
class Snapshots : public WritableTest {};
class Errors : public WritableTest {};
class ReadOnlyTree : public FixtureTreeTest {};
// The node calls (nodes_test.cpp): a writable backend's, and the fixture tree walked by node.
class Nodes : public WritableTest {
protected:
    void SetUp() override;
};
class NodesOfTree : public FixtureTreeTest {
protected:
    void SetUp() override;
};

}  // namespace packfs::conformance

// Instantiates every topic for one or more backend factories: a whole backend in one line,
//     PACKFS_INSTANTIATE_CONFORMANCE(Prefix, factory_expression, ...);
#define PACKFS_INSTANTIATE_CONFORMANCE(prefix, ...)                                            \
    namespace packfs::conformance {                                                            \
    PACKFS_CONFORMANCE_TOPIC_(prefix, Paths, __VA_ARGS__);                                     \
    PACKFS_CONFORMANCE_TOPIC_(prefix, Directories, __VA_ARGS__);                               \
    PACKFS_CONFORMANCE_TOPIC_(prefix, FileIo, __VA_ARGS__);                                    \
    PACKFS_CONFORMANCE_TOPIC_(prefix, CreateRemove, __VA_ARGS__);                              \
    PACKFS_CONFORMANCE_TOPIC_(prefix, Rename, __VA_ARGS__);                                    \
    PACKFS_CONFORMANCE_TOPIC_(prefix, Links, __VA_ARGS__);                                     \
    PACKFS_CONFORMANCE_TOPIC_(prefix, MetadataTimes, __VA_ARGS__);                             \
    PACKFS_CONFORMANCE_TOPIC_(prefix, Xattrs, __VA_ARGS__);                                    \
    PACKFS_CONFORMANCE_TOPIC_(prefix, Snapshots, __VA_ARGS__);                                 \
    PACKFS_CONFORMANCE_TOPIC_(prefix, Errors, __VA_ARGS__);                                    \
    PACKFS_CONFORMANCE_TOPIC_(prefix, ReadOnlyTree, __VA_ARGS__);                              \
    PACKFS_CONFORMANCE_TOPIC_(prefix, Nodes, __VA_ARGS__);                                     \
    PACKFS_CONFORMANCE_TOPIC_(prefix, NodesOfTree, __VA_ARGS__);                               \
    }                                                                                          \
    static_assert(true, "")

#define PACKFS_CONFORMANCE_TOPIC_(prefix, topic, ...)                                          \
    INSTANTIATE_TEST_SUITE_P(prefix, topic, ::testing::Values(__VA_ARGS__), factory_name)
