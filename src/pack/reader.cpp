#include "pack/reader.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "pack/codec.hpp"
#include "pack/digest.hpp"

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

// offset + length <= limit, without overflow.
inline bool within(uint64_t offset, uint64_t length, uint64_t limit) noexcept {
    return offset <= limit && length <= limit - offset;
}

constexpr uint64_t kNsecLimit = 1'000'000'000;
constexpr uint32_t kMinBlockSize = 4096;
constexpr uint32_t kMaxBlockSize = 16u << 20;
constexpr uint32_t kMaxXattrValue = 65536;
constexpr uint32_t kMaxInlineMax = 4096;

std::unexpected<Error> header_corrupt(std::string_view path, uint64_t offset, uint64_t expected,
                                      uint64_t actual, std::string_view what) {
    return std::unexpected(
        Error::corrupt("open_pack", path, Corruption{offset, expected, actual, std::string(what)}));
}

// Error has no free text beyond the path, so the unsupported feature is named after it.
std::unexpected<Error> unsupported(std::string_view path, std::string_view detail) {
    return std::unexpected(Error(ENOTSUP, "open_pack", fmt::format("{} ({})", path, detail)));
}

static_assert(kSectionRecordSizes[0] == sizeof(Inode) && kSectionRecordSizes[1] == sizeof(Dirent) &&
              kSectionRecordSizes[2] == sizeof(Content) && kSectionRecordSizes[3] == sizeof(Xattr));

// The rest of a path still to walk: the caller's path, with the targets of the symlinks met on
// the way stacked on top of it (the mem backend splices "target/rest" into a new string; this
// keeps views instead, so a walk never allocates). Invariant: every segment below the top
// still holds a component, so the walk is at its last component exactly when the bottom
// segment is the only one left and holds nothing after it.
class PendingPath {
public:
    explicit PendingPath(std::string_view path) noexcept { set(0, path); }

    // The next component and whether it is the last one; false when none is left.
    bool next(std::string_view& name, bool& last) noexcept {
        for (;;) {
            std::string_view top = get(count_ - 1);
            const std::size_t start = top.find_first_not_of('/');
            if (start == std::string_view::npos) {
                if (count_ == 1) return false;
                --count_;
                continue;
            }
            top.remove_prefix(start);
            std::size_t end = top.find('/');
            if (end == std::string_view::npos) end = top.size();
            name = top.substr(0, end);
            set(count_ - 1, top.substr(end));
            while (count_ > 1 && empty(get(count_ - 1))) --count_;
            last = count_ == 1 && empty(get(0));
            return true;
        }
    }

    // A symlink's target, to walk before whatever is left. At most kMaxSymlinkFollows pushes
    // happen before the walk gives up with ELOOP.
    void push(std::string_view target) noexcept {
        if (empty(get(count_ - 1))) {
            set(count_ - 1, target);
        } else {
            set(count_++, target);
        }
    }

private:
    static bool empty(std::string_view s) noexcept {
        return s.find_first_not_of('/') == std::string_view::npos;
    }
    // Plain pointers, left uninitialised past count_: a walk must not pay for zeroing them.
    struct Segment {
        const char* data;
        std::size_t size;
    };
    std::string_view get(std::size_t i) const noexcept {
        return {segments_[i].data, segments_[i].size};
    }
    void set(std::size_t i, std::string_view s) noexcept { segments_[i] = {s.data(), s.size()}; }
    Segment segments_[kMaxSymlinkFollows + 2];
    std::size_t count_ = 1;
};

// The directories from the root to where a walk stands, for ".." in symlink targets (an
// inode has no parent field). Not assumed to be a tree: this is the chain the walk took.
class DirChain {
public:
    DirChain() noexcept { inline_[0] = kRootIno; }
    void reset() noexcept {
        size_ = 1;
        spill_.clear();
    }
    void push(uint64_t ino) {
        if (size_ < kInline) {
            inline_[size_] = static_cast<uint32_t>(ino);
        } else {
            spill_.push_back(ino);  // only past kInline levels deep
        }
        ++size_;
    }
    // Goes up one level (the root is its own parent) and returns the directory there.
    uint64_t up() noexcept {
        if (size_ > 1) {
            if (size_ > kInline) spill_.pop_back();
            --size_;
        }
        return size_ > kInline ? spill_.back() : inline_[size_ - 1];
    }

private:
    static constexpr std::size_t kInline = 32;
    uint32_t inline_[kInline];  // left uninitialised past size_ (inode numbers fit 32 bits)
    std::vector<uint64_t> spill_;
    std::size_t size_ = 1;
};

}  // namespace

// --- opening -----------------------------------------------------------------------------

Result<std::unique_ptr<PackReader>> PackReader::open(std::string_view host_path,
                                                     const PackOpenOptions& options) {
    auto image = PackImage::open(host_path);
    if (!image) return std::unexpected(image.error());
    std::unique_ptr<PackReader> r(new PackReader());  // private constructor
    r->image_ = std::move(*image);
    std::memcpy(&r->header_, r->image_->header_bytes().data(), kHeaderSize);
    if (auto ok = r->validate_header(host_path); !ok) return std::unexpected(ok.error());
    const Header& h = r->header_;
    if (auto ok = r->image_->load(options.access, h.meta_offset, host_path); !ok)
        return std::unexpected(ok.error());

    r->meta_ = r->image_->meta();
    r->meta_offset_ = h.meta_offset;
    r->meta_length_ = h.meta_length;
    r->inode_count_ = h.inode_count;
    auto section = [&](Section s) -> const SectionEntry& { return pack::section(h, s); };
    r->inodes_rel_ = section(Section::inodes).offset - h.meta_offset;
    r->dirents_rel_ = section(Section::dirents).offset - h.meta_offset;
    r->dirent_count_ = section(Section::dirents).length / sizeof(Dirent);
    r->contents_rel_ = section(Section::contents).offset - h.meta_offset;
    r->content_count_ = section(Section::contents).length / sizeof(Content);
    r->xattrs_rel_ = section(Section::xattrs).offset - h.meta_offset;
    r->xattr_count_ = section(Section::xattrs).length / sizeof(Xattr);
    r->blocks_rel_ = section(Section::blocks).offset - h.meta_offset;
    r->block_count_ = section(Section::blocks).length / 8;
    if (r->block_count_ > 0) --r->block_count_;  // count + 1 offsets
    r->bytes_rel_ = section(Section::bytes).offset - h.meta_offset;
    r->bytes_length_ = section(Section::bytes).length;
    r->numbered_ = (h.incompat_features & kIncompatInodeNumbers) != 0;
    if (r->numbered_) {
        r->numbers_rel_ = section(Section::inode_numbers).offset - h.meta_offset;
        r->order_rel_ = section(Section::inode_order).offset - h.meta_offset;
    }
    r->stream_size_ = h.stream_size;
    r->data_offset_ = h.data_offset;
    r->data_length_ = h.data_length;
    r->block_size_ = h.block_size;
    r->inline_max_ = h.inline_max;
    r->codec_ = static_cast<Codec>(h.codec);

    // The sums array: the one thing read whole on open (8 bytes per 16 KiB of metadata).
    r->block_sum_count_ = h.sums_length / 8;
    const uint64_t sums = xxh3_64(std::span(r->meta_ + r->meta_length_, h.sums_length));
    if (r->image_->damaged()) return fail(EIO, "open_pack", host_path);
    if (sums != h.sums_checksum)
        return header_corrupt(host_path, h.sums_offset, h.sums_checksum, sums,
                              "metadata block sums checksum");
    const std::size_t words = (r->block_sum_count_ + 63) / 64;
    r->checked_ = std::make_unique<std::atomic<uint64_t>[]>(words);
    r->failed_ = std::make_unique<std::atomic<uint64_t>[]>(words);
    if (r->codec_ != Codec::none)
        r->cache_ = std::make_unique<BlockCache>(options.block_cache_bytes, r->block_size_);
    return r;
}

Result<void> PackReader::validate_header(std::string_view path) const {
    const Header& h = header_;
    const uint64_t real_size = image_->size();
    auto at = [](std::size_t field_offset) { return static_cast<uint64_t>(field_offset); };

    if (std::memcmp(h.magic, kMagic.data(), kMagic.size()) != 0) {
        return header_corrupt(
            path, 0, load<uint64_t>(reinterpret_cast<const std::byte*>(kMagic.data())),
            load<uint64_t>(reinterpret_cast<const std::byte*>(h.magic)), "magic (not a pack)");
    }
    // Before the checksum: a newer version may lay its header out differently.
    if (h.version > kFormatVersion) {
        return unsupported(path, fmt::format("pack format version {}; this reader reads version {}",
                                             h.version, kFormatVersion));
    }
    if (h.version != kFormatVersion)
        return header_corrupt(path, at(offsetof(Header, version)), kFormatVersion, h.version,
                              "format version");
    if (h.header_size != kHeaderSize)
        return header_corrupt(path, at(offsetof(Header, header_size)), kHeaderSize, h.header_size,
                              "header size");
    Header zeroed = h;
    zeroed.header_checksum = 0;
    const uint64_t sum = xxh3_64(std::as_bytes(std::span(&zeroed, 1)));
    if (sum != h.header_checksum)
        return header_corrupt(path, at(offsetof(Header, header_checksum)), h.header_checksum, sum,
                              "header checksum");
    if (const uint64_t unknown = h.incompat_features & ~kIncompatKnown; unknown != 0) {
        return unsupported(path, fmt::format("unknown incompatible feature bits {:#x}", unknown));
    }
    if (h.file_size != real_size)
        return header_corrupt(path, at(offsetof(Header, file_size)), h.file_size, real_size,
                              "file size (the pack was truncated or extended)");
    if (h.meta_block_size != kMetaBlockSize)
        return header_corrupt(path, at(offsetof(Header, meta_block_size)), kMetaBlockSize,
                              h.meta_block_size, "metadata block size");
    if (h.data_offset != kDataOffset)
        return header_corrupt(path, at(offsetof(Header, data_offset)), kDataOffset, h.data_offset,
                              "data offset");
    const bool compressed = (h.incompat_features & kIncompatCompressedData) != 0;
    const auto codec = static_cast<Codec>(h.codec);
    if (compressed && codec != Codec::zstd && codec != Codec::lz4) {
        if (codec == Codec::none)
            return header_corrupt(path, at(offsetof(Header, codec)), 1, h.codec,
                                  "codec (none, with the compressed-data feature)");
        return unsupported(path, fmt::format("unknown codec {}", h.codec));
    }
    if (!compressed && codec != Codec::none)
        return header_corrupt(path, at(offsetof(Header, codec)), 0, h.codec,
                              "codec (without the compressed-data feature)");
    if (h.block_size < kMinBlockSize || h.block_size > kMaxBlockSize ||
        (h.block_size & (h.block_size - 1)) != 0)
        return header_corrupt(path, at(offsetof(Header, block_size)), kMinBlockSize, h.block_size,
                              "block size (a power of two, 4 KiB to 16 MiB)");
    if (h.inline_max > kMaxInlineMax)
        return header_corrupt(path, at(offsetof(Header, inline_max)), kMaxInlineMax, h.inline_max,
                              "inline limit");
    if (h.inode_count == 0 || h.inode_count > std::numeric_limits<uint32_t>::max())
        return header_corrupt(path, at(offsetof(Header, inode_count)), 1, h.inode_count,
                              "inode count");

    // The regions: data, then metadata, then sums, ending exactly at the end of the file.
    if (!within(h.data_offset, h.data_length, real_size))
        return header_corrupt(path, at(offsetof(Header, data_length)), real_size - h.data_offset,
                              h.data_length, "data length (past the end of the file)");
    const uint64_t data_end = h.data_offset + h.data_length;
    if (h.meta_offset % 8 != 0 || h.meta_offset < data_end || h.meta_offset > real_size)
        return header_corrupt(path, at(offsetof(Header, meta_offset)), data_end, h.meta_offset,
                              "metadata offset");
    if (!compressed && h.stream_size != h.data_length)
        return header_corrupt(path, at(offsetof(Header, stream_size)), h.data_length, h.stream_size,
                              "stream size (raw data)");
    if (h.meta_length % 8 != 0 || !within(h.meta_offset, h.meta_length, real_size))
        return header_corrupt(path, at(offsetof(Header, meta_length)), real_size - h.meta_offset,
                              h.meta_length, "metadata length (past the end of the file)");
    const uint64_t meta_end = h.meta_offset + h.meta_length;
    if (h.sums_offset != meta_end)
        return header_corrupt(path, at(offsetof(Header, sums_offset)), meta_end, h.sums_offset,
                              "block sums offset");
    const uint64_t meta_blocks = (h.meta_length + kMetaBlockSize - 1) / kMetaBlockSize;
    if (h.sums_length != meta_blocks * 8)
        return header_corrupt(path, at(offsetof(Header, sums_length)), meta_blocks * 8,
                              h.sums_length, "block sums length");
    if (!within(h.sums_offset, h.sums_length, real_size) ||
        h.sums_offset + h.sums_length != real_size)
        return header_corrupt(path, at(offsetof(Header, sums_length)), real_size - h.sums_offset,
                              h.sums_length, "block sums (must end the file)");

    // The sections: in order, 8-aligned (gaps under 8 bytes), inside the metadata region, whole
    // records.
    // Without the inode-numbers feature its two sections are absent: entries all zero, as v1
    // writers left those reserved bytes.
    const bool numbered = (h.incompat_features & kIncompatInodeNumbers) != 0;
    uint64_t end = h.meta_offset;
    for (std::size_t i = 0; i < kSectionCount; ++i) {
        const SectionEntry& s = section(h, i);
        const uint64_t field = section_entry_offset(i);
        if (i >= kFirstSectionCount && !numbered) {
            if (s.offset != 0 || s.length != 0 || s.checksum != 0)
                return header_corrupt(
                    path, field, 0, s.offset | s.length | s.checksum,
                    fmt::format("section {} entry (without the inode-numbers feature)",
                                kSectionNames[i]));
            continue;
        }
        if (s.offset % 8 != 0 || s.offset < end || s.offset - end >= 8 ||
            !within(s.offset, s.length, meta_end))
            return header_corrupt(path, field, end, s.offset,
                                  fmt::format("section {} range", kSectionNames[i]));
        if (s.length % kSectionRecordSizes[i] != 0)
            return header_corrupt(
                path, field + 8, kSectionRecordSizes[i], s.length % kSectionRecordSizes[i],
                fmt::format("section {} length (not whole records)", kSectionNames[i]));
        end = s.offset + s.length;
    }
    // The region ends with the last section, padded to 8 bytes.
    if (meta_end - end >= 8)
        return header_corrupt(path, at(offsetof(Header, meta_length)), end - h.meta_offset,
                              h.meta_length, "metadata length (past the last section)");
    const SectionEntry& inodes = h.sections[static_cast<std::size_t>(Section::inodes)];
    if (inodes.length / sizeof(Inode) != h.inode_count)
        return header_corrupt(path, at(offsetof(Header, inode_count)),
                              inodes.length / sizeof(Inode), h.inode_count,
                              "inode count (against the inodes section)");
    // inode_count fits 32 bits (checked above): these products cannot wrap.
    for (Section s : {Section::inode_numbers, Section::inode_order}) {
        const auto i = static_cast<std::size_t>(s);
        const uint64_t want = numbered ? kSectionRecordSizes[i] * h.inode_count : 0;
        if (section(h, s).length != want)
            return header_corrupt(path, section_entry_offset(i) + 8, want, section(h, s).length,
                                  fmt::format("section {} length (one record per inode)",
                                              kSectionNames[i]));
    }
    // ceil(stream_size / block_size) without overflow: near 2^64 the rounded-up sum wrapped to a
    // small count that a short blocks section then matched.
    const uint64_t block_count =
        h.stream_size / h.block_size + (h.stream_size % h.block_size != 0 ? 1 : 0);
    const uint64_t blocks_length = compressed ? 8 * (block_count + 1) : 0;
    const SectionEntry& blocks = h.sections[static_cast<std::size_t>(Section::blocks)];
    if (blocks.length != blocks_length)
        return header_corrupt(path,
                              at(offsetof(Header, sections)) +
                                  static_cast<uint64_t>(Section::blocks) * sizeof(SectionEntry) + 8,
                              blocks_length, blocks.length, "section blocks length");
    return {};
}

PackInfo PackReader::info() const {
    PackInfo i;
    i.version = header_.version;
    i.file_size = header_.file_size;
    i.inode_count = header_.inode_count;
    i.data_length = header_.data_length;
    i.stream_size = header_.stream_size;
    i.meta_length = header_.meta_length;
    switch (codec_) {
        case Codec::none:
            i.compression = Compression::none;
            break;
        case Codec::zstd:
            i.compression = Compression::zstd;
            break;
        case Codec::lz4:
            i.compression = Compression::lz4;
            break;
    }
    i.block_size = header_.block_size;
    i.inline_max = header_.inline_max;
    i.has_xattrs = (header_.compat_features & kCompatXattrs) != 0;
    i.keeps_inode_numbers = numbered_;
    i.digest = to_hex(std::span<const uint8_t>(header_.image_digest));
    return i;
}

// --- checked metadata --------------------------------------------------------------------

bool PackReader::block_sum_matches(uint64_t block, uint64_t& expected,
                                   uint64_t& actual) const noexcept {
    const uint64_t start = block * kMetaBlockSize;
    const uint64_t length = std::min<uint64_t>(kMetaBlockSize, meta_length_ - start);
    expected = load<uint64_t>(meta_ + meta_length_ + block * 8);
    actual = xxh3_64(std::span(meta_ + start, length));
    return expected == actual;
}

Result<void> PackReader::check_block(uint64_t block, const Ctx& ctx) const {
    const uint64_t bit = uint64_t{1} << (block % 64);
    uint64_t expected = 0, actual = 0;
    const bool matches = block_sum_matches(block, expected, actual);
    const bool failed_before = (failed_[block / 64].load(std::memory_order_acquire) & bit) != 0;
    if (matches && !failed_before) {
        checked_[block / 64].fetch_or(bit, std::memory_order_acq_rel);
        return {};
    }
    failed_[block / 64].fetch_or(bit, std::memory_order_acq_rel);
    return corrupt(ctx, block * kMetaBlockSize, expected, actual,
                   fmt::format("metadata block {} checksum", block));
}

Result<const std::byte*> PackReader::meta_slow(uint64_t rel, uint64_t len, const Ctx& ctx) const {
    if (rel > meta_length_ || len > meta_length_ - rel) return out_of_region(rel, len, ctx);
    if (len != 0) {
        const uint64_t last = (rel + len - 1) / kMetaBlockSize;
        for (uint64_t b = rel / kMetaBlockSize; b <= last; ++b) {
            if ((checked_[b / 64].load(std::memory_order_acquire) >> (b % 64)) & 1) continue;
            if (auto ok = check_block(b, ctx); !ok) return std::unexpected(ok.error());
        }
    }
    return meta_ + rel;
}

std::unexpected<Error> PackReader::corrupt(const Ctx& ctx, uint64_t rel, uint64_t expected,
                                           uint64_t actual, std::string_view what) const {
    return std::unexpected(Error::corrupt(
        ctx.op, ctx.path, Corruption{meta_offset_ + rel, expected, actual, std::string(what)}));
}

std::unexpected<Error> PackReader::out_of_region(uint64_t rel, uint64_t len, const Ctx& ctx) const {
    return corrupt(ctx, rel, meta_length_, rel + len, "reference past the metadata region");
}

Result<std::string_view> PackReader::bytes(uint64_t offset, uint64_t length, uint64_t field_rel,
                                           std::string_view what, const Ctx& ctx) const {
    if (!within(offset, length, bytes_length_)) [[unlikely]]
        return corrupt(ctx, field_rel, bytes_length_, offset + length, what);
    auto at = meta(bytes_rel_ + offset, length, ctx);
    if (!at) return std::unexpected(at.error());
    return std::string_view(reinterpret_cast<const char*>(*at), length);
}

PackReader::InodeFault PackReader::inode_fault(const Inode& n, FileType& type) const noexcept {
    if ((n.mode & ~uint32_t{0177777}) != 0 || !type_of_nibble(n.mode >> 12, type)) [[unlikely]]
        return InodeFault::mode;
    if (n.atime_nsec >= kNsecLimit || n.mtime_nsec >= kNsecLimit || n.ctime_nsec >= kNsecLimit)
        [[unlikely]]
        return InodeFault::nsec;
    if (n.xattr_count != 0 && !within(n.xattr_first, n.xattr_count, xattr_count_)) [[unlikely]]
        return InodeFault::xattrs;
    bool ok = true;
    switch (type) {
        case FileType::regular:
            ok = n.ref <= content_count_ && (n.ref != 0 || n.size == 0);
            break;
        case FileType::directory:
            ok = within(n.ref, n.size, dirent_count_);
            break;
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
    return ok ? InodeFault::none : InodeFault::reference;
}

inline bool PackReader::try_inode(uint64_t ino, InodeView& out) const noexcept {
    if (ino - 1 >= inode_count_) [[unlikely]]  // also catches 0
        return false;
    const std::byte* at = checked(inodes_rel_ + (ino - 1) * sizeof(Inode), sizeof(Inode));
    if (at == nullptr) [[unlikely]]
        return false;
    out.ino = ino;
    out.number = numbered_ ? try_number(ino - 1) : ino;
    if (out.number == 0) [[unlikely]]
        return false;
    out.rec = load<Inode>(at);
    return inode_fault(out.rec, out.type) == InodeFault::none;
}

inline uint64_t PackReader::try_number(uint64_t index) const noexcept {
    const std::byte* at = checked(numbers_rel_ + index * 8, 8);
    return at != nullptr ? load<uint64_t>(at) : 0;
}

Result<uint64_t> PackReader::stored_number(uint64_t index, const Ctx& ctx) const {
    const uint64_t rel = numbers_rel_ + index * 8;
    auto at = meta(rel, 8, ctx);
    if (!at) return std::unexpected(at.error());
    const auto number = load<uint64_t>(*at);
    if (number == 0) [[unlikely]]
        return corrupt(ctx, rel, 1, 0, "inode number (0)");
    return number;
}

Result<InodeView> PackReader::inode(uint64_t ino, const Ctx& ctx) const {
    InodeView v;
    if (try_inode(ino, v)) [[likely]]
        return v;
    return inode_slow(ino, ctx);
}

// The inode again, the slow way: checks its block, then says what is wrong with it.
Result<InodeView> PackReader::inode_slow(uint64_t ino, const Ctx& ctx) const {
    if (ino == 0 || ino > inode_count_)
        return corrupt(ctx, inodes_rel_, inode_count_, ino, "inode number");
    const uint64_t rel = inodes_rel_ + (ino - 1) * sizeof(Inode);
    auto at = meta(rel, sizeof(Inode), ctx);
    if (!at) return std::unexpected(at.error());
    InodeView v;
    v.ino = ino;
    v.number = ino;
    if (numbered_) {
        auto number = stored_number(ino - 1, ctx);
        if (!number) return std::unexpected(number.error());
        v.number = *number;
    }
    v.rec = load<Inode>(*at);
    const Inode& n = v.rec;
    switch (inode_fault(n, v.type)) {
        case InodeFault::none:
            return v;
        case InodeFault::mode:
            return corrupt(ctx, rel + offsetof(Inode, mode), 0, n.mode, "inode mode");
        case InodeFault::nsec:
            return corrupt(ctx, rel + offsetof(Inode, atime_nsec), kNsecLimit - 1,
                           std::max({n.atime_nsec, n.mtime_nsec, n.ctime_nsec}),
                           "inode time (nanoseconds)");
        case InodeFault::xattrs:
            return corrupt(ctx, rel + offsetof(Inode, xattr_first), xattr_count_,
                           uint64_t{n.xattr_first} + n.xattr_count, "inode xattr range");
        case InodeFault::reference:
            break;
    }
    return corrupt(ctx, rel + offsetof(Inode, size), n.size, n.ref,
                   fmt::format("inode {} reference (size, ref)", file_type_name(v.type)));
}

Result<ContentRef> PackReader::content(const InodeView& file, const Ctx& ctx) const {
    ContentRef c;
    if (file.rec.ref == 0) return c;  // empty file (inode() checked its size is 0)
    const uint64_t rel = contents_rel_ + (file.rec.ref - 1) * sizeof(Content);
    auto at = meta(rel, sizeof(Content), ctx);
    if (!at) return std::unexpected(at.error());
    const auto offset = load<uint64_t>(*at + offsetof(Content, offset));
    const auto size = load<uint64_t>(*at + offsetof(Content, size));
    if (size == 0 || size != file.rec.size) [[unlikely]]
        return corrupt(ctx, rel + offsetof(Content, size), file.rec.size, size, "content size");
    c.size = size;
    if (size <= inline_max_) {
        auto data = bytes(offset, size, rel, "inline content range", ctx);
        if (!data) return std::unexpected(data.error());
        c.where = ContentRef::Where::inline_bytes;
        c.inline_data = reinterpret_cast<const std::byte*>(data->data());
        return c;
    }
    if (!within(offset, size, stream_size_)) [[unlikely]]
        return corrupt(ctx, rel, stream_size_, offset + size, "content range (past the stream)");
    c.where = ContentRef::Where::stream;
    c.offset = offset;
    return c;
}

Result<std::string_view> PackReader::symlink_target(const InodeView& link, const Ctx& ctx) const {
    const uint64_t rel = inodes_rel_ + (link.ino - 1) * sizeof(Inode) + offsetof(Inode, ref);
    auto target = bytes(link.rec.ref, link.rec.size, rel, "symlink target range", ctx);
    if (!target) return target;
    if (target->find('\0') != std::string_view::npos) [[unlikely]]
        return corrupt(ctx, bytes_rel_ + link.rec.ref, 0, 0, "symlink target (holds a NUL byte)");
    return target;
}

Result<std::string_view> PackReader::name_at(const std::byte* at, uint64_t rel,
                                             const Ctx& ctx) const {
    const auto offset = load<uint32_t>(at + offsetof(Dirent, name_offset));
    const auto length = load<uint16_t>(at + offsetof(Dirent, name_length));
    if (length == 0 || length > kMaxNameLength) [[unlikely]]
        return corrupt(ctx, rel + offsetof(Dirent, name_length), kMaxNameLength, length,
                       "dirent name length");
    return bytes(offset, length, rel + offsetof(Dirent, name_offset), "dirent name range", ctx);
}

Result<InodeView> PackReader::child(const Dirent& d, uint64_t rel, const Ctx& ctx) const {
    if (d.ino < 2 || d.ino > inode_count_) [[unlikely]]
        return corrupt(ctx, rel + offsetof(Dirent, ino), inode_count_, d.ino,
                       "dirent inode number");
    FileType type;
    if (!type_of_nibble(d.type, type)) [[unlikely]]
        return corrupt(ctx, rel + offsetof(Dirent, type), 0, d.type, "dirent type");
    auto node = inode(d.ino, ctx);
    if (node && node->type != type) [[unlikely]]
        return corrupt(ctx, rel + offsetof(Dirent, type), node->rec.mode >> 12, d.type,
                       "dirent type (differs from its inode's)");
    return node;
}

// The name of the dirent at `at` when its range is sound and already checked, else nullptr.
inline const char* PackReader::try_name(const std::byte* at, uint16_t& length) const noexcept {
    const auto offset = load<uint32_t>(at + offsetof(Dirent, name_offset));
    length = load<uint16_t>(at + offsetof(Dirent, name_length));
    if (length == 0 || length > kMaxNameLength || !within(offset, length, bytes_length_))
        [[unlikely]]
        return nullptr;
    return reinterpret_cast<const char*>(checked(bytes_rel_ + offset, length));
}

Result<const std::byte*> PackReader::find(const InodeView& dir, std::string_view name,
                                          const Ctx& ctx) const {
    const uint32_t key = name_prefix(name.data(), name.size());
    const uint64_t first_rel = dirents_rel_ + dir.rec.ref * sizeof(Dirent);
    uint64_t lo = 0, hi = dir.rec.size;
    while (lo < hi) {
        const uint64_t mid = lo + (hi - lo) / 2;
        const uint64_t rel = first_rel + mid * sizeof(Dirent);
        const std::byte* at = checked(rel, sizeof(Dirent));
        if (at == nullptr) [[unlikely]] {
            auto slow = meta(rel, sizeof(Dirent), ctx);
            if (!slow) return std::unexpected(slow.error());
            at = *slow;
        }
        const auto prefix = load<uint32_t>(at + offsetof(Dirent, name_prefix));
        int order;
        if (prefix != key) {
            order = prefix < key ? -1 : 1;
        } else {
            // Same first four bytes: the names decide (memcmp, then length).
            uint16_t length = 0;
            const char* entry = try_name(at, length);
            if (entry == nullptr) [[unlikely]] {
                auto slow = name_at(at, rel, ctx);  // checks the block, or says what is wrong
                if (!slow) return std::unexpected(slow.error());
                entry = slow->data();
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

// --- inode numbers -----------------------------------------------------------------------

Result<PackReader::OrderEntry> PackReader::order_entry(uint64_t position, const Ctx& ctx) const {
    const uint64_t rel = order_rel_ + position * 4;
    auto at = meta(rel, 4, ctx);
    if (!at) return std::unexpected(at.error());
    const uint64_t index = load<uint32_t>(*at);
    if (index >= inode_count_) [[unlikely]]
        return corrupt(ctx, rel, inode_count_ - 1, index, "inode order entry (record index)");
    auto number = stored_number(index, ctx);
    if (!number) return std::unexpected(number.error());
    return OrderEntry{index, *number};
}

Result<std::optional<InodeView>> PackReader::by_inode_number(uint64_t number,
                                                             const Ctx& ctx) const {
    if (!numbered_) {
        if (number == 0 || number > inode_count_) return std::nullopt;
        auto node = inode(number, ctx);
        if (!node) return std::unexpected(node.error());
        return *node;
    }
    if (number == 0) return std::nullopt;
    // Every probe must lie strictly between the numbers seen at lo - 1 and at hi (0: none yet;
    // no number is 0), or the order is not sorted and the search could miss or mislead.
    uint64_t lo = 0, hi = inode_count_;
    uint64_t below = 0, above = 0;
    while (lo < hi) {
        const uint64_t mid = lo + (hi - lo) / 2;
        auto entry = order_entry(mid, ctx);
        if (!entry) return std::unexpected(entry.error());
        const uint64_t found = entry->number;
        if (found <= below || (above != 0 && found >= above)) [[unlikely]]
            return corrupt(ctx, order_rel_ + mid * 4, found <= below ? below + 1 : above - 1,
                           found, "inode order (numbers not strictly ascending)");
        if (found == number) {
            auto node = inode(entry->index + 1, ctx);
            if (!node) return std::unexpected(node.error());
            return *node;
        }
        if (found < number) {
            lo = mid + 1;
            below = found;
        } else {
            hi = mid;
            above = found;
        }
    }
    return std::nullopt;
}

Result<uint64_t> PackReader::max_inode_number(const Ctx& ctx) const {
    if (!numbered_) return inode_count_;
    auto last = order_entry(inode_count_ - 1, ctx);
    if (!last) return std::unexpected(last.error());
    // inode_count distinct non-zero numbers: the largest is at least inode_count.
    if (last->number < inode_count_) [[unlikely]]
        return corrupt(ctx, order_rel_ + (inode_count_ - 1) * 4, inode_count_, last->number,
                       "inode order (last number below the inode count)");
    return last->number;
}

// --- names -------------------------------------------------------------------------------

Result<InodeView> PackReader::root(const Ctx& ctx) const {
    auto root = inode(kRootIno, ctx);
    if (!root) return root;
    if (root->type != FileType::directory) [[unlikely]]
        return corrupt(ctx, inodes_rel_ + offsetof(Inode, mode), S_IFDIR, root->rec.mode,
                       "root inode type");
    return root;
}

Result<InodeView> PackReader::resolve(std::string_view path, bool follow_last,
                                      const Ctx& ctx) const {
    auto root = this->root(ctx);
    if (!root) return root;
    InodeView cur = *root;
    DirChain chain;
    PendingPath pending(path);
    int follows = 0;
    std::string_view name;
    bool last = false;
    while (pending.next(name, last)) {
        if (name == ".") continue;
        if (name == "..") {  // only symlink targets hold "..": the API's paths are normal
            auto parent = inode(chain.up(), ctx);
            if (!parent) return parent;
            cur = *parent;
            continue;
        }
        if (name.size() > kMaxNameLength) return fail(ENAMETOOLONG, ctx.op, ctx.path);
        auto at = find(cur, name, ctx);
        if (!at) return std::unexpected(at.error());
        if (*at == nullptr) return fail(ENOENT, ctx.op, ctx.path);
        const Dirent d = load<Dirent>(*at);
        const uint64_t rel = static_cast<uint64_t>(*at - meta_);
        auto next = child(d, rel, ctx);
        if (!next) return next;
        if (next->type == FileType::symlink && (!last || follow_last)) {
            if (++follows > kMaxSymlinkFollows) return fail(ELOOP, ctx.op, ctx.path);
            auto target = symlink_target(*next, ctx);
            if (!target) return std::unexpected(target.error());
            if (target->front() == '/') {
                cur = *root;
                chain.reset();
            }
            pending.push(*target);
            continue;
        }
        if (!last) {
            if (next->type != FileType::directory) return fail(ENOTDIR, ctx.op, ctx.path);
            cur = *next;
            chain.push(cur.ino);
            continue;
        }
        return next;
    }
    return cur;
}

Result<InodeView> PackReader::resolve(const NormalPath& path, bool follow_last,
                                      const Ctx& ctx) const {
    auto r = resolve(path.view(), follow_last || path.wants_dir(), ctx);
    if (r && path.wants_dir() && r->type != FileType::directory)
        return fail(ENOTDIR, ctx.op, ctx.path);
    return r;
}

Result<std::optional<InodeView>> PackReader::lookup(const InodeView& dir, std::string_view name,
                                                    const Ctx& ctx) const {
    if (dir.type != FileType::directory) return fail(ENOTDIR, ctx.op, ctx.path);
    if (name.size() > kMaxNameLength) return fail(ENAMETOOLONG, ctx.op, ctx.path);
    if (name.empty() || !is_file_name(name)) return std::nullopt;  // no dirent holds one
    auto at = find(dir, name, ctx);
    if (!at) return std::unexpected(at.error());
    if (*at == nullptr) return std::nullopt;
    auto node = child(load<Dirent>(*at), static_cast<uint64_t>(*at - meta_), ctx);
    if (!node) return std::unexpected(node.error());
    return *node;
}

Result<std::vector<DirEntry>> PackReader::list(const InodeView& dir, const Ctx& ctx) const {
    auto nodes = list_nodes(dir, ctx);
    if (!nodes) return std::unexpected(nodes.error());
    std::vector<DirEntry> out;
    out.reserve(nodes->size());
    for (auto& [name, node] : *nodes) out.push_back(DirEntry{std::move(name), node.number, node.type});
    return out;
}

Result<std::vector<std::pair<std::string, InodeView>>> PackReader::list_nodes(
    const InodeView& dir, const Ctx& ctx) const {
    std::vector<std::pair<std::string, InodeView>> out;
    const uint64_t count = dir.rec.size;
    if (count == 0) return out;
    const uint64_t first_rel = dirents_rel_ + dir.rec.ref * sizeof(Dirent);
    auto base = meta(first_rel, count * sizeof(Dirent), ctx);
    if (!base) return std::unexpected(base.error());
    out.reserve(count);
    for (uint64_t i = 0; i < count; ++i) {
        const std::byte* at = *base + i * sizeof(Dirent);
        const uint64_t rel = first_rel + i * sizeof(Dirent);
        auto name = name_at(at, rel, ctx);
        if (!name) return std::unexpected(name.error());
        if (!is_file_name(*name)) [[unlikely]]
            return corrupt(ctx, rel + offsetof(Dirent, name_offset), 0, 0,
                           "dirent name (not a file name)");
        auto node = child(load<Dirent>(at), rel, ctx);
        if (!node) return std::unexpected(node.error());
        out.emplace_back(std::string(*name), *node);
    }
    return out;
}

Result<bool> PackReader::find_xattr(const InodeView& node, std::string_view name,
                                    std::string& value, const Ctx& ctx) const {
    const uint64_t first_rel = xattrs_rel_ + uint64_t{node.rec.xattr_first} * sizeof(Xattr);
    auto base = meta(first_rel, uint64_t{node.rec.xattr_count} * sizeof(Xattr), ctx);
    if (!base) return std::unexpected(base.error());
    for (uint32_t i = 0; i < node.rec.xattr_count; ++i) {
        const uint64_t rel = first_rel + uint64_t{i} * sizeof(Xattr);
        const Xattr x = load<Xattr>(*base + uint64_t{i} * sizeof(Xattr));
        if (x.name_length == 0 || x.name_length > kMaxNameLength) [[unlikely]]
            return corrupt(ctx, rel + offsetof(Xattr, name_length), kMaxNameLength, x.name_length,
                           "xattr name length");
        auto n = bytes(x.name_offset, x.name_length, rel, "xattr name range", ctx);
        if (!n) return std::unexpected(n.error());
        if (*n != name) continue;
        if (x.value_length > kMaxXattrValue) [[unlikely]]
            return corrupt(ctx, rel + offsetof(Xattr, value_length), kMaxXattrValue, x.value_length,
                           "xattr value length");
        auto v = bytes(x.value_offset, x.value_length, rel + offsetof(Xattr, value_offset),
                       "xattr value range", ctx);
        if (!v) return std::unexpected(v.error());
        value.assign(*v);
        return true;
    }
    return false;
}

Result<std::vector<std::string>> PackReader::xattr_names(const InodeView& node,
                                                         const Ctx& ctx) const {
    std::vector<std::string> names;
    const uint64_t first_rel = xattrs_rel_ + uint64_t{node.rec.xattr_first} * sizeof(Xattr);
    auto base = meta(first_rel, uint64_t{node.rec.xattr_count} * sizeof(Xattr), ctx);
    if (!base) return std::unexpected(base.error());
    names.reserve(node.rec.xattr_count);
    for (uint32_t i = 0; i < node.rec.xattr_count; ++i) {
        const uint64_t rel = first_rel + uint64_t{i} * sizeof(Xattr);
        const Xattr x = load<Xattr>(*base + uint64_t{i} * sizeof(Xattr));
        if (x.name_length == 0 || x.name_length > kMaxNameLength) [[unlikely]]
            return corrupt(ctx, rel + offsetof(Xattr, name_length), kMaxNameLength, x.name_length,
                           "xattr name length");
        auto n = bytes(x.name_offset, x.name_length, rel, "xattr name range", ctx);
        if (!n) return std::unexpected(n.error());
        names.emplace_back(*n);
    }
    return names;
}

Stat PackReader::stat_of(const InodeView& node) const noexcept {
    const Inode& n = node.rec;
    Stat st;
    st.ino = node.number;
    st.type = node.type;
    st.mode = n.mode & 07777;
    st.uid = n.uid;
    st.gid = n.gid;
    st.nlink = n.nlink;
    switch (node.type) {
        case FileType::regular:
            st.size = n.size;
            st.blocks = (n.size + 511) / 512;
            break;
        case FileType::directory:  // the format's size: its number of entries
        case FileType::symlink:
            st.size = n.size;
            break;
        case FileType::char_device:
        case FileType::block_device:
            st.rdev = n.ref;
            break;
        case FileType::fifo:
        case FileType::socket:
            break;
    }
    st.atime = Time{n.atime_sec, n.atime_nsec};
    st.mtime = Time{n.mtime_sec, n.mtime_nsec};
    st.ctime = Time{n.ctime_sec, n.ctime_nsec};
    return st;
}

// --- contents ----------------------------------------------------------------------------

Result<PackReader::StoredBlock> PackReader::stored_block(uint64_t index, const Ctx& ctx) const {
    const uint64_t rel = blocks_rel_ + index * 8;
    if (index >= block_count_) [[unlikely]]
        return corrupt(ctx, rel, block_count_, index, "block index");
    auto at = meta(rel, 16, ctx);
    if (!at) return std::unexpected(at.error());
    const auto begin = load<uint64_t>(*at);
    const auto end = load<uint64_t>(*at + 8);
    if (index == 0 && begin != 0) [[unlikely]]
        return corrupt(ctx, rel, 0, begin, "first block offset");
    if (begin > end || end > data_length_) [[unlikely]]
        return corrupt(ctx, rel + 8, data_length_, end,
                       "block offset (decreasing, or past the data region)");
    if (index + 1 == block_count_ && end != data_length_) [[unlikely]]
        return corrupt(ctx, rel + 8, data_length_, end, "last block offset");
    StoredBlock b;
    b.stored_offset = data_offset_ + begin;
    b.stored_length = end - begin;
    b.stream_length = std::min<uint64_t>(block_size_, stream_size_ - index * block_size_);
    return b;
}

Result<void> PackReader::decompress(uint64_t index, const StoredBlock& where,
                                    std::span<std::byte> out, const Ctx& ctx) const {
    std::span<const std::byte> stored;
    thread_local std::vector<std::byte> staging;  // pread access: the stored bytes
    if (const std::byte* map = image_->mapping()) {
        stored = std::span(map + where.stored_offset, where.stored_length);
    } else {
        staging.resize(where.stored_length);
        if (!image_->read_at(where.stored_offset, staging)) return fail(EIO, ctx.op, ctx.path);
        stored = staging;
    }
    if (!decompress_block(codec_, stored, out)) [[unlikely]] {
        return std::unexpected(Error::corrupt(
            ctx.op, ctx.path,
            Corruption{where.stored_offset, where.stream_length, where.stored_length,
                       fmt::format("compressed block {} (does not decompress)", index)}));
    }
    return {};
}

Result<CachedBlock> PackReader::cached_block(uint64_t index, const StoredBlock& where,
                                             const Ctx& ctx) const {
    if (CachedBlock hit = cache_->find(index)) return hit;
    auto bytes = std::make_shared_for_overwrite<std::byte[]>(where.stream_length);
    if (auto ok = decompress(index, where, std::span(bytes.get(), where.stream_length), ctx); !ok)
        return std::unexpected(ok.error());
    return cache_->insert(index, CachedBlock{std::move(bytes), where.stream_length});
}

Result<void> PackReader::read_stream(uint64_t offset, std::span<std::byte> out,
                                     const Ctx& ctx) const {
    const std::byte* map = image_->mapping();
    if (codec_ == Codec::none) {
        if (map != nullptr) {
            std::memcpy(out.data(), map + data_offset_ + offset, out.size());
        } else if (!image_->read_at(data_offset_ + offset, out)) {
            return fail(EIO, ctx.op, ctx.path);
        }
        return {};
    }
    std::size_t done = 0;
    while (done < out.size()) {
        const uint64_t pos = offset + done;
        const uint64_t index = pos / block_size_;
        const uint64_t in_block = pos % block_size_;
        auto where = stored_block(index, ctx);
        if (!where) return std::unexpected(where.error());
        const std::size_t n =
            std::min<uint64_t>(out.size() - done, where->stream_length - in_block);
        std::span<std::byte> part = out.subspan(done, n);
        if (where->stored_length == where->stream_length) {  // stored raw: no need to cache
            if (map != nullptr) {
                std::memcpy(part.data(), map + where->stored_offset + in_block, n);
            } else if (!image_->read_at(where->stored_offset + in_block, part)) {
                return fail(EIO, ctx.op, ctx.path);
            }
        } else {
            auto block = cached_block(index, *where, ctx);
            if (!block) return std::unexpected(block.error());
            std::memcpy(part.data(), block->bytes.get() + in_block, n);
        }
        done += n;
    }
    return {};
}

Result<std::size_t> PackReader::read(const ContentRef& content, uint64_t offset,
                                     std::span<std::byte> out, const Ctx& ctx) const {
    if (offset >= content.size || out.empty()) return 0;
    const std::size_t n = std::min<uint64_t>(out.size(), content.size - offset);
    if (content.where == ContentRef::Where::inline_bytes) {
        std::memcpy(out.data(), content.inline_data + offset, n);
        return n;
    }
    if (auto ok = read_stream(content.offset + offset, out.first(n), ctx); !ok)
        return std::unexpected(ok.error());
    return n;
}

Result<std::span<const std::byte>> PackReader::view(const ContentRef& content, uint64_t offset,
                                                    std::size_t length, std::string& scratch,
                                                    const Ctx& ctx) const {
    if (offset >= content.size || length == 0) return std::span<const std::byte>();
    const std::size_t n = std::min<uint64_t>(length, content.size - offset);
    if (content.where == ContentRef::Where::inline_bytes)
        return std::span(content.inline_data + offset, n);
    if (codec_ == Codec::none && image_->mapping() != nullptr)
        return std::span(image_->mapping() + data_offset_ + content.offset + offset, n);
    scratch.resize(n);
    auto out = std::as_writable_bytes(std::span(scratch.data(), n));
    if (auto ok = read_stream(content.offset + offset, out, ctx); !ok)
        return std::unexpected(ok.error());
    return std::span<const std::byte>(out);
}

}  // namespace packfs::pack
