// The dir backend's node table (dir_nodes.hpp).
#include "dir/dir_nodes.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "core/host_stat.hpp"
#include "packfs/types.hpp"

namespace packfs::dir {

namespace {

constexpr unsigned kIdentityMask = STATX_TYPE | STATX_INO;

// A file handle buffer of the largest size the kernel hands out.
struct HandleBuffer {
    alignas(file_handle) unsigned char bytes[sizeof(file_handle) + MAX_HANDLE_SZ];
    file_handle* get() noexcept { return reinterpret_cast<file_handle*>(bytes); }
};

bool same_object(int fd, uint64_t dev, uint64_t ino, FileType type) noexcept {
    struct statx st;
    if (::statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW | AT_STATX_SYNC_AS_STAT,
                kIdentityMask, &st) != 0)
        return false;
    FileType found = FileType::regular;
    file_type_from_mode_bits(st.stx_mode, found);
    return statx_dev(st) == dev && st.stx_ino == ino && found == type;
}

}  // namespace

uint64_t statx_dev(const struct statx& st) noexcept {
    return makedev(st.stx_dev_major, st.stx_dev_minor);
}

std::size_t default_node_fds() noexcept {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 4096;
    return std::clamp<std::size_t>(static_cast<std::size_t>(limit.rlim_cur) / 4, 32, 4096);
}

NodeTable::NodeTable(int root_fd, std::size_t capacity, bool names)
    : root_fd_(root_fd), capacity_(std::max<std::size_t>(capacity, 8)), names_(names) {
    struct statx st;
    if (::statx(root_fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT, kIdentityMask, &st) == 0) {
        root_dev_ = statx_dev(st);
        root_ino_ = st.stx_ino;
        // A name leading back to the root (a bind mount of it under itself) is the root node.
        by_key_.emplace(Key{root_dev_, root_ino_}, kRootNode.id);
    }
    // Reopening by file handle needs CAP_DAC_READ_SEARCH, and a descriptor of the mount that
    // is not O_PATH: tried once on the root.
    mount_fd_ = Fd(::openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    HandleBuffer h;
    h.get()->handle_bytes = MAX_HANDLE_SZ;
    int mount_id = 0;
    if (mount_fd_ && ::name_to_handle_at(root_fd, "", h.get(), &mount_id, AT_EMPTY_PATH) == 0) {
        const Fd fd(::open_by_handle_at(mount_fd_.get(), h.get(), O_PATH | O_CLOEXEC));
        handles_ = static_cast<bool>(fd);
    }
    if (!handles_) mount_fd_.reset();
}

NodeRef NodeTable::ref_of(uint64_t id, const Slot& slot) const {
    return NodeRef{id, slot.fd->get(), slot.key.dev, slot.key.ino, slot.type, slot.fd};
}

NodeTable::Slot* NodeTable::touch_locked(uint64_t id) {
    auto it = by_id_.find(id);
    if (it == by_id_.end()) return nullptr;
    Slot& slot = it->second;
    if (slot.fd && !slot.pinned) lru_.splice(lru_.begin(), lru_, slot.lru);
    return &slot;
}

std::expected<NodeRef, int> NodeTable::find(uint64_t id) {
    if (id == kRootNode.id)
        return NodeRef{id, root_fd_, root_dev_, root_ino_, FileType::directory, nullptr};
    for (int attempt = 0; attempt < 3; ++attempt) {
        {
            std::lock_guard lock(mu_);
            const Slot* slot = touch_locked(id);
            if (!slot) return std::unexpected(ESTALE);
            if (slot->fd) return ref_of(id, *slot);
        }
        if (int e = reopen(id)) return std::unexpected(e);
        // Reopened and cached; an eviction racing with it sends us round once more.
    }
    return std::unexpected(ESTALE);
}

std::expected<NodeRef, int> NodeTable::find_for_one_call(uint64_t id) {
    if (id == kRootNode.id) return find(id);
    uint64_t parent = 0;
    std::string name;
    Key key;
    FileType type = FileType::regular;
    {
        std::lock_guard lock(mu_);
        const Slot* slot = touch_locked(id);
        if (!slot) return std::unexpected(ESTALE);
        if (slot->fd) return ref_of(id, *slot);
        parent = slot->parent;
        name = slot->name;
        key = slot->key;
        type = slot->type;
    }
    if (parent != 0) {
        if (auto dir = find(parent)) {
            Fd fd = open_with_room(
                [&] { return ::openat(dir->fd, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC); });
            if (fd && same_object(fd.get(), key.dev, key.ino, type)) {
                auto keep = std::make_shared<const Fd>(std::move(fd));
                return NodeRef{id, keep->get(), key.dev, key.ino, type, std::move(keep)};
            }
        }
    }
    return find(id);  // the whole way: moved (by its handle), or ESTALE
}

int NodeTable::reopen(uint64_t id) {
    // The nodes without an fd from `id` up to the nearest one with an fd (or the root, or one
    // with no name known), then opened top down, each in its parent's fd.
    struct Step {
        uint64_t id;
        Key key;
        FileType type;
        std::string name;  // empty: no name known (by handle only)
        std::shared_ptr<const Handle> handle;
    };
    std::vector<Step> chain;
    std::shared_ptr<const Fd> dir_keep;
    int dir_fd = -1;
    {
        std::lock_guard lock(mu_);
        for (uint64_t at = id;;) {
            if (at == kRootNode.id) {
                dir_fd = root_fd_;
                break;
            }
            auto it = by_id_.find(at);
            if (it == by_id_.end()) return ESTALE;
            const Slot& s = it->second;
            if (s.fd) {
                dir_fd = s.fd->get();
                dir_keep = s.fd;
                break;
            }
            if (chain.size() > by_id_.size()) return ELOOP;  // never: locate_locked makes no cycle
            chain.push_back(Step{at, s.key, s.type, s.parent ? s.name : std::string(), s.handle});
            if (s.parent == 0) break;
            at = s.parent;
        }
    }
    for (auto step = chain.rbegin(); step != chain.rend(); ++step) {
        Fd fd;
        if (dir_fd >= 0 && !step->name.empty()) {
            fd = open_with_room([&] {
                return ::openat(dir_fd, step->name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
            });
            if (fd && !same_object(fd.get(), step->key.dev, step->key.ino, step->type)) fd.reset();
        }
        if (!fd && handles_ && step->handle) {
            // Moved or renamed behind our back: the object itself, by its file handle.
            HandleBuffer h;
            h.get()->handle_bytes = static_cast<unsigned>(step->handle->bytes.size());
            h.get()->handle_type = step->handle->type;
            std::memcpy(h.get()->f_handle, step->handle->bytes.data(), step->handle->bytes.size());
            fd = Fd(::open_by_handle_at(mount_fd_.get(), h.get(), O_PATH | O_CLOEXEC));
            if (fd && !same_object(fd.get(), step->key.dev, step->key.ino, step->type)) fd.reset();
        }
        if (!fd) return ESTALE;
        auto keep = std::make_shared<const Fd>(std::move(fd));
        Evicted evicted;
        {
            std::lock_guard lock(mu_);
            auto it = by_id_.find(step->id);
            if (it == by_id_.end()) return ESTALE;
            Slot& s = it->second;
            if (s.fd) keep = s.fd;  // another call reopened it meanwhile
            else cache_locked(step->id, s, keep, evicted);
        }
        keep_handles(evicted);
        dir_fd = keep->get();
        dir_keep = std::move(keep);
    }
    return 0;
}

void NodeTable::cache_locked(uint64_t id, Slot& slot, std::shared_ptr<const Fd> fd,
                             Evicted& evicted) {
    slot.fd = std::move(fd);
    if (slot.pinned) return;  // kept until forgotten, outside the LRU
    lru_.push_front(id);
    slot.lru = lru_.begin();
    if (++cached_ > capacity_) evict_locked(capacity_ - capacity_ / 8, evicted);
}

void NodeTable::evict_locked(std::size_t keep, Evicted& evicted) {
    // Safe whatever calls are in flight: a call keeps its fd by shared_ptr.
    while (cached_ > keep && !lru_.empty()) {
        const uint64_t id = lru_.back();
        lru_.pop_back();
        --cached_;
        Slot& s = by_id_.at(id);
        evicted.push_back(EvictedFd{id, s.type == FileType::directory, std::move(s.fd)});
    }
}

void NodeTable::uncache_locked(Slot& slot) {
    if (!slot.fd || slot.pinned) return;
    lru_.erase(slot.lru);
    --cached_;
}

void NodeTable::keep_handles(Evicted& evicted) {
    if (!handles_) return;  // the fds close as `evicted` goes
    for (auto& [id, dir, fd] : evicted) {
        // Directories only: a process's working directory is reached by node and nothing else,
        // while a file's node the kernel looks up again by name once it is found stale.
        if (!dir) continue;
        HandleBuffer h;
        h.get()->handle_bytes = MAX_HANDLE_SZ;
        int mount_id = 0;
        if (::name_to_handle_at(fd->get(), "", h.get(), &mount_id, AT_EMPTY_PATH) != 0) continue;
        auto handle = std::make_shared<Handle>();
        handle->type = h.get()->handle_type;
        handle->bytes.assign(h.get()->f_handle, h.get()->f_handle + h.get()->handle_bytes);
        std::lock_guard lock(mu_);
        if (auto it = by_id_.find(id); it != by_id_.end()) it->second.handle = std::move(handle);
    }
}

uint64_t NodeTable::locate_locked(uint64_t id, Slot& slot, uint64_t parent,
                                  std::string_view name) {
    if (slot.parent == parent && slot.name == name) return 0;
    // Never a cycle of parents (a bind mount of a directory below itself could make one): such
    // a name is not taken, and the node keeps the one it had. A node no other is located in
    // (a new one, a file) is nobody's ancestor: only `parent` itself could be it.
    if (parent == id) return 0;
    for (uint64_t at = parent; slot.children != 0 && at != 0 && at != kRootNode.id;) {
        if (at == id) return 0;
        auto it = by_id_.find(at);
        if (it == by_id_.end()) break;
        at = it->second.parent;
    }
    const uint64_t left = slot.parent;
    if (left != 0) {
        if (names_) {
            auto named = by_name_.find(NameView{left, slot.name});
            if (named != by_name_.end() && named->second == id) by_name_.erase(named);
        }
        if (auto p = by_id_.find(left); p != by_id_.end()) --p->second.children;
    }
    slot.parent = parent;
    slot.name.assign(name);
    if (parent != 0) {
        if (names_) by_name_.insert_or_assign(NameKey{parent, std::string(name)}, id);
        if (auto p = by_id_.find(parent); p != by_id_.end()) ++p->second.children;
    }
    return left;
}

void NodeTable::drop_if_unused_locked(uint64_t id, std::vector<std::shared_ptr<const Fd>>& closed) {
    while (id != 0 && id != kRootNode.id) {
        auto it = by_id_.find(id);
        if (it == by_id_.end()) return;
        Slot& s = it->second;
        if (s.refs != 0 || s.children != 0) return;
        const uint64_t parent = s.parent;
        if (parent != 0) {
            auto named = by_name_.find(NameView{parent, s.name});
            if (named != by_name_.end() && named->second == id) by_name_.erase(named);
        }
        uncache_locked(s);
        if (s.fd) closed.push_back(std::move(s.fd));
        if (auto k = by_key_.find(s.key); k != by_key_.end() && k->second == id) by_key_.erase(k);
        by_id_.erase(it);
        if (parent == 0) return;
        if (auto p = by_id_.find(parent); p != by_id_.end()) --p->second.children;
        id = parent;
    }
}

uint64_t NodeTable::intern(Fd fd, const struct statx& st, uint64_t parent, std::string_view name) {
    const Key key{statx_dev(st), st.stx_ino};
    FileType type = FileType::regular;
    file_type_from_mode_bits(st.stx_mode, type);
    auto owned = fd ? std::make_shared<const Fd>(std::move(fd)) : nullptr;
    Evicted evicted;  // closed (and their handles kept) after the lock is released
    std::shared_ptr<const Fd> unused;
    std::vector<std::shared_ptr<const Fd>> closed;
    uint64_t id = 0;
    uint64_t left = 0;  // the directory it was known in before, if that changed
    {
        std::lock_guard lock(mu_);
        if (auto it = by_key_.find(key); it != by_key_.end()) {
            if (it->second == kRootNode.id) return kRootNode.id;
            Slot& slot = by_id_.at(it->second);
            if (slot.type == type) {
                ++slot.refs;
                left = locate_locked(it->second, slot, parent, name);
                if (slot.fd) {
                    unused = std::move(owned);
                    if (!slot.pinned) lru_.splice(lru_.begin(), lru_, slot.lru);
                } else if (owned) {
                    cache_locked(it->second, slot, std::move(owned), evicted);
                }
                id = it->second;
            }
            // Else not the object held under that number (a host filesystem reusing numbers
            // of objects it still has open): the new one takes the key, the old keeps its id
            // until forgotten.
        }
        if (id == 0) {
            id = next_id_++;
            Slot& slot = by_id_[id];
            slot.key = key;
            slot.type = type;
            slot.refs = 1;
            by_key_.insert_or_assign(key, id);
            locate_locked(id, slot, parent, name);
            if (owned) cache_locked(id, slot, std::move(owned), evicted);
        }
        drop_if_unused_locked(left, closed);  // its ancestors only: never `id`
    }
    keep_handles(evicted);
    return id;
}

bool NodeTable::hold(uint64_t id) {
    if (id == kRootNode.id) return true;
    std::lock_guard lock(mu_);
    auto it = by_id_.find(id);
    if (it == by_id_.end()) return false;
    ++it->second.refs;
    return true;
}

void NodeTable::forget(uint64_t id, uint64_t count) noexcept {
    if (id == kRootNode.id || count == 0) return;
    std::vector<std::shared_ptr<const Fd>> closed;  // closed outside the lock
    std::lock_guard lock(mu_);
    auto it = by_id_.find(id);
    if (it == by_id_.end()) return;
    Slot& slot = it->second;
    slot.refs -= std::min(count, slot.refs);
    if (slot.refs == 0) drop_if_unused_locked(id, closed);
}

uint64_t NodeTable::removing(uint64_t dir, std::string_view name) {
    uint64_t id = 0;
    for (int attempt = 0; attempt < 2; ++attempt) {
        {
            std::lock_guard lock(mu_);
            auto named = by_name_.find(NameView{dir, name});
            if (named == by_name_.end()) return 0;
            id = named->second;
            Slot& slot = by_id_.at(id);
            if (slot.fd) {
                if (!slot.pinned) {
                    lru_.erase(slot.lru);
                    --cached_;
                    slot.pinned = true;
                }
                return id;
            }
        }
        // Evicted: opened again while its name still leads to it.
        if (!find(id)) return 0;
    }
    return 0;
}

void NodeTable::removed(uint64_t id) noexcept {
    std::vector<std::shared_ptr<const Fd>> closed;
    std::lock_guard lock(mu_);
    auto it = by_id_.find(id);
    if (it == by_id_.end()) return;
    drop_if_unused_locked(locate_locked(id, it->second, 0, {}), closed);
}

void NodeTable::unpin(uint64_t id) noexcept {
    Evicted evicted;
    {
        std::lock_guard lock(mu_);
        auto it = by_id_.find(id);
        if (it == by_id_.end() || !it->second.pinned) return;
        Slot& slot = it->second;
        slot.pinned = false;
        if (!slot.fd) return;
        lru_.push_front(id);
        slot.lru = lru_.begin();
        if (++cached_ > capacity_) evict_locked(capacity_ - capacity_ / 8, evicted);
    }
    keep_handles(evicted);
}

void NodeTable::renamed(uint64_t dir, std::string_view name, uint64_t to_dir,
                        std::string_view to_name, bool exchange) {
    std::vector<std::shared_ptr<const Fd>> closed;  // closed after the lock is released
    std::lock_guard lock(mu_);
    auto id_at = [&](uint64_t d, std::string_view n) -> uint64_t {
        auto named = by_name_.find(NameView{d, n});
        return named == by_name_.end() ? 0 : named->second;
    };
    const uint64_t moved = id_at(dir, name);
    const uint64_t other = id_at(to_dir, to_name);  // replaced (pinned by removing), or exchanged
    const std::string from_name(name), dest_name(to_name);
    if (other != 0) locate_locked(other, by_id_.at(other), 0, {});
    if (moved != 0) locate_locked(moved, by_id_.at(moved), to_dir, dest_name);
    if (exchange && other != 0) locate_locked(other, by_id_.at(other), dir, from_name);
    // The two directories are held by the caller; should one not be, it goes now.
    drop_if_unused_locked(dir, closed);
    drop_if_unused_locked(to_dir, closed);
}

void NodeTable::make_room() {
    Evicted evicted;
    {
        std::lock_guard lock(mu_);
        evict_locked(cached_ / 2, evicted);
    }
    keep_handles(evicted);
}

}  // namespace packfs::dir
