// The merged view of a tree over its lower (mem_tree.hpp): the queries that need more than one
// map probe.
#include "mem/mem_tree.hpp"

#include <unordered_set>

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
    for (const DirEntry& e : lower_value(lower->readdir(dir.lower))) {
        if (!entries.find(DirKeyView(dir.ino, e.name))) return true;
    }
    return false;
}

std::vector<DirEntry> list_entries(const Tree& tree, const NodeRef& dir) {
    std::vector<DirEntry> out;
    // The tree's own names here (whiteouts included): a lower entry of one of them is hidden.
    std::unordered_set<std::string_view> own;
    for (auto it = tree.entries.lower_bound(DirKeyView::first_of(dir.ino));
         it != tree.entries.end() && it.key().parent == dir.ino; ++it) {
        own.insert(it.key().name);
        if (it.value().ino != 0) out.push_back(DirEntry{it.key().name, it.value().ino, it.value().type});
    }
    if (!dir.lower.id) return out;
    auto lower = lower_value(tree.lower->readdir(dir.lower));
    if (own.empty()) return lower;  // the common case: a directory the tree never changed
    out.reserve(out.size() + lower.size());
    for (DirEntry& e : lower) {
        if (!own.contains(e.name)) out.push_back(std::move(e));
    }
    return out;
}

}  // namespace packfs::mem
