// What the pack writer reads a tree from: a host directory or any Backend, behind one small
// interface so the build algorithm is written once. Paths are virtual ("/", "/a/b"), relative
// to the source's root; errors name them, never a host path.
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
};

struct SourceNode {
    std::string name;
    Stat stat;  // not following a symlink
    // Identifies the underlying file across names, for hard links ({dev, ino} on a host).
    std::pair<uint64_t, uint64_t> identity;
};

using Xattrs = std::vector<std::pair<std::string, std::string>>;

class TreeSource {
public:
    virtual ~TreeSource() = default;
    virtual Result<SourceNode> root() = 0;
    // The entries of a directory, with their lstat, in any order, without "." and "..".
    virtual Result<std::vector<SourceNode>> list(const std::string& dir) = 0;
    virtual Result<std::string> readlink(const std::string& path) = 0;
    virtual Result<Xattrs> xattrs(const std::string& path) = 0;
    virtual Result<std::unique_ptr<ContentReader>> open(const std::string& path) = 0;
};

// The tree under `root` of a Backend.
Result<std::unique_ptr<TreeSource>> make_backend_source(Backend& backend, std::string_view root);

// The tree under a host directory. Nothing below the root is followed through a symlink,
// and files are opened with O_NOATIME where the kernel allows, so building leaves the
// source's times as they were (and a second build sees the same tree).
Result<std::unique_ptr<TreeSource>> make_host_source(std::string_view host_dir);

}  // namespace packfs::pack
