// The first step of a build: the whole tree read into memory in its pack order. Directories
// are visited breadth-first, each one's entries sorted by name (byte order), and inodes are
// numbered in that order, so the listing of a directory is one contiguous run of dirents and
// its children are mostly consecutive inodes. Hard links (a non-directory met again under
// another name) keep their first inode number. Independent of the order the source lists in.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/huge_pages.hpp"
#include "pack/writer/tree_source.hpp"
#include "packfs/error.hpp"
#include "packfs/exclude.hpp"
#include "packfs/pack.hpp"
#include "packfs/types.hpp"

namespace packfs::pack {

struct ScannedInode {
    Stat stat;                  // from the source (nlink is recounted below)
    std::string path;           // the first name's virtual path, for reading it
    uint64_t handle = 0;        // the source's handle on it
    uint32_t names = 0;         // dirents naming it (the pack's nlink for non-directories)
    uint32_t subdirectories = 0;
    uint64_t first_dirent = 0;  // directories: their run of dirents
    uint64_t entry_count = 0;
    std::string target;         // symlinks
    Xattrs xattrs;              // sorted by name
    uint64_t content = 0;       // regular files with data: content index + 1 (set later)
};

struct ScannedDirent {
    uint32_t ino;
    std::string name;
};

struct ScannedTree {
    // Large for a large tree, and faulted in fresh by every build: see huge_pages.hpp.
    std::vector<ScannedInode, HugePageAllocator<ScannedInode>> inodes;  // inode number i + 1
    std::vector<ScannedDirent, HugePageAllocator<ScannedDirent>> dirents;
    uint64_t hard_links = 0;
    uint64_t xattr_count = 0;
    uint64_t excluded = 0;  // entries `exclude` left out
};

// Reads the tree, leaving out what `exclude` names (an excluded directory is not listed);
// `on_entry(count)` is called every so many entries for progress.
Result<ScannedTree> scan_tree(TreeSource& source, const ExcludePatterns& exclude,
                              const std::function<void(uint64_t)>& on_entry);

// Sets each inode's times to what the pack records (PackWriteOptions::times, clamp_time).
void record_times(ScannedTree& tree, PackTimes times, const std::optional<Time>& clamp);

// The inode numbers of a pack that keeps its source's (PackWriteOptions::keep_inode_numbers):
// numbers[i] is record i's st_ino from the source, order the record indexes sorted by number.
struct InodeNumbering {
    std::vector<uint64_t> numbers;
    std::vector<uint32_t> order;
};

// EINVAL naming the path when a source inode's st_ino is 0 or another inode already has it.
Result<InodeNumbering> number_inodes(const ScannedTree& tree);

}  // namespace packfs::pack
