// The conformance suite against the mem backend, and (read-only topic) against a snapshot of
// a mem backend holding the fixture tree.
#include "conformance/conformance_suite.hpp"
#include "packfs/mem.hpp"

namespace {

using packfs::conformance::BackendFactory;
using packfs::conformance::Capabilities;

Capabilities mem_caps() {
    Capabilities caps;
    caps.snapshots = true;
    return caps;
}

BackendFactory mem_factory() {
    return {"mem", [] { return packfs::make_mem_backend(); }, mem_caps()};
}

// A read-only backend holding the fixture tree: a snapshot of a mem backend that built it.
BackendFactory mem_snapshot_factory() {
    Capabilities caps = mem_caps();
    caps.read_only = true;
    return {"mem_snapshot",
            [caps]() -> std::shared_ptr<packfs::Backend> {
                auto live = packfs::make_mem_backend();
                if (!live) return nullptr;
                if (!packfs::conformance::build_fixture_tree(*live, caps)) return nullptr;
                auto snap = live->snapshot();
                return snap ? *snap : nullptr;
            },
            caps};
}

}  // namespace

PACKFS_INSTANTIATE_CONFORMANCE(Mem, mem_factory(), mem_snapshot_factory());
