// The Vfs (DESIGN §11): a mount table that composes backends into one namespace, and is
// itself a Backend (so it can be tested with the conformance suite, benchmarked, snapshotted
// and later served by FUSE).
//
// - The deepest mount wins: "/a/b/c" is served by the mount at "/a/b" rather than the one at
//   "/a". A walk probes the table once per component, O(depth · log mounts), never a scan of
//   the mounts.
// - Several backends mounted at one point form a union, searched in order: the first that
//   has a path serves every read of it; listings merge the members without duplicates (the
//   first member's entry wins). Creations go to the first writable member; a change to an
//   existing entry goes to the member that holds it, and is EROFS when that member is
//   read-only.
// - A mount point is a directory even where no backend has it: it is listed in its parent's
//   listing, and the directories above it exist too.
// - A rename or link across two mounts (or two union members) is EXDEV. A read-only mount
//   answers every change with EROFS.
// - The table is a persistent map published atomically: mount and unmount never block a
//   lookup in flight, and an operation sees one version of the table throughout.
// - snapshot() snapshots every member (O(1) each for mem) under the Vfs's change lock, so the
//   snapshot is one consistent instant across mounts for every change made through the Vfs.
//   The nodes held then are the snapshot's too, under the same ids.
// - The node calls (lookup, forget, list, create, rename by node, ...) are the Vfs: a lookup
//   notices a mount point at dir/name in the current table, union directories merge, and a
//   change by node goes to the member that holds it, with the EROFS/EXDEV/EBUSY rules above.
//   The path calls are walks of the node calls (as every backend's), so in process and through
//   FUSE the Vfs answers alike; symlink targets are resolved from the Vfs's root (a link can
//   point into another mount). A node keeps what it was when looked up: one of an unmounted
//   member still answers (it holds the member) but is no longer reached by lookup.
//   docs/VFS.md "Nodes".
// - Limits of this version: st_ino is the member backend's own inode number, so two mounts can
//   report the same ino.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "packfs/backend.hpp"
#include "packfs/export.hpp"

namespace packfs {

struct MountOptions {
    bool read_only = false;  // EROFS for every change through this mount
    bool prepend = false;    // put it first in the union at its point (default: last)
};

struct MountInfo {
    std::string path;
    std::shared_ptr<Backend> backend;
    MountOptions options;
};

class PACKFS_API Vfs : public Backend {
public:
    // An empty Vfs: "/" exists (as a directory) and nothing else until something is mounted.
    static std::shared_ptr<Vfs> create();
    using Backend::create;  // the node call, beside the factory of the same name

    // Mounts `backend` at `path` (normalised; need not exist in any backend).
    virtual Result<void> mount(std::string_view path, std::shared_ptr<Backend> backend,
                               MountOptions options = {}) = 0;
    // Unmounts `backend` from `path`, or every backend there when `backend` is null. EINVAL
    // when nothing (or not that backend) is mounted there.
    virtual Result<void> unmount(std::string_view path, const Backend* backend = nullptr) = 0;
    // Every mount, ordered by path, union members in their search order.
    virtual std::vector<MountInfo> mounts() const = 0;
};

}  // namespace packfs
