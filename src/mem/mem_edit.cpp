#include "mem/mem_edit.hpp"

#include <xxhash.h>

namespace packfs::mem {

uint64_t name_hash(std::string_view name) noexcept { return XXH3_64bits(name.data(), name.size()); }

std::shared_ptr<Inode> copy_up(const LowerLayer& lower, const LowerNode& node) {
    const Stat st = lower_value(lower.stat(node));
    auto inode = std::make_shared<Inode>();
    inode->ino = node.ino;
    inode->type = st.type;
    inode->mode = st.mode;
    inode->uid = st.uid;
    inode->gid = st.gid;
    inode->nlink = st.nlink;
    inode->size = st.size;
    inode->rdev = st.rdev;
    inode->atime = st.atime;
    inode->mtime = st.mtime;
    inode->ctime = st.ctime;
    inode->lower_id = node.id;
    if (st.type == FileType::symlink) inode->target = lower_value(lower.readlink(node));
    if (st.type == FileType::regular && st.size > 0)
        inode->content = FileContent::backed_by(lower_value(lower.content(node)), st.size);
    for (auto& [name, value] : lower_value(lower.xattrs(node)))
        inode->xattrs.insert_or_assign(std::move(name), std::move(value));
    return inode;
}

Inode& edit_inode(Tree& tree, uint64_t ino) {
    std::shared_ptr<Inode> copy;
    if (const Inode* own = tree.inode(ino)) {
        copy = std::make_shared<Inode>(*own);
    } else {
        NodeRef node = tree.node(ino);
        if (!node) throw_lower(Error(EIO, "copy-up (inode vanished)"));
        copy = copy_up(*tree.lower, node.lower);
    }
    Inode& ref = *copy;
    tree.inodes.insert_or_assign(ino, std::move(copy));
    return ref;
}

Inode& new_inode(Tree& tree, FileType type, uint32_t mode, Time now) {
    auto inode = std::make_shared<Inode>();
    inode->ino = tree.next_ino++;
    inode->type = type;
    inode->mode = mode & 07777;
    inode->atime = inode->mtime = inode->ctime = now;
    Inode& ref = *inode;
    tree.inodes.insert_or_assign(ref.ino, std::move(inode));
    return ref;
}

void add_entry(Tree& tree, uint64_t parent, std::string_view name, uint64_t ino, FileType type) {
    tree.entries.insert_or_assign(DirKey{parent, name_hash(name), std::string(name)},
                                  DirValue{ino, type});
}

void remove_entry(Tree& tree, const NodeRef& dir, std::string_view name) {
    if (tree.lower_has(dir, name)) {
        add_entry(tree, dir.ino, name, 0, FileType::regular);  // a whiteout
    } else {
        tree.entries.erase(DirKeyView(dir.ino, name));
    }
}

void touch_dir(Tree& tree, uint64_t dir, Time now) {
    Inode& d = edit_inode(tree, dir);
    d.mtime = d.ctime = now;
}

void forget_inode(Tree& tree, uint64_t ino) {
    const Inode* own = tree.inode(ino);
    if (own) tree.bytes_used -= own->content.allocated();
    if (tree.lower) {
        // An empty directory over a lower may still hold whiteouts: they go with it.
        std::vector<DirKey> whiteouts;
        for (auto it = tree.entries.lower_bound(DirKeyView::first_of(ino));
             it != tree.entries.end() && it.key().parent == ino; ++it)
            whiteouts.push_back(it.key());
        for (const DirKey& key : whiteouts) tree.entries.erase(key);
    }
    const bool from_lower = own ? own->lower_id != 0 : tree.lower != nullptr;
    if (from_lower) {
        tree.inodes.insert_or_assign(ino, InodePtr());  // deleted: the lower's copy is dead too
    } else {
        tree.inodes.erase(ino);
    }
}

void drop_link(Tree& tree, uint64_t ino, Time now, bool keep_orphan) {
    const NodeRef node = tree.node(ino);
    const uint64_t nlink = node.upper ? node.upper->nlink : stat_of(tree, node).nlink;
    const uint64_t remaining = node.is_dir() || nlink <= 1 ? 0 : nlink - 1;
    if (remaining == 0 && !keep_orphan) {
        forget_inode(tree, ino);
        return;
    }
    Inode& edited = edit_inode(tree, ino);
    edited.nlink = remaining;
    edited.ctime = now;
}

}  // namespace packfs::mem
