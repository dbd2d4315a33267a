// The reference model through the Vfs's node calls (DESIGN §11, §14, docs/VFS.md "Nodes"): the
// layouts of model_test_vfs, each wrapped in a ForwardingBackend, whose path calls are the
// Backend defaults walked through the Vfs's node calls. Every op of the shared generator is
// then resolved node by node and made by node (as through a FUSE mount of the Vfs), and
// checked against the model, with Vfs snapshots taken at random points.
// - root_only:   one mem at "/".
// - union_root:  "/" a union of a writable mem, an empty writable mem and an empty read-only
//                mem snapshot (creations go to the first; merged directories, misses falling
//                through every member).
// - nested_vfs:  a Vfs mounted at "/" of another Vfs: the outer's nodes over the inner's.
//
// Replay a failure with PACKFS_MODEL_SEED=<seed> PACKFS_MODEL_OPS=<step+1>
// PACKFS_VFS_LAYOUT=<layout>; run longer with PACKFS_MODEL_OPS=<total ops per layout>.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>

#include <fmt/format.h>

#include "model/model_driver.hpp"
#include "packfs/forwarding.hpp"
#include "packfs/mem.hpp"
#include "packfs/vfs.hpp"

namespace packfs::model {
namespace {

constexpr uint64_t kDefaultOps = 60'000;  // per layout

std::shared_ptr<Backend> by_nodes(std::shared_ptr<Backend> fs) {
    if (!fs) return nullptr;
    return std::make_shared<ForwardingBackend>(std::move(fs));
}

std::shared_ptr<Vfs> root_only() {
    auto vfs = Vfs::create();
    if (!vfs->mount("/", make_mem_backend())) return nullptr;
    return vfs;
}

std::shared_ptr<Vfs> union_root() {
    auto vfs = Vfs::create();
    auto frozen = make_mem_backend()->snapshot();
    if (!frozen) return nullptr;
    if (!vfs->mount("/", make_mem_backend())) return nullptr;
    if (!vfs->mount("/", make_mem_backend())) return nullptr;
    if (!vfs->mount("/", *frozen)) return nullptr;
    return vfs;
}

std::shared_ptr<Vfs> nested_vfs() {
    auto inner = root_only();
    auto outer = Vfs::create();
    if (!inner || !outer->mount("/", inner)) return nullptr;
    return outer;
}

void run_layout(const char* name, const std::function<std::shared_ptr<Vfs>()>& make) {
    if (const char* only = std::getenv("PACKFS_VFS_LAYOUT"); only && std::string(only) != name) {
        GTEST_SKIP() << "PACKFS_VFS_LAYOUT=" << only;
    }
    for (const auto& item : run_plan_from_env(kDefaultOps, {1, 0x5eed'0004})) {
        auto backend = by_nodes(make());
        ASSERT_NE(backend, nullptr) << "building the " << name << " Vfs";
        ModelDriver driver(backend, item.seed, DriverConfig{});
        RunResult r = driver.run(item.ops);
        fmt::print("vfs nodes {} model seed={} ops={} ok={} successes={} failures={} "
                   "snapshots={}\n",
                   name, item.seed, r.steps, r.ok, r.successes, r.failures, r.snapshots_taken);
        EXPECT_TRUE(r.ok) << "layout " << name << "\n" << r.report;
        if (!r.ok) break;
    }
}

TEST(VfsNodesModel, RootOnly) { run_layout("root_only", root_only); }
TEST(VfsNodesModel, UnionRoot) { run_layout("union_root", union_root); }
TEST(VfsNodesModel, NestedVfs) { run_layout("nested_vfs", nested_vfs); }

}  // namespace
}  // namespace packfs::model
