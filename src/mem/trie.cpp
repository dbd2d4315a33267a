#include "mem/trie.hpp"

#include <cstdlib>
#include <vector>

namespace packfs::mem {

EntryRec* EntryRec::make(Arena& arena, std::string_view name, uint64_t hash, uint64_t ino,
                         FileType type, Cell* cell, EntryRec* next) {
    void* p = arena.allocate(bytes(name.size()), Arena::Place::beside, Arena::Align::line);
    auto* e = new (p) EntryRec;
    e->type = type;
    e->name_length = static_cast<uint16_t>(name.size());
    e->hash = hash;
    e->ino = ino;
    e->cell = cell;
    e->next = next;
    std::memcpy(e->name_bytes, name.data(), name.size());
    e->name_bytes[name.size()] = '\0';
    return e;
}

namespace {

void retain_slot(uintptr_t s) noexcept {
    if (!s) return;
    if (TrieNode::is_entry(s)) {
        ++TrieNode::entry(s)->refs;
    } else {
        ++TrieNode::node(s)->refs;
    }
}

void release_slot(uintptr_t s, rcu::Reclaimer& reclaimer) noexcept {
    if (!s) return;
    if (TrieNode::is_entry(s)) {
        entry_release(TrieNode::entry(s), reclaimer);
    } else {
        trie_release(TrieNode::node(s), reclaimer);
    }
}

// Whether a node holds exactly one slot and that one is an entry (chain): folding it into its
// parent keeps the trie as shallow as its names need.
uintptr_t lone_entry(const TrieNode* node) noexcept {
    uintptr_t only = 0;
    for (const auto& slot : node->slots) {
        const uintptr_t s = slot.load(std::memory_order_relaxed);
        if (!s) continue;
        if (only || !TrieNode::is_entry(s)) return 0;
        only = s;
    }
    return only;
}

bool empty(const TrieNode* node) noexcept {
    for (const auto& slot : node->slots)
        if (slot.load(std::memory_order_relaxed)) return false;
    return true;
}

}  // namespace

void trie_retain(TrieNode* root) noexcept {
    if (root) ++root->refs;
}

void entry_release(EntryRec* e, rcu::Reclaimer& reclaimer) noexcept {
    while (e && --e->refs == 0) {
        EntryRec* next = e->next;
        retire_in_arena(reclaimer, e);
        e = next;
    }
}

void trie_release(TrieNode* node, rcu::Reclaimer& reclaimer) noexcept {
    if (!node || --node->refs != 0) return;
    for (auto& slot : node->slots) release_slot(slot.load(std::memory_order_relaxed), reclaimer);
    retire_in_arena(reclaimer, node);
}

void trie_destroy_now(TrieNode* node, Arena& arena) noexcept {
    if (!node || --node->refs != 0) return;
    for (auto& slot : node->slots) {
        const uintptr_t s = slot.load(std::memory_order_relaxed);
        if (!s) continue;
        if (TrieNode::is_entry(s)) {
            EntryRec* e = TrieNode::entry(s);
            while (e && --e->refs == 0) {
                EntryRec* next = e->next;
                arena.destroy(e);
                e = next;
            }
        } else {
            trie_destroy_now(TrieNode::node(s), arena);
        }
    }
    arena.destroy(node);
}

// The node `node` as this trie's own: itself when nothing else references it, else a copy
// (taking a reference on each child) stored where `node` was.
TrieNode* TrieWriter::own(TrieNode* node, std::atomic<uintptr_t>* parent_slot) {
    if (node->refs == 1) return node;
    auto* copy = arena_.make_apart<TrieNode>();
    for (int i = 0; i < TrieNode::kSlots; ++i) {
        const uintptr_t s = node->slots[i].load(std::memory_order_relaxed);
        retain_slot(s);
        copy->slots[i].store(s, std::memory_order_relaxed);
    }
    --node->refs;  // still referenced by whoever else holds it: never zero here
    if (parent_slot) {
        parent_slot->store(TrieNode::tag(copy), std::memory_order_release);
    } else {
        root_ = copy;
    }
    return copy;
}

// Fresh copies of `entries` (entries are immutable), chained in the same order.
EntryRec* TrieWriter::copy_chain(const std::vector<EntryRec*>& entries) {
    EntryRec* chain = nullptr;
    for (auto it = entries.rbegin(); it != entries.rend(); ++it)
        chain = EntryRec::make(arena_, (*it)->name(), (*it)->hash, (*it)->ino, (*it)->type,
                               (*it)->cell, chain);
    return chain;
}

int64_t TrieWriter::put(std::string_view name, uint64_t hash, uint64_t ino, FileType type,
                        Cell* cell) {
    EntryRec* fresh = EntryRec::make(arena_, name, hash, ino, type, cell);
    if (!root_) {
        auto* node = arena_.make_apart<TrieNode>();
        node->slots[TrieNode::index(hash, 0)].store(TrieNode::tag(fresh), std::memory_order_relaxed);
        root_ = node;
        return -1;
    }
    return put_at(own(root_, nullptr), 0, fresh);
}

int64_t TrieWriter::put_at(TrieNode* node, int depth, EntryRec* fresh) {
    for (;;) {
        auto& slot = node->slots[TrieNode::index(fresh->hash, depth)];
        const uintptr_t s = slot.load(std::memory_order_relaxed);
        if (!s) {
            slot.store(TrieNode::tag(fresh), std::memory_order_release);
            return -1;
        }
        if (!TrieNode::is_entry(s)) {
            node = own(TrieNode::node(s), &slot);
            ++depth;
            continue;
        }
        EntryRec* e = TrieNode::entry(s);
        if (e->hash == fresh->hash) {
            // Same hash: the same name (a replacement), or a collision chain.
            int64_t replaced = -1;
            std::vector<EntryRec*> others;
            for (EntryRec* c = e; c; c = c->next) {
                if (c->name() == fresh->name()) {
                    replaced = static_cast<int64_t>(c->ino);
                } else {
                    others.push_back(c);
                }
            }
            if (replaced < 0) {
                // A new name with a taken hash: in front of the chain (which it now holds).
                fresh->next = e;
                slot.store(TrieNode::tag(fresh), std::memory_order_release);
                return -1;
            }
            // The chain again without the replaced entry (entries are immutable: copies).
            fresh->next = copy_chain(others);
            slot.store(TrieNode::tag(fresh), std::memory_order_release);
            entry_release(e, reclaimer_);
            return replaced;
        }
        // Another hash in this slot: both move one level down, into a node built before it
        // is published, so a reader finds `e` either here or there.
        auto* below = arena_.make_apart<TrieNode>();
        below->slots[TrieNode::index(e->hash, depth + 1)].store(s, std::memory_order_relaxed);
        TrieNode* at = below;
        int d = depth + 1;
        while (TrieNode::index(e->hash, d) == TrieNode::index(fresh->hash, d)) {
            auto* deeper = arena_.make_apart<TrieNode>();
            at->slots[TrieNode::index(e->hash, d)].store(TrieNode::tag(deeper),
                                                         std::memory_order_relaxed);
            deeper->slots[TrieNode::index(e->hash, d + 1)].store(s, std::memory_order_relaxed);
            at = deeper;
            ++d;
        }
        at->slots[TrieNode::index(fresh->hash, d)].store(TrieNode::tag(fresh),
                                                        std::memory_order_relaxed);
        slot.store(TrieNode::tag(below), std::memory_order_release);
        return -1;
    }
}

bool TrieWriter::erase(std::string_view name, uint64_t hash) {
    // Owning the path copies (under a snapshot): only once the name is known to be there, so a
    // miss copies nothing, and found once, not again at each level.
    if (!root_ || !trie_find(root_, hash, name)) return false;
    bool fold = false;
    const bool found = erase_at(root_, 0, nullptr, hash, name, fold);
    if (found && root_ && empty(root_)) {
        trie_release(root_, reclaimer_);
        root_ = nullptr;
    }
    return found;
}

// Removes the entry from the subtree under `node` (reached through `parent_slot`, or the root).
// `fold` comes back true when `node` was left with one entry only and may be folded into its
// parent's slot.
bool TrieWriter::erase_at(TrieNode* node, int depth, std::atomic<uintptr_t>* parent_slot,
                          uint64_t hash, std::string_view name, bool& fold) {
    const int i = TrieNode::index(hash, depth);
    const uintptr_t s = node->slots[i].load(std::memory_order_relaxed);
    if (!s) return false;
    if (TrieNode::is_entry(s)) {
        EntryRec* e = TrieNode::entry(s);
        if (e->hash != hash) return false;
        bool found = false;
        std::vector<EntryRec*> others;
        for (EntryRec* c = e; c; c = c->next) {
            if (c->name() == name) {
                found = true;
            } else {
                others.push_back(c);
            }
        }
        if (!found) return false;
        node = own(node, parent_slot);
        EntryRec* chain = copy_chain(others);
        node->slots[i].store(chain ? TrieNode::tag(chain) : 0, std::memory_order_release);
        entry_release(e, reclaimer_);
        fold = parent_slot && lone_entry(node) != 0;
        return true;
    }
    bool child_fold = false;
    node = own(node, parent_slot);
    auto& slot = node->slots[i];
    TrieNode* child = own(TrieNode::node(slot.load(std::memory_order_relaxed)), &slot);
    erase_at(child, depth + 1, &slot, hash, name, child_fold);
    if (empty(child)) {
        slot.store(0, std::memory_order_release);
        trie_release(child, reclaimer_);
    } else if (child_fold) {
        const uintptr_t only = lone_entry(child);
        retain_slot(only);
        slot.store(only, std::memory_order_release);
        trie_release(child, reclaimer_);
    }
    fold = parent_slot && lone_entry(node) != 0;
    return true;
}

}  // namespace packfs::mem
