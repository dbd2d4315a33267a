// The dir backend's node table (DESIGN §7, docs/DIR.md "Nodes"): what a Node of a host
// directory is. The passthrough model of libfuse's passthrough_ll: a node holds an
// O_PATH|O_NOFOLLOW file descriptor of its host object, so every node call is an fd-based
// syscall and never builds a path (trees deeper than PATH_MAX work through nodes).
//
// - Objects are interned by their host (st_dev, st_ino): while held, one object (a file under
//   several hard links too) has one id. An fd held open keeps its inode, so its number cannot
//   be given to another object meanwhile.
// - Ids come from a counter and are never reused; the root is kRootNode (the backend's root
//   fd, borrowed), held forever.
// - Every interning adds one reference; forget(id, n) gives n back, and the last one closes
//   the fd (once no call in flight still uses it: calls hold the entry by shared_ptr, so a
//   racing forget can never make a call act on an fd number reused for another file).
// - Thread-safe: one mutex over two hash maps, held only for the map operations.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "core/fd.hpp"
#include "packfs/types.hpp"

namespace packfs::dir {

// One host object held by the table.
struct DirNode {
    Fd owned;          // the O_PATH fd (empty for the root, whose fd is the backend's)
    int fd = -1;       // the fd to act through
    uint64_t dev = 0;  // host identity
    uint64_t ino = 0;
    FileType type = FileType::regular;

    bool is_dir() const noexcept { return type == FileType::directory; }
};

class NodeTable {
public:
    using Ref = std::shared_ptr<const DirNode>;

    // `root_fd` (borrowed; an O_PATH fd of the root directory) becomes kRootNode.
    explicit NodeTable(int root_fd);
    NodeTable(const NodeTable&) = delete;
    NodeTable& operator=(const NodeTable&) = delete;

    // The object of `id`, or nullptr when no such node is held (ESTALE).
    Ref find(uint64_t id) const;

    // The id of the object that `fd` (taken over; any fd of it, O_PATH for preference) and its
    // statx `st` describe, with one more reference. An object already held keeps its id and fd
    // (the new fd is closed).
    uint64_t intern(Fd fd, const struct statx& st);

    // One more reference to the held node `id`; false when it is not held.
    bool hold(uint64_t id);

    // Gives back `count` references of `id`; the last one drops the node. The root and
    // unknown ids are ignored.
    void forget(uint64_t id, uint64_t count) noexcept;

private:
    struct Key {
        uint64_t dev = 0;
        uint64_t ino = 0;
        friend bool operator==(const Key&, const Key&) = default;
    };
    struct KeyHash {
        std::size_t operator()(const Key& k) const noexcept {
            return std::hash<uint64_t>{}(k.ino * 0x9e3779b97f4a7c15ull ^ k.dev);
        }
    };
    struct Slot {
        Ref node;
        uint64_t refs = 0;
    };

    mutable std::mutex mu_;
    uint64_t next_id_ = 2;  // kRootNode is 1
    Ref root_;
    std::unordered_map<uint64_t, Slot> by_id_;
    std::unordered_map<Key, uint64_t, KeyHash> by_key_;
};

// The host (st_dev) of a statx record, as one number.
uint64_t statx_dev(const struct statx& st) noexcept;

}  // namespace packfs::dir
