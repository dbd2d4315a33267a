// The model checked against the kernel: the same random operations applied to a real host
// directory (through the test-only host backend) and to the reference model. A model that
// agrees with Linux over many thousands of operations is one the other backends' model tests
// can trust. What the host cannot express is switched off: snapshots (ENOTSUP), special files
// (a fifo would block open), xattrs on symlinks (Linux refuses user.* there), setuid bits
// (the kernel clears them on chown/write).
#include <gtest/gtest.h>

#include <stdlib.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>

#include <fmt/format.h>

#include "model/model_driver.hpp"
#include "support/host_backend.hpp"

namespace packfs::model {
namespace {

constexpr uint64_t kDefaultOps = 20'000;

TEST(HostModel, RandomOperationsMatchTheKernel) {
    ::umask(0);  // the model applies no umask
    const DriverConfig config = kernel_driver_config();
    for (const auto& item : run_plan_from_env(kDefaultOps, {1, 2})) {
        char tmpl[] = "/tmp/packfs-model-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        std::string dir = tmpl;
        ::chmod(dir.c_str(), config.model.root_mode);
        {
            auto backend = testing::make_host_backend(dir);
            ASSERT_NE(backend, nullptr);
            auto start = std::chrono::steady_clock::now();
            ModelDriver driver(backend, item.seed, config);
            RunResult r = driver.run(item.ops);
            double secs =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            fmt::print("host model seed={} ops={} ok={} successes={} failures={} tolerated={} "
                       "({:.1f} s)\n",
                       item.seed, r.steps, r.ok, r.successes, r.failures, r.tolerated, secs);
            EXPECT_TRUE(r.ok) << r.report;
        }
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
        if (HasFailure()) return;
    }
}

}  // namespace
}  // namespace packfs::model
