#include "mem/mem_state.hpp"

#include <algorithm>

#include "mem/mem_edit.hpp"

namespace packfs::mem {

MemState::MemState(const MemOptions& options, LowerPtr lower, uint64_t next_ino)
    : options_(options), current_(nullptr) {
    Tree tree;
    if (lower) {
        // The root and everything else come from the lower until they change.
        tree.next_ino = std::max<uint64_t>({lower->ino_limit(), kRootIno + 1, next_ino});
        tree.lower = std::move(lower);
        published_ = std::make_shared<const Tree>(std::move(tree));
        current_.store(published_);
        return;
    }
    auto root = std::make_shared<Inode>();
    root->ino = kRootIno;
    root->type = FileType::directory;
    root->mode = options.root_mode & 07777;
    root->uid = options.uid;
    root->gid = options.gid;
    root->nlink = 2;
    root->atime = root->mtime = root->ctime = Time::now();
    tree.inodes.insert_or_assign(kRootIno, std::move(root));
    published_ = std::make_shared<const Tree>(std::move(tree));
    current_.store(published_);
}

void MemState::publish(Tree&& next) {
    published_ = std::make_shared<const Tree>(std::move(next));
    current_.store(published_);
}

void MemState::restore(TreePtr version) {
    std::lock_guard writer_lock(writer_);
    std::lock_guard open_lock(open_mutex_);
    Tree next = *version;
    for (const auto& [ino, count] : open_counts_) {
        bool present = false;
        try {
            present = bool(next.node(ino));
        } catch (const LowerFault&) {
            present = false;
        }
        if (present) continue;
        std::shared_ptr<Inode> orphan;
        try {
            if (const Inode* held = published_->inode(ino)) {
                orphan = std::make_shared<Inode>(*held);
            } else if (const NodeRef node = published_->node(ino); node && published_->lower) {
                orphan = copy_up(*published_->lower, node.lower);  // only in the old lower
            }
        } catch (const LowerFault&) {
            orphan = nullptr;
        }
        if (!orphan) continue;  // nothing to carry: the handle's reads will answer ESTALE
        orphan->nlink = 0;
        next.bytes_used += orphan->content.allocated();
        next.inodes.insert_or_assign(ino, std::move(orphan));
    }
    publish(std::move(next));
}

bool MemState::acquire_handle(uint64_t ino, const Tree* seen) {
    {
        std::lock_guard lock(open_mutex_);
        ++open_counts_[ino];
    }
    bool exists = false;
    try {
        const TreePtr now = load();
        exists = now.get() == seen || bool(now->node(ino));
    } catch (const LowerFault&) {
        exists = false;
    }
    if (exists) return true;
    release_handle(ino);
    return false;
}

void MemState::acquire_handle_locked(uint64_t ino) {
    std::lock_guard lock(open_mutex_);
    ++open_counts_[ino];
}

void MemState::release_handle(uint64_t ino) {
    {
        std::lock_guard lock(open_mutex_);
        auto it = open_counts_.find(ino);
        if (it == open_counts_.end()) return;
        if (--it->second > 0) return;
        open_counts_.erase(it);
    }
    // The last handle: free the inode if it was unlinked while open. Only an orphan needs the
    // writer's lock, and an orphan is an inode of the tree's own with no link: a look at the
    // published version (no lock) spares every other close the writer's lock. (An unlink
    // that comes after this point sees no handle and frees the inode itself.)
    {
        const TreePtr now = load();
        const Inode* inode = now->inode(ino);
        if (!inode || inode->nlink != 0) return;
    }
    std::lock_guard writer_lock(writer_);
    std::lock_guard open_lock(open_mutex_);
    if (open_counts_.contains(ino)) return;  // reopened meanwhile (possible only while linked)
    const Inode* inode = published_->inode(ino);
    if (!inode || inode->nlink != 0) return;
    Tree next = *published_;
    forget_inode(next, ino);
    publish(std::move(next));
}

}  // namespace packfs::mem
