// The conformance suite against the Vfs's node calls (DESIGN §11, §14, docs/VFS.md "Nodes"):
// each Vfs is wrapped in a ForwardingBackend, whose path calls are the Backend defaults, walked
// with the generic walker through the Vfs's node calls (lookup, create, rename by node, ...).
// So every path the suite uses is resolved node by node across the Vfs's mount points and
// every change is made by node, as a FUSE mount of the Vfs would make it.
//
// - vfs_nodes_mem_root: one mem at "/".
// - vfs_nodes_deep_mounts: a mem at "/" and mems at "/zz-mnt/a" and "/zz-mnt/b/c" (as
//   conformance_vfs_test's vfs_deep_mounts, and with its exclusions: "/" lists "zz-mnt").
// - vfs_nodes_union: a union of two empty mems at "/": the suite's entries all go to the
//   first, the second's root merging under it.
// - vfs_nodes_snapshot: a snapshot of a Vfs holding the fixture tree (the read-only topic).
#include "conformance/conformance_suite.hpp"
#include "packfs/forwarding.hpp"
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

std::shared_ptr<packfs::Backend> by_nodes(std::shared_ptr<packfs::Backend> fs) {
    if (!fs) return nullptr;
    return std::make_shared<packfs::ForwardingBackend>(std::move(fs));
}

std::shared_ptr<packfs::Vfs> vfs_over_mem() {
    auto vfs = packfs::Vfs::create();
    if (!vfs->mount("/", packfs::make_mem_backend())) return nullptr;
    return vfs;
}

BackendFactory mem_root_factory() {
    return {"vfs_nodes_mem_root", [] { return by_nodes(vfs_over_mem()); }, vfs_caps()};
}

BackendFactory deep_mounts_factory() {
    return {"vfs_nodes_deep_mounts",
            []() -> std::shared_ptr<packfs::Backend> {
                auto vfs = vfs_over_mem();
                if (!vfs) return nullptr;
                for (const char* at : {"/zz-mnt/a", "/zz-mnt/b/c"}) {
                    if (!vfs->mount(at, packfs::make_mem_backend())) return nullptr;
                }
                return by_nodes(vfs);
            },
            vfs_caps()};
}

BackendFactory union_factory() {
    return {"vfs_nodes_union",
            []() -> std::shared_ptr<packfs::Backend> {
                auto vfs = packfs::Vfs::create();
                for (int i = 0; i < 2; ++i) {
                    if (!vfs->mount("/", packfs::make_mem_backend())) return nullptr;
                }
                return by_nodes(vfs);
            },
            vfs_caps()};
}

BackendFactory snapshot_factory() {
    Capabilities caps = vfs_caps();
    caps.read_only = true;
    return {"vfs_nodes_snapshot",
            [caps]() -> std::shared_ptr<packfs::Backend> {
                auto vfs = vfs_over_mem();
                if (!vfs) return nullptr;
                if (!packfs::conformance::build_fixture_tree(*by_nodes(vfs), caps)) return nullptr;
                auto snap = vfs->snapshot();
                return snap ? by_nodes(*snap) : nullptr;
            },
            caps};
}

}  // namespace

PACKFS_INSTANTIATE_CONFORMANCE(VfsNodes, mem_root_factory(), deep_mounts_factory(),
                               union_factory(), snapshot_factory());
