// A TreeSource over one version of a mem backend's tree, read through its maps directly:
// listing a directory is a range scan of the entry map and every other call is an inode
// lookup by number, so a build from memory does no path resolution at all. The version is
// immutable, so the pack is a consistent snapshot even while the backend keeps changing.
#include <algorithm>
#include <cstring>

#include "mem/mem_version.hpp"
#include "mem/tree_reader.hpp"
#include "pack/tree_source.hpp"

namespace packfs::pack {

namespace {

// Handles are the inodes' addresses: the version is immutable and held by the source, so a
// handle stays valid as long as the source, and no call looks an inode up again.
const mem::Inode* inode_of(uint64_t handle) { return reinterpret_cast<const mem::Inode*>(handle); }
uint64_t handle_of(const mem::Inode* inode) { return reinterpret_cast<uint64_t>(inode); }

// Reads straight from the inode's chunks. Lives no longer than the source that made it (the
// writer's rule), so it holds no reference of its own: two hashing threads would otherwise
// meet on one reference count for every small file.
class MemReader final : public ContentReader {
public:
    explicit MemReader(const mem::Inode* inode) : inode_(inode) {}
    Result<std::size_t> read(std::span<std::byte> buf, uint64_t offset) override {
        if (offset >= inode_->size) return 0;
        return inode_->content.read(inode_->size, offset, buf);
    }

private:
    const mem::Inode* inode_;
};

class MemSource final : public TreeSource {
public:
    MemSource(mem::TreePtr tree, const mem::Inode* root) : tree_(std::move(tree)), root_(root) {}

    Result<SourceNode> root() override {
        return source_node("", mem::stat_of(*root_), {0, root_->ino}, handle_of(root_));
    }

    Result<std::vector<SourceNode>> list(SourceRef dir) override {
        uint64_t dir_ino = inode_of(dir.handle)->ino;
        std::vector<SourceNode> nodes;
        for (auto it = tree_->entries.lower_bound(mem::DirKeyView::first_of(dir_ino));
             it != tree_->entries.end() && it.key().parent == dir_ino; ++it) {
            const mem::Inode* inode = tree_->inode(it.value().ino);
            if (!inode) return fail(EIO, "build: entry without inode", dir.path);
            SourceNode& node = nodes.emplace_back();
            node.name = it.key().name;
            node.stat = mem::stat_of(*inode);
            node.identity = {0, inode->ino};
            node.handle = handle_of(inode);
            node.has_extras = true;
            if (inode->type == FileType::symlink) node.target = inode->target;
            for (auto x = inode->xattrs.begin(); x != inode->xattrs.end(); ++x)
                node.xattrs.emplace_back(x.key(), x.value());
        }
        return nodes;
    }

    Result<std::string> readlink(SourceRef link) override { return inode_of(link.handle)->target; }

    Result<Xattrs> xattrs(SourceRef entry) override {
        const mem::Inode* inode = inode_of(entry.handle);
        Xattrs out;
        for (auto it = inode->xattrs.begin(); it != inode->xattrs.end(); ++it)
            out.emplace_back(it.key(), it.value());
        return out;
    }

    Result<std::unique_ptr<ContentReader>> open(SourceRef file) override {
        const mem::Inode* inode = inode_of(file.handle);
        if (inode->type != FileType::regular) return fail(EINVAL, "open", file.path);
        return std::make_unique<MemReader>(inode);
    }

private:
    mem::TreePtr tree_;
    const mem::Inode* root_;
};

}  // namespace

Result<std::unique_ptr<TreeSource>> make_mem_source(Backend& backend, const std::string& root) {
    mem::TreePtr tree = mem::version_of(backend);
    if (!tree) return std::unique_ptr<TreeSource>();
    auto resolved = mem::TreeReader(*tree).resolve(root, false, "build", root);
    if (!resolved) return std::unexpected(resolved.error());
    if (!resolved->is_dir()) return fail(ENOTDIR, "build", root);
    return std::make_unique<MemSource>(std::move(tree), resolved->upper);
}

}  // namespace packfs::pack
