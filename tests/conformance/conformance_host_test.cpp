// The conformance suite against the kernel: a plain host-directory backend (test only), so
// every expectation of the suite is checked against real POSIX behaviour.
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "conformance/conformance_suite.hpp"
#include "support/host_backend.hpp"

namespace {

using packfs::conformance::BackendFactory;
using packfs::conformance::Capabilities;

std::shared_ptr<packfs::Backend> make_host() {
    // The Backend stores the mode it is given; the kernel would apply the umask.
    ::umask(0);
    return packfs::testing::make_temp_host_backend();
}

// What this host can do: probed once on a scratch directory.
Capabilities host_caps() {
    Capabilities caps;
    caps.nodes = false;  // the kernel, reached through paths: the reference for everything else
    caps.snapshots = false;
    caps.chown = ::geteuid() == 0;
    auto fs = make_host();
    if (!fs) return caps;
    caps.device_nodes =
        fs->mknod("/probe_dev", packfs::FileType::char_device, 0600, makedev(1, 3)).has_value();
    caps.xattrs = packfs::write_file(*fs, "/probe", "").has_value() &&
                  fs->setxattr("/probe", "user.probe", "1").has_value();
    return caps;
}

BackendFactory host_factory() { return {"host", make_host, host_caps()}; }

}  // namespace

PACKFS_INSTANTIATE_CONFORMANCE(Host, host_factory());
