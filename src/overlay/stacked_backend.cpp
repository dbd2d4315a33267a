#include "overlay/stacked_backend.hpp"

#include "core/checks.hpp"
#include "core/union_nodes.hpp"

namespace packfs::overlay {
namespace {

using unions::DescPtr;
using unions::NodeDesc;
using unions::Part;

constexpr uint64_t kStackedInoLimit = 1ull << 48;

// The stack's union rules (core/union_nodes.hpp), overlayfs's for lower layers: a lower
// non-directory under an upper directory hides every layer below it, and any layer's error is
// the call's.
constexpr unions::MergeRules kStackRules{.non_directory_hides_below = true,
                                         .lower_errors_fail = true};

class StackedBackend final : public Backend {
public:
    explicit StackedBackend(std::vector<std::shared_ptr<Backend>> layers) {
        NodeDesc root;
        for (uint32_t i = 0; i < layers.size(); ++i)
            root.parts.push_back(Part{std::move(layers[i]), i, false, kRootNode});
        root_ = std::make_shared<const NodeDesc>(std::move(root));
    }

    Result<Entry> lookup(Node dir, std::string_view name) override {
        if (auto ok = check_name(name, "lookup"); !ok) return std::unexpected(ok.error());
        auto d = describe(dir);
        if (!d) return std::unexpected(d.error());
        auto found = unions::merge_lookup((*d)->parts, name, kStackRules);
        if (!found) return std::unexpected(found.error());
        if (found->parts.empty()) return fail(ENOENT, "lookup", name);
        Stat st = found->stat;
        NodeDesc child;
        child.parts = std::move(found->parts);
        // Its id is its inode number. Never forgotten: a node, once reached, stays held.
        st.ino = nodes_.intern(std::move(child));
        return Entry{Node{st.ino}, st};
    }

    Result<Entry> lookup_ino(uint64_t ino) override {
        auto st = getattr(Node{ino});
        if (!st) return std::unexpected(st.error());
        return Entry{Node{ino}, *st};
    }

    Result<Stat> getattr(Node node) override {
        return on_top(node, [&](Backend& layer, Node n) -> Result<Stat> {
            auto st = layer.getattr(n);
            if (st) st->ino = node.id;
            return st;
        });
    }

    Result<std::vector<DirEntry>> list(Node dir) override {
        auto d = describe(dir);
        if (!d) return std::unexpected(d.error());
        auto names = unions::merge_list((*d)->parts, kStackRules);
        if (!names) return std::unexpected(names.error());
        std::vector<DirEntry> out;
        out.reserve(names->size());
        for (auto& e : *names) {
            auto merged = lookup(dir, e.name);  // what the name is, all layers considered
            if (!merged) return std::unexpected(merged.error());
            out.push_back(DirEntry{std::move(e.name), merged->node.id, merged->stat.type});
        }
        return out;
    }

    Result<std::string> readlink(Node node) override {
        return on_top(node, [&](Backend& layer, Node n) { return layer.readlink(n); });
    }
    Result<FileHandle> open(Node node, int flags) override {
        return on_top(node, [&](Backend& layer, Node n) { return layer.open(n, flags); });
    }
    Result<std::string> getxattr(Node node, std::string_view name) override {
        return on_top(node, [&](Backend& layer, Node n) { return layer.getxattr(n, name); });
    }
    Result<std::vector<std::string>> listxattr(Node node) override {
        return on_top(node, [&](Backend& layer, Node n) { return layer.listxattr(n); });
    }
    Result<StatFs> statfs(Node) override {
        StatFs sum;
        sum.blocks = sum.blocks_free = sum.files = sum.files_free = 0;
        for (const Part& layer : root_->parts) {
            auto fs = layer.backend->statfs(kRootNode);
            if (!fs) return std::unexpected(fs.error());
            sum.blocks += fs->blocks * fs->block_size / sum.block_size;
            sum.blocks_free += fs->blocks_free * fs->block_size / sum.block_size;
            sum.files += fs->files;
            sum.files_free += fs->files_free;
        }
        return sum;
    }
    InodeNumbering inode_numbering() const override { return {true, kStackedInoLimit}; }

    Result<std::shared_ptr<Backend>> snapshot() override {
        return fail(ENOTSUP, "snapshot");  // the overlay above it snapshots its own changes
    }
    bool read_only() const noexcept override { return true; }

private:
    Result<DescPtr> describe(Node node) const {
        if (node == kRootNode) return root_;
        if (DescPtr d = nodes_.find(node.id)) return d;
        return fail(ESTALE, "lookup");
    }
    template <class Body>
    auto on_top(Node node, Body&& body) -> decltype(body(std::declval<Backend&>(), Node{})) {
        auto d = describe(node);
        if (!d) return std::unexpected(d.error());
        const Part& top = (*d)->top();
        return body(*top.backend, top.node);
    }

    DescPtr root_;  // id 1: every layer's root
    // Every node reached but the root, id >= 2 in the order first reached; none is forgotten.
    unions::NodeTable nodes_;
};

}  // namespace

std::shared_ptr<Backend> make_stacked_backend(std::vector<std::shared_ptr<Backend>> layers) {
    return std::make_shared<StackedBackend>(std::move(layers));
}

}  // namespace packfs::overlay
