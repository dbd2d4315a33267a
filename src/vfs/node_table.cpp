#include "vfs/node_table.hpp"

#include <cstring>
#include <mutex>

namespace packfs::vfs {

NodeTable::NodeTable(Counter ids)
    : next_id_(ids ? std::move(ids) : std::make_shared<std::atomic<uint64_t>>(kRootNode.id + 1)) {}

NodeTable::~NodeTable() {
    for (auto& [id, slot] : by_id_) {
        if (!slot.pinned) release_parts(*slot.desc);
    }
}

std::string NodeTable::key_of(const NodeDesc& desc) {
    // The path (it has no NUL), then (mount, node) of each part in order.
    std::string key;
    key.reserve(desc.path.size() + 1 + desc.parts.size() * 16);
    key += desc.path;
    key += '\0';
    for (const Part& p : desc.parts) {
        char bytes[16];
        std::memcpy(bytes, &p.mount, 8);
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
    // Known already: it holds its member references; these are extra.
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
    // Outside the lock: a member's forget may take its own locks.
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

}  // namespace packfs::vfs
