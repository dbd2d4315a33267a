// Opening a path beneath a root fd while following symlinks only as the containment mode
// allows (DESIGN §7). Two engines with one contract: the kernel's openat2, and a walk that
// does what openat2 does, component by component, for kernels without it (and for the tests,
// which run both on every kernel).
#pragma once

#include <expected>
#include <string_view>

#include "core/fd.hpp"
#include "packfs/dir.hpp"

namespace packfs::dir {

// Errors are bare errno values: the backend names the operation and the virtual path.
using Opened = std::expected<Fd, int>;

class PathResolver {
public:
    // `engine` must not be Resolver::automatic (make() picks).
    PathResolver(Containment containment, Resolver engine) noexcept
        : containment_(containment), engine_(engine) {}
    // The engine `requested` asks for on this kernel; ENOSYS for openat2 where it is missing.
    static std::expected<PathResolver, int> make(Containment containment, Resolver requested);

    // Opens `rel` (relative to `root`: no leading '/', "." for the root itself) with open(2)
    // `flags` (O_CLOEXEC is added) and `mode` for O_CREAT. A final symlink is followed unless
    // `flags` has O_NOFOLLOW; O_PATH|O_NOFOLLOW on a symlink opens the link itself, as the
    // kernel does. Escapes are EXDEV (beneath) and ELOOP (magic links, no_symlinks, loops).
    Opened open(int root, std::string_view rel, int flags, uint32_t mode = 0) const;

    Containment containment() const noexcept { return containment_; }
    Resolver engine() const noexcept { return engine_; }

private:
    Opened open_openat2(int root, std::string_view rel, int flags, uint32_t mode) const;
    Opened open_walk(int root, std::string_view rel, int flags, uint32_t mode) const;

    Containment containment_;
    Resolver engine_;
};

// True when the kernel has openat2 (checked once).
bool kernel_has_openat2() noexcept;

}  // namespace packfs::dir
