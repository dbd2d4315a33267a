#include "overlay/stacked_backend.hpp"

#include <deque>
#include <map>
#include <mutex>
#include <unordered_set>

#include "core/checks.hpp"

namespace packfs::overlay {
namespace {

constexpr uint64_t kStackedInoLimit = 1ull << 48;

struct Part {
    uint32_t layer;
    Node node;
    friend bool operator<(const Part& a, const Part& b) {
        return a.layer != b.layer ? a.layer < b.layer : a.node.id < b.node.id;
    }
};
using Parts = std::vector<Part>;  // top first; one part unless a merged directory

class StackedBackend final : public Backend {
public:
    explicit StackedBackend(std::vector<std::shared_ptr<Backend>> layers)
        : layers_(std::move(layers)) {
        Parts root;
        for (uint32_t i = 0; i < layers_.size(); ++i) root.push_back({i, kRootNode});
        intern(std::move(root), false);  // id 1
    }

    Result<Entry> lookup(Node dir, std::string_view name) override {
        if (auto ok = check_name(name, "lookup"); !ok) return std::unexpected(ok.error());
        auto parts = parts_of(dir);
        if (!parts) return std::unexpected(parts.error());
        Parts found;
        Stat top{};
        for (const Part& part : *parts) {
            auto hit = layers_[part.layer]->lookup(part.node, name);
            if (!hit) {
                if (hit.error().code() == ENOENT || hit.error().code() == ENOTDIR) continue;
                return std::unexpected(hit.error());
            }
            const bool is_dir = hit->stat.type == FileType::directory;
            if (!found.empty() && !is_dir) {  // a lower non-directory under a directory
                layers_[part.layer]->forget(hit->node, 1);
                break;
            }
            if (found.empty()) top = hit->stat;
            found.push_back({part.layer, hit->node});
            if (!is_dir) break;  // a non-directory hides everything below it
        }
        if (found.empty()) return fail(ENOENT, "lookup", name);
        top.ino = intern(std::move(found), true);
        return Entry{Node{top.ino}, top};
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
        auto parts = parts_of(dir);
        if (!parts) return std::unexpected(parts.error());
        std::vector<DirEntry> out;
        std::unordered_set<std::string> seen;
        for (const Part& part : *parts) {
            auto entries = layers_[part.layer]->list(part.node);
            if (!entries) return std::unexpected(entries.error());
            for (auto& e : *entries) {
                if (!seen.insert(e.name).second) continue;
                auto merged = lookup(dir, e.name);  // what the name is, all layers considered
                if (!merged) return std::unexpected(merged.error());
                out.push_back(DirEntry{std::move(e.name), merged->node.id, merged->stat.type});
            }
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
        for (const auto& layer : layers_) {
            auto fs = layer->statfs(kRootNode);
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
    // The id of `parts` (new or known). `forget_repeat`: the parts' nodes were just handed by
    // lookups; when they are known already, those references are given back.
    uint64_t intern(Parts parts, bool forget_repeat) {
        std::lock_guard lock(mutex_);
        auto [it, fresh] = ids_.try_emplace(parts, nodes_.size() + 1);
        if (fresh) {
            nodes_.push_back(std::move(parts));
        } else if (forget_repeat) {
            for (const Part& p : parts) layers_[p.layer]->forget(p.node, 1);
        }
        return it->second;
    }
    Result<Parts> parts_of(Node node) const {
        std::lock_guard lock(mutex_);
        if (node.id < 1 || node.id > nodes_.size()) return fail(ESTALE, "lookup");
        return nodes_[node.id - 1];
    }
    template <class Body>
    auto on_top(Node node, Body&& body) -> decltype(body(std::declval<Backend&>(), Node{})) {
        auto parts = parts_of(node);
        if (!parts) return std::unexpected(parts.error());
        const Part top = parts->front();
        return body(*layers_[top.layer], top.node);
    }

    std::vector<std::shared_ptr<Backend>> layers_;
    mutable std::mutex mutex_;
    std::deque<Parts> nodes_;
    std::map<Parts, uint64_t> ids_;
};

}  // namespace

std::shared_ptr<Backend> make_stacked_backend(std::vector<std::shared_ptr<Backend>> layers) {
    return std::make_shared<StackedBackend>(std::move(layers));
}

}  // namespace packfs::overlay
