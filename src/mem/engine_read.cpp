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

const Backing* LowerFiles::get(Lower& lower, uint64_t node) {
    if (open_ && node_ == node) return open_.get();
    auto file = lower.open(node);
    if (!file) return nullptr;
    open_ = std::make_unique<Adapter>(std::move(*file));
    node_ = node;
    return open_.get();
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

// The kind and lower node of a cell an entry names (whether it is live; its copy-up origin).
std::optional<std::pair<CellKind, uint64_t>> kind_and_lower(const Cell& cell,
                                                            uint64_t gen) noexcept {
    if (gen == kLiveGen) return std::pair{cell.kind(), cell.lower_node()};
    auto s = Engine::visible(cell, gen);
    if (!s) return std::nullopt;
    return std::pair{s->kind, s->lower};
}

}  // namespace

Ref Engine::root_at(uint64_t gen) const {
    if (Cell* cell = table_.find(kRootIno)) {
        if (auto k = kind_and_lower(*cell, gen); k && k->first == CellKind::live)
            return Ref{kRootIno, cell, k->second, FileType::directory};
    }
    return Ref{kRootIno, nullptr, kRootNode.id, FileType::directory};
}

Result<std::optional<Ref>> Engine::child(const Ref& dir, std::string_view name,
                                         uint64_t gen) const {
    // A node from outside (a journal record, a FUSE request) may name a file: its data is not
    // a trie.
    if (!dir.is_dir()) return fail(ENOTDIR, "lookup", name);
    uint64_t lower_dir = dir.lower;
    if (dir.cell) {
        DirFields d;
        if (gen == kLiveGen) {
            d = dir.cell->dir_fields();
        } else {
            auto s = visible(*dir.cell, gen);
            if (!s) return std::nullopt;
            d = DirFields{s->kind, s->data, s->lower};
        }
        if (d.kind != CellKind::live) return std::nullopt;  // removed meanwhile
        if (const EntryRec* e =
                trie_find(static_cast<const TrieNode*>(d.data), name_hash(name), name)) {
            if (e->ino == 0) return std::nullopt;  // a whiteout: the lower's name is deleted
            Cell* cell = e->cell ? e->cell : table_.find(e->ino);
            if (!cell) return std::nullopt;  // freed after the name was read: gone
            auto k = kind_and_lower(*cell, gen);
            if (!k || k->first != CellKind::live) return std::nullopt;
            return Ref{e->ino, cell, k->second, e->type};
        }
        lower_dir = d.lower;
    }
    if (!lower_dir || !lower_) return std::nullopt;
    auto found = lower_->lookup(lower_dir, name);
    if (!found) return std::unexpected(found.error());
    if (!*found) return std::nullopt;
    const uint64_t ino = (*found)->ino;
    if (Cell* cell = table_.find(ino)) {
        // The lower's inode, changed by the tree (copied up under another of its names), or
        // removed by it.
        if (auto cs = state_at<offsetof(CellState, type), offsetof(CellState, uid)>(*cell, gen)) {
            if (cs->kind != CellKind::live) return std::nullopt;
            return Ref{ino, cell, cell->lower_node(), cs->type};
        }
    }
    return Ref{ino, nullptr, (*found)->node, (*found)->type};
}

Result<Ref> Engine::by_ino(uint64_t ino, uint64_t gen) const {
    if (ino == kRootIno) return root(gen);
    uint64_t lower_node = 0;
    FileType lower_type = FileType::regular;
    if (Cell* cell = table_.find(ino)) {
        if (auto s = visible(*cell, gen)) {
            if (s->kind != CellKind::live) return fail(ESTALE, "lookup");
            return Ref{ino, cell, s->lower, s->type};
        }
        const CellState raw = cell->read();
        if (raw.kind == CellKind::stub) {
            lower_node = raw.lower;
            lower_type = raw.type;
        }
    }
    if (!lower_ || ino >= lower_->limit()) return fail(ESTALE, "lookup");
    if (!lower_node) {
        auto node = lower_->node_of(ino);
        if (!node) return std::unexpected(node.error());
        auto st = lower_->getattr(*node);
        if (!st) return std::unexpected(st.error());
        lower_node = *node;
        lower_type = st->type;
    }
    return Ref{ino, nullptr, lower_node, lower_type};
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
        if (!s || s->kind != CellKind::live) return fail(ESTALE, "stat");
        may_have_xattrs = s->xattrs != nullptr;
        return stat_of(node.ino, *s);
    }
    auto st = lower_->getattr(node.lower);
    if (!st) return std::unexpected(st.error());
    st->ino = node.ino;
    if (st->type == FileType::directory) st->size = 0;  // as the engine's own (stat_of)
    return st;
}

Result<std::string> Engine::target(const Ref& link, uint64_t gen) const {
    if (link.cell) {
        auto s = visible(*link.cell, gen);
        if (!s || s->kind != CellKind::live) return fail(ESTALE, "readlink");
        if (s->type != FileType::symlink) return fail(EINVAL, "readlink");
        return static_cast<const Target*>(s->data)->text;
    }
    return lower_->readlink(link.lower);
}

Result<std::string> Engine::getxattr(const Ref& node, std::string_view name, uint64_t gen) const {
    if (node.cell) {
        auto s = visible(*node.cell, gen);
        if (!s || s->kind != CellKind::live) return fail(ESTALE, "getxattr");
        const std::string* value = s->xattrs ? s->xattrs->find(name) : nullptr;
        if (!value) return fail(ENODATA, "getxattr");
        return *value;
    }
    return lower_->getxattr(node.lower, name);
}

Result<std::vector<std::string>> Engine::listxattr(const Ref& node, uint64_t gen) const {
    if (node.cell) {
        auto s = visible(*node.cell, gen);
        if (!s || s->kind != CellKind::live) return fail(ESTALE, "listxattr");
        std::vector<std::string> names;
        if (s->xattrs)
            for (const auto& [k, v] : s->xattrs->items) names.push_back(k);
        return names;
    }
    return lower_->listxattr(node.lower);
}

// --- directories -------------------------------------------------------------------------------

Result<std::vector<DirEntry>> Engine::list(const Ref& dir, uint64_t gen) const {
    if (!dir.cell) return lower_->list(dir.lower);
    auto s = visible(*dir.cell, gen);
    if (!s || s->kind != CellKind::live) return fail(ESTALE, "readdir");
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
    auto lower = lower_->list(s->lower);
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
    if (!s || s->kind != CellKind::live) return fail(ESTALE, "readdir");
    if (s->lower) return std::nullopt;
    std::vector<std::pair<std::string, Ref>> out;
    out.reserve(s->entries);
    trie_each(static_cast<const TrieNode*>(s->data), [&](const EntryRec& e) {
        if (e.ino == 0) return true;
        Cell* cell = e.cell ? e.cell : table_.find(e.ino);
        if (!cell) return true;  // freed after the name was read: gone
        auto k = kind_and_lower(*cell, gen);
        if (k && k->first == CellKind::live)
            out.emplace_back(std::string(e.name()), Ref{e.ino, cell, k->second, e.type});
        return true;
    });
    return out;
}

Result<bool> Engine::has_entries(const Ref& dir, uint64_t gen) const {
    uint64_t lower_dir = dir.lower;
    const TrieNode* root = nullptr;
    if (dir.cell) {
        auto s = visible(*dir.cell, gen);
        if (!s || s->kind != CellKind::live) return false;
        if (s->entries > 0) return true;
        lower_dir = s->lower;
        root = static_cast<const TrieNode*>(s->data);
    }
    if (!lower_dir || !lower_) return false;
    auto lower = lower_->names(lower_dir);
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
        const Backing* lower = lower_files.get(*lower_, file.lower);
        if (!lower) return fail(EIO, "read");
        return lower->read(offset, out);
    }
    auto s =
        state_at<offsetof(CellState, type), offsetof(CellState, modified_gen)>(*file.cell, gen);
    if (!s || s->kind != CellKind::live) return fail(ESTALE, "read");
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
            return read(Ref{cell.ino, nullptr, s.lower, s.type}, out, offset, kLiveGen,
                        lower_files);
        case CellKind::dead:
            break;
    }
    return fail(ESTALE, "read");
}

Result<std::size_t> Engine::read_state(const CellState& s, std::span<std::byte> out,
                                       uint64_t offset, LowerFiles& lower_files) const {
    if (s.type == FileType::directory) return fail(EISDIR, "read");
    const Backing* backing = nullptr;
    if (s.aux > 0 && s.lower && lower_) {
        backing = lower_files.get(*lower_, s.lower);
        if (!backing) return fail(EIO, "read");
    }
    return Content(s.data).read(s.size, offset, out, backing, s.aux);
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
        auto lower_file = lower_->open(file.lower);
        if (!lower_file) return std::unexpected(lower_file.error());
        return (*lower_file)->seek_data(offset, data);
    }
    auto s =
        state_at<offsetof(CellState, type), offsetof(CellState, modified_gen)>(*file.cell, gen);
    if (!s || s->kind != CellKind::live) return fail(ESTALE, "lseek");
    return seek_in_state(*s, offset, data);
}

Result<uint64_t> Engine::seek_held(const Cell& cell, uint64_t offset, bool data) const {
    const CellState s =
        cell.read_part<offsetof(CellState, type), offsetof(CellState, modified_gen)>();
    switch (s.kind) {
        case CellKind::live:
            return seek_in_state(s, offset, data);
        case CellKind::stub:
            return seek(Ref{cell.ino, nullptr, s.lower, s.type}, offset, data, kLiveGen);
        case CellKind::dead:
            break;
    }
    return fail(ESTALE, "lseek");
}

StatFs Engine::statfs(uint64_t gen) const {
    (void)gen;
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
    if (lower_) {
        // The lower's bytes and inodes count as used: an overlay holds both layers.
        if (auto lower = lower_->statfs()) {
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
