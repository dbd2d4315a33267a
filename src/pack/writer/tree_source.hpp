// What the pack writer reads a tree from, behind one small interface so the build algorithm is
// written once: any Backend read by node (BackendSource), a host directory being the dir
// backend's (src/dir), and tests' own sources. Paths are virtual ("/", "/a/b"), relative to the
// source's root; errors name them, never a host path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "packfs/backend.hpp"
#include "packfs/error.hpp"
#include "packfs/types.hpp"

namespace packfs::pack {

// Reads one regular file's content.
class ContentReader {
public:
    virtual ~ContentReader() = default;
    // Fills as much of `buf` as the file has at `offset`; returns the count (0 at the end).
    virtual Result<std::size_t> read(std::span<std::byte> buf, uint64_t offset) = 0;
    // The next run of data at or after `offset`, as [begin, end): what lies before `begin` is a
    // hole (zeros). {UINT64_MAX, UINT64_MAX} when only holes follow. A source that does not
    // know its holes answers {offset, UINT64_MAX} (this default).
    virtual Result<std::pair<uint64_t, uint64_t>> data_extent(uint64_t offset) {
        return std::pair{offset, UINT64_MAX};
    }
};

using Xattrs = std::vector<std::pair<std::string, std::string>>;

struct SourceNode {
    std::string name;
    Stat stat;  // not following a symlink
    // Identifies the underlying file across names, for hard links ({dev, ino} on a host).
    std::pair<uint64_t, uint64_t> identity;
    // The source's own handle on the entry, passed back with its path (0 where unused).
    uint64_t handle = 0;
    // Filled by a source that has them at hand while listing (saves a call per entry):
    // the symlink's target and the xattrs. Otherwise the writer asks readlink()/xattrs().
    bool has_extras = false;
    std::string target;
    Xattrs xattrs;
};

inline SourceNode source_node(std::string name, const Stat& stat,
                              std::pair<uint64_t, uint64_t> identity, uint64_t handle = 0) {
    SourceNode node;
    node.name = std::move(name);
    node.stat = stat;
    node.identity = identity;
    node.handle = handle;
    return node;
}

// An entry as the writer names it to the source again: its virtual path and its handle.
struct SourceRef {
    const std::string& path;
    uint64_t handle;
};

class TreeSource {
public:
    virtual ~TreeSource() = default;
    virtual Result<SourceNode> root() = 0;
    // The entries of a directory, with their lstat, in any order, without "." and "..".
    virtual Result<std::vector<SourceNode>> list(SourceRef dir) = 0;
    virtual Result<std::string> readlink(SourceRef link) = 0;
    virtual Result<Xattrs> xattrs(SourceRef entry) = 0;
    virtual Result<std::unique_ptr<ContentReader>> open(SourceRef file) = 0;
    // About how many inodes the tree has, when the source knows it cheaply (0: unknown), so
    // the scan sizes its tables once instead of growing them. May be over, never trusted.
    virtual uint64_t inode_count_hint() { return 0; }
};

// How a backend source tells two names of one object (hard links) from two objects.
enum class LinkIdentity : uint8_t {
    // Equal st_ino: a backend that numbers its objects once (mem, a snapshot, a pack).
    inode_number,
    // Equal nodes: a backend that hands out one node per object while it is held, whatever its
    // st_ino says (the dir backend, whose st_ino repeat across the host filesystems mounted
    // below its root). The source holds every node it lists until it goes.
    node,
};

// The tree under `root` of a Backend, read by node through its API (a mem backend gives one
// consistent version when it is a snapshot).
Result<std::unique_ptr<TreeSource>> make_backend_source(
    Backend& backend, std::string_view root, LinkIdentity links = LinkIdentity::inode_number);

// The tree under a host directory, read through a read-only dir backend (src/dir) by node: no
// symlink is followed below the root, and files and directories are read with O_NOATIME where
// the kernel allows it (DirOptions::no_atime), so building leaves the source's times as they
// were (and a second build sees the same tree). An error opening `host_dir` names it; every
// other names a virtual path.
Result<std::unique_ptr<TreeSource>> make_host_source(std::string_view host_dir);

}  // namespace packfs::pack
