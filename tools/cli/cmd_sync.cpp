// packfs sync PATH...: make everything written under each PATH durable. On a packfs mount it
// asks the daemon (the sync ioctl, fuse/control.hpp), which syncs the volume's journal: the
// kernel never forwards sync(1) or syncfs(2) to this kind of FUSE filesystem, so without it an
// explicit-mode volume is durable only at an fsync or its commit interval. Elsewhere it is
// syncfs(2) of the filesystem PATH is on.
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <string>
#include <vector>

#include "command.hpp"
#include "fuse/control.hpp"
#include "report.hpp"

namespace packfs::cli {
namespace {

struct SyncArgs {
    std::vector<std::string> paths;
};

// 0, or the errno of what failed.
int sync_one(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return errno;
    int err = 0;
    if (::ioctl(fd, fuse::kIoctlSync) != 0) {
        err = errno;
        // Not a packfs mount (no such ioctl there): the filesystem's own sync.
        if (err == ENOTTY || err == EINVAL || err == ENOSYS || err == EOPNOTSUPP)
            err = ::syncfs(fd) == 0 ? 0 : errno;
    }
    ::close(fd);
    return err;
}

int run_sync(const SyncArgs& args) {
    const Output out(false);
    int status = kExitOk;
    for (const std::string& path : args.paths) {
        if (const int err = sync_one(path); err != 0) status = out.fail(Error(err, "sync", path));
    }
    return status;
}

}  // namespace

Command add_sync_command(CLI::App& parent) {
    auto args = std::make_shared<SyncArgs>();
    CLI::App* sub = parent.add_subcommand(
        "sync", "Make everything written under a mount durable (a volume's journal synced)");
    sub->add_option("PATH", args->paths,
                    "A file or directory on the mount (elsewhere: syncfs of its filesystem)")
        ->required();
    return {sub, [args](const std::string&) { return run_sync(*args); }};
}

}  // namespace packfs::cli
