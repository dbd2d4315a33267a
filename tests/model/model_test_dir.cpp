// Model-based randomized test of the dir backend (dir.hpp, DESIGN §7, §14): the random
// operations of the shared generator applied to a dir backend over a fresh host directory and
// to the reference model, compared after every step. Containment::in_root is the mode whose
// symlinks resolve as the model's do (an absolute target from the root, ".." stopping there);
// it runs with the automatic resolver (openat2 on kernels that have it) and with the walk.
//
// The dir backend aims to match the kernel exactly, so only what Linux itself does differently
// from the model is switched off: snapshots (ENOTSUP), xattrs on symlinks (Linux refuses user.*
// there), setuid bits (the kernel clears them on chown/write, and a new directory inherits
// setgid). Unlike model_test_host, trailing slashes, special files, access times, zero-length
// writes and utimens with both times omitted are all compared, and no errno is tolerated.
//
// Replay a failure with PACKFS_MODEL_SEED=<seed> PACKFS_MODEL_OPS=<step+1>
// PACKFS_DIR_RESOLVER=<automatic|walk>; run longer with PACKFS_MODEL_OPS=<total ops>.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "model/model_driver.hpp"
#include "packfs/dir.hpp"

namespace packfs::model {
namespace {

constexpr uint64_t kDefaultOps = 60'000;  // per resolver

void run_resolver(Resolver resolver) {
    if (const char* only = std::getenv("PACKFS_DIR_RESOLVER");
        only && std::string(only) != resolver_name(resolver)) {
        GTEST_SKIP() << "PACKFS_DIR_RESOLVER=" << only;
    }
    ::umask(0);  // the model applies no umask
    DriverConfig config;
    config.generator.snapshots = false;
    config.model.linux_user_xattrs = true;
    config.generator.suid_bits = false;
    for (const auto& item : run_plan_from_env(kDefaultOps, {1, 2})) {
        char tmpl[] = "/tmp/packfs-model-dir-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        std::string dir = tmpl;
        ::chmod(dir.c_str(), config.model.root_mode);
        {
            auto backend =
                open_dir_backend(dir, {.containment = Containment::in_root, .resolver = resolver});
            ASSERT_TRUE(backend.has_value()) << backend.error().message();
            auto start = std::chrono::steady_clock::now();
            ModelDriver driver(*backend, item.seed, config);
            RunResult r = driver.run(item.ops);
            double secs =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            fmt::print("dir {} model seed={} ops={} ok={} successes={} failures={} "
                       "({:.1f} s)\n",
                       resolver_name(resolver), item.seed, r.steps, r.ok, r.successes,
                       r.failures, secs);
            EXPECT_TRUE(r.ok) << "resolver " << resolver_name(resolver) << "\n" << r.report;
        }
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
        if (::testing::Test::HasFailure()) return;
    }
}

TEST(DirModel, InRootMatchesTheModel) { run_resolver(Resolver::automatic); }
TEST(DirModel, InRootWalkMatchesTheModel) { run_resolver(Resolver::walk); }

}  // namespace
}  // namespace packfs::model
