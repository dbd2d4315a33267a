// Union nodes: "first layer wins, directories merge", by node, written once for every union of
// backends in PackFS: the Vfs's mount points (a union of the members mounted at one place, and
// the mount points themselves; docs/VFS.md "Nodes") and the overlay's stacked lowers
// (overlay/stacked_backend.hpp, overlayfs's lowerdir=top:...:bottom).
//
// A union node is a description (NodeDesc): the layer nodes it stands for, top first (a Part
// each: one layer's node), and, for the Vfs, the Vfs path of a directory that can hold mount
// points. It is one layer's node, or a merged directory (the directories several layers have
// at one place, top first: the first part answers for it, listings merge them all), or, in a
// Vfs, a synthetic directory (no parts: a path that only leads to mount points).
//
// merge_lookup() is the rule: the first layer that has a name decides what it is; when that is
// a directory, the directories of that name in the layers below merge with it; a non-directory
// hides every lower entry of its name. merge_list() lists a merged directory, the first entry
// of a name winning. MergeRules holds where the two unions differ (what a lower non-directory
// under an upper directory does, and whether a lower layer's error fails the call).
//
// The table (NodeTable) interns descriptions: id -> description and description -> id (one id
// per description while it is held). Ids start at 2 (1 is the root, which is not interned: the
// union describes it itself), grow monotonically and are never reused: a Vfs and its snapshots
// draw them from one counter. A description holds one reference to each of its parts' layer
// nodes; when its references all go, the entry is erased and those layer references are
// forgotten (the stacked lowers never forget: their nodes stay held, as their numbering
// promises). A snapshot's table starts with the live table's nodes, mapped onto the layers'
// snapshots under the same ids (pinned: they live as long as the snapshot).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <string_view>
#include <vector>

#include "packfs/backend.hpp"

namespace packfs::unions {

// One layer's node.
struct Part {
    std::shared_ptr<Backend> backend;  // keeps the layer alive while a node holds it (an
                                       // unmounted Vfs member)
    uint64_t layer = 0;  // which layer: in a Vfs the Member's id (one member at one mount
                         // point), in a stack the layer's index
    bool writable = false;  // changes may be made through it (a Vfs member on a writable mount)
    Node node;              // the layer's node (kRootNode for a layer's root)
};

struct NodeDesc {
    // In a Vfs, set for a directory that can hold mount points: its Vfs path. Empty for every
    // other node.
    std::string path;
    // The layer nodes it is, top first; more than one only for a merged directory. Empty for a
    // Vfs's synthetic directory.
    std::vector<Part> parts;

    bool synthetic() const noexcept { return parts.empty(); }
    const Part& top() const noexcept { return parts.front(); }
};
using DescPtr = std::shared_ptr<const NodeDesc>;

// Where the two unions' rules differ (see the top of this file).
struct MergeRules {
    // A lower layer's non-directory under an upper directory of its name: passed over, the
    // directories in the layers below it still merging (the Vfs), or it hides every layer
    // below it (the stack, as overlayfs's lower layers).
    bool non_directory_hides_below = false;
    // A lower layer's error (anything but ENOENT) once an upper layer has answered: passed over
    // (the Vfs: the upper layers answer) or the call's error (the stack).
    bool lower_errors_fail = false;
};

// `name` looked up in the parts of a directory, top first: what the union holds there (one
// layer reference per part found), and the top part's attributes. No part: no layer has it.
// The first error of a part that answers anything but ENOENT before a part found the name is
// the lookup's (ENOTDIR when the top part is no directory); a later one as `rules` say.
struct Merged {
    std::vector<Part> parts;
    Stat stat;
};
Result<Merged> merge_lookup(const std::vector<Part>& dir, std::string_view name,
                            const MergeRules& rules);

// The entries of a (merged) directory: each part's listing in order, the first entry of a name
// winning; one part's listing as it is. The top part's error is the call's; a lower one's as
// `rules` say.
Result<std::vector<DirEntry>> merge_list(const std::vector<Part>& dir, const MergeRules& rules);

class NodeTable {
public:
    using Counter = std::shared_ptr<std::atomic<uint64_t>>;
    // A table with its own id counter, or one drawing from `ids` (a snapshot's, from the live
    // Vfs's: an id never names two objects across a Vfs and its snapshots).
    explicit NodeTable(Counter ids = nullptr);
    NodeTable(const NodeTable&) = delete;
    NodeTable& operator=(const NodeTable&) = delete;
    // Gives back the member references of the nodes still held (the Vfs is going away).
    ~NodeTable();

    // The id of `desc`, with one more reference to it. Each of desc's parts carries one member
    // reference just handed by its member: a new entry keeps them, a known one gives them back.
    uint64_t intern(NodeDesc desc);
    // The description of a held node; null when the id is unknown or let go.
    DescPtr find(uint64_t id) const;
    // Gives back `count` references; the last one erases the entry and forgets its member
    // references.
    void forget(uint64_t id, uint64_t count) noexcept;
    // The number of nodes held (tests).
    std::size_t size() const;
    const Counter& counter() const noexcept { return next_id_; }

    // Copies every node into `frozen` (a snapshot's empty table) under its id, each part mapped
    // by `map` (nullopt: the node has no counterpart there and is left out). The copies are
    // pinned: forget never lets them go, and their parts hold no member reference.
    void copy_into(NodeTable& frozen,
                   const std::function<std::optional<Part>(const Part&)>& map) const;

    // Forgets the one layer reference each part of `desc` holds.
    static void release_parts(const NodeDesc& desc) noexcept;

private:
    struct Slot {
        DescPtr desc;
        uint64_t refs = 0;
        std::string key;
        bool pinned = false;  // a snapshot's copy of a live node
    };
    static std::string key_of(const NodeDesc& desc);

    mutable std::shared_mutex mutex_;
    std::unordered_map<uint64_t, Slot> by_id_;
    std::unordered_map<std::string, uint64_t> by_key_;
    Counter next_id_;
};

}  // namespace packfs::unions
