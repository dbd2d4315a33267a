// The dir backend's node table (DESIGN §7, docs/DIR.md "Nodes"): what a Node of a host
// directory is. The passthrough model of libfuse's passthrough_ll, with its pitfall removed: a
// node does not pin a descriptor for as long as it is held.
//
// - A node is an identity: its host (st_dev, st_ino) and type, and where it was last seen (its
//   parent node and its name there). Objects are interned by (st_dev, st_ino): while held, one
//   object (a file under several hard links too) has one id. Ids come from a counter and are
//   never reused; the root is kRootNode (the backend's root fd, borrowed), held forever.
// - Descriptors are a bounded cache: an O_PATH|O_NOFOLLOW fd per node, at most `capacity` of
//   them (least recently used out first). A node whose fd went is reopened on demand the way a
//   walk would reach it: its parent's fd (reopened the same way, up to a cached ancestor or the
//   root), then openat(parent, name, O_PATH|O_NOFOLLOW), and statx must find the same
//   (st_dev, st_ino) and type; failing that (the host moved or removed it behind our back), by
//   its file handle where the process may open_by_handle_at (root; kept for directories, which
//   a working directory reaches by node alone), else ESTALE. Containment is
//   the walk's: one component at a time from the root, never following a symlink. So a tree of
//   millions of objects the kernel remembers costs at most `capacity` descriptors.
// - Names move with the backend's own namespace calls (renamed(), removing()), so a node's
//   parent and name stay true without a syscall. A held node whose name is about to be removed
//   keeps its fd for good (pinned until forgotten): an unlinked object can only be reached
//   through a descriptor, and fchmod, fstat and fsetxattr of it must keep working.
// - Every interning adds one reference; forget(id, n) gives n back, and the last one drops the
//   node (and its fd, once no call in flight still uses it: calls hold the fd by shared_ptr, so a
//   racing forget or eviction can never make a call act on an fd number reused meanwhile). A
//   node located in a directory keeps that directory's node in the table (not its fd).
// - Thread-safe: one mutex over the maps, never held across a syscall.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <expected>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/fd.hpp"
#include "packfs/types.hpp"

namespace packfs::dir {

// A held node as a call sees it: its identity and an fd of its object to act through, open
// for as long as the NodeRef lives.
struct NodeRef {
    uint64_t id = 0;
    int fd = -1;
    uint64_t dev = 0;  // host identity
    uint64_t ino = 0;
    FileType type = FileType::regular;
    std::shared_ptr<const Fd> keep;  // what keeps `fd` open (null for the root's borrowed fd)

    bool is_dir() const noexcept { return type == FileType::directory; }
};

class NodeTable {
public:
    // `root_fd` (borrowed; an O_PATH fd of the root directory) becomes kRootNode. At most
    // `capacity` node fds stay open (at least 8). Without `names`, nodes are not found by
    // (parent, name): removing() finds none and renamed() moves none, which is right for a
    // backend that makes no removal or rename (a read-only one) and spares it a map.
    NodeTable(int root_fd, std::size_t capacity, bool names = true);
    NodeTable(const NodeTable&) = delete;
    NodeTable& operator=(const NodeTable&) = delete;

    // The node `id` with an fd to act through: the cached one, or its object reopened (see the
    // top). ESTALE when no such node is held, or its object can no longer be found.
    std::expected<NodeRef, int> find(uint64_t id);
    // find() for one use (opening the object for I/O): a node whose fd left the cache is opened
    // from its parent and checked as find() does, but its O_PATH fd lives only as long as the
    // NodeRef, outside the cache, so reading a tree's files once pushes no directory out of it.
    std::expected<NodeRef, int> find_for_one_call(uint64_t id);

    // The id of the object that `fd` (taken over; an O_PATH fd of it) and its statx `st`
    // describe, found as `name` in the directory node `parent`, with one more reference. An
    // object already held keeps its id (the new fd is closed) and is now known by that name.
    // Without an fd (an empty `fd`: the object was stated by name, not opened), a new node
    // starts as an evicted one does, reopened from `parent` and `name` when first used.
    uint64_t intern(Fd fd, const struct statx& st, uint64_t parent, std::string_view name);

    // One more reference to the held node `id`; false when it is not held.
    bool hold(uint64_t id);

    // Gives back `count` references of `id`; the last one drops the node. The root and
    // unknown ids are ignored.
    void forget(uint64_t id, uint64_t count) noexcept;

    // `name` in directory `dir` is about to go (unlink, rmdir, rename over it): a held node
    // known by that name gets an fd it keeps until forgotten. Answers that node's id (0: none),
    // for unpin() should the removal fail.
    uint64_t removing(uint64_t dir, std::string_view name);
    // The removal succeeded: the node is known by no name (it keeps its fd), or failed: it
    // goes back to the cache.
    void removed(uint64_t id) noexcept;
    void unpin(uint64_t id) noexcept;
    // A rename through the backend succeeded: the node known as (dir, name) is now (to_dir,
    // to_name); with `exchange`, the one known as (to_dir, to_name) is now (dir, name).
    void renamed(uint64_t dir, std::string_view name, uint64_t to_dir, std::string_view to_name,
                 bool exchange);

    // After EMFILE/ENFILE: closes half the cached fds, so the caller can retry.
    void make_room();

    // `open()` (an fd, or -1 with errno) as an Fd; when the process is out of descriptors, the
    // cache gives half of its own back and it is tried once more. Every open the dir backend
    // makes goes through here, so EMFILE from the cache never reaches a caller.
    template <class Open>
    Fd open_with_room(Open&& open) {
        Fd fd(open());
        if (!fd && (errno == EMFILE || errno == ENFILE)) {
            make_room();
            fd = Fd(open());
        }
        return fd;
    }

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
    // (parent node, name): where a node was last seen. Looked up with a string_view name.
    struct NameKey {
        uint64_t parent = 0;
        std::string name;
    };
    struct NameView {
        uint64_t parent = 0;
        std::string_view name;
    };
    struct NameHash {
        using is_transparent = void;
        std::size_t operator()(const NameView& k) const noexcept {
            return std::hash<std::string_view>{}(k.name) ^ (k.parent * 0x9e3779b97f4a7c15ull);
        }
        std::size_t operator()(const NameKey& k) const noexcept {
            return (*this)(NameView{k.parent, k.name});
        }
    };
    struct NameEq {
        using is_transparent = void;
        static NameView view(const NameKey& k) noexcept { return {k.parent, k.name}; }
        static NameView view(const NameView& k) noexcept { return k; }
        template <class A, class B>
        bool operator()(const A& a, const B& b) const noexcept {
            return view(a).parent == view(b).parent && view(a).name == view(b).name;
        }
    };
    // A file handle (name_to_handle_at), taken when the node's fd is evicted.
    struct Handle {
        int type = 0;
        std::vector<unsigned char> bytes;
    };
    struct Slot {
        Key key;
        FileType type = FileType::regular;
        uint64_t refs = 0;      // references handed out
        uint64_t children = 0;  // nodes located in this one (keep it in the table)
        uint64_t parent = 0;    // 0: no name known (the root, or moved away)
        std::string name;
        std::shared_ptr<const Fd> fd;  // null: not open (evicted)
        bool pinned = false;           // keeps its fd (not in lru_)
        std::list<uint64_t>::iterator lru;
        std::shared_ptr<const Handle> handle;
    };
    struct EvictedFd {
        uint64_t id;
        bool dir;
        std::shared_ptr<const Fd> fd;
    };
    using Evicted = std::vector<EvictedFd>;

    NodeRef ref_of(uint64_t id, const Slot& slot) const;
    // The slot of `id` (null: none), first in the LRU when it holds an fd (under mu_).
    Slot* touch_locked(uint64_t id);
    // Under mu_: the slot's fd joins the cache (most recently used); past capacity, the least
    // recently used unused fds are taken out into `evicted` (closed by the caller, unlocked).
    void cache_locked(uint64_t id, Slot& slot, std::shared_ptr<const Fd> fd, Evicted& evicted);
    void evict_locked(std::size_t keep, Evicted& evicted);
    void uncache_locked(Slot& slot);
    // Under mu_: where `id` is known, set to (parent, name) (or nowhere for parent 0). Answers
    // the directory it was known in before when that changed (0 otherwise), which may now be
    // unused (drop_if_unused_locked).
    uint64_t locate_locked(uint64_t id, Slot& slot, uint64_t parent, std::string_view name);
    // Under mu_: drops `id` if nothing holds it any more (and so on up its parents).
    void drop_if_unused_locked(uint64_t id, std::vector<std::shared_ptr<const Fd>>& closed);
    // Outside mu_: file handles for the fds just evicted, stored in their slots.
    void keep_handles(Evicted& evicted);
    // Outside mu_: opens `id`'s object again (see the top); 0 or errno.
    int reopen(uint64_t id);

    const int root_fd_;
    const std::size_t capacity_;
    const bool names_;  // by_name_ is kept
    bool handles_ = false;  // open_by_handle_at works here (CAP_DAC_READ_SEARCH)
    Fd mount_fd_;           // for open_by_handle_at (an O_RDONLY fd of the root)
    uint64_t root_dev_ = 0;
    uint64_t root_ino_ = 0;

    mutable std::mutex mu_;
    uint64_t next_id_ = 2;  // kRootNode is 1
    std::size_t cached_ = 0;  // fds in lru_
    std::unordered_map<uint64_t, Slot> by_id_;
    std::unordered_map<Key, uint64_t, KeyHash> by_key_;
    std::unordered_map<NameKey, uint64_t, NameHash, NameEq> by_name_;
    std::list<uint64_t> lru_;  // cached fds, most recently used first
};

// The host (st_dev) of a statx record, as one number.
uint64_t statx_dev(const struct statx& st) noexcept;

// How many node fds a backend keeps when not told (DirOptions::node_fds): a quarter of
// RLIMIT_NOFILE's soft limit, between 32 and 4,096.
std::size_t default_node_fds() noexcept;

}  // namespace packfs::dir
