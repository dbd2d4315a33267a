// The model through the kernel: random operations applied with plain syscalls (the test-only
// host backend) to a mounted volume, and to the reference model, compared after every step;
// now and then the volume is remounted or compacted while mounted, and the whole tree compared.
// What the kernel's own model run (model_test_host.cpp) switches off is off here too
// (kernel_driver_config): the mount is a kernel filesystem to the caller.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>

#include "fuse/fuse_mount.hpp"
#include "model/model_driver.hpp"
#include "support/host_backend.hpp"

namespace packfs::model {
namespace {

using fuse_test::FuseMount;
using fuse_test::run_packfs;
using fuse_test::ScratchDir;

constexpr uint64_t kDefaultOps = 20'000;

void run_mode(const char* durability) {
    ::umask(0);  // the model applies no umask
    for (const auto& item : run_plan_from_env(kDefaultOps, {1})) {
        ScratchDir scratch("model");
        const std::string volume = scratch / "vol";
        std::string out;
        ASSERT_EQ(run_packfs({"volume", "init", volume, "--durability", durability}, &out), 0)
            << out;
        FuseMount mount(volume);
        PACKFS_REQUIRE_MOUNT(mount);
        DriverConfig config = kernel_driver_config();
        ::chmod(mount.path().c_str(), config.model.root_mode);
        // Every 1,500 steps (handles closed first), in turn: unmount and mount again (the
        // daemon synced and exited, a new one replayed the journal), or compact while mounted.
        // The driver then checks the whole tree against the model.
        int rebases = 0;
        std::string rebase_error;
        config.rebase.every = 1'500;
        config.rebase.make = [&](std::shared_ptr<Backend> current) -> std::shared_ptr<Backend> {
            current.reset();
            if (rebases++ % 2 == 0) {
                if (!mount.unmount() || !mount.remount())
                    rebase_error = "remount: " + mount.error();
            } else {
                std::string said;
                if (run_packfs({"volume", "compact", volume}, &said) != 0)
                    rebase_error = "compact while mounted: " + said;
            }
            return testing::make_host_backend(mount.path());
        };
        const auto start = std::chrono::steady_clock::now();
        auto backend = testing::make_host_backend(mount.path());
        ASSERT_NE(backend, nullptr);
        ModelDriver driver(std::move(backend), item.seed, config);
        RunResult r = driver.run(item.ops);
        fmt::print(
            "fuse model ({}) seed={} ops={} ok={} successes={} failures={} tolerated={} "
            "rebases={} ({:.1f} s)\n",
            durability, item.seed, r.steps, r.ok, r.successes, r.failures, r.tolerated, rebases,
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        EXPECT_EQ(rebase_error, "");
        EXPECT_GE(rebases, 2);
        EXPECT_TRUE(r.ok) << r.report;
    }
}

TEST(FuseModel, RandomOperationsOnAMountedVolumeMatchTheModel) {
    run_mode("explicit");
}

// A mounted host directory (the dir backend behind the driver, the node table in front).
TEST(FuseModel, RandomOperationsOnAMountedHostDirectoryMatchTheModel) {
    ::umask(0);
    for (const auto& item : run_plan_from_env(kDefaultOps / 2, {2})) {
        ScratchDir scratch("model-dir");
        const std::string dir = scratch / "tree";
        ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
        FuseMount mount(dir);
        PACKFS_REQUIRE_MOUNT(mount);
        DriverConfig config = kernel_driver_config();
        ::chmod(mount.path().c_str(), config.model.root_mode);
        auto backend = testing::make_host_backend(mount.path());
        ASSERT_NE(backend, nullptr);
        ModelDriver driver(std::move(backend), item.seed, config);
        RunResult r = driver.run(item.ops);
        fmt::print("fuse model (host dir) seed={} ops={} ok={} successes={} failures={}\n",
                   item.seed, r.steps, r.ok, r.successes, r.failures);
        EXPECT_TRUE(r.ok) << r.report;
    }
}

}  // namespace
}  // namespace packfs::model
