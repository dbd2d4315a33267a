// Model-based randomized test through the Vfs (DESIGN §11, §14): the shared op generator and
// reference model, driven through a Vfs instead of a bare backend, with Vfs snapshots taken
// at random points and re-checked at the end.
//
// The reference model has no notion of mounts, so every layout here shows the model's
// namespace exactly, while still making each op go through the mount table:
// - root_only:   one mem at "/".
// - union_root:  "/" is a union of a writable mem (which receives every creation, being the
//                first writable member), an empty writable mem and an empty read-only mem
//                snapshot behind it. Every miss falls through all three members, so lookups
//                of missing paths, errnos of failed lookups (ENOTDIR, ELOOP, ...) and merged
//                listings are all checked against the model.
// - nested_vfs:  a Vfs mounted at "/" of another Vfs, which has a mem at "/".
// (Mount points elsewhere would show up in listings the model cannot predict; mounts,
// unmounts and EXDEV are checked against their own model in tests/vfs/vfs_mount_model_test.)
//
// Replay a failure with PACKFS_MODEL_SEED=<seed> PACKFS_MODEL_OPS=<step+1>
// PACKFS_VFS_LAYOUT=<layout>; run longer with PACKFS_MODEL_OPS=<total ops per layout>.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <set>
#include <string>

#include <fmt/format.h>

#include "model/model_driver.hpp"
#include "packfs/mem.hpp"
#include "packfs/vfs.hpp"

namespace packfs::model {
namespace {

constexpr uint64_t kDefaultOps = 60'000;  // per layout

std::shared_ptr<Backend> root_only() {
    auto vfs = Vfs::create();
    if (!vfs || !vfs->mount("/", make_mem_backend())) return nullptr;
    return vfs;
}

std::shared_ptr<Backend> union_root() {
    auto vfs = Vfs::create();
    if (!vfs) return nullptr;
    auto frozen = make_mem_backend()->snapshot();
    if (!frozen) return nullptr;
    if (!vfs->mount("/", make_mem_backend())) return nullptr;
    if (!vfs->mount("/", make_mem_backend())) return nullptr;
    if (!vfs->mount("/", *frozen)) return nullptr;
    return vfs;
}

std::shared_ptr<Backend> nested_vfs() {
    auto inner = root_only();
    auto outer = Vfs::create();
    if (!inner || !outer || !outer->mount("/", inner)) return nullptr;
    return outer;
}

void run_layout(const char* name, const std::function<std::shared_ptr<Backend>()>& make) {
    if (const char* only = std::getenv("PACKFS_VFS_LAYOUT"); only && std::string(only) != name) {
        GTEST_SKIP() << "PACKFS_VFS_LAYOUT=" << only;
    }
    DriverConfig config;
    // Exploration switch (not for CI), as in model_test_mem: no trailing '/' in paths.
    if (std::getenv("PACKFS_MODEL_NO_TRAILING_SLASH")) config.generator.trailing_slashes = false;
    // Exploration switch (not for CI): accept any errno where both sides fail, listing each
    // distinct difference, to get past errno-order differences to deeper ones.
    std::set<std::string> differences;
    if (std::getenv("PACKFS_MODEL_LENIENT_ERRNO")) {
        config.compare.tolerate = [&](const Op& op, int expected, int got) {
            differences.insert(fmt::format("{}: expected {} got {}  e.g. {}",
                                           op_kind_name(op.kind), errno_name(expected),
                                           errno_name(got), op.describe()));
            return true;
        };
    }
    for (const auto& item : run_plan_from_env(kDefaultOps, {1, 0x5eed'0003})) {
        auto backend = make();
        ASSERT_NE(backend, nullptr) << "building the " << name << " Vfs";
        auto start = std::chrono::steady_clock::now();
        ModelDriver driver(backend, item.seed, config);
        RunResult r = driver.run(item.ops);
        double secs =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        fmt::print("vfs {} model seed={} ops={} ok={} successes={} failures={} snapshots={} "
                   "({:.1f} s)\n",
                   name, item.seed, r.steps, r.ok, r.successes, r.failures, r.snapshots_taken,
                   secs);
        EXPECT_TRUE(r.ok) << "layout " << name << "\n" << r.report;
        if (!r.ok) break;
    }
    std::set<std::string> kinds;
    for (const auto& d : differences) {
        if (kinds.insert(d.substr(0, d.find("  e.g."))).second) {
            fmt::print("{} errno difference {}\n", name, d);
        }
    }
}

TEST(VfsModel, RootOnly) { run_layout("root_only", root_only); }
TEST(VfsModel, UnionRoot) { run_layout("union_root", union_root); }
TEST(VfsModel, NestedVfs) { run_layout("nested_vfs", nested_vfs); }

}  // namespace
}  // namespace packfs::model
