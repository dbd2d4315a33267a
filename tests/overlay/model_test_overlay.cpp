// Model-based randomized test of the overlay (DESIGN §9, §14): the shared generator's random
// operations applied to an overlay and to the reference model, compared after every step.
// The model knows nothing of layers: it is one plain tree. The overlay must behave exactly as
// that tree while the tree is spread over a lower and an upper.
//
// So that most operations meet lower entries (renames of lower directories, deletes, writes
// into lower files, links to them, whiteouts re-created), the run starts on a mem backend and
// every `rebase` steps the current tree becomes the lower: written to a pack (through the
// overlay's own Backend interface, as compaction does) and opened under a fresh overlay. So
// a run has layers of history, and each step after the first rebase works on a tree that is
// mostly lower.
//
// Replay a failure with PACKFS_MODEL_SEED=<seed> PACKFS_MODEL_OPS=<step+1>; run longer with
// PACKFS_MODEL_OPS=<total ops>.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "model/model_driver.hpp"
#include "packfs/dir.hpp"
#include "packfs/mem.hpp"
#include "packfs/overlay.hpp"
#include "packfs/pack.hpp"
#include "support/files.hpp"

namespace packfs::model {
namespace {

constexpr uint64_t kDefaultOps = 100'000;

// The current tree as a pack, under a new overlay.
std::shared_ptr<Backend> overlay_of_pack_of(Backend& current, const std::string& scratch,
                                            uint64_t generation, Compression compression) {
    const std::string path = fmt::format("{}/gen{}.pack", scratch, generation);
    PackWriteOptions options;
    options.times = PackTimes::all;  // a rebase, like a compaction, keeps what stat reports
    options.compression = compression;
    options.block_size = 16384;
    if (auto written = write_pack(current, path, options); !written) {
        ADD_FAILURE() << "write_pack: " << written.error().message();
        return nullptr;
    }
    auto pack = open_pack(path);
    std::filesystem::remove(path);  // the mapping stays
    if (!pack) {
        ADD_FAILURE() << "open_pack: " << pack.error().message();
        return nullptr;
    }
    auto overlay = make_overlay(*pack);
    return overlay ? *overlay : nullptr;
}

struct Lowers {
    const char* name;
    Compression compression;
};

void run_plan(const Lowers& lowers, const std::vector<uint64_t>& seeds) {
    for (const auto& item : run_plan_from_env(kDefaultOps, seeds)) {
        test_support::TempDir scratch;
        uint64_t generation = 0;
        DriverConfig config;
        config.rebase.every = 2'000;
        config.rebase.make = [&](std::shared_ptr<Backend> current) -> std::shared_ptr<Backend> {
            ++generation;
            return overlay_of_pack_of(*current, scratch.path.string(), generation,
                                      lowers.compression);
        };
        std::shared_ptr<Backend> start = make_mem_backend();
        const auto t0 = std::chrono::steady_clock::now();
        ModelDriver driver(start, item.seed, config);
        RunResult r = driver.run(item.ops);
        const double secs =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        fmt::print("overlay model ({}) seed={} ops={} ok={} successes={} failures={} "
                   "rebases={} snapshots={} ({:.1f} s)\n",
                   lowers.name, item.seed, r.steps, r.ok, r.successes, r.failures, r.rebases,
                   r.snapshots_taken, secs);
        EXPECT_TRUE(r.ok) << r.report;
        if (!r.ok) return;
    }
}

TEST(OverlayModel, OverRawPacks) { run_plan({"raw packs", Compression::none}, {1, 7}); }

TEST(OverlayModel, OverCompressedPacks) {
    run_plan({"zstd packs", Compression::zstd}, {0x0e71a75});
}

}  // namespace
}  // namespace packfs::model
