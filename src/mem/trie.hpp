// A directory's entries (DESIGN §6): a hash trie keyed by the 64-bit hash of the name, with the
// names out of line in immutable entry records. Each node has 16 slots chosen by 4 bits of the
// hash (depth d uses bits 4d..4d+3); a slot is empty, an entry, or the node one level down. A
// lookup hashes the name once and follows one slot per level, comparing full hashes and, on a
// match, the name: about log16(n) + 1 cache lines, whatever the names look like.
//
// The slots are not compressed, so adding or removing a name changes one slot: the writer
// stores it in place when the node is its own (refs == 1 all the way from the cell, so no
// snapshot's version can reach it), and a reader at any instant sees either the slot before or
// the slot after. A name moves to a deeper node only as a whole: the new node is built with
// both entries and then published with one store, and a node left with one entry is folded back
// the same way, so a listing that runs while names come and go meets every name that stays
// exactly once (POSIX readdir). Nodes a snapshot can reach (refs > 1) are copied instead, with
// the path above them: O(log n) nodes, each taking a reference on what it shares.
//
// Entries are immutable: a rename over a name stores a new entry in its slot. Entries with the
// same full hash (a collision, possible with chosen names) form a chain through `next`. An entry
// with ino 0 is a whiteout (an overlay's: the lower's entry of that name is deleted).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "core/name_hash.hpp"
#include "core/rcu.hpp"
#include "mem/arena.hpp"
#include "mem/cell.hpp"
#include "packfs/types.hpp"

namespace packfs::mem {

// XXH3-64 of the name (core/name_hash.hpp).
inline uint64_t name_hash(std::string_view name) noexcept {
    return xxh3_name(name);
}

struct EntryRec : Counted {
    FileType type = FileType::regular;
    uint16_t name_length = 0;
    uint64_t hash = 0;
    uint64_t ino = 0;  // 0: a whiteout
    // The inode's cell, when it was a live cell of the tree's own as the entry was made (a
    // live cell stays at its address while any entry names it): a lookup skips the inode
    // table. Null: look it up by number (a lower inode, a stub, a whiteout).
    Cell* cell = nullptr;
    EntryRec* next = nullptr;  // another entry with the same hash
    char name_bytes[1];        // name_length bytes

    std::string_view name() const noexcept { return {name_bytes, name_length}; }
    // The bytes an entry for a name of `length` takes (name_bytes[1] holds the NUL).
    static constexpr std::size_t bytes(std::size_t length) noexcept {
        return sizeof(EntryRec) + length;
    }
    static EntryRec* make(Arena& arena, std::string_view name, uint64_t hash, uint64_t ino,
                          FileType type, Cell* cell, EntryRec* next = nullptr);
};

// An entry's bytes: its name follows it.
inline std::size_t arena_size(const EntryRec& e) noexcept {
    return EntryRec::bytes(e.name_length);
}

struct TrieNode : Counted {
    static constexpr int kBits = 4;
    static constexpr int kSlots = 1 << kBits;
    static constexpr int kMaxDepth = 64 / kBits;  // past it the hashes are equal: a chain
    std::atomic<uintptr_t> slots[kSlots] = {};

    static bool is_entry(uintptr_t s) noexcept { return s & 1; }
    static EntryRec* entry(uintptr_t s) noexcept { return reinterpret_cast<EntryRec*>(s & ~uintptr_t{1}); }
    static TrieNode* node(uintptr_t s) noexcept { return reinterpret_cast<TrieNode*>(s); }
    static uintptr_t tag(EntryRec* e) noexcept { return reinterpret_cast<uintptr_t>(e) | 1; }
    static uintptr_t tag(TrieNode* n) noexcept { return reinterpret_cast<uintptr_t>(n); }
    static int index(uint64_t hash, int depth) noexcept {
        return static_cast<int>((hash >> (depth * kBits)) & (kSlots - 1));
    }
};

// --- readers (inside an RCU read section, or the writer) -----------------------------------

// The entry `name` (hash `hash`) below `node` at `depth`, whiteouts included; nullptr when
// there is none.
inline const EntryRec* trie_find_from(const TrieNode* node, int depth, uint64_t hash,
                                      std::string_view name) noexcept {
    for (; node; ++depth) {
        const uintptr_t s = node->slots[TrieNode::index(hash, depth)].load(std::memory_order_acquire);
        if (!s) return nullptr;
        if (TrieNode::is_entry(s)) {
            for (const EntryRec* e = TrieNode::entry(s); e; e = e->next) {
                if (e->hash != hash) return nullptr;
                if (e->name() == name) return e;
            }
            return nullptr;
        }
        node = TrieNode::node(s);
    }
    return nullptr;
}
inline const EntryRec* trie_find(const TrieNode* root, uint64_t hash, std::string_view name) noexcept {
    return trie_find_from(root, 0, hash, name);
}

// Calls fn(const EntryRec&) for every entry (whiteouts included), in hash order; stops early
// when fn returns false. A node's slots are read first and what they point to is prefetched,
// then visited: the entries of a large directory lie beside their cells, in the order they
// were made, not in hash order, so each is a cache miss, and this has up to 16 of them in
// flight instead of one after another.
template <class Fn>
bool trie_each(const TrieNode* node, Fn&& fn) {
    if (!node) return true;
    uintptr_t slots[TrieNode::kSlots];
    for (int i = 0; i < TrieNode::kSlots; ++i) {
        const uintptr_t s = slots[i] = node->slots[i].load(std::memory_order_acquire);
        if (!s) continue;
        const char* p = reinterpret_cast<const char*>(s & ~uintptr_t{1});
        __builtin_prefetch(p);
        if (!TrieNode::is_entry(s)) {  // a node spans three lines
            __builtin_prefetch(p + 64);
            __builtin_prefetch(p + 128);
        }
    }
    for (const uintptr_t s : slots) {
        if (!s) continue;
        if (TrieNode::is_entry(s)) {
            for (const EntryRec* e = TrieNode::entry(s); e; e = e->next)
                if (!fn(*e)) return false;
        } else if (!trie_each(TrieNode::node(s), fn)) {
            return false;
        }
    }
    return true;
}

// --- the writer ----------------------------------------------------------------------------

// Changes one directory's trie. `root` is the cell's field: it is replaced when the root node
// changes (the caller publishes the new value with the cell's state). Nodes and entries the
// change drops are released (retired once nothing references them).
class TrieWriter {
public:
    // `reclaimer`'s context is `arena`, where the trie's nodes and entries live.
    TrieWriter(TrieNode*& root, rcu::Reclaimer& reclaimer, Arena& arena) noexcept
        : root_(root), reclaimer_(reclaimer), arena_(arena) {}

    // Sets `name` to (ino, type), replacing any entry of that name. Returns the replaced entry's
    // ino, or -1 when the name was free (a whiteout counts as an entry with ino 0).
    int64_t put(std::string_view name, uint64_t hash, uint64_t ino, FileType type,
                Cell* cell = nullptr);
    // Removes `name`; returns whether it was there.
    bool erase(std::string_view name, uint64_t hash);

private:
    TrieNode* own(TrieNode* node, std::atomic<uintptr_t>* parent_slot);
    int64_t put_at(TrieNode* node, int depth, EntryRec* fresh);
    bool erase_at(TrieNode* node, int depth, std::atomic<uintptr_t>* parent_slot,
                  uint64_t hash, std::string_view name, bool& fold);

    EntryRec* copy_chain(const std::vector<EntryRec*>& entries);

    TrieNode*& root_;
    rcu::Reclaimer& reclaimer_;
    Arena& arena_;
};

// Reference counting of shared trie pieces (the writer; `reclaimer`'s context is their arena).
void trie_retain(TrieNode* root) noexcept;
void trie_release(TrieNode* root, rcu::Reclaimer& reclaimer) noexcept;
void entry_release(EntryRec* e, rcu::Reclaimer& reclaimer) noexcept;
// Frees a trie nobody can reach any more, without waiting (engine teardown).
void trie_destroy_now(TrieNode* root, Arena& arena) noexcept;

}  // namespace packfs::mem
