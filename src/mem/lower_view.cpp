#include "mem/lower_view.hpp"

#include "mem/cell.hpp"

namespace packfs::mem {

LowerView::LowerView(Backend* lower) : lower_(lower) {
    if (!lower_) return;
    const auto numbering = lower_->inode_numbering();
    auto root = lower_->getattr(kRootNode);
    keeps_ = numbering.unique && root && root->ino == kRootIno;
    limit_ = keeps_ ? std::max<uint64_t>(numbering.limit, kRootIno + 1) : kInternedLimit;
}

uint64_t LowerView::number(const Entry& e) {
    if (e.node == kRootNode) return kRootIno;
    if (keeps_) return e.stat.ino;
    std::lock_guard lock(mu_);
    auto [it, fresh] = by_node_.try_emplace(e.node.id, by_number_.size() + 2);
    if (fresh) {
        by_number_.push_back(e.node.id);  // the reference the lookup gave is kept for good
    } else {
        lower_->forget(e.node, 1);  // already held once
    }
    return it->second;
}

Result<uint64_t> LowerView::node_of(uint64_t ino) {
    if (ino == kRootIno) return kRootNode.id;
    if (keeps_) {
        auto e = lower_->lookup_ino(ino);
        if (!e) return std::unexpected(e.error());
        return e->node.id;
    }
    std::lock_guard lock(mu_);
    if (ino < 2 || ino - 2 >= by_number_.size()) return fail(ESTALE, "lookup");
    return by_number_[ino - 2];
}

Result<std::vector<DirEntry>> LowerView::list(uint64_t dir) {
    auto entries = lower_->list(Node{dir});
    if (!entries || keeps_) return entries;
    // The lower's numbers mean nothing here: each name's node is looked up and numbered.
    for (DirEntry& d : *entries) {
        auto e = lower_->lookup(Node{dir}, d.name);
        if (!e) return std::unexpected(e.error());
        d.ino = number(*e);
    }
    return entries;
}

}  // namespace packfs::mem
