// The conformance suite against overlays:
// - over an empty pack and over an empty host directory (the upper alone);
// - over a pack holding the fixture tree, every entry of which was then removed through the
//   overlay: the root looks empty, but every name the tests create again is a whiteout over a
//   lower entry first (a directory made there must be opaque, a file made there must not show
//   the lower's bytes, a rename over it must not resurrect it);
// - read-only: a snapshot of an overlay over the fixture pack (reads through the lower), and a
//   snapshot of an overlay whose every lower file was copied up by a metadata change.
#include "conformance/conformance_suite.hpp"
#include "overlay/overlay_test_util.hpp"
#include "packfs/dir.hpp"
#include "packfs/overlay.hpp"
#include "support/files.hpp"

namespace {

using packfs::Backend;
using packfs::conformance::BackendFactory;
using packfs::conformance::Capabilities;
using packfs::overlay_test::pack_of;
using packfs::overlay_test::remove_tree;
using packfs::overlay_test::copy_up_tree;

Capabilities overlay_caps() {
    Capabilities caps;
    caps.snapshots = true;
    return caps;
}

std::shared_ptr<Backend> overlay_over(std::shared_ptr<Backend> lower) {
    if (!lower) return nullptr;
    auto overlay = packfs::make_overlay(std::move(lower));
    return overlay ? *overlay : nullptr;
}

bool build_fixture(Backend& fs) {
    return packfs::conformance::build_fixture_tree(fs, overlay_caps()).has_value();
}

BackendFactory over_empty_pack() {
    return {"over_empty_pack", [] { return overlay_over(pack_of([](Backend&) { return true; })); },
            overlay_caps()};
}

// The host directory lives as long as the process: the factory cannot hand its lifetime to
// the backend, and each is small.
BackendFactory over_empty_dir() {
    return {"over_empty_dir",
            []() -> std::shared_ptr<Backend> {
                static std::vector<std::unique_ptr<packfs::test_support::TempDir>> dirs;
                dirs.push_back(std::make_unique<packfs::test_support::TempDir>());
                auto dir = packfs::open_dir_backend(dirs.back()->path.string(),
                                                    {.read_only = true});
                return dir ? overlay_over(*dir) : nullptr;
            },
            overlay_caps()};
}

BackendFactory over_whiteouts() {
    return {"over_whiteouts",
            []() -> std::shared_ptr<Backend> {
                auto fs = overlay_over(pack_of(build_fixture));
                if (!fs || !remove_tree(*fs, "/")) return nullptr;
                return fs;
            },
            overlay_caps()};
}

BackendFactory fixture_through_lower() {
    Capabilities caps = overlay_caps();
    caps.read_only = true;
    return {"fixture_through_lower",
            []() -> std::shared_ptr<Backend> {
                auto fs = overlay_over(pack_of(build_fixture));
                if (!fs) return nullptr;
                auto snap = fs->snapshot();
                return snap ? *snap : nullptr;
            },
            caps};
}

BackendFactory fixture_copied_up() {
    Capabilities caps = overlay_caps();
    caps.read_only = true;
    return {"fixture_copied_up",
            []() -> std::shared_ptr<Backend> {
                auto fs = overlay_over(pack_of(build_fixture));
                if (!fs || !copy_up_tree(*fs, "/")) return nullptr;
                auto snap = fs->snapshot();
                return snap ? *snap : nullptr;
            },
            caps};
}

// Stacked lowers: the fixture under an empty pack, and the fixture twice (every directory a
// merge of two, every name found in both), read-only; and the fixture twice with everything
// removed through the overlay (whiteouts over merged directories), writable.
std::shared_ptr<Backend> overlay_over_stack(std::vector<std::shared_ptr<Backend>> lowers) {
    for (const auto& l : lowers)
        if (!l) return nullptr;
    auto overlay = packfs::make_overlay(std::move(lowers));
    return overlay ? *overlay : nullptr;
}

BackendFactory fixture_under_empty_pack() {
    Capabilities caps = overlay_caps();
    caps.read_only = true;
    return {"fixture_under_empty_pack",
            []() -> std::shared_ptr<Backend> {
                auto fs = overlay_over_stack(
                    {pack_of([](Backend&) { return true; }), pack_of(build_fixture)});
                if (!fs) return nullptr;
                auto snap = fs->snapshot();
                return snap ? *snap : nullptr;
            },
            caps};
}

BackendFactory fixture_twice() {
    Capabilities caps = overlay_caps();
    caps.read_only = true;
    return {"fixture_twice",
            []() -> std::shared_ptr<Backend> {
                auto fs = overlay_over_stack({pack_of(build_fixture), pack_of(build_fixture)});
                if (!fs) return nullptr;
                auto snap = fs->snapshot();
                return snap ? *snap : nullptr;
            },
            caps};
}

BackendFactory over_stacked_whiteouts() {
    return {"over_stacked_whiteouts",
            []() -> std::shared_ptr<Backend> {
                auto fs = overlay_over_stack({pack_of(build_fixture), pack_of(build_fixture)});
                if (!fs || !remove_tree(*fs, "/")) return nullptr;
                return fs;
            },
            overlay_caps()};
}

}  // namespace

PACKFS_INSTANTIATE_CONFORMANCE(Overlay, over_empty_pack(), over_empty_dir(), over_whiteouts(),
                               fixture_through_lower(), fixture_copied_up(),
                               fixture_under_empty_pack(),
                               fixture_twice(), over_stacked_whiteouts());
