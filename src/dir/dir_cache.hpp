// The directory-fd cache of the dir backend (DESIGN §7: "cached directory fds").
//
// An entry maps a virtual directory path ("/a/b") to an O_PATH fd of the host directory that
// the path named when it was cached, reached from the root one component at a time through
// directories only (a path through a symlink is never cached, so removing or retargeting a
// symlink can never make an entry stale).
//
// What can make an entry stale is the host: a directory on the path moved (renamed,
// exchanged), removed, or replaced. Each cached directory carries an inotify watch for
// IN_MOVE_SELF, and every entry holds its parent's entry, so every directory on a cached
// path is watched while the entry lives. The kernel queues the event inside the rename
// itself, so an operation that starts after a rename returned sees the event when it asks
// (one FIONREAD ioctl, ~150 ns), and then drops every entry: coherent, not eventually so.
// A removed directory needs no event: a directory fd whose directory was removed answers
// ENOENT to every lookup and create, and the backend then checks its link count and retries
// once from the root (see DirBackend::on_cached).
//
// Without inotify (instance limit reached, no /proc to name an fd by), the cache is off and
// every operation resolves its parent from the root.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/fd.hpp"

namespace packfs::dir {

class DirCache {
public:
    // One cached directory. Holds its parent, so the watches of every directory above stay.
    struct Node {
        Fd fd;
        int wd = -1;
        uint64_t generation = 0;
        std::shared_ptr<const Node> parent;
        DirCache* owner = nullptr;
        mutable std::atomic<bool> referenced{true};  // second-chance eviction
        ~Node();
    };
    using NodePtr = std::shared_ptr<const Node>;

    // `capacity` entries at most (also bounded by a quarter of RLIMIT_NOFILE).
    DirCache(int root_fd, std::size_t capacity);
    ~DirCache();
    DirCache(const DirCache&) = delete;
    DirCache& operator=(const DirCache&) = delete;

    bool enabled() const noexcept { return inotify_.get() >= 0; }

    // The cached fd of the directory at normal path `dir` (not "/"). On a miss, walks from
    // the longest cached prefix with O_PATH|O_DIRECTORY|O_NOFOLLOW and caches each directory.
    // Answers nullptr with error 0 when the path cannot be cached (a component is a symlink
    // or not a directory, or no watch could be added), so the caller resolves it with its
    // PathResolver; a non-zero error (ENOENT, EACCES) is the answer for the path.
    struct Lookup {
        NodePtr node;
        int error = 0;
    };
    Lookup lookup(std::string_view dir);

    // Drops the entry for `dir` (a cached directory found dead, or removed through us).
    void forget(std::string_view dir);

private:
    struct Hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const noexcept {
            return std::hash<std::string_view>{}(s);
        }
    };
    using Map = std::unordered_map<std::string, NodePtr, Hash, std::equal_to<>>;

    // Reads pending inotify events; any but IN_IGNORED makes every entry stale.
    void sync();
    NodePtr find_valid(std::string_view dir, uint64_t generation) const;
    Lookup fill(std::string_view dir, uint64_t generation);
    int add_watch(int fd);
    void release_watch(int wd) noexcept;
    void insert(std::string_view dir, NodePtr node);

    int root_;
    std::size_t capacity_;
    Fd inotify_;
    std::atomic<uint64_t> generation_{1};
    std::mutex events_mutex_;

    mutable std::shared_mutex map_mutex_;
    Map map_;

    std::mutex watch_mutex_;  // watch reference counts: one watch per inode, shared by nodes
    std::unordered_map<int, int> watch_refs_;
};

}  // namespace packfs::dir
