// The conformance suite against the dir backend (dir.hpp), in every containment mode, with
// both resolvers, with the directory fd cache off, read-only, and mounted at "/" of a Vfs
// (DESIGN §7: mountable through the Vfs). Each backend gets a fresh
// temporary directory, removed with everything in it when the backend goes.
//
// The suite's expectations are the virtual tree's (chroot semantics, Containment::in_root);
// under beneath and no_symlinks the capability `symlinks` makes the tests that follow a
// symlink expect that mode's errno instead (EXDEV, ELOOP).
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "conformance/conformance_suite.hpp"
#include "packfs/dir.hpp"
#include "packfs/vfs.hpp"

namespace {

using packfs::Containment;
using packfs::DirOptions;
using packfs::Resolver;
using packfs::conformance::BackendFactory;
using packfs::conformance::Capabilities;
using packfs::conformance::SymlinkFollow;

// A dir backend with `options` over a fresh temporary directory; with `fixture`, the directory
// first gets the fixture tree, built through a writable dir backend (for read-only options).
std::shared_ptr<packfs::Backend> make_dir(const DirOptions& options,
                                          const Capabilities* fixture = nullptr) {
    // The Backend stores the mode it is given; the kernel would apply the umask.
    ::umask(0);
    const char* tmp = std::getenv("TMPDIR");
    std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/packfs-dir-XXXXXX";
    if (::mkdtemp(dir.data()) == nullptr) return nullptr;
    auto remove = [dir] {
        std::error_code ignored;
        std::filesystem::remove_all(dir, ignored);
    };
    if (fixture != nullptr) {
        auto writer = packfs::open_dir_backend(dir, {.containment = Containment::in_root});
        if (!writer || !packfs::conformance::build_fixture_tree(**writer, *fixture)) {
            remove();
            return nullptr;
        }
    }
    auto inner = packfs::open_dir_backend(dir, options);
    if (!inner) {
        remove();
        return nullptr;
    }
    packfs::Backend* raw = inner->get();
    return std::shared_ptr<packfs::Backend>(raw, [inner = std::move(*inner), remove](
                                                     packfs::Backend*) mutable {
        inner.reset();
        remove();
    });
}

// What this host can do: probed once on a scratch directory.
const Capabilities& host_caps() {
    static const Capabilities caps = [] {
        Capabilities c;
        c.snapshots = false;
        c.chown = ::geteuid() == 0;
        auto fs = make_dir({});
        if (!fs) return c;
        c.device_nodes = fs->mknod("/probe_dev", packfs::FileType::char_device, 0600,
                                   makedev(1, 3))
                             .has_value();
        c.xattrs = packfs::write_file(*fs, "/probe", "").has_value() &&
                   fs->setxattr("/probe", "user.probe", "1").has_value();
        return c;
    }();
    return caps;
}

SymlinkFollow follow_of(Containment c) {
    switch (c) {
        case Containment::beneath: return SymlinkFollow::beneath;
        case Containment::in_root: return SymlinkFollow::in_root;
        case Containment::no_symlinks: return SymlinkFollow::none;
    }
    return SymlinkFollow::in_root;
}

BackendFactory dir_factory(std::string name, DirOptions options) {
    Capabilities caps = host_caps();
    caps.symlinks = follow_of(options.containment);
    caps.read_only = options.read_only;
    if (options.read_only) {
        return {std::move(name), [options, caps] { return make_dir(options, &caps); }, caps};
    }
    return {std::move(name), [options] { return make_dir(options); }, caps};
}

// The dir backend (beneath, the default) mounted at "/" of a Vfs: what the dir backend
// passes, the Vfs over it passes.
BackendFactory vfs_over_dir_factory() {
    Capabilities caps = host_caps();
    caps.symlinks = SymlinkFollow::beneath;
    return {"vfs_over_dir",
            []() -> std::shared_ptr<packfs::Backend> {
                auto dir = make_dir({});
                auto vfs = packfs::Vfs::create();
                if (!dir || !vfs || !vfs->mount("/", dir)) return nullptr;
                return vfs;
            },
            caps};
}

}  // namespace

PACKFS_INSTANTIATE_CONFORMANCE(
    Dir, dir_factory("beneath", {.containment = Containment::beneath}),
    dir_factory("in_root", {.containment = Containment::in_root}),
    dir_factory("no_symlinks", {.containment = Containment::no_symlinks}),
    dir_factory("beneath_walk", {.containment = Containment::beneath, .resolver = Resolver::walk}),
    dir_factory("in_root_walk", {.containment = Containment::in_root, .resolver = Resolver::walk}),
    dir_factory("no_symlinks_walk",
                {.containment = Containment::no_symlinks, .resolver = Resolver::walk}),
    dir_factory("in_root_uncached", {.containment = Containment::in_root, .cache_dirs = false}),
    dir_factory("in_root_read_only", {.containment = Containment::in_root, .read_only = true}),
    vfs_over_dir_factory());
