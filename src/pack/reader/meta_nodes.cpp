// MetaReader, the records a walk reads: inodes (the hot path try_inode and the slow path that
// says what is wrong), dirents (lookup by name in both gears, listing), and each record's
// fields checked before use. Kept in one file so the hot path inlines into the lookups.
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>

#include "pack/reader/meta_reader.hpp"
#include "packfs/path.hpp"

namespace packfs::pack {

namespace {

// The file type of a dirent's type byte (S_IFMT >> 12), false when it names none.
inline bool type_of_nibble(uint32_t nibble, FileType& out) noexcept {
    return nibble <= 0xF && file_type_from_mode_bits(nibble << 12, out);
}

// A name a directory may hold: no '/' or NUL, not "." or "..".
inline bool is_file_name(std::string_view name) noexcept {
    bool plain = true;
    for (char c : name) plain &= c != '/' && c != '\0';  // no early exit: names are short
    return plain && name != "." && name != "..";
}

// Byte order of two names (memcmp, then length), eight bytes at a time: names are short and
// a libc call per binary-search probe costs more than the comparison.
inline int compare_names(const char* a, std::size_t a_length, const char* b,
                         std::size_t b_length) noexcept {
    std::size_t n = std::min(a_length, b_length);
    for (; n >= 8; n -= 8, a += 8, b += 8) {
        uint64_t x, y;
        std::memcpy(&x, a, 8);
        std::memcpy(&y, b, 8);
        if (x != y) return __builtin_bswap64(x) < __builtin_bswap64(y) ? -1 : 1;
    }
    for (; n > 0; --n, ++a, ++b) {
        if (*a != *b)
            return static_cast<unsigned char>(*a) < static_cast<unsigned char>(*b) ? -1 : 1;
    }
    return a_length < b_length ? -1 : a_length > b_length ? 1 : 0;
}

constexpr uint64_t kNsecLimit = 1'000'000'000;

}  // namespace

// --- inodes ------------------------------------------------------------------------------

uint32_t MetaReader::decode_inode(const std::byte* at, const std::byte* times,
                                  InodeView& out) const noexcept {
    out.rec = load<InodeCore>(at);  // the first 40 bytes are alike in both versions
    if (version_ < 2) {
        out.aux = 0;
        return std::max({load<uint32_t>(at + offsetof(Inode, atime_nsec)),
                         load<uint32_t>(at + offsetof(Inode, mtime_nsec)),
                         load<uint32_t>(at + offsetof(Inode, ctime_nsec))});
    }
    out.aux = load<uint32_t>(at + offsetof(InodeV2, aux));
    const uint32_t mtime_nsec = load<uint32_t>(at + offsetof(InodeV2, mtime_nsec));
    if (times == nullptr) return mtime_nsec;
    return std::max({mtime_nsec, load<uint32_t>(times + offsetof(InodeTimes, atime_nsec)),
                     load<uint32_t>(times + offsetof(InodeTimes, ctime_nsec))});
}

// The node's records were checked when it was decoded (their blocks too), so they are read

MetaReader::InodeFault MetaReader::inode_fault(const InodeCore& n, uint32_t max_nsec, uint32_t aux,
                                               FileType& type) const noexcept {
    if ((n.mode & ~uint32_t{0177777}) != 0 || !type_of_nibble(n.mode >> 12, type)) [[unlikely]]
        return InodeFault::mode;
    if (max_nsec >= kNsecLimit) [[unlikely]]
        return InodeFault::nsec;
    if (n.xattr_count != 0 && !within(n.xattr_first, n.xattr_count, xattr_count_)) [[unlikely]]
        return InodeFault::xattrs;
    bool ok = true;
    const bool v2 = version_ >= 2;
    switch (type) {
        case FileType::regular:
            if (!v2) {
                ok = n.ref <= content_count_ && (n.ref != 0 || n.size == 0);
            } else if (n.size == 0) {
                ok = n.ref == 0 && aux == 0;
            } else if ((n.ref & kExtentLocator) != 0 && extents_) {
                // made of extents (kIncompatExtents): never inline; its first extent's index
                ok = aux < content_count_ && n.size > inline_max_ &&
                     (n.ref & ~kExtentLocator) < extent_count_;
            } else if ((n.ref & kBaseLocator) != 0 && extents_) {
                // whole in a base: never inline, a base this pack names (its range and digest
                // index are the base's to check, when it is read)
                ok = n.size > inline_max_ && locator_base(n.ref) >= 1 &&
                     locator_base(n.ref) <= base_count_;
            } else {  // the content's digest, and its bytes inline or in the stream
                ok = aux < content_count_ &&
                     within(n.ref, n.size, n.size <= inline_max_ ? bytes_length_ : stream_size_);
            }
            return ok ? InodeFault::none : InodeFault::reference;
        case FileType::directory: {
            ok = within(n.ref, n.size, dirent_count_);
            const unsigned bits = bucket_bits(n.size);
            if (v2)
                ok &= bits == 0 ? aux == 0 : within(aux, (uint64_t{1} << bits) + 1, bucket_count_);
            return ok ? InodeFault::none : InodeFault::reference;
        }
        case FileType::symlink:
            ok = n.size != 0 && n.size <= kMaxPathLength && within(n.ref, n.size, bytes_length_);
            break;
        case FileType::char_device:
        case FileType::block_device:
            ok = n.size == 0;
            break;
        case FileType::fifo:
        case FileType::socket:
            ok = n.size == 0 && n.ref == 0;
            break;
    }
    return ok && aux == 0 ? InodeFault::none : InodeFault::reference;
}

inline bool MetaReader::try_inode(uint64_t ino, InodeView& out) const noexcept {
    if (ino - 1 >= inode_count_) [[unlikely]]  // also catches 0
        return false;
    const std::byte* at = checked(inode_rel(ino - 1), inode_size_);
    if (at == nullptr) [[unlikely]]
        return false;
    const std::byte* times = nullptr;
    if (all_times_) {
        times = checked(times_rel(ino - 1), sizeof(InodeTimes));
        if (times == nullptr) [[unlikely]]
            return false;
    }
    out.ino = ino;
    out.number = numbered_ ? try_number(ino - 1) : ino;
    if (out.number == 0) [[unlikely]]
        return false;
    const uint32_t max_nsec = decode_inode(at, times, out);
    return inode_fault(out.rec, max_nsec, out.aux, out.type) == InodeFault::none;
}

inline uint64_t MetaReader::try_number(uint64_t index) const noexcept {
    const std::byte* at = checked(numbers_rel_ + index * 8, 8);
    return at != nullptr ? load<uint64_t>(at) : 0;
}

Result<uint64_t> MetaReader::stored_number(uint64_t index, const Ctx& ctx) const {
    const uint64_t rel = numbers_rel_ + index * 8;
    auto at = meta(rel, 8, ctx);
    if (!at) return std::unexpected(at.error());
    const auto number = load<uint64_t>(*at);
    if (number == 0) [[unlikely]]
        return corrupt(ctx, rel, 1, 0, "inode number (0)");
    return number;
}

Result<InodeView> MetaReader::inode(uint64_t ino, const Ctx& ctx) const {
    InodeView v;
    if (try_inode(ino, v)) [[likely]]
        return v;
    return inode_slow(ino, ctx);
}

// The inode again, the slow way: checks its block, then says what is wrong with it.
Result<InodeView> MetaReader::inode_slow(uint64_t ino, const Ctx& ctx) const {
    if (ino == 0 || ino > inode_count_)
        return corrupt(ctx, inodes_rel_, inode_count_, ino, "inode number");
    const uint64_t rel = inode_rel(ino - 1);
    auto at = meta(rel, inode_size_, ctx);
    if (!at) return std::unexpected(at.error());
    const std::byte* times = nullptr;
    if (all_times_) {
        auto t = meta(times_rel(ino - 1), sizeof(InodeTimes), ctx);
        if (!t) return std::unexpected(t.error());
        times = *t;
    }
    InodeView v;
    v.ino = ino;
    v.number = ino;
    if (numbered_) {
        auto number = stored_number(ino - 1, ctx);
        if (!number) return std::unexpected(number.error());
        v.number = *number;
    }
    const uint32_t max_nsec = decode_inode(*at, times, v);
    const InodeCore& n = v.rec;
    switch (inode_fault(n, max_nsec, v.aux, v.type)) {
        case InodeFault::none:
            return v;
        case InodeFault::mode:
            return corrupt(ctx, rel + offsetof(Inode, mode), 0, n.mode, "inode mode");
        case InodeFault::nsec:
            return corrupt(ctx,
                           version_ >= 2
                               ? (times ? times_rel(ino - 1) + offsetof(InodeTimes, atime_nsec)
                                        : rel + offsetof(InodeV2, mtime_nsec))
                               : rel + offsetof(Inode, atime_nsec),
                           kNsecLimit - 1, max_nsec, "inode time (nanoseconds)");
        case InodeFault::xattrs:
            return corrupt(ctx, rel + offsetof(Inode, xattr_first), xattr_count_,
                           uint64_t{n.xattr_first} + n.xattr_count, "inode xattr range");
        case InodeFault::reference:
            break;
    }
    return corrupt(ctx, rel + offsetof(Inode, size), n.size, n.ref,
                   fmt::format("inode {} reference (size, ref)", file_type_name(v.type)));
}

// --- names -------------------------------------------------------------------------------

Result<std::string_view> MetaReader::name_at(const std::byte* at, uint64_t rel,
                                             const Ctx& ctx) const {
    uint16_t checked_length = 0;
    if (const char* name = try_name(at, checked_length)) [[likely]]  // its block checked already
        return std::string_view(name, checked_length);
    const auto offset = load<uint32_t>(at + offsetof(Dirent, name_offset));
    const auto length = load<uint16_t>(at + offsetof(Dirent, name_length));
    if (length == 0 || length > kMaxNameLength) [[unlikely]]
        return corrupt(ctx, rel + offsetof(Dirent, name_length), kMaxNameLength, length,
                       "dirent name length");
    return bytes(offset, length, rel + offsetof(Dirent, name_offset), "dirent name range", ctx);
}

Result<FileType> MetaReader::dirent_type(const Dirent& d, uint64_t rel, const Ctx& ctx) const {
    if (d.ino < 2 || d.ino > inode_count_) [[unlikely]]
        return corrupt(ctx, rel + offsetof(Dirent, ino), inode_count_, d.ino,
                       "dirent inode number");
    FileType type;
    if (!type_of_nibble(d.type, type)) [[unlikely]]
        return corrupt(ctx, rel + offsetof(Dirent, type), 0, d.type, "dirent type");
    return type;
}

Result<InodeView> MetaReader::child(const Dirent& d, uint64_t rel, const Ctx& ctx) const {
    auto type = dirent_type(d, rel, ctx);
    if (!type) return std::unexpected(type.error());
    auto node = inode(d.ino, ctx);
    if (node && node->type != *type) [[unlikely]]
        return corrupt(ctx, rel + offsetof(Dirent, type), node->rec.mode >> 12, d.type,
                       "dirent type (differs from its inode's)");
    return node;
}

// The name of the dirent at `at` when its range is sound and already checked, else nullptr.
inline const char* MetaReader::try_name(const std::byte* at, uint16_t& length) const noexcept {
    const auto offset = load<uint32_t>(at + offsetof(Dirent, name_offset));
    length = load<uint16_t>(at + offsetof(Dirent, name_length));
    if (length == 0 || length > kMaxNameLength || !within(offset, length, bytes_length_))
        [[unlikely]]
        return nullptr;
    return reinterpret_cast<const char*>(checked(bytes_rel_ + offset, length));
}

// v1: a binary search of the run by (name prefix, name). v2: the same by (name hash, name)
// within the one bucket the hash picks (2 to 4 entries on average). Reads only checked bytes:
// the first range it would need that is not (a block not checked yet, a bucket or name field
// out of range) goes to `unsure` and the search stops; find() decides it.
const std::byte* MetaReader::try_find(const InodeView& dir, std::string_view name,
                                      Unsure& unsure) const noexcept {
    const bool v2 = version_ >= 2;
    const uint32_t key = v2 ? hash_of(name) : name_prefix(name.data(), name.size());
    const uint64_t first_rel = dirents_rel_ + dir.rec.ref * sizeof(Dirent);
    uint64_t lo = 0, hi = dir.rec.size;
    if (const unsigned bits = v2 ? bucket_bits(dir.rec.size) : 0; bits != 0) {
        const uint64_t rel = buckets_rel_ + (uint64_t{dir.aux} + (key >> (32 - bits))) * 4;
        const std::byte* at = checked(rel, 8);
        if (at == nullptr) [[unlikely]] {
            unsure = {Unsure::What::block, rel, 8};
            return nullptr;
        }
        lo = load<uint32_t>(at);
        hi = load<uint32_t>(at + 4);
        if (lo > hi || hi > dir.rec.size) [[unlikely]] {
            unsure = {Unsure::What::bucket, rel, 8};
            return nullptr;
        }
    }
    while (lo < hi) {
        const uint64_t mid = lo + (hi - lo) / 2;
        const uint64_t rel = first_rel + mid * sizeof(Dirent);
        const std::byte* at = checked(rel, sizeof(Dirent));
        if (at == nullptr) [[unlikely]] {
            unsure = {Unsure::What::block, rel, sizeof(Dirent)};
            return nullptr;
        }
        const auto prefix = load<uint32_t>(at + kDirentHashOffset);  // v1: the name's prefix
        int order;
        if (prefix != key) {
            order = prefix < key ? -1 : 1;
        } else {
            // Same key: almost surely the entry, so its inode's line is fetched while the name
            // is compared (two cache misses in parallel instead of one after the other).
            if (const uint64_t ino = load<uint32_t>(at + offsetof(Dirent, ino));
                ino - 1 < inode_count_)
                __builtin_prefetch(meta_ + inode_rel(ino - 1));
            // The names decide (memcmp, then length).
            uint16_t length = 0;
            const char* entry = try_name(at, length);
            if (entry == nullptr) [[unlikely]] {
                unsure = {Unsure::What::name, rel, sizeof(Dirent)};
                return nullptr;
            }
            order = compare_names(entry, length, name.data(), name.size());
        }
        if (order == 0) return at;
        if (order < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return nullptr;
}

// try_find until it is sure: each round checks the block it stopped at (so it ends after at
// most one round per block), or reports what is wrong there.
Result<const std::byte*> MetaReader::find(const InodeView& dir, std::string_view name,
                                          const Ctx& ctx) const {
    for (;;) {
        Unsure unsure;
        const std::byte* at = try_find(dir, name, unsure);
        switch (unsure.what) {
            case Unsure::What::nothing:
                return at;
            case Unsure::What::block:
                if (auto ok = meta(unsure.rel, unsure.len, ctx); !ok)
                    return std::unexpected(ok.error());
                break;
            case Unsure::What::bucket: {
                const uint64_t lo = load<uint32_t>(meta_ + unsure.rel);
                const uint64_t hi = load<uint32_t>(meta_ + unsure.rel + 4);
                return corrupt(ctx, unsure.rel, dir.rec.size, hi > dir.rec.size ? hi : lo,
                               "directory bucket (past its entries, or decreasing)");
            }
            case Unsure::What::name:
                if (auto ok = name_at(meta_ + unsure.rel, unsure.rel, ctx); !ok)
                    return std::unexpected(ok.error());
                break;
        }
    }
}

Result<InodeView> MetaReader::root(const Ctx& ctx) const {
    auto root = inode(kRootIno, ctx);
    if (!root) return root;
    if (root->type != FileType::directory) [[unlikely]]
        return corrupt(ctx, inodes_rel_ + offsetof(Inode, mode), S_IFDIR, root->rec.mode,
                       "root inode type");
    return root;
}

MetaReader::Probe MetaReader::probe(const InodeView& dir, std::string_view name,
                                    InodeView& out) const noexcept {
    if (dir.type != FileType::directory) [[unlikely]]
        return Probe::unsure;
    Unsure unsure;
    const std::byte* at = try_find(dir, name, unsure);
    if (unsure.what != Unsure::What::nothing) [[unlikely]]
        return Probe::unsure;
    if (at == nullptr) return Probe::absent;
    const auto d = load<Dirent>(at);
    FileType type;
    if (d.ino < 2 || !type_of_nibble(d.type, type) || !try_inode(d.ino, out) || out.type != type)
        [[unlikely]]
        return Probe::unsure;
    return Probe::found;
}

Result<std::optional<InodeView>> MetaReader::lookup(const InodeView& dir, std::string_view name,
                                                    const Ctx& ctx) const {
    if (dir.type != FileType::directory) return fail(ENOTDIR, ctx.op, ctx.path);
    if (name.size() > kMaxNameLength) return fail(ENAMETOOLONG, ctx.op, ctx.path);
    if (name.empty() || !is_file_name(name)) return std::nullopt;  // no dirent holds one
    InodeView node;
    switch (probe(dir, name, node)) {
        case Probe::found:
            return node;
        case Probe::absent:
            return std::nullopt;
        case Probe::unsure:
            break;
    }
    auto at = find(dir, name, ctx);
    if (!at) return std::unexpected(at.error());
    if (*at == nullptr) return std::nullopt;
    auto found = child(load<Dirent>(*at), static_cast<uint64_t>(*at - meta_), ctx);
    if (!found) return std::unexpected(found.error());
    return *found;
}

Result<std::vector<DirEntry>> MetaReader::list(const InodeView& dir, const Ctx& ctx,
                                               std::vector<uint64_t>* regular_files) const {
    if (version_ >= 2) return list_entries(dir, ctx, regular_files);
    auto nodes = list_nodes(dir, ctx);
    if (!nodes) return std::unexpected(nodes.error());
    std::vector<DirEntry> out;
    out.reserve(nodes->size());
    for (auto& [name, node] : *nodes)
        out.push_back(DirEntry{std::move(name), node.number, node.type});
    return out;
}

template <class Each>
Result<void> MetaReader::each_dirent(const InodeView& dir, const Ctx& ctx, Each&& each) const {
    const uint64_t count = dir.rec.size;
    if (count == 0) return {};
    const uint64_t first_rel = dirents_rel_ + dir.rec.ref * sizeof(Dirent);
    auto base = meta(first_rel, count * sizeof(Dirent), ctx);
    if (!base) return std::unexpected(base.error());
    for (uint64_t i = 0; i < count; ++i) {
        const std::byte* at = *base + i * sizeof(Dirent);
        const uint64_t rel = first_rel + i * sizeof(Dirent);
        auto name = name_at(at, rel, ctx);
        if (!name) return std::unexpected(name.error());
        if (!is_file_name(*name)) [[unlikely]]
            return corrupt(ctx, rel + offsetof(Dirent, name_offset), 0, 0,
                           "dirent name (not a file name)");
        if (auto ok = each(load<Dirent>(at), rel, *name); !ok) return ok;
    }
    return {};
}

// v2: a listing from the dirents alone, which carry the type (format.hpp): no child inode is
// loaded. Each entry's name, inode number range and type nibble are checked; whether the type
// agrees with the inode is checked when the inode is loaded (a lookup, verify).
Result<std::vector<DirEntry>> MetaReader::list_entries(const InodeView& dir, const Ctx& ctx,
                                                       std::vector<uint64_t>* regular_files) const {
    std::vector<DirEntry> out;
    out.reserve(dir.rec.size);
    auto listed = each_dirent(
        dir, ctx, [&](const Dirent& d, uint64_t rel, std::string_view name) -> Result<void> {
            auto type = dirent_type(d, rel, ctx);
            if (!type) return std::unexpected(type.error());
            uint64_t number = d.ino;
            if (numbered_) {
                auto stored = stored_number(d.ino - 1, ctx);
                if (!stored) return std::unexpected(stored.error());
                number = *stored;
            }
            out.push_back(DirEntry{std::string(name), number, *type});
            if (regular_files != nullptr && *type == FileType::regular)
                regular_files->push_back(d.ino);
            return {};
        });
    if (!listed) return std::unexpected(listed.error());
    return out;
}

Result<std::vector<std::pair<std::string, InodeView>>> MetaReader::list_nodes(
    const InodeView& dir, const Ctx& ctx) const {
    std::vector<std::pair<std::string, InodeView>> out;
    out.reserve(dir.rec.size);
    auto listed = each_dirent(
        dir, ctx, [&](const Dirent& d, uint64_t rel, std::string_view name) -> Result<void> {
            auto node = child(d, rel, ctx);
            if (!node) return std::unexpected(node.error());
            out.emplace_back(std::string(name), *node);
            return {};
        });
    if (!listed) return std::unexpected(listed.error());
    return out;
}

}  // namespace packfs::pack
