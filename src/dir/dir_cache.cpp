#include "dir/dir_cache.hpp"

#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace packfs::dir {
namespace {

// A quarter of the process's fd limit at most: the cache must never be why an application
// runs out of descriptors.
std::size_t bounded_capacity(std::size_t wanted) {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
        wanted = std::min<std::size_t>(wanted, limit.rlim_cur / 4);
    }
    return std::max<std::size_t>(wanted, 1);
}

}  // namespace

DirCache::Node::~Node() {
    if (owner != nullptr && wd >= 0) owner->release_watch(wd);
}

DirCache::DirCache(int root_fd, std::size_t capacity)
    : root_(root_fd), capacity_(bounded_capacity(capacity)) {
    if (capacity == 0) return;
    inotify_ = Fd(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    map_.reserve(capacity_);
}

DirCache::~DirCache() {
    std::unique_lock lock(map_mutex_);
    map_.clear();  // the nodes release their watches while the inotify fd is still open
}

void DirCache::sync() {
    int pending = 0;
    if (::ioctl(inotify_.get(), FIONREAD, &pending) != 0 || pending == 0) return;
    std::lock_guard lock(events_mutex_);
    alignas(inotify_event) char buf[8192];
    bool stale = false;
    for (;;) {
        ssize_t n = ::read(inotify_.get(), buf, sizeof buf);
        if (n <= 0) break;
        for (ssize_t at = 0; at < n;) {
            const auto* event = reinterpret_cast<const inotify_event*>(buf + at);
            // IN_IGNORED only says a watch went (ours removed, or its inode gone).
            if (!(event->mask & IN_IGNORED)) stale = true;
            at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
        }
    }
    if (stale) generation_.fetch_add(1, std::memory_order_acq_rel);
}

DirCache::NodePtr DirCache::find_valid(std::string_view dir, uint64_t generation) const {
    std::shared_lock lock(map_mutex_);
    auto it = map_.find(dir);
    if (it == map_.end() || it->second->generation != generation) return nullptr;
    it->second->referenced.store(true, std::memory_order_relaxed);
    return it->second;
}

DirCache::Lookup DirCache::lookup(std::string_view dir) {
    if (!enabled()) return {};
    sync();
    const uint64_t generation = generation_.load(std::memory_order_acquire);
    if (NodePtr node = find_valid(dir, generation)) return {std::move(node), 0};
    return fill(dir, generation);
}

DirCache::Lookup DirCache::fill(std::string_view dir, uint64_t generation) {
    // The longest prefix already cached: the walk starts below it.
    NodePtr base;
    std::size_t done = dir.size();
    while (done > 0) {
        base = find_valid(dir.substr(0, done), generation);
        if (base) break;
        done = dir.rfind('/', done - 1);
    }
    while (done < dir.size()) {
        const std::size_t start = done + 1;
        std::size_t end = dir.find('/', start);
        if (end == std::string_view::npos) end = dir.size();
        const std::string name(dir.substr(start, end - start));
        const int at = base ? base->fd.get() : root_;
        Fd fd(::openat(at, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!fd) {
            // Missing or forbidden is the answer whatever the mode; a symlink or a file
            // (ENOTDIR) is for the resolver to judge.
            if (errno == ENOENT || errno == EACCES) return {nullptr, errno};
            return {};
        }
        const int wd = add_watch(fd.get());
        if (wd < 0) return {};
        // The watch exists now; check the name still leads to this directory, so a move
        // between the open and the watch cannot go unseen.
        struct stat named, opened;
        if (::fstatat(at, name.c_str(), &named, AT_SYMLINK_NOFOLLOW) != 0 ||
            ::fstat(fd.get(), &opened) != 0 || named.st_ino != opened.st_ino ||
            named.st_dev != opened.st_dev) {
            release_watch(wd);
            return {};
        }
        auto node = std::make_shared<Node>();
        node->fd = std::move(fd);
        node->wd = wd;
        node->generation = generation;
        node->parent = std::move(base);
        node->owner = this;
        base = node;
        insert(dir.substr(0, end), std::move(node));
        done = end;
    }
    return {std::move(base), 0};
}

int DirCache::add_watch(int fd) {
    const std::string path = fmt::format("/proc/self/fd/{}", fd);
    const int wd = ::inotify_add_watch(inotify_.get(), path.c_str(),
                                       IN_MOVE_SELF | IN_DELETE_SELF | IN_ONLYDIR);
    if (wd < 0) return -1;
    std::lock_guard lock(watch_mutex_);
    ++watch_refs_[wd];
    return wd;
}

void DirCache::release_watch(int wd) noexcept {
    std::lock_guard lock(watch_mutex_);
    auto it = watch_refs_.find(wd);
    if (it == watch_refs_.end() || --it->second > 0) return;
    watch_refs_.erase(it);
    ::inotify_rm_watch(inotify_.get(), wd);  // EINVAL if the inode went first: harmless
}

void DirCache::insert(std::string_view dir, NodePtr node) {
    std::vector<NodePtr> evicted;  // destroyed after the lock is released
    std::unique_lock lock(map_mutex_);
    if (map_.size() >= capacity_ && map_.find(dir) == map_.end()) {
        // Second chance: drop what is stale or was not used since the last sweep.
        const uint64_t current = generation_.load(std::memory_order_acquire);
        for (auto it = map_.begin(); it != map_.end();) {
            const Node& n = *it->second;
            if (n.generation != current || !n.referenced.exchange(false)) {
                evicted.push_back(std::move(it->second));
                it = map_.erase(it);
            } else {
                ++it;
            }
        }
        if (map_.size() >= capacity_) {  // everything was in use: drop half, whichever
            for (auto it = map_.begin(); it != map_.end() && map_.size() > capacity_ / 2;) {
                evicted.push_back(std::move(it->second));
                it = map_.erase(it);
            }
        }
    }
    auto [it, inserted] = map_.try_emplace(std::string(dir), node);
    if (!inserted) {
        evicted.push_back(std::move(it->second));
        it->second = std::move(node);
    }
    lock.unlock();
}

void DirCache::forget(std::string_view dir) {
    NodePtr gone;
    std::unique_lock lock(map_mutex_);
    auto it = map_.find(dir);
    if (it == map_.end()) return;
    gone = std::move(it->second);
    map_.erase(it);
}

}  // namespace packfs::dir
