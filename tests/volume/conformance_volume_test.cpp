// The conformance suite against open volumes (DESIGN §10), in each durability mode: every
// mutation goes through the journal; the backend the suite sees is the volume itself.
// Volumes live in scratch directories kept for the life of the process (the factory cannot
// hand their lifetime to the backend).
#include <memory>
#include <vector>

#include "conformance/conformance_suite.hpp"
#include "packfs/volume.hpp"
#include "support/files.hpp"

namespace {

using packfs::conformance::BackendFactory;
using packfs::conformance::Capabilities;

Capabilities volume_caps() {
    Capabilities caps;
    caps.snapshots = true;
    return caps;
}

BackendFactory volume_factory(const char* name, packfs::Durability durability) {
    return {name,
            [durability]() -> std::shared_ptr<packfs::Backend> {
                static std::vector<std::unique_ptr<packfs::test_support::TempDir>> dirs;
                dirs.push_back(std::make_unique<packfs::test_support::TempDir>());
                const std::string dir = (dirs.back()->path / "vol").string();
                packfs::VolumeInit init;
                init.durability = durability;
                if (!packfs::Volume::create(dir, init)) return nullptr;
                auto volume = packfs::Volume::open(dir);
                return volume ? *volume : nullptr;
            },
            volume_caps()};
}

}  // namespace

PACKFS_INSTANTIATE_CONFORMANCE(Volume, volume_factory("batch", packfs::Durability::batch),
                               volume_factory("explicit", packfs::Durability::explicit_sync),
                               volume_factory("always", packfs::Durability::always));
