#include "mem/mem_edit.hpp"

#include <xxhash.h>

namespace packfs::mem {

uint64_t name_hash(std::string_view name) noexcept { return XXH3_64bits(name.data(), name.size()); }

Inode& edit_inode(Tree& tree, uint64_t ino) {
    auto copy = std::make_shared<Inode>(*tree.inode(ino));
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

void touch_dir(Tree& tree, uint64_t dir, Time now) {
    Inode& d = edit_inode(tree, dir);
    d.mtime = d.ctime = now;
}

void drop_link(Tree& tree, uint64_t ino, Time now, bool keep_orphan) {
    const Inode* inode = tree.inode(ino);
    const bool is_dir = inode->type == FileType::directory;
    const uint64_t remaining = is_dir || inode->nlink <= 1 ? 0 : inode->nlink - 1;
    if (remaining == 0 && !keep_orphan) {
        tree.bytes_used -= inode->content.allocated();
        tree.inodes.erase(ino);
        return;
    }
    Inode& edited = edit_inode(tree, ino);
    edited.nlink = remaining;
    edited.ctime = now;
}

}  // namespace packfs::mem
