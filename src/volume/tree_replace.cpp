// Node references, counted so that they move, and replacing the volume's tree after a journal
// failure (docs/VOLUME.md, "Replacing the tree"): node references and open files moved to the
// new tree by inode number, unnamed objects left on the old one, the tree made again from the
// pack and the journal.
#include "volume/volume_impl.hpp"

namespace packfs::volume {

std::shared_ptr<Backend> VolumeImpl::current_tree() const {
    std::lock_guard lock(mu_);
    return tree_owner_;
}

std::shared_ptr<Backend> VolumeImpl::tree_for_locked(Node node) const {
    if (has_orphans_.load(std::memory_order_acquire)) {
        std::lock_guard lock(held_mu_);
        if (auto it = orphans_.find(node.id); it != orphans_.end()) return it->second;
    }
    return tree_owner_;
}

std::shared_ptr<Backend> VolumeImpl::unnamed_tree(Node node) const {
    if (!has_orphans_.load(std::memory_order_acquire)) return nullptr;
    std::shared_lock no_replacement(nodes_mu_);
    auto tree = tree_for_locked(node);
    return tree != tree_owner_ ? tree : nullptr;
}

void VolumeImpl::add_file(VolumeFile* file) {
    std::lock_guard lock(held_mu_);
    files_.insert(file);
}

void VolumeImpl::remove_file(VolumeFile* file) noexcept {
    std::lock_guard lock(held_mu_);
    files_.erase(file);
}

void VolumeImpl::release_tree(std::shared_ptr<Backend> old) noexcept {
    rcu::synchronize();
    old.reset();
}

std::shared_ptr<Backend> VolumeImpl::replace_tree_locked(std::shared_ptr<Overlay> next) {
    std::unique_lock nodes(nodes_mu_);
    std::lock_guard maps(held_mu_);
    const std::shared_ptr<Backend> old = tree_owner_;
    // Node references move by number; one whose object has no name left stays where it is.
    for (auto& [ino, count] : held_) {
        if (orphans_.contains(ino)) continue;
        uint64_t moved = 0;
        for (; moved < count; ++moved) {
            auto e = next->lookup_ino(ino);
            if (!e) break;
        }
        if (moved == count) {
            old->forget(Node{ino}, count);
        } else {
            next->forget(Node{ino}, moved);
            orphans_[ino] = old;
        }
    }
    has_orphans_.store(!orphans_.empty(), std::memory_order_release);
    // Open files move now, each holding its inode in the new tree, so a name removed after this
    // leaves an orphan there that they still read and write (moving lazily would find it gone).
    for (VolumeFile* file : files_) (void)file->move_to(*next);
    tree_owner_ = std::move(next);
    tree_.store(tree_owner_.get(), std::memory_order_release);
    return old;
}

Result<std::shared_ptr<Overlay>> VolumeImpl::rebuild_tree_locked() {
    auto made = make_volume_tree(pack_.lower, manifest_.next_ino);
    if (!made) return std::unexpected(made.error());
    std::shared_ptr<Overlay> tree = std::move(*made);
    const std::string journal = join(dir_, manifest_.journal);
    std::vector<std::pair<std::vector<std::byte>, JournalRecordView>> kept;
    auto durable_end = writer_->retained([&](const JournalRecordView& view) -> Result<void> {
        kept.emplace_back(std::vector<std::byte>(view.payload.begin(), view.payload.end()), view);
        return {};
    });
    if (!durable_end) return std::unexpected(durable_end.error());
    auto scan = replay_journal(journal, *tree, *durable_end);
    if (!scan) return std::unexpected(scan.error());
    for (auto& [payload, view] : kept) {
        view.payload = payload;
        if (auto ok = replay_record(*tree, view); !ok) return std::unexpected(ok.error());
    }
    return tree;
}

void VolumeImpl::recover_locked() {
    auto fresh = rebuild_tree_locked();
    if (!fresh) {
        broken_ = true;
        return;
    }
    // (Readers in a section may still use the old tree: it is freed after a grace period.)
    old_trees_.retire_shared(replace_tree_locked(std::move(*fresh)));
    old_trees_.flush();
    ++recoveries_;
    if (auto ok = writer_->resume(); !ok) broken_ = true;
}

// --- node references ------------------------------------------------------------------------------

void VolumeImpl::count_hold(uint64_t ino) {
    std::lock_guard lock(held_mu_);
    ++held_[ino];
}

Result<Entry> VolumeImpl::lookup(Node dir, std::string_view name) {
    std::shared_lock no_replacement(nodes_mu_);
    Result<Entry> e = [&] {
        {
            std::lock_guard lock(held_mu_);
            if (auto it = orphans_.find(dir.id); it != orphans_.end()) {
                auto tree = it->second;
                return tree->lookup(dir, name);
            }
        }
        rcu::ReadSection section;
        return tree_now().lookup(dir, name);
    }();
    if (e) count_hold(e->node.id);
    return e;
}

Result<Entry> VolumeImpl::lookup_ino(uint64_t ino) {
    std::shared_lock no_replacement(nodes_mu_);
    auto e = tree_for_locked(Node{ino})->lookup_ino(ino);
    if (e) count_hold(e->node.id);
    return e;
}

void VolumeImpl::forget(Node node, uint64_t count) noexcept {
    if (!node || node == kRootNode) return;
    std::shared_lock no_replacement(nodes_mu_);
    std::shared_ptr<Backend> tree;
    {
        std::lock_guard lock(held_mu_);
        auto it = held_.find(node.id);
        if (it == held_.end()) return;
        count = std::min(count, it->second);
        it->second -= count;
        auto orphan = orphans_.find(node.id);
        tree = orphan != orphans_.end() ? orphan->second : tree_owner_;
        if (it->second == 0) {
            held_.erase(it);
            if (orphan != orphans_.end()) {
                orphans_.erase(orphan);
                has_orphans_.store(!orphans_.empty(), std::memory_order_release);
            }
        }
    }
    tree->forget(node, count);
}

}  // namespace packfs::volume
