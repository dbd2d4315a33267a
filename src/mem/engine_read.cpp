// The engine's reads (engine.hpp): what a node is, its entries, attributes, target, xattrs and
// bytes, at the live generation or a snapshot's. Callers are inside an RCU read section (or
// hold the writer lock); nothing here takes a lock or writes shared memory.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <unordered_set>

#include "mem/engine.hpp"

namespace packfs::mem {

// --- lower files ---------------------------------------------------------------------------

std::shared_ptr<const Backing> LowerFiles::get(const Layer& layer, uint64_t node) {
    {
        std::lock_guard lock(mu_);
        if (open_ && node_ == node && layer_gen_ == layer.first_gen) return open_;
    }
    auto file = layer.lower->open(node);  // (outside the lock: a lower's open may take a while)
    if (!file) return nullptr;
    auto opened = std::make_shared<const Adapter>(std::move(*file));
    std::lock_guard lock(mu_);
    open_ = opened;
    node_ = node;
    layer_gen_ = layer.first_gen;
    return opened;
}

// --- nodes -----------------------------------------------------------------------------------

namespace {

// The state a reader at `gen` sees with at least the bytes [From, To) of it (and the kind): the
// live state read in part (a few words, not the whole), a snapshot's whole. nullopt: the cell
// shows nothing at `gen` (a stub, or made later).
template <std::size_t From, std::size_t To>
std::optional<CellState> state_at(const Cell& cell, uint64_t gen) noexcept {
    if (gen != kLiveGen) return Engine::visible(cell, gen);
    constexpr std::size_t kind_at = offsetof(CellState, type);
    const CellState s = cell.read_part<std::min(From, kind_at), std::max(To, kind_at + 8)>();
    if (s.kind == CellKind::stub) return std::nullopt;
    return s;
}

// What a reader needs of a cell an entry names: its kind (whether it is live, or a stub that
// reads as the lower's), its lower node and that node's layer.
struct Named {
    CellKind kind;
    uint64_t lower;
    uint16_t layer;
};
std::optional<Named> named_state(const Cell& cell, uint64_t gen) noexcept {
    if (gen == kLiveGen) {
        const CellState s = cell.read_part<offsetof(CellState, type), offsetof(CellState, data)>();
        return Named{s.kind, s.lower, s.layer};
    }
    auto s = Engine::visible(cell, gen);
    if (!s) return std::nullopt;
    return Named{s->kind, s->lower, s->layer};
}

}  // namespace

Ref Engine::root_at(uint64_t gen) const {
    if (Cell* cell = table_.find(kRootIno)) {
        if (auto k = named_state(*cell, gen); k && k->kind == CellKind::live)
            return Ref{kRootIno, cell, k->lower, FileType::directory, k->layer};
    }
    return Ref{kRootIno, nullptr, kRootNode.id, FileType::directory, layer_at(gen)};
}

std::optional<Ref> Engine::as_lower(const Ref& node, uint64_t gen) const noexcept {
    if (!node.cell || gen != kLiveGen) return std::nullopt;
    const CellState s = node.cell->read_part<offsetof(CellState, type), offsetof(CellState, data)>();
    if (s.kind != CellKind::stub) return std::nullopt;
    return Ref{node.ino, nullptr, s.lower, s.type, s.layer};
}

Result<std::optional<Ref>> Engine::child(const Ref& dir, std::string_view name,
                                         uint64_t gen) const {
    // A node from outside (a journal record, a FUSE request) may name a file: its data is not
    // a trie.
    if (!dir.is_dir()) return fail(ENOTDIR, "lookup", name);
    uint64_t lower_dir = dir.lower;
    uint16_t layer_index = dir.layer;
    if (dir.cell) {
        DirFields d;
        if (gen == kLiveGen) {
            d = dir.cell->dir_fields();
        } else {
            auto s = visible(*dir.cell, gen);
            if (!s) return std::nullopt;
            d = DirFields{s->kind, s->data, s->lower, s->layer};
        }
        if (d.kind == CellKind::dead) return std::nullopt;  // removed meanwhile
        // (A stub: a rebase handed the directory back to the lower meanwhile.)
        const EntryRec* e = d.kind == CellKind::live ? trie_find(static_cast<const TrieNode*>(d.data),
                                                                 name_hash(name), name)
                                                     : nullptr;
        if (e) {
            if (e->ino == 0) return std::nullopt;  // a whiteout: the lower's name is deleted
            Cell* cell = e->cell ? e->cell : table_.find(e->ino);
            if (!cell) return std::nullopt;  // freed after the name was read: gone
            auto k = named_state(*cell, gen);
            if (!k || k->kind == CellKind::dead) return std::nullopt;
            if (k->kind == CellKind::stub) return Ref{e->ino, nullptr, k->lower, e->type, k->layer};
            return Ref{e->ino, cell, k->lower, e->type, k->layer};
        }
        lower_dir = d.lower;
        layer_index = d.layer;
    }
    if (!lower_dir || !top()) return std::nullopt;
    auto found = lower(layer_index).lookup(lower_dir, name);
    if (!found) return std::unexpected(found.error());
    if (!*found) return std::nullopt;
    const uint64_t ino = (*found)->ino;
    if (Cell* cell = table_.find(ino)) {
        // The lower's inode, changed by the tree (copied up under another of its names), or
        // removed by it.
        if (auto cs = state_at<offsetof(CellState, type), offsetof(CellState, data)>(*cell, gen)) {
            if (cs->kind != CellKind::live) return std::nullopt;
            return Ref{ino, cell, cs->lower, cs->type, cs->layer};
        }
    }
    return Ref{ino, nullptr, (*found)->node, (*found)->type, layer_index};
}

Result<Ref> Engine::by_ino(uint64_t ino, uint64_t gen) const {
    if (ino == kRootIno) return root(gen);
    uint64_t lower_node = 0;
    FileType lower_type = FileType::regular;
    uint16_t layer_index = layer_at(gen);
    if (Cell* cell = table_.find(ino)) {
        if (auto s = visible(*cell, gen)) {
            if (s->kind != CellKind::live) return fail(ESTALE, "lookup");
            return Ref{ino, cell, s->lower, s->type, s->layer};
        }
        const CellState raw = cell->read();
        if (raw.kind == CellKind::stub && gen == kLiveGen) {
            lower_node = raw.lower;
            lower_type = raw.type;
            layer_index = raw.layer;
        }
    }
    const Layer* l = layers_->slot[layer_index].load(std::memory_order_acquire);
    if (!l || ino >= l->limit) return fail(ESTALE, "lookup");
    if (!lower_node) {
        auto node = l->lower->node_of(ino);
        if (!node) return std::unexpected(node.error());
        auto st = l->lower->getattr(*node);
        if (!st) return std::unexpected(st.error());
        lower_node = *node;
        lower_type = st->type;
    }
    return Ref{ino, nullptr, lower_node, lower_type, layer_index};
}

// --- attributes ----------------------------------------------------------------------------------

Result<Stat> Engine::stat(const Ref& node, uint64_t gen) const {
    bool may_have_xattrs = true;
    return stat(node, gen, may_have_xattrs);
}

Result<Stat> Engine::stat(const Ref& node, uint64_t gen, bool& may_have_xattrs) const {
    may_have_xattrs = true;
    if (node.cell) {
        // The attributes and the xattr set's pointer: two words past what stat_of needs.
        auto s = state_at<offsetof(CellState, type), offsetof(CellState, xattrs) + sizeof(void*)>(
            *node.cell, gen);
        if (!s || s->kind != CellKind::live) {
            if (auto back = as_lower(node, gen)) return stat(*back, gen, may_have_xattrs);
            return fail(ESTALE, "stat");
        }
        may_have_xattrs = s->xattrs != nullptr;
        return stat_of(node.ino, *s);
    }
    auto st = lower(node.layer).getattr(node.lower);
    if (!st) return std::unexpected(st.error());
    st->ino = node.ino;
    if (st->type == FileType::directory) st->size = 0;  // as the engine's own (stat_of)
    return st;
}

Result<std::string> Engine::target(const Ref& link, uint64_t gen) const {
    if (link.cell) {
        auto s = visible(*link.cell, gen);
        if (!s || s->kind != CellKind::live) {
            if (auto back = as_lower(link, gen)) return target(*back, gen);
            return fail(ESTALE, "readlink");
        }
        if (s->type != FileType::symlink) return fail(EINVAL, "readlink");
        return static_cast<const Target*>(s->data)->text;
    }
    return lower(link.layer).readlink(link.lower);
}

Result<std::string> Engine::getxattr(const Ref& node, std::string_view name, uint64_t gen) const {
    if (node.cell) {
        auto s = visible(*node.cell, gen);
        if (!s || s->kind != CellKind::live) {
            if (auto back = as_lower(node, gen)) return getxattr(*back, name, gen);
            return fail(ESTALE, "getxattr");
        }
        const std::string* value = s->xattrs ? s->xattrs->find(name) : nullptr;
        if (!value) return fail(ENODATA, "getxattr");
        return *value;
    }
    return lower(node.layer).getxattr(node.lower, name);
}

Result<std::vector<std::string>> Engine::listxattr(const Ref& node, uint64_t gen) const {
    if (node.cell) {
        auto s = visible(*node.cell, gen);
        if (!s || s->kind != CellKind::live) {
            if (auto back = as_lower(node, gen)) return listxattr(*back, gen);
            return fail(ESTALE, "listxattr");
        }
        std::vector<std::string> names;
        if (s->xattrs)
            for (const auto& [k, v] : s->xattrs->items) names.push_back(k);
        return names;
    }
    return lower(node.layer).listxattr(node.lower);
}

// --- directories -------------------------------------------------------------------------------

Result<std::vector<DirEntry>> Engine::list(const Ref& dir, uint64_t gen) const {
    if (!dir.cell) return lower(dir.layer).list(dir.lower);
    auto s = visible(*dir.cell, gen);
    if (!s || s->kind != CellKind::live) {
        if (auto back = as_lower(dir, gen)) return list(*back, gen);
        return fail(ESTALE, "readdir");
    }
    std::vector<DirEntry> out;
    const auto* root = static_cast<const TrieNode*>(s->data);
    out.reserve(s->entries);
    if (!s->lower) {
        trie_each(root, [&](const EntryRec& e) {
            if (e.ino) out.push_back(DirEntry{std::string(e.name()), e.ino, e.type});
            return true;
        });
        return out;
    }
    // Merged: its own names (whiteouts hide the lower's), then the lower's it does not shadow.
    auto lower = this->lower(s->layer).list(s->lower);
    if (!lower) return std::unexpected(lower.error());
    if (!root) return lower;
    std::unordered_set<std::string_view> own;
    trie_each(root, [&](const EntryRec& e) {
        own.insert(e.name());
        if (e.ino) out.push_back(DirEntry{std::string(e.name()), e.ino, e.type});
        return true;
    });
    for (DirEntry& e : *lower)
        if (!own.contains(e.name)) out.push_back(std::move(e));
    return out;
}

Result<std::optional<std::vector<std::pair<std::string, Ref>>>> Engine::own_entries(
    const Ref& dir, uint64_t gen) const {
    if (!dir.cell) return std::nullopt;  // the lower's directory, untouched
    auto s = visible(*dir.cell, gen);
    if (!s || s->kind != CellKind::live) {
        if (as_lower(dir, gen)) return std::nullopt;  // handed back to the lower meanwhile
        return fail(ESTALE, "readdir");
    }
    if (s->lower) return std::nullopt;
    std::vector<std::pair<std::string, Ref>> out;
    out.reserve(s->entries);
    trie_each(static_cast<const TrieNode*>(s->data), [&](const EntryRec& e) {
        if (e.ino == 0) return true;
        Cell* cell = e.cell ? e.cell : table_.find(e.ino);
        if (!cell) return true;  // freed after the name was read: gone
        auto k = named_state(*cell, gen);
        if (k && k->kind == CellKind::live)
            out.emplace_back(std::string(e.name()), Ref{e.ino, cell, k->lower, e.type, k->layer});
        else if (k && k->kind == CellKind::stub)
            out.emplace_back(std::string(e.name()), Ref{e.ino, nullptr, k->lower, e.type, k->layer});
        return true;
    });
    return out;
}

Result<bool> Engine::has_entries(const Ref& dir, uint64_t gen) const {
    uint64_t lower_dir = dir.lower;
    uint16_t layer_index = dir.layer;
    const TrieNode* root = nullptr;
    if (dir.cell) {
        auto s = visible(*dir.cell, gen);
        if (!s || s->kind != CellKind::live) {
            if (auto back = as_lower(dir, gen)) return has_entries(*back, gen);
            return false;
        }
        if (s->entries > 0) return true;
        lower_dir = s->lower;
        layer_index = s->layer;
        root = static_cast<const TrieNode*>(s->data);
    }
    if (!lower_dir || !top()) return false;
    auto lower = this->lower(layer_index).names(lower_dir);
    if (!lower) return std::unexpected(lower.error());
    for (const DirEntry& e : *lower)
        if (!trie_find(root, name_hash(e.name), e.name)) return true;  // not whited out
    return false;
}

// --- contents
// --------------------------------------------------------------------------------------

Result<std::size_t> Engine::read(const Ref& file, std::span<std::byte> out, uint64_t offset,
                                 uint64_t gen, LowerFiles& lower_files) const {
    if (file.type == FileType::directory) return fail(EISDIR, "read");
    if (!file.cell) {
        const auto lower = lower_files.get(layer(file.layer), file.lower);
        if (!lower) return fail(EIO, "read");
        return lower->read(offset, out);
    }
    auto s =
        state_at<offsetof(CellState, type), offsetof(CellState, modified_gen)>(*file.cell, gen);
    if (!s || s->kind != CellKind::live) {
        if (auto back = as_lower(file, gen)) return read(*back, out, offset, gen, lower_files);
        return fail(ESTALE, "read");
    }
    return read_state(*s, out, offset, lower_files);
}

Result<std::size_t> Engine::read_held(const Cell& cell, std::span<std::byte> out, uint64_t offset,
                                      LowerFiles& lower_files) const {
    const CellState s =
        cell.read_part<offsetof(CellState, type), offsetof(CellState, modified_gen)>();
    switch (s.kind) {
        case CellKind::live:
            return read_state(s, out, offset, lower_files);
        case CellKind::stub:
            return read(Ref{cell.ino, nullptr, s.lower, s.type, s.layer}, out, offset, kLiveGen,
                        lower_files);
        case CellKind::dead:
            break;
    }
    return fail(ESTALE, "read");
}

Result<std::size_t> Engine::read_state(const CellState& s, std::span<std::byte> out,
                                       uint64_t offset, LowerFiles& lower_files) const {
    if (s.type == FileType::directory) return fail(EISDIR, "read");
    std::shared_ptr<const Backing> backing;
    if (s.aux > 0 && s.lower && top()) {
        backing = lower_files.get(layer(s.layer), s.lower);
        if (!backing) return fail(EIO, "read");
    }
    return Content(s.data).read(s.size, offset, out, backing.get(), s.aux);
}

namespace {

Result<uint64_t> seek_in_state(const CellState& s, uint64_t offset, bool data) {
    if (s.type == FileType::directory) return fail(EISDIR, "lseek");
    const uint64_t backing = s.lower ? s.aux : 0;
    auto at = Content(s.data).seek(s.size, offset, data, backing);
    if (!at) return fail(ENXIO, "lseek");
    return *at;
}

}  // namespace

Result<uint64_t> Engine::seek(const Ref& file, uint64_t offset, bool data, uint64_t gen) const {
    if (file.type == FileType::directory) return fail(EISDIR, "lseek");
    if (!file.cell) {  // wholly the lower's: its holes (a pack's hole blocks)
        auto lower_file = lower(file.layer).open(file.lower);
        if (!lower_file) return std::unexpected(lower_file.error());
        return (*lower_file)->seek_data(offset, data);
    }
    auto s =
        state_at<offsetof(CellState, type), offsetof(CellState, modified_gen)>(*file.cell, gen);
    if (!s || s->kind != CellKind::live) {
        if (auto back = as_lower(file, gen)) return seek(*back, offset, data, gen);
        return fail(ESTALE, "lseek");
    }
    return seek_in_state(*s, offset, data);
}

Result<uint64_t> Engine::seek_held(const Cell& cell, uint64_t offset, bool data) const {
    const CellState s =
        cell.read_part<offsetof(CellState, type), offsetof(CellState, modified_gen)>();
    switch (s.kind) {
        case CellKind::live:
            return seek_in_state(s, offset, data);
        case CellKind::stub:
            return seek(Ref{cell.ino, nullptr, s.lower, s.type, s.layer}, offset, data, kLiveGen);
        case CellKind::dead:
            break;
    }
    return fail(ESTALE, "lseek");
}

StatFs Engine::statfs(uint64_t gen) const {
    uint64_t capacity = options_.capacity_bytes;
    if (capacity == 0) {
        const long pages = sysconf(_SC_PHYS_PAGES);
        const long page_size = sysconf(_SC_PAGESIZE);
        capacity = pages > 0 && page_size > 0 ? uint64_t(pages) * uint64_t(page_size) : 1ull << 32;
    }
    StatFs fs;
    fs.block_size = 4096;
    fs.blocks = capacity / fs.block_size;
    uint64_t used =
        (bytes_used_.load(std::memory_order_relaxed) + fs.block_size - 1) / fs.block_size;
    uint64_t files = inodes_.load(std::memory_order_relaxed);
    if (const Layer* l = layers_->slot[layer_at(gen)].load(std::memory_order_acquire)) {
        // The lower's bytes and inodes count as used: an overlay holds both layers.
        if (auto lower = l->lower->statfs()) {
            used += (lower->blocks - lower->blocks_free) * lower->block_size / fs.block_size;
            files += lower->files - lower->files_free;
        }
        fs.blocks = std::max(fs.blocks, used);
    }
    fs.blocks_free = fs.blocks > used ? fs.blocks - used : 0;
    fs.files = files + (1ull << 32);
    fs.files_free = fs.files - files;
    fs.name_max = 255;
    return fs;
}

}  // namespace packfs::mem
