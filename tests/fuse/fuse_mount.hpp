// Test fixtures for the FUSE driver: scratch directories, and a mount made with the packfs
// binary (PACKFS_BINARY, set by CMake) that is always unmounted when the object goes.
//
//     FuseMount m(source);           // mounts on a fresh mountpoint in a scratch dir
//     PACKFS_REQUIRE_MOUNT(m);       // GTEST_SKIP (no FUSE here) or FAIL (a real error)
//     ... plain syscalls under m.path() ...
//
// A mount that cannot be made for want of FUSE (no /dev/fuse, or the kernel or fusermount3
// refusing us for permission) skips the test with the reason; any other failure fails it.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace packfs::fuse_test {

// A fresh directory under $TMPDIR (or /tmp), removed with all it holds when the object goes;
// never while something is mounted beneath it (it is then left, and said so on stderr).
class ScratchDir {
public:
    explicit ScratchDir(const char* tag = "fuse");
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;
    ~ScratchDir();
    const std::string& path() const { return path_; }
    // path() + "/" + name
    std::string operator/(const std::string& name) const { return path_ + "/" + name; }

private:
    std::string path_;
};

// Runs the packfs binary (PACKFS_BINARY, or $PACKFS_TEST_BINARY when set) with `args`; returns its
// exit status (-1 if it did not exit) and appends what it printed (stdout and stderr) to `output`.
int run_packfs(const std::vector<std::string>& args, std::string* output = nullptr);

// Whether `path` (absolute, symlinks resolved) is a mount point now.
bool is_mounted(const std::string& path);

// Why FUSE cannot be used here at all (no /dev/fuse, not usable by us), or "".
std::string fuse_unavailable_reason();

class FuseMount {
public:
    // Mounts `source` (a pack, a volume directory or a host directory) on a fresh empty
    // mountpoint, passing `options` to `packfs mount` (e.g. {"-o", "ro"}).
    explicit FuseMount(std::string source, std::vector<std::string> options = {});
    FuseMount(const FuseMount&) = delete;
    FuseMount& operator=(const FuseMount&) = delete;
    ~FuseMount();

    bool mounted() const { return mounted_; }
    // Set when the mount failed because FUSE is not usable here (the test should skip).
    bool unavailable() const { return unavailable_; }
    // What went wrong, with packfs's own words.
    const std::string& error() const { return error_; }

    const std::string& path() const { return mountpoint_; }
    std::string operator/(const std::string& name) const { return mountpoint_ + "/" + name; }
    const std::string& source() const { return source_; }

    // `packfs umount`, with a lazy-unmount fallback; true when nothing is mounted afterwards
    // and packfs umount itself succeeded.
    bool unmount();
    // Mounts the same source again on the same mountpoint.
    bool remount();

private:
    bool mount();

    std::string source_;
    std::vector<std::string> options_;
    ScratchDir scratch_{"mnt"};
    std::string mountpoint_;
    bool mounted_ = false;
    bool unavailable_ = false;
    std::string error_;
};

}  // namespace packfs::fuse_test

// In a test body or SetUp: skips when FUSE is unavailable here, fails on any other error.
#define PACKFS_REQUIRE_MOUNT(m)                                                         \
    do {                                                                                \
        if (!(m).mounted()) {                                                           \
            if ((m).unavailable()) GTEST_SKIP() << "FUSE unavailable: " << (m).error(); \
            FAIL() << "mount of " << (m).source() << " failed: " << (m).error();        \
        }                                                                               \
    } while (0)
