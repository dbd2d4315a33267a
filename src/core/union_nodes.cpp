#include "core/union_nodes.hpp"

#include <cstring>
#include <mutex>
#include <unordered_set>

namespace packfs::unions {

Result<Merged> merge_lookup(const std::vector<Part>& dir, std::string_view name,
                            const MergeRules& rules) {
    Merged m;
    for (const Part& p : dir) {
        auto hit = p.backend->lookup(p.node, name);
        if (!hit) {
            if (hit.error().code() == ENOENT) continue;
            if (!m.parts.empty() && !rules.lower_errors_fail) continue;
            for (const Part& kept : m.parts) kept.backend->forget(kept.node, 1);
            return std::unexpected(hit.error());
        }
        const bool is_dir = hit->stat.type == FileType::directory;
        if (m.parts.empty()) {
            m.stat = hit->stat;
        } else if (!is_dir) {
            // A lower non-directory under an upper directory.
            p.backend->forget(hit->node, 1);
            if (rules.non_directory_hides_below) break;
            continue;
        }
        m.parts.push_back(Part{p.backend, p.layer, p.writable, hit->node});
        if (!is_dir) break;  // a non-directory hides every lower entry of its name
    }
    return m;
}

Result<std::vector<DirEntry>> merge_list(const std::vector<Part>& dir, const MergeRules& rules) {
    if (dir.size() == 1) return dir.front().backend->list(dir.front().node);
    std::vector<DirEntry> out;
    std::unordered_set<std::string> seen;
    for (const Part& p : dir) {
        auto listing = p.backend->list(p.node);
        if (!listing) {
            if (&p == &dir.front() || rules.lower_errors_fail)
                return std::unexpected(listing.error());
            continue;  // a lower part that went away: the upper ones answer
        }
        for (DirEntry& e : *listing) {
            if (seen.insert(e.name).second) out.push_back(std::move(e));
        }
    }
    return out;
}

NodeTable::NodeTable(Counter ids)
    : next_id_(ids ? std::move(ids) : std::make_shared<std::atomic<uint64_t>>(kRootNode.id + 1)) {}

NodeTable::~NodeTable() {
    for (auto& [id, slot] : by_id_) {
        if (!slot.pinned) release_parts(*slot.desc);
    }
}

std::string NodeTable::key_of(const NodeDesc& desc) {
    // The path (it has no NUL), then (layer, node) of each part in order.
    std::string key;
    key.reserve(desc.path.size() + 1 + desc.parts.size() * 16);
    key += desc.path;
    key += '\0';
    for (const Part& p : desc.parts) {
        char bytes[16];
        std::memcpy(bytes, &p.layer, 8);
        std::memcpy(bytes + 8, &p.node.id, 8);
        key.append(bytes, sizeof bytes);
    }
    return key;
}

uint64_t NodeTable::intern(NodeDesc desc) {
    std::string key = key_of(desc);
    uint64_t id = 0;
    {
        std::unique_lock lock(mutex_);
        auto [it, fresh] = by_key_.try_emplace(key, 0);
        if (fresh) {
            id = it->second = next_id_->fetch_add(1, std::memory_order_relaxed);
            by_id_.emplace(id, Slot{std::make_shared<const NodeDesc>(std::move(desc)), 1,
                                    std::move(key)});
            return id;
        }
        id = it->second;
        ++by_id_.at(id).refs;
    }
    // Known already: it holds its layer references; these are extra.
    release_parts(desc);
    return id;
}

DescPtr NodeTable::find(uint64_t id) const {
    std::shared_lock lock(mutex_);
    auto it = by_id_.find(id);
    if (it == by_id_.end()) return nullptr;
    return it->second.desc;
}

void NodeTable::forget(uint64_t id, uint64_t count) noexcept {
    DescPtr gone;
    {
        std::unique_lock lock(mutex_);
        auto it = by_id_.find(id);
        if (it == by_id_.end() || it->second.pinned) return;
        if (it->second.refs > count) {
            it->second.refs -= count;
            return;
        }
        gone = std::move(it->second.desc);
        by_key_.erase(it->second.key);
        by_id_.erase(it);
    }
    // Outside the lock: a layer's forget may take its own locks.
    release_parts(*gone);
}

void NodeTable::copy_into(NodeTable& frozen,
                          const std::function<std::optional<Part>(const Part&)>& map) const {
    std::shared_lock lock(mutex_);
    std::unique_lock into(frozen.mutex_);
    for (const auto& [id, slot] : by_id_) {
        NodeDesc copy;
        copy.path = slot.desc->path;
        for (const Part& p : slot.desc->parts) {
            std::optional<Part> mapped = map(p);
            if (!mapped) break;
            copy.parts.push_back(std::move(*mapped));
        }
        if (copy.parts.size() != slot.desc->parts.size()) continue;
        frozen.by_key_.emplace(slot.key, id);
        frozen.by_id_.emplace(
            id, Slot{std::make_shared<const NodeDesc>(std::move(copy)), 1, slot.key, true});
    }
}

std::size_t NodeTable::size() const {
    std::shared_lock lock(mutex_);
    return by_id_.size();
}

void NodeTable::release_parts(const NodeDesc& desc) noexcept {
    for (const Part& p : desc.parts) {
        if (p.node && p.node != kRootNode) p.backend->forget(p.node, 1);
    }
}

}  // namespace packfs::unions
