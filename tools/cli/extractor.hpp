// Recreates a Backend's tree in a host directory, as `packfs extract` does: regular files,
// directories, symlinks, hard links (one inode in the source, link(2) in the destination),
// fifos, sockets and devices, xattrs, owners, modes and nanosecond times.
//
// It never follows a symlink in the destination: every entry is made with an *at call
// relative to a directory fd opened with O_NOFOLLOW | O_DIRECTORY, so a symlink the tree
// itself creates (or one swapped in by someone else) cannot redirect a later write outside.
// Order matters for a faithful copy: content before mode (a read-only file can be written),
// owner before mode (chown clears setuid), a directory's mode and times after its children
// (a read-only directory can still be filled, and filling it does not move its mtime).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "packfs/backend.hpp"
#include "report.hpp"

namespace packfs::cli {

struct ExtractReport {
    uint64_t directories = 0, files = 0, symlinks = 0, hard_links = 0, specials = 0;
    uint64_t bytes = 0;             // file content written
    uint64_t owners_kept = 0;       // not root: entries whose owner could not be given away
    std::vector<Failure> warnings;  // refused but not fatal: devices as non-root, xattrs
    std::vector<Failure> errors;    // what could not be recreated
    uint64_t entries() const noexcept {
        return directories + files + symlinks + hard_links + specials;
    }
};

// Extracts the tree under "/" of `fs` into the directory open at `dest_fd`, applying the
// root's own metadata to that directory last. `progress` (may be empty) sees the report so
// far. Failures are collected in the report, never fatal to the rest of the tree.
ExtractReport extract_tree(Backend& fs, int dest_fd,
                           const std::function<void(const ExtractReport&)>& progress = {});

}  // namespace packfs::cli
