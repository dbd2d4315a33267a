// The dir backend's node table (dir_nodes.hpp).
#include "dir/dir_nodes.hpp"

#include <fcntl.h>
#include <sys/sysmacros.h>

#include <utility>

#include "core/host_stat.hpp"
#include "packfs/types.hpp"

namespace packfs::dir {

uint64_t statx_dev(const struct statx& st) noexcept {
    return makedev(st.stx_dev_major, st.stx_dev_minor);
}

NodeTable::NodeTable(int root_fd) {
    auto root = std::make_shared<DirNode>();
    root->fd = root_fd;
    root->type = FileType::directory;
    struct statx st;
    if (::statx(root_fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT, STATX_TYPE | STATX_INO, &st) ==
        0) {
        root->dev = statx_dev(st);
        root->ino = st.stx_ino;
        // A name leading back to the root (a bind mount of it under itself) is the root node.
        by_key_.emplace(Key{root->dev, root->ino}, kRootNode.id);
    }
    root_ = std::move(root);
}

NodeTable::Ref NodeTable::find(uint64_t id) const {
    if (id == kRootNode.id) return root_;
    std::lock_guard lock(mu_);
    auto it = by_id_.find(id);
    return it == by_id_.end() ? nullptr : it->second.node;
}

uint64_t NodeTable::intern(Fd fd, const struct statx& st) {
    const Key key{statx_dev(st), st.stx_ino};
    FileType type = FileType::regular;
    file_type_from_mode_bits(st.stx_mode, type);
    Fd unused;  // closed after the lock is released
    std::lock_guard lock(mu_);
    if (auto it = by_key_.find(key); it != by_key_.end()) {
        if (it->second == kRootNode.id) {
            unused = std::move(fd);
            return kRootNode.id;
        }
        Slot& slot = by_id_.at(it->second);
        if (slot.node->type == type) {
            ++slot.refs;
            unused = std::move(fd);
            return it->second;
        }
        // Not the object held under that number (a host filesystem reusing numbers of objects
        // it still has open): the new one takes the key, the old keeps its id until forgotten.
    }
    auto node = std::make_shared<DirNode>();
    node->fd = fd.get();
    node->owned = std::move(fd);
    node->dev = key.dev;
    node->ino = key.ino;
    node->type = type;
    const uint64_t id = next_id_++;
    by_id_.emplace(id, Slot{std::move(node), 1});
    by_key_.insert_or_assign(key, id);
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
    Ref dropped;  // the fd closes outside the lock (or after the last call using it)
    std::lock_guard lock(mu_);
    auto it = by_id_.find(id);
    if (it == by_id_.end()) return;
    Slot& slot = it->second;
    if (slot.refs > count) {
        slot.refs -= count;
        return;
    }
    dropped = std::move(slot.node);
    if (auto k = by_key_.find(Key{dropped->dev, dropped->ino}); k != by_key_.end() && k->second == id)
        by_key_.erase(k);
    by_id_.erase(it);
}

}  // namespace packfs::dir
