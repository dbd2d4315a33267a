// The Vfs's mount table: one immutable version of it, and the lookups dispatch needs.
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
#include "packfs/backend.hpp"
#include "packfs/vfs.hpp"
#include "vfs/node_table.hpp"

namespace packfs::vfs {

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
    // The most components any mount path has (0: only "/"): dispatch probes no longer prefix.
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

// Where a normal path goes: the union mounted at its longest mounted prefix, and the path
// inside the members ("/" for the mount point itself).
struct Target {
    const Union* members = nullptr;  // null when no prefix of the path is mounted
    std::string_view mount_path;
    std::string_view inner_path;
    std::string inner_with_slash;  // set when the caller's path ended in '/'
    // The path to hand to the members: with the caller's trailing '/', which demands a
    // directory, kept.
    std::string_view inner() const noexcept {
        return inner_with_slash.empty() ? inner_path : std::string_view(inner_with_slash);
    }
};

// Longest-prefix match by components: one probe per component, O(depth · log mounts).
// `wants_dir`: the caller wrote a trailing '/' (NormalPath::wants_dir()).
Target dispatch(const Table& table, std::string_view normal_path, bool wants_dir = false);

// Whether some mount lies strictly below the directory `normal_path` (so it exists as a
// directory even where no backend has it).
bool has_mount_below(const Table& table, std::string_view normal_path);

// The names of the children of `normal_path` that lead to mounts below it, each once.
std::vector<std::string> mount_children(const Table& table, std::string_view normal_path);

}  // namespace packfs::vfs
