// The Vfs's mount table: one immutable version of it, and the questions a lookup asks it.
//
// The table maps a normal mount path to the union mounted there (an immutable, ordered list
// of members). It is a PersistentMap, so mount and unmount copy O(log m) nodes and publish a
// new version atomically; an operation loads one version and uses it throughout.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/persistent_map.hpp"
#include "core/union_nodes.hpp"
#include "packfs/backend.hpp"
#include "packfs/vfs.hpp"

namespace packfs::vfs {

// The Vfs's nodes are union nodes (core/union_nodes.hpp): a Part's layer is a Member's id.
using unions::DescPtr;
using unions::NodeDesc;
using unions::NodeTable;
using unions::Part;

struct Member {
    std::shared_ptr<Backend> backend;
    MountOptions options;
    uint64_t id = 0;  // this member at this mount point, unique in its Vfs (nodes name mounts by it)
    bool writable() const noexcept { return !options.read_only && !backend->read_only(); }
    // The member's root, as a part of a node.
    Part root_part() const { return Part{backend, id, writable(), kRootNode}; }
};

using Union = std::vector<Member>;
using UnionPtr = std::shared_ptr<const Union>;

struct Table {
    PersistentMap<std::string, UnionPtr> mounts;
    // The Vfs's root node as this version describes it (see seal()).
    DescPtr root;
    // How many mount paths have each number of components (index 0: "/"), kept by put() and
    // remove() so a new version learns `deepest` without visiting every mount.
    std::vector<std::size_t> paths_at_depth;
    // The most components any mount path has (0: only "/" or nothing): no mount lies below a
    // path this deep.
    std::size_t deepest = 0;

    // Mounts `members` at the normal path `path`, or replaces the union there: O(log mounts).
    void put(std::string_view path, UnionPtr members);
    // Removes the union at `path` (which must be mounted): O(log mounts).
    void remove(std::string_view path);
};
using TablePtr = std::shared_ptr<const Table>;

// A finished version, ready to publish: its root node described (the members mounted at "/",
// or a synthetic directory) and `deepest` set. O(depth): a mount is O(log mounts) in all.
TablePtr seal(Table table);

// Whether some mount lies strictly below the directory `normal_path` (so it exists as a
// directory even where no backend has it).
bool has_mount_below(const Table& table, std::string_view normal_path);

// The names of the children of `normal_path` that lead to mounts below it, each once.
std::vector<std::string> mount_children(const Table& table, std::string_view normal_path);

}  // namespace packfs::vfs
