#include "overlay/tree_layer.hpp"

#include "mem/tree_reader.hpp"

namespace packfs::overlay {
namespace {

using mem::LowerNode;
using mem::NodeRef;

// A file of the frozen tree's own: its chunks (and their backing) as the tree holds them.
class TreeContent final : public mem::LowerContent {
public:
    TreeContent(mem::TreePtr tree, const mem::Inode* inode) : tree_(std::move(tree)), inode_(inode) {}
    Result<std::size_t> read(uint64_t offset, std::span<std::byte> out) const override {
        return inode_->content.read(inode_->size, offset, out);
    }

private:
    mem::TreePtr tree_;  // keeps inode_ alive
    const mem::Inode* inode_;
};

LowerNode as_lower(const NodeRef& n) { return {n.ino, n.ino, n.type}; }

// The tree's accessors throw LowerFault for their own lower's errors: values here.
template <class Body>
auto caught(Body&& body) -> decltype(body()) {
    try {
        return body();
    } catch (const mem::LowerFault& fault) {
        return std::unexpected(fault.error);
    }
}

class TreeLayer final : public mem::LowerLayer {
public:
    explicit TreeLayer(mem::TreePtr tree) : tree_(std::move(tree)) {}

    LowerNode root() const override { return {mem::kRootIno, mem::kRootIno, FileType::directory}; }

    Result<std::optional<LowerNode>> lookup(const LowerNode& dir,
                                            std::string_view name) const override {
        return caught([&]() -> Result<std::optional<LowerNode>> {
            const NodeRef d = tree_->node(dir.id);
            if (!d) return fail(ESTALE, "lookup");
            const NodeRef child = tree_->child(d, name);
            if (!child) return std::nullopt;
            return as_lower(child);
        });
    }

    Result<std::optional<LowerNode>> by_ino(uint64_t ino) const override {
        return caught([&]() -> Result<std::optional<LowerNode>> {
            const NodeRef n = tree_->node(ino);
            if (!n) return std::nullopt;
            return as_lower(n);
        });
    }

    Result<std::vector<std::pair<std::string, LowerNode>>> list(const LowerNode& dir) const override {
        return caught([&]() -> Result<std::vector<std::pair<std::string, LowerNode>>> {
            const NodeRef d = tree_->node(dir.id);
            if (!d) return fail(ESTALE, "readdir");
            std::vector<std::pair<std::string, LowerNode>> out;
            for (DirEntry& e : mem::list_entries(*tree_, d))
                out.emplace_back(std::move(e.name), LowerNode{e.ino, e.ino, e.type});
            return out;
        });
    }

    Result<Stat> stat(const LowerNode& node) const override {
        return caught([&]() -> Result<Stat> { return mem::stat_of(*tree_, at(node)); });
    }

    Result<std::string> readlink(const LowerNode& link) const override {
        return caught([&]() -> Result<std::string> {
            return mem::TreeReader(*tree_).target_of(at(link));
        });
    }

    Result<std::shared_ptr<const mem::LowerContent>> content(const LowerNode& file) const override {
        return caught([&]() -> Result<std::shared_ptr<const mem::LowerContent>> {
            const NodeRef n = at(file);
            if (n.upper) return std::make_shared<TreeContent>(tree_, n.upper);
            return tree_->lower->content(n.lower);
        });
    }

    Result<std::optional<std::string>> getxattr(const LowerNode& node,
                                                std::string_view name) const override {
        return caught([&]() -> Result<std::optional<std::string>> {
            const NodeRef n = at(node);
            if (!n.upper) return tree_->lower->getxattr(n.lower, name);
            const std::string* value = n.upper->xattrs.find(name);
            if (!value) return std::nullopt;
            return *value;
        });
    }

    Result<mem::Xattrs> xattrs(const LowerNode& node) const override {
        return caught([&]() -> Result<mem::Xattrs> {
            const NodeRef n = at(node);
            if (!n.upper) return tree_->lower->xattrs(n.lower);
            mem::Xattrs out;
            for (auto it = n.upper->xattrs.begin(); it != n.upper->xattrs.end(); ++it)
                out.emplace_back(it.key(), it.value());
            return out;
        });
    }

    uint64_t ino_limit() const override { return tree_->next_ino; }

    StatFs statfs() const override {
        StatFs fs = tree_->lower ? tree_->lower->statfs() : StatFs{};
        fs.blocks += (tree_->bytes_used + fs.block_size - 1) / fs.block_size;
        fs.files += tree_->inodes.size();
        return fs;
    }

private:
    NodeRef at(const LowerNode& node) const {
        const NodeRef n = tree_->node(node.id);
        if (!n) mem::throw_lower(Error(ESTALE, "lookup"));
        return n;
    }

    mem::TreePtr tree_;
};

}  // namespace

mem::LowerPtr make_tree_layer(mem::TreePtr tree) { return std::make_shared<TreeLayer>(std::move(tree)); }

}  // namespace packfs::overlay
