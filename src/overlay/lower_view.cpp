#include "overlay/lower_view.hpp"

#include <fcntl.h>

#include <algorithm>

namespace packfs::overlay {

namespace {
constexpr uint64_t kRootIno = 1;
}

LowerView::LowerView(std::shared_ptr<Backend> lower) : lower_(std::move(lower)) {
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

Result<std::optional<mem::LowerEntry>> LowerView::lookup(uint64_t dir, std::string_view name) {
    auto found = lower_->lookup(Node{dir}, name);
    if (!found) {
        if (found.error().code() == ENOENT) return std::nullopt;
        return std::unexpected(found.error());
    }
    return mem::LowerEntry{number(*found), found->node.id, found->stat.type};
}

Result<bool> LowerView::has(uint64_t dir, std::string_view name) {
    auto found = lower_->lookup(Node{dir}, name);
    if (found) {
        lower_->forget(found->node, 1);
        return true;
    }
    if (found.error().code() == ENOENT) return false;
    return std::unexpected(found.error());
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

Result<FileHandle> LowerView::open(uint64_t node) { return lower_->open(Node{node}, O_RDONLY); }

}  // namespace packfs::overlay
