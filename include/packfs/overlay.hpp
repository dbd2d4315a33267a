// The overlay (DESIGN §9): a writable tree in memory over a read-only lower (a pack, a host
// directory, any Backend), with Linux overlayfs's semantics as the reference:
// - Reads fall through to the lower until something changes. The first change of a lower
//   inode copies it up: metadata changes copy no data, and content is referenced chunk by
//   chunk (64 KiB), so a one-byte write into a 1 GB lower file copies one chunk.
// - A deleted lower entry is a whiteout; a directory re-created over a deleted one is opaque;
//   readdir merges the layers without duplicates or whiteouts.
// - Renaming a lower directory works (no EXDEV), and hard links stay links after copy-up
//   (copy-up is by inode, so every name of a lower inode sees the copy).
// - Whiteouts live in PackFS's own index, never as look-alike files: a user's character
//   device 0:0 or a file named ".wh.x" is an ordinary entry.
// - snapshot() is O(1), as the mem backend's (a frozen version of the upper, over the same
//   immutable lower).
// - Inode numbers: a lower inode keeps its lower number (a pack's, or for other backends the
//   order in which the overlay first reached it); new inodes are numbered above every lower
//   number, so the two never collide.
#pragma once

#include <memory>
#include <vector>

#include "packfs/backend.hpp"
#include "packfs/export.hpp"
#include "packfs/mem.hpp"

namespace packfs {

struct OverlayOptions {
    // Owner of the new inodes (the root and its times come from the lower).
    uint32_t uid = 0;
    uint32_t gid = 0;
    // statfs capacity of the upper; 0 reports the host's physical memory.
    uint64_t capacity_bytes = 0;
    // The number of the first inode the overlay makes (0: just above the lower's numbers). A
    // volume passes the number its manifest records, so numbers are never reused across a
    // reopen.
    uint64_t first_ino = 0;
};

// An overlay over one lower: a Backend, and the calls that move it onto another lower.
class PACKFS_API Overlay : public Backend {
public:
    // A snapshot (Backend::snapshot) with the generation it was taken at, for rebase(). Until
    // that rebase, a removal in a directory over the lower keeps a whiteout of the name even
    // where the lower lacks it (the rebase then needs no search for them).
    struct Frozen {
        std::shared_ptr<Backend> tree;
        uint64_t generation = 0;
    };
    virtual Result<Frozen> freeze() = 0;

    // Moves the overlay onto `lower`, a tree that holds what the snapshot of `generation` held,
    // with its inode numbers (write_pack of that snapshot with keep_inode_numbers: a volume's
    // compaction). The overlay reads the same before, during and after: only where its bytes
    // come from changes. What it changed up to the snapshot is handed to the new lower (its
    // memory given back); what it changed since stays in the overlay. Open files, node
    // references and older snapshots go on as they were (older snapshots keep reading the old
    // lower, which goes with the last of them). The snapshot must have been released. EINVAL
    // when either lower does not keep its own inode numbers (a host directory); EBUSY when old
    // snapshots still read 63 older lowers.
    virtual Result<void> rebase(std::shared_ptr<Backend> lower, uint64_t generation) = 0;

    // A point rollback() can put the overlay back to: held while the object lives, at the cost
    // of a snapshot (what changes after it keeps the state it replaced). A volume takes one
    // before each change its journal may still lose.
    class Checkpoint {
    public:
        Checkpoint() = default;
        Checkpoint(uint64_t generation, std::shared_ptr<void> hold)
            : generation_(generation), hold_(std::move(hold)) {}
        uint64_t generation() const noexcept { return generation_; }
        explicit operator bool() const noexcept { return hold_ != nullptr; }

    private:
        uint64_t generation_ = 0;
        std::shared_ptr<void> hold_;  // releases the generation when the last copy goes
    };
    virtual Result<Checkpoint> checkpoint() = 0;
    // Puts the overlay back as it was at `to`, in place: what changed since is undone. Node
    // references and open files keep their inodes; an inode made since has no name after it
    // (an open one lives on unnamed, as if unlinked) and its number is not given again.
    // Snapshots go on as they were. One pass over the overlay's inodes: for recovery (a
    // volume's journal that failed), not for everyday undo. EINVAL after a rebase since `to`.
    virtual Result<void> rollback(const Checkpoint& to) = 0;
    // No inode made from now on gets a number below `next` (a volume replaying a journal
    // whose numbers skip those of changes a rollback undid).
    virtual void reserve_inode_numbers(uint64_t next) = 0;
};

// A writable overlay over `lower` (read-only from then on: it must not change underneath),
// reached through its node calls (any backend).
PACKFS_API Result<std::shared_ptr<Overlay>> make_overlay(std::shared_ptr<Backend> lower,
                                                         const OverlayOptions& options = {});

// The same over several lowers stacked, the first on top (overlayfs's lowerdir=top:...:bottom):
// the first lower that has a name decides what it is; a directory merges with the directories
// of that name below it, down to the first lower where the name is something else; a
// non-directory hides every lower entry of its name. Inode numbers are the overlay's own
// (the order in which it first reached each node), stable while it lives.
PACKFS_API Result<std::shared_ptr<Backend>> make_overlay(
    std::vector<std::shared_ptr<Backend>> lowers, const OverlayOptions& options = {});

}  // namespace packfs
