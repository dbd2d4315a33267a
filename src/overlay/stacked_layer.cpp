#include "overlay/stacked_layer.hpp"

#include <deque>
#include <map>
#include <mutex>
#include <unordered_set>

#include "overlay/backend_layer.hpp"

namespace packfs::overlay {
namespace {

struct Part {
    uint32_t layer;
    mem::LowerNode node;
    friend bool operator<(const Part& a, const Part& b) {
        return a.layer != b.layer ? a.layer < b.layer : a.node.id < b.node.id;
    }
};
using Parts = std::vector<Part>;  // top first; one part unless a merged directory

class StackedLayer final : public mem::LowerLayer {
public:
    explicit StackedLayer(std::vector<mem::LowerPtr> layers) : layers_(std::move(layers)) {
        Parts root;
        for (uint32_t i = 0; i < layers_.size(); ++i) root.push_back({i, layers_[i]->root()});
        intern(std::move(root));  // id 1
    }

    mem::LowerNode root() const override { return {1, 1, FileType::directory}; }

    Result<std::optional<mem::LowerNode>> lookup(const mem::LowerNode& dir,
                                                 std::string_view name) const override {
        Parts found;
        for (const Part& part : parts_of(dir.id)) {
            auto hit = layers_[part.layer]->lookup(part.node, name);
            if (!hit) return std::unexpected(hit.error());
            if (!*hit) continue;
            const bool is_dir = (*hit)->type == FileType::directory;
            if (!found.empty() && !is_dir) break;  // a lower non-directory under a directory
            found.push_back({part.layer, **hit});
            if (!is_dir) break;  // a non-directory hides everything below it
        }
        if (found.empty()) return std::nullopt;
        const FileType type = found.front().node.type;
        const uint64_t id = intern(std::move(found));
        return mem::LowerNode{id, id, type};
    }

    Result<std::optional<mem::LowerNode>> by_ino(uint64_t ino) const override {
        std::lock_guard lock(mutex_);
        if (ino == 0 || ino > nodes_.size()) return std::nullopt;
        return mem::LowerNode{ino, ino, nodes_[ino - 1].front().node.type};
    }

    Result<std::vector<std::pair<std::string, mem::LowerNode>>> list(
        const mem::LowerNode& dir) const override {
        std::vector<std::pair<std::string, mem::LowerNode>> out;
        std::unordered_set<std::string> seen;
        for (const Part& part : parts_of(dir.id)) {
            auto entries = layers_[part.layer]->list(part.node);
            if (!entries) return std::unexpected(entries.error());
            for (auto& [name, node] : *entries) {
                if (!seen.insert(name).second) continue;
                auto merged = lookup(dir, name);  // what the name is, all layers considered
                if (!merged) return std::unexpected(merged.error());
                if (*merged) out.emplace_back(name, **merged);
            }
        }
        return out;
    }

    Result<Stat> stat(const mem::LowerNode& node) const override {
        const Part top = top_of(node.id);
        auto st = layers_[top.layer]->stat(top.node);
        if (st) st->ino = node.ino;
        return st;
    }
    Result<std::string> readlink(const mem::LowerNode& link) const override {
        const Part top = top_of(link.id);
        return layers_[top.layer]->readlink(top.node);
    }
    Result<std::shared_ptr<const mem::LowerContent>> content(
        const mem::LowerNode& file) const override {
        const Part top = top_of(file.id);
        return layers_[top.layer]->content(top.node);
    }
    Result<std::optional<std::string>> getxattr(const mem::LowerNode& node,
                                                std::string_view name) const override {
        const Part top = top_of(node.id);
        return layers_[top.layer]->getxattr(top.node, name);
    }
    Result<mem::Xattrs> xattrs(const mem::LowerNode& node) const override {
        const Part top = top_of(node.id);
        return layers_[top.layer]->xattrs(top.node);
    }

    uint64_t ino_limit() const override { return kBackendLayerInoLimit; }

    StatFs statfs() const override {
        StatFs sum;
        sum.blocks = sum.blocks_free = sum.files = sum.files_free = 0;
        for (const auto& layer : layers_) {
            const StatFs fs = layer->statfs();
            sum.blocks += fs.blocks * fs.block_size / sum.block_size;
            sum.blocks_free += fs.blocks_free * fs.block_size / sum.block_size;
            sum.files += fs.files;
            sum.files_free += fs.files_free;
        }
        return sum;
    }

private:
    uint64_t intern(Parts parts) const {
        std::lock_guard lock(mutex_);
        auto [it, fresh] = ids_.try_emplace(parts, nodes_.size() + 1);
        if (fresh) nodes_.push_back(std::move(parts));
        return it->second;
    }
    Parts parts_of(uint64_t id) const {
        std::lock_guard lock(mutex_);
        return id >= 1 && id <= nodes_.size() ? nodes_[id - 1] : Parts{};
    }
    Part top_of(uint64_t id) const {
        std::lock_guard lock(mutex_);
        return id >= 1 && id <= nodes_.size() ? nodes_[id - 1].front() : nodes_.front().front();
    }

    std::vector<mem::LowerPtr> layers_;
    mutable std::mutex mutex_;
    mutable std::deque<Parts> nodes_;
    mutable std::map<Parts, uint64_t> ids_;
};

}  // namespace

mem::LowerPtr make_stacked_layer(std::vector<mem::LowerPtr> layers) {
    return std::make_shared<StackedLayer>(std::move(layers));
}

}  // namespace packfs::overlay
