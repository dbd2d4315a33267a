// MetaReader: opening the metadata (the sums and the frame index checked), the one checked
// accessor, where contents are, symlink targets, times, xattrs, inode numbers, and the image
// digest over the region (meta_reader.hpp, "Trust protocol").
#include "pack/reader/meta_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "pack/format/digest.hpp"
#include "packfs/path.hpp"

namespace packfs::pack {

namespace {

constexpr uint32_t kMaxXattrValue = 65536;

std::unexpected<Error> open_corrupt(std::string_view name, uint64_t offset, uint64_t expected,
                                    uint64_t actual, std::string_view what) {
    return std::unexpected(
        Error::corrupt("open_pack", name, Corruption{offset, expected, actual, std::string(what)}));
}

}  // namespace

// --- opening -----------------------------------------------------------------------------

Result<void> MetaReader::open(const Header& h, PackImage& image, std::string_view name,
                              const OpenHooks& hooks) {
    header_ = h;
    version_ = h.version;
    name_hash_hook_ = hooks.name_hash;
    const bool v2 = h.version >= 2;
    inode_size_ = v2 ? sizeof(InodeV2) : sizeof(Inode);
    meta_offset_ = h.meta_offset;
    meta_length_ = h.meta_length;
    inode_count_ = h.inode_count;
    auto rel = [&](Section s) { return section(h, s).offset - h.meta_offset; };
    inodes_rel_ = rel(Section::inodes);
    dirents_rel_ = rel(Section::dirents);
    dirent_count_ = section(h, Section::dirents).length / sizeof(Dirent);
    contents_rel_ = rel(Section::contents);
    content_count_ = section(h, Section::contents).length / (v2 ? 32 : sizeof(Content));
    xattrs_rel_ = rel(Section::xattrs);
    xattr_count_ = section(h, Section::xattrs).length / sizeof(Xattr);
    bytes_rel_ = rel(Section::bytes);
    bytes_length_ = section(h, Section::bytes).length;
    buckets_rel_ = rel(Section::buckets);
    bucket_count_ = v2 ? section(h, Section::buckets).length / 4 : 0;
    all_times_ = v2 && (h.compat_features & kCompatAllTimes) != 0;
    if (all_times_) times_rel_ = rel(Section::times);
    numbered_ = (h.incompat_features & kIncompatInodeNumbers) != 0;
    if (numbered_) {
        numbers_rel_ = rel(Section::inode_numbers);
        order_rel_ = rel(Section::inode_order);
    }
    stream_size_ = h.stream_size;
    if ((h.incompat_features & kIncompatExtents) != 0) {
        extents_ = true;
        extents_rel_ = rel(Section::extents);
        extent_count_ = section(h, Section::extents).length / sizeof(Extent);
        bases_rel_ = rel(Section::bases);
        base_count_ = section(h, Section::bases).length / sizeof(BaseRecord);
    }
    inline_max_ = h.inline_max;
    meta_ = image.meta();  // file offset meta_offset
    if (auto ok = open_sums(image, name); !ok) return ok;
    if ((h.incompat_features & kIncompatCompressedMeta) != 0) {
        if (auto ok = open_frames(image, name); !ok) return ok;
    }
    const std::size_t words = (block_sum_count_ + 63) / 64;
    checked_ = std::make_unique<std::atomic<uint64_t>[]>(words);
    failed_ = std::make_unique<std::atomic<uint64_t>[]>(words);
    return {};
}

// The sums array: the one thing read whole on open (8 bytes per 16 KiB of metadata); and where
// the metadata digests are.
Result<void> MetaReader::open_sums(const PackImage& image, std::string_view name) {
    const Header& h = header_;
    const std::byte* stored = image.meta();
    block_sum_count_ = h.sums_length / 8;
    sums_ = stored + (h.sums_offset - h.meta_offset);
    const uint64_t sums = xxh3_64(std::span(sums_, h.sums_length));
    if (image.damaged()) return fail(EIO, "open_pack", name);
    if (sums != h.sums_checksum)
        return open_corrupt(name, h.sums_offset, h.sums_checksum, sums,
                            "metadata block sums checksum");
    if (const uint64_t length = meta_digests_length(h); length != 0)
        meta_digests_ = std::span(stored + (meta_digests_offset(h) - h.meta_offset), length);
    return {};
}

// Compressed metadata: the frame index (as long as the sums) checked, the padding before it
// zero; from then on meta_ is the inflated region, filled as blocks are first used.
Result<void> MetaReader::open_frames(PackImage& image, std::string_view name) {
    const Header& h = header_;
    const std::byte* stored = image.meta();
    const std::byte* index = stored + (frame_index_offset(h) - h.meta_offset);
    const uint64_t index_sum = xxh3_64(std::span(index, 8 * (block_sum_count_ + 1)));
    if (image.damaged()) return fail(EIO, "open_pack", name);
    if (index_sum != h.meta_index_checksum)
        return open_corrupt(name, frame_index_offset(h), h.meta_index_checksum, index_sum,
                            "metadata frame index checksum");
    // The padding before the index (under 8 bytes) is zero, so no stored byte goes unchecked.
    for (uint64_t at = h.meta_frames_length; at < frame_index_offset(h) - h.meta_offset; ++at) {
        if (stored[at] != std::byte{0})
            return open_corrupt(name, h.meta_offset + at, 0, static_cast<uint64_t>(stored[at]),
                                "metadata frames padding (not zero)");
    }
    // A remote pack's frames fetched on demand are checked against the metadata digests
    // (the opener checks those against the image digest before anything is read).
    std::byte* on_demand = image.fetched_frames();
    if (on_demand != nullptr && meta_digests_.empty())
        return std::unexpected(Error(
            ENOTSUP, "open_pack",
            fmt::format("{} ({})", name, "metadata fetched on demand without metadata digests")));
    auto frames = on_demand != nullptr ? MetaFrames::create_fetching(h, on_demand, index,
                                                                     meta_digests_, *image.source())
                                       : MetaFrames::create(h, stored, index, name);
    if (!frames) return std::unexpected(frames.error());
    frames_ = std::move(*frames);
    meta_ = frames_->region();
    return {};
}

// --- checked metadata --------------------------------------------------------------------

bool MetaReader::block_sum_matches(uint64_t block, uint64_t& expected,
                                   uint64_t& actual) const noexcept {
    const uint64_t start = block * kMetaBlockSize;
    const uint64_t length = std::min<uint64_t>(kMetaBlockSize, meta_length_ - start);
    expected = load<uint64_t>(sums_ + block * 8);
    actual = xxh3_64(std::span(meta_ + start, length));
    return expected == actual;
}

Result<void> MetaReader::check_block(uint64_t block, const Ctx& ctx) const {
    const uint64_t bit = uint64_t{1} << (block % 64);
    if (frames_) {
        if (auto fault = frames_->inflate(block, ctx.here_only)) {
            if (fault->transient)  // a fetch: EIO, and the next use tries again
                return std::unexpected(
                    Error(EIO, ctx.op,
                          fmt::format("{} ({} at offset {})", ctx.path, fault->corruption.what,
                                      fault->corruption.offset)));
            failed_[block / 64].fetch_or(bit, std::memory_order_acq_rel);
            return std::unexpected(Error::corrupt(ctx.op, ctx.path, std::move(fault->corruption)));
        }
    }
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

Result<const std::byte*> MetaReader::meta_slow(uint64_t rel, uint64_t len, const Ctx& ctx) const {
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

std::unexpected<Error> MetaReader::corrupt(const Ctx& ctx, uint64_t rel, uint64_t expected,
                                           uint64_t actual, std::string_view what) const {
    return std::unexpected(Error::corrupt(
        ctx.op, ctx.path, Corruption{meta_offset_ + rel, expected, actual, std::string(what)}));
}

std::unexpected<Error> MetaReader::out_of_region(uint64_t rel, uint64_t len, const Ctx& ctx) const {
    return corrupt(ctx, rel, meta_length_, rel + len, "reference past the metadata region");
}

Result<std::string_view> MetaReader::bytes(uint64_t offset, uint64_t length, uint64_t field_rel,
                                           std::string_view what, const Ctx& ctx) const {
    if (!within(offset, length, bytes_length_)) [[unlikely]]
        return corrupt(ctx, field_rel, bytes_length_, offset + length, what);
    auto at = meta(bytes_rel_ + offset, length, ctx);
    if (!at) return std::unexpected(at.error());
    return std::string_view(reinterpret_cast<const char*>(*at), length);
}

// --- records -----------------------------------------------------------------------------

Result<ContentRef> MetaReader::content(const InodeView& file, const Ctx& ctx) const {
    ContentRef c;
    if (version_ >= 2) {  // the inode holds the locator (inode() checked its range)
        if (file.rec.size == 0) return c;
        c.size = file.rec.size;
        if (c.size <= inline_max_) {
            auto data = bytes(file.rec.ref, c.size, inode_rel(file.ino - 1) + offsetof(Inode, ref),
                              "inline content range", ctx);
            if (!data) return std::unexpected(data.error());
            c.where = ContentRef::Where::inline_bytes;
            c.inline_data = reinterpret_cast<const std::byte*>(data->data());
            return c;
        }
        if ((file.rec.ref & kExtentLocator) != 0) {  // inode() checked the index's range
            c.where = ContentRef::Where::extents;
            c.offset = file.rec.ref & ~kExtentLocator;
            const uint64_t rel = extents_rel_ + c.offset * sizeof(Extent);
            auto at = meta(rel, sizeof(Extent), ctx);
            if (!at) return std::unexpected(at.error());
            c.extent_count = load<uint32_t>(*at + offsetof(Extent, count));
            if (c.extent_count == 0 || c.extent_count > extent_count_ - c.offset ||
                c.extent_count > c.size) [[unlikely]]
                return corrupt(ctx, rel + offsetof(Extent, count), 1, c.extent_count,
                               "extent count (of a content's first extent)");
            return c;
        }
        if ((file.rec.ref & kBaseLocator) != 0) {  // inode() checked the base's number
            c.where = ContentRef::Where::base;
            c.pack = locator_base(file.rec.ref);
            c.offset = file.rec.ref & kBaseOffsetMask;
            return c;
        }
        c.where = ContentRef::Where::stream;
        c.offset = file.rec.ref;
        return c;
    }
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

Result<Sha256Digest> MetaReader::content_digest(uint64_t index, const Ctx& ctx) const {
    if (index >= content_count_) [[unlikely]]
        return corrupt(ctx, contents_rel_, content_count_, index, "content index");
    const uint64_t rel = version_ >= 2 ? contents_rel_ + index * 32
                                       : contents_rel_ + index * sizeof(Content) +
                                             offsetof(Content, sha256);
    auto at = meta(rel, 32, ctx);
    if (!at) return std::unexpected(at.error());
    Sha256Digest out;
    std::memcpy(out.data(), *at, 32);
    return out;
}

Result<Extent> MetaReader::extent(uint64_t index, const Ctx& ctx) const {
    if (index >= extent_count_) [[unlikely]]
        return corrupt(ctx, extents_rel_, extent_count_, index, "extent index");
    const uint64_t rel = extents_rel_ + index * sizeof(Extent);
    auto at = meta(rel, sizeof(Extent), ctx);
    if (!at) return std::unexpected(at.error());
    const auto e = load<Extent>(*at);
    if (e.length == 0) [[unlikely]]
        return corrupt(ctx, rel + offsetof(Extent, length), 1, 0, "extent length");
    if (e.pack > base_count_) [[unlikely]]
        return corrupt(ctx, rel + offsetof(Extent, pack), base_count_, e.pack,
                       "extent pack (no such base)");
    return e;
}

Result<BaseRef> MetaReader::base(uint64_t index, const Ctx& ctx) const {
    if (index >= base_count_) [[unlikely]]
        return corrupt(ctx, bases_rel_, base_count_, index, "base index");
    const uint64_t rel = bases_rel_ + index * sizeof(BaseRecord);
    auto at = meta(rel, sizeof(BaseRecord), ctx);
    if (!at) return std::unexpected(at.error());
    const auto b = load<BaseRecord>(*at);
    if (b.name_length == 0 || b.name_length > 255) [[unlikely]]
        return corrupt(ctx, rel + offsetof(BaseRecord, name_length), 255, b.name_length,
                       "base name length");
    auto name = bytes(b.name_offset, b.name_length, rel + offsetof(BaseRecord, name_offset),
                      "base name", ctx);
    if (!name) return std::unexpected(name.error());
    BaseRef out;
    std::memcpy(out.image_digest.data(), b.image_digest, 32);
    out.name = *name;
    return out;
}

Result<std::string_view> MetaReader::symlink_target(const InodeView& link, const Ctx& ctx) const {
    const uint64_t rel = inode_rel(link.ino - 1) + offsetof(Inode, ref);
    auto target = bytes(link.rec.ref, link.rec.size, rel, "symlink target range", ctx);
    if (!target) return target;
    if (target->find('\0') != std::string_view::npos) [[unlikely]]
        return corrupt(ctx, bytes_rel_ + link.rec.ref, 0, 0, "symlink target (holds a NUL byte)");
    return target;
}

void MetaReader::times_of(const InodeView& node, Stat& st) const noexcept {
    const std::byte* at = meta_ + inode_rel(node.ino - 1);
    if (version_ < 2) {
        const auto n = load<Inode>(at);
        st.atime = Time{n.atime_sec, n.atime_nsec};
        st.mtime = Time{n.mtime_sec, n.mtime_nsec};
        st.ctime = Time{n.ctime_sec, n.ctime_nsec};
        return;
    }
    st.mtime = Time{load<int64_t>(at + offsetof(InodeV2, mtime_sec)),
                    load<uint32_t>(at + offsetof(InodeV2, mtime_nsec))};
    if (!all_times_) {
        st.atime = st.ctime = st.mtime;
        return;
    }
    const auto t = load<InodeTimes>(meta_ + times_rel(node.ino - 1));
    st.atime = Time{t.atime_sec, t.atime_nsec};
    st.ctime = Time{t.ctime_sec, t.ctime_nsec};
}

Stat MetaReader::stat_of(const InodeView& node) const noexcept {
    const InodeCore& n = node.rec;
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
    times_of(node, st);
    return st;
}

// --- inode numbers -----------------------------------------------------------------------

Result<MetaReader::OrderEntry> MetaReader::order_entry(uint64_t position, const Ctx& ctx) const {
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

Result<std::optional<InodeView>> MetaReader::by_inode_number(uint64_t number,
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
            return corrupt(ctx, order_rel_ + mid * 4, found <= below ? below + 1 : above - 1, found,
                           "inode order (numbers not strictly ascending)");
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

Result<uint64_t> MetaReader::max_inode_number(const Ctx& ctx) const {
    if (!numbered_) return inode_count_;
    auto last = order_entry(inode_count_ - 1, ctx);
    if (!last) return std::unexpected(last.error());
    // inode_count distinct non-zero numbers: the largest is at least inode_count.
    if (last->number < inode_count_) [[unlikely]]
        return corrupt(ctx, order_rel_ + (inode_count_ - 1) * 4, inode_count_, last->number,
                       "inode order (last number below the inode count)");
    return last->number;
}

// --- xattrs ------------------------------------------------------------------------------

template <class Each>
Result<bool> MetaReader::each_xattr(const InodeView& node, const Ctx& ctx, Each&& each) const {
    const uint64_t first_rel = xattrs_rel_ + uint64_t{node.rec.xattr_first} * sizeof(Xattr);
    auto base = meta(first_rel, uint64_t{node.rec.xattr_count} * sizeof(Xattr), ctx);
    if (!base) return std::unexpected(base.error());
    for (uint32_t i = 0; i < node.rec.xattr_count; ++i) {
        const uint64_t rel = first_rel + uint64_t{i} * sizeof(Xattr);
        const Xattr x = load<Xattr>(*base + uint64_t{i} * sizeof(Xattr));
        if (x.name_length == 0 || x.name_length > kMaxNameLength) [[unlikely]]
            return corrupt(ctx, rel + offsetof(Xattr, name_length), kMaxNameLength, x.name_length,
                           "xattr name length");
        auto name = bytes(x.name_offset, x.name_length, rel, "xattr name range", ctx);
        if (!name) return std::unexpected(name.error());
        auto stop = each(x, rel, *name);
        if (!stop || *stop) return stop;
    }
    return false;
}

Result<bool> MetaReader::find_xattr(const InodeView& node, std::string_view name,
                                    std::string& value, const Ctx& ctx) const {
    return each_xattr(
        node, ctx, [&](const Xattr& x, uint64_t rel, std::string_view found) -> Result<bool> {
            if (found != name) return false;
            if (x.value_length > kMaxXattrValue) [[unlikely]]
                return corrupt(ctx, rel + offsetof(Xattr, value_length), kMaxXattrValue,
                               x.value_length, "xattr value length");
            auto v = bytes(x.value_offset, x.value_length, rel + offsetof(Xattr, value_offset),
                           "xattr value range", ctx);
            if (!v) return std::unexpected(v.error());
            value.assign(*v);
            return true;
        });
}

Result<std::vector<std::string>> MetaReader::xattr_names(const InodeView& node,
                                                         const Ctx& ctx) const {
    std::vector<std::string> names;
    auto listed =
        each_xattr(node, ctx, [&](const Xattr&, uint64_t, std::string_view name) -> Result<bool> {
            if (names.empty()) names.reserve(node.rec.xattr_count);  // once the records checked
            names.emplace_back(name);
            return false;
        });
    if (!listed) return std::unexpected(listed.error());
    return names;
}

// --- the region as a whole ---------------------------------------------------------------

Result<Sha256Digest> MetaReader::image_digest(const Ctx& ctx) const {
    Header zeroed = header_;
    zeroed.header_checksum = 0;
    std::memset(zeroed.image_digest, 0, sizeof zeroed.image_digest);
    Sha256 sha;
    sha.update(std::as_bytes(std::span(&zeroed, 1)));
    // With metadata digests, the table stands for the region (verify checks each block
    // against its entry).
    if (!meta_digests_.empty()) {
        sha.update(meta_digests_);
        return sha.finish();
    }
    // Block by block through meta(): each is checked against its sum (and inflated) first.
    for (uint64_t at = 0; at < meta_length_; at += kMetaBlockSize) {
        const uint64_t n = std::min<uint64_t>(kMetaBlockSize, meta_length_ - at);
        auto bytes = meta(at, n, ctx);
        if (!bytes) return std::unexpected(bytes.error());
        sha.update(std::span(*bytes, n));
    }
    return sha.finish();
}

Result<void> MetaReader::check_metadata_digests(const Ctx& ctx) const {
    for (uint64_t b = 0; b * kMetaBlockSize < meta_length_ && !meta_digests_.empty(); ++b) {
        const uint64_t at = b * kMetaBlockSize;
        const uint64_t n = std::min<uint64_t>(kMetaBlockSize, meta_length_ - at);
        auto bytes = meta(at, n, ctx);
        if (!bytes) return std::unexpected(bytes.error());
        if (auto mismatch = check_meta_block(meta_digests_, b, std::span(*bytes, n)))
            return corrupt(ctx, at, mismatch->expected_prefix, mismatch->found_prefix,
                           mismatch->describe(b));
    }
    return {};
}

}  // namespace packfs::pack
