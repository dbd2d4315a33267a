// The merged view of a tree over its lower (mem_tree.hpp): the queries that need more than one
// map probe.
#include "mem/mem_tree.hpp"

namespace packfs::mem {

Stat stat_of(const Tree& tree, const NodeRef& node) {
    if (node.upper) return stat_of(*node.upper);
    return lower_value(tree.lower->stat(node.lower));
}

bool Tree::has_entries(const NodeRef& dir) const {
    for (auto it = entries.lower_bound(DirKeyView::first_of(dir.ino));
         it != entries.end() && it.key().parent == dir.ino; ++it) {
        if (it.value().ino != 0) return true;
    }
    if (!dir.lower.id) return false;
    for (const auto& [name, node] : lower_value(lower->list(dir.lower))) {
        if (!entries.find(DirKeyView(dir.ino, name))) return true;
    }
    return false;
}

std::vector<DirEntry> list_entries(const Tree& tree, const NodeRef& dir) {
    std::vector<DirEntry> out;
    bool own_entries = false;
    for (auto it = tree.entries.lower_bound(DirKeyView::first_of(dir.ino));
         it != tree.entries.end() && it.key().parent == dir.ino; ++it) {
        own_entries = true;
        if (it.value().ino != 0) out.push_back(DirEntry{it.key().name, it.value().ino, it.value().type});
    }
    if (!dir.lower.id) return out;
    auto lower = lower_value(tree.lower->list(dir.lower));
    out.reserve(out.size() + lower.size());
    for (auto& [name, node] : lower) {
        // The tree's own entry of that name (a change or a whiteout) was listed above, or hides it.
        if (own_entries && tree.entries.find(DirKeyView(dir.ino, name))) continue;
        out.push_back(DirEntry{std::move(name), node.ino, node.type});
    }
    return out;
}

}  // namespace packfs::mem
