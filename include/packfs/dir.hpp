// The dir backend (DESIGN §7): a host directory served through the Backend contract, with
// every path resolved beneath its root so that nothing (a "..", a symlink absolute or
// relative, a magic link, a component swapped for a symlink mid-walk) reaches outside it.
//
// Paths are virtual as everywhere in PackFS: normalised lexically at the edge ("/a/../b" is
// "/b"), so ".." only ever appears inside symlink targets, where the host resolves it under
// the chosen containment. Errors name the virtual path, never the host path.
//
// Speed comes from caching the file descriptors of directories (never of symlinks) and then
// making one *at call on the parent: a stat is one statx on a cached parent plus one cheap
// ioctl that asks inotify whether any cached directory was moved by anyone, so host changes
// are seen at once (see docs/DIR.md for the syscalls of every operation and the coherence
// argument).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "packfs/backend.hpp"
#include "packfs/export.hpp"

namespace packfs {

// What a symlink met while resolving a path may do. Operations that act on a final symlink
// itself (lstat, readlink, unlink, rename, link, lchown, utimens without follow, xattrs) never
// follow it, in every mode.
enum class Containment : uint8_t {
    // Symlinks are followed while they stay beneath the root: a relative target, with ".."
    // that does not climb above the root. An absolute target, or ".." above the root, is
    // EXDEV; a magic link (/proc/self/fd/N, /proc/self/root) is ELOOP. (openat2's
    // RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS.)
    beneath,
    // chroot semantics: an absolute target starts at the root and ".." stops at the root, so
    // a tree whose links were made for "/" (a container image) resolves as it would there.
    // Magic links are ELOOP. (RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS.)
    in_root,
    // Every symlink on the way, and a final one that would be followed, is ELOOP.
    // (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS.)
    no_symlinks,
};

// How paths that must follow symlinks are resolved.
enum class Resolver : uint8_t {
    automatic,  // openat2 where the kernel has it (5.6+), else the walk
    openat2,    // openat2 only: ENOSYS where the kernel lacks it
    walk,       // component by component with O_PATH|O_NOFOLLOW, links read and resolved by
                // PackFS with a depth limit of 40; what kernels without openat2 get
};

struct DirOptions {
    Containment containment = Containment::beneath;
    Resolver resolver = Resolver::automatic;
    // Every mutation answers EROFS.
    bool read_only = false;
    // Cache directory fds (with an inotify watch each, so moves by anyone are noticed). Off:
    // every operation resolves its parent from the root, one openat2 more per call.
    bool cache_dirs = true;
    // At most this many cached directory fds (each also holds one inotify watch).
    std::size_t cache_capacity = 1024;
    // Nodes (the node calls, a FUSE mount's inodes): at most this many held open; a node
    // beyond them is reopened on demand from its parent and name. 0: a quarter of the process's
    // RLIMIT_NOFILE, between 32 and 4,096.
    std::size_t node_fds = 0;
    // The node calls that read (list, and open for reading) open with O_NOATIME, so reading a
    // tree leaves its atimes as they were (the pack writer's builds). Where the kernel refuses
    // it (EPERM: the process neither owns the object nor has CAP_FOWNER), without.
    bool no_atime = false;
};

// The backend over the host directory `host_dir` (which must exist and be a directory; a
// symlink as `host_dir` itself is followed, as the caller named it). Errors: ENOENT,
// ENOTDIR, EACCES from opening it; ENOSYS for Resolver::openat2 on a kernel without it.
PACKFS_API Result<std::shared_ptr<Backend>> open_dir_backend(const std::string& host_dir,
                                                             const DirOptions& options = {});

// The names of the modes, as the CLI and the tests print them ("beneath", "in_root", ...).
PACKFS_API const char* containment_name(Containment c) noexcept;
PACKFS_API const char* resolver_name(Resolver r) noexcept;

}  // namespace packfs
