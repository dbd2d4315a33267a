// The conformance suite through the kernel: a host-directory backend (tests/support, plain
// syscalls) over FUSE mounts made with the packfs binary, so every expectation of the suite is
// checked against what a program sees on a mount.
//
// - pack: the standard fixture tree, built in a mem backend and written with write_pack, then
//   mounted (read-only). Only the ReadOnlyTree topic runs; every test reads the one mount.
// - volume: a fresh volume mounted read-write; each test gets a fresh subdirectory of that one
//   mount as its "/" (a mount per test would cost more than the tests).
//
// Both mounts are made once, by the environment below, and unmounted when the run ends. Where
// FUSE is unusable here, the environment skips every test and says why.
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>

#include "conformance/conformance_suite.hpp"
#include "fuse/fuse_mount.hpp"
#include "packfs/mem.hpp"
#include "packfs/pack.hpp"
#include "packfs/volume.hpp"
#include "support/host_backend.hpp"
#include "support/path_only_backend.hpp"

namespace {

using packfs::Backend;
using packfs::conformance::BackendFactory;
using packfs::conformance::Capabilities;
using packfs::fuse_test::FuseMount;
using packfs::fuse_test::ScratchDir;

// What any kernel mount does differently from the PackFS API (conformance_suite.hpp).
Capabilities kernel_mount_caps() {
    Capabilities caps;
    caps.nodes = false;  // the mount is reached through paths (the kernel walks it by node)
    // On a kernel mount ".." is the resolved directory's parent, but the host backend the suite
    // talks to normalises every path lexically before the kernel sees it (host_backend.hpp),
    // exactly as conformance_host_test relies on; so, seen through it, ".." is lexical. The
    // kernel's own ".." on the mount is checked by fuse_posix_test (DotDotIsPhysical...).
    caps.lexical_dotdot = true;
    caps.special_open_enotsup = false;     // the kernel opens fifos and devices itself
    caps.snapshots = false;                // a host-directory backend has none
    caps.chown = ::geteuid() == 0;         // default_permissions: only root gives files away
    caps.device_nodes = ::geteuid() == 0;  // mknod of a device needs CAP_MKNOD
    return caps;
}

Capabilities pack_caps() {
    Capabilities caps = kernel_mount_caps();
    caps.read_only = true;
    caps.device_nodes = true;  // stored in the pack; only shown, never made through the mount
    return caps;
}

Capabilities volume_caps() {
    return kernel_mount_caps();
}

// The host backend over a read-only mount, saying so: the suite checks read_only() against
// the capabilities, and a host-directory backend cannot know its mount is read-only.
class ReadOnlyView final : public packfs::test_support::PathOnlyBackend {
public:
    explicit ReadOnlyView(std::shared_ptr<Backend> inner) : in_(std::move(inner)) {}

    packfs::Result<packfs::Stat> stat(std::string_view p) override { return in_->stat(p); }
    packfs::Result<packfs::Stat> lstat(std::string_view p) override { return in_->lstat(p); }
    packfs::Result<std::vector<packfs::DirEntry>> readdir(std::string_view p) override {
        return in_->readdir(p);
    }
    packfs::Result<std::string> readlink(std::string_view p) override { return in_->readlink(p); }
    packfs::Result<packfs::StatFs> statfs(std::string_view p) override { return in_->statfs(p); }
    packfs::Result<packfs::FileHandle> open(std::string_view p, int flags, uint32_t mode) override {
        return in_->open(p, flags, mode);
    }
    packfs::Result<void> truncate(std::string_view p, uint64_t size) override {
        return in_->truncate(p, size);
    }
    packfs::Result<void> mkdir(std::string_view p, uint32_t mode) override {
        return in_->mkdir(p, mode);
    }
    packfs::Result<void> rmdir(std::string_view p) override { return in_->rmdir(p); }
    packfs::Result<void> unlink(std::string_view p) override { return in_->unlink(p); }
    packfs::Result<void> rename(std::string_view from, std::string_view to,
                                packfs::RenameFlags flags) override {
        return in_->rename(from, to, flags);
    }
    packfs::Result<void> symlink(std::string_view target, std::string_view p) override {
        return in_->symlink(target, p);
    }
    packfs::Result<void> link(std::string_view existing, std::string_view p) override {
        return in_->link(existing, p);
    }
    packfs::Result<void> mknod(std::string_view p, packfs::FileType type, uint32_t mode,
                               uint64_t rdev) override {
        return in_->mknod(p, type, mode, rdev);
    }
    packfs::Result<void> chmod(std::string_view p, uint32_t mode) override {
        return in_->chmod(p, mode);
    }
    packfs::Result<void> chown(std::string_view p, uint32_t uid, uint32_t gid,
                               packfs::Follow follow) override {
        return in_->chown(p, uid, gid, follow);
    }
    packfs::Result<void> utimens(std::string_view p, packfs::TimeUpdate atime,
                                 packfs::TimeUpdate mtime, packfs::Follow follow) override {
        return in_->utimens(p, atime, mtime, follow);
    }
    packfs::Result<std::string> getxattr(std::string_view p, std::string_view name) override {
        return in_->getxattr(p, name);
    }
    packfs::Result<void> setxattr(std::string_view p, std::string_view name, std::string_view value,
                                  packfs::XattrMode mode) override {
        return in_->setxattr(p, name, value, mode);
    }
    packfs::Result<std::vector<std::string>> listxattr(std::string_view p) override {
        return in_->listxattr(p);
    }
    packfs::Result<void> removexattr(std::string_view p, std::string_view name) override {
        return in_->removexattr(p, name);
    }
    packfs::Result<std::shared_ptr<Backend>> snapshot() override { return in_->snapshot(); }
    bool read_only() const noexcept override { return true; }

private:
    std::shared_ptr<Backend> in_;
};

// The two mounts of the run.
struct Mounts {
    std::unique_ptr<ScratchDir> sources;
    std::unique_ptr<FuseMount> pack, volume;
    std::atomic<int> next_dir{0};
};
Mounts& mounts() {
    static Mounts m;
    return m;
}

class MountEnvironment : public ::testing::Environment {
public:
    void SetUp() override {
        if (std::string why = packfs::fuse_test::fuse_unavailable_reason(); !why.empty())
            GTEST_SKIP() << "FUSE unavailable: " << why;
        Mounts& m = mounts();
        m.sources = std::make_unique<ScratchDir>("conf-src");

        // The fixture tree, as a pack.
        auto mem = packfs::make_mem_backend();
        auto built = packfs::conformance::build_fixture_tree(*mem, pack_caps());
        ASSERT_TRUE(built) << packfs::conformance::describe(built.error());
        const std::string pack = *m.sources / "fixture.pack";
        packfs::PackWriteOptions options;
        options.times = packfs::PackTimes::all;  // the suite checks atimes are kept
        auto written = packfs::write_pack(*mem, pack, options);
        ASSERT_TRUE(written) << packfs::conformance::describe(written.error());
        m.pack = std::make_unique<FuseMount>(pack);
        if (m.pack->unavailable()) GTEST_SKIP() << "FUSE unavailable: " << m.pack->error();
        ASSERT_TRUE(m.pack->mounted()) << m.pack->error();

        // An empty volume.
        const std::string volume = *m.sources / "vol";
        auto created = packfs::Volume::create(volume, {});
        ASSERT_TRUE(created) << packfs::conformance::describe(created.error());
        m.volume = std::make_unique<FuseMount>(volume);
        ASSERT_TRUE(m.volume->mounted()) << m.volume->error();
        // The Backend stores the mode it is given; the kernel would apply the umask.
        ::umask(0);
    }
    void TearDown() override {
        Mounts& m = mounts();
        if (m.pack && m.pack->mounted()) {
            EXPECT_TRUE(m.pack->unmount()) << m.pack->error();
        }
        if (m.volume && m.volume->mounted()) {
            EXPECT_TRUE(m.volume->unmount()) << m.volume->error();
        }
        m.pack.reset();
        m.volume.reset();
        m.sources.reset();
    }
};

[[maybe_unused]] const auto* const kEnvironment =
    ::testing::AddGlobalTestEnvironment(new MountEnvironment);

std::shared_ptr<Backend> make_pack_view() {
    Mounts& m = mounts();
    if (!m.pack || !m.pack->mounted()) return nullptr;
    auto host = packfs::testing::make_host_backend(m.pack->path());
    return host ? std::make_shared<ReadOnlyView>(std::move(host)) : nullptr;
}

std::shared_ptr<Backend> make_volume_dir() {
    Mounts& m = mounts();
    if (!m.volume || !m.volume->mounted()) return nullptr;
    const std::string dir = *m.volume / ("t" + std::to_string(m.next_dir++));
    if (::mkdir(dir.c_str(), 0755) != 0) return nullptr;
    return packfs::testing::make_host_backend(dir);
}

}  // namespace

PACKFS_INSTANTIATE_CONFORMANCE(Fuse, BackendFactory{"fuse_pack", make_pack_view, pack_caps()},
                               BackendFactory{"fuse_volume", make_volume_dir, volume_caps()});
