// Mounting a Backend and serving it: the session, its worker threads, signals, and unmounting.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "mount.hpp"

namespace packfs::fuse {

struct ServeOptions {
    std::string mountpoint;            // absolute
    std::string fsname;                // the source, as mount tables show it
    std::vector<std::string> options;  // more -o options for libfuse and the kernel
    bool debug = false;                // libfuse's request log on stderr
    unsigned max_threads = 0;          // worker threads at most (0: 64, fewer under a low fd limit)
    // Called once the mount is in place and requests are being served.
    std::function<void()> on_ready;
};

// Why mounting on `mountpoint` cannot work, before anything is opened: no /dev/fuse, a
// missing mountpoint or one that is not a directory, or one that is a mount point already.
Result<void> check_can_mount(const std::string& mountpoint);

// Mounts `mount` on options.mountpoint and serves it until the mount goes away (umount,
// fusermount3 -u) or SIGINT/SIGTERM/SIGHUP arrives (then it unmounts itself). Returns once
// the kernel has let go of the mount; the caller then syncs and closes what it served.
// EINVAL for an option libfuse does not know; EIO (with libfuse's own message on stderr)
// when the mount itself failed.
Result<void> serve(Mount& mount, const ServeOptions& options);

}  // namespace packfs::fuse
