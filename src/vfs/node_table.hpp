// The Vfs's nodes (DESIGN §11, docs/VFS.md "Nodes"): what each node id stands for, interned.
//
// A Vfs node is one of
// - a member node: one node of one member backend, reached through one mount (a Part);
// - a merged directory: a directory that several members of one union have at the same place,
//   top first (the first part answers for it, listings merge them all);
// - a synthetic directory: a path that exists only because something is mounted at or below it
//   (no parts);
// and, when it is a directory that can hold mount points (the root, a mount point, or a
// directory with a mount below it), it also knows its Vfs path, so a lookup in it can notice a
// mount point. Every other node has no path: a member node below a mount never rebuilds one.
//
// The table maps id -> description and description -> id (one id per description while it is
// held). Ids start at 2 (1 is the root, which is not interned: it is described by the current
// mount table), grow monotonically and are never reused: a Vfs and its snapshots draw them
// from one counter. A description holds one reference to each of its parts' member nodes; when
// its Vfs references all go, the entry is erased and those member references are forgotten.
// A snapshot's table starts with the live table's nodes, mapped onto the members' snapshots
// under the same ids (pinned: they live as long as the snapshot).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "packfs/backend.hpp"

namespace packfs::vfs {

// One member node, and the mount it was reached through.
struct Part {
    std::shared_ptr<Backend> backend;  // keeps an unmounted member alive while a node holds it
    uint64_t mount = 0;                // the Member's id: one member at one mount point
    bool writable = false;             // neither the mount nor the backend is read-only
    Node node;                         // the member's node (kRootNode for a mount point)
};

struct NodeDesc {
    // Set for a directory that can hold mount points: its Vfs path. Empty for every other node.
    std::string path;
    // The member nodes it is, top first; more than one only for a merged directory. Empty for a
    // synthetic directory.
    std::vector<Part> parts;

    bool synthetic() const noexcept { return parts.empty(); }
    const Part& top() const noexcept { return parts.front(); }
};
using DescPtr = std::shared_ptr<const NodeDesc>;

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

    // Forgets the one member reference each part of `desc` holds.
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

}  // namespace packfs::vfs
