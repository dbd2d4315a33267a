// The conformance suite against the Vfs (DESIGN §11, §14): the Vfs is itself a Backend, so it
// must pass what the backends it mounts pass.
//
// - vfs_mem_root: one mem mounted at "/". Everything mem passes, snapshots included.
// - vfs_deep_mounts: a mem at "/" plus further mems at "/zz-mnt/a" and "/zz-mnt/b/c", which
//   the suite never names, so every lookup goes through a table with several entries (and a
//   virtual directory "/zz-mnt", "/zz-mnt/b") and still lands on the "/" mem.
//   No capability changes: every capability holds as for mem. The only difference is that
//   "/" really lists the mount point "zz-mnt", so the tests that expect "/" to list exactly
//   what they created are excluded for this factory only, by the GTEST_FILTER set in
//   tests/vfs/CMakeLists.txt (each listed there with its reason). Every other test runs.
// - vfs_snapshot: a snapshot of a vfs_mem_root-style Vfs holding the fixture tree (the
//   read-only topic), as mem_snapshot does for mem.
#include "conformance/conformance_suite.hpp"
#include "packfs/mem.hpp"
#include "packfs/vfs.hpp"

namespace {

using packfs::conformance::BackendFactory;
using packfs::conformance::Capabilities;

Capabilities vfs_caps() {
    Capabilities caps;
    caps.snapshots = true;
    return caps;
}

// A Vfs with one mem at "/".
std::shared_ptr<packfs::Vfs> vfs_over_mem() {
    auto vfs = packfs::Vfs::create();
    if (!vfs) return nullptr;
    if (!vfs->mount("/", packfs::make_mem_backend())) return nullptr;
    return vfs;
}

BackendFactory vfs_mem_root_factory() {
    return {"vfs_mem_root", []() -> std::shared_ptr<packfs::Backend> { return vfs_over_mem(); },
            vfs_caps()};
}

BackendFactory vfs_deep_mounts_factory() {
    return {"vfs_deep_mounts",
            []() -> std::shared_ptr<packfs::Backend> {
                auto vfs = vfs_over_mem();
                if (!vfs) return nullptr;
                for (const char* at : {"/zz-mnt/a", "/zz-mnt/b/c"}) {
                    if (!vfs->mount(at, packfs::make_mem_backend())) return nullptr;
                }
                return vfs;
            },
            vfs_caps()};
}

BackendFactory vfs_snapshot_factory() {
    Capabilities caps = vfs_caps();
    caps.read_only = true;
    return {"vfs_snapshot",
            [caps]() -> std::shared_ptr<packfs::Backend> {
                auto vfs = vfs_over_mem();
                if (!vfs) return nullptr;
                if (!packfs::conformance::build_fixture_tree(*vfs, caps)) return nullptr;
                auto snap = vfs->snapshot();
                return snap ? *snap : nullptr;
            },
            caps};
}

}  // namespace

PACKFS_INSTANTIATE_CONFORMANCE(Vfs, vfs_mem_root_factory(), vfs_deep_mounts_factory(),
                               vfs_snapshot_factory());
