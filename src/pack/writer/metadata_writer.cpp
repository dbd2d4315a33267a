#include "pack/writer/metadata_writer.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "core/name_hash.hpp"
#include "pack/format/digest.hpp"
#include "pack/format/name_hash.hpp"

namespace packfs::pack {

namespace {

// The bytes section: names, symlink targets and xattrs interned (a name used in a thousand
// directories is stored once), inline contents appended. The index is an open-addressing table
// of (hash, offset, length) whose keys are the bytes already in the section: no string is made
// per name, and a lookup is one hash and, on a match, one compare.
class BytesTable {
public:
    Result<uint32_t> intern(std::string_view s) {
        if ((count_ + 1) * 2 > slots_.size()) grow();
        const uint64_t hash = xxh3_name(s);
        const std::size_t mask = slots_.size() - 1;
        std::size_t i = hash & mask;
        for (; slots_[i].length_plus_one != 0; i = (i + 1) & mask) {
            const Slot& slot = slots_[i];
            if (slot.hash == hash && slot.length_plus_one == s.size() + 1 &&
                std::string_view(data_).substr(slot.offset, s.size()) == s)
                return slot.offset;
        }
        auto offset = append(s);
        if (!offset) return offset;
        slots_[i] = Slot{hash, *offset, static_cast<uint32_t>(s.size() + 1)};
        ++count_;
        return offset;
    }
    Result<uint32_t> append(std::string_view s) {
        if (data_.size() + s.size() >= std::numeric_limits<uint32_t>::max())
            return fail(EFBIG, "build: names and inline data over 4 GiB");
        auto offset = static_cast<uint32_t>(data_.size());
        data_.append(s);
        return offset;
    }
    const std::string& data() const noexcept { return data_; }

private:
    struct Slot {
        uint64_t hash = 0;
        uint32_t offset = 0;
        uint32_t length_plus_one = 0;  // 0: empty (a string's length is below 4 GiB)
    };

    // Doubles the table (at most half full, so probes stay short) and places every key again.
    void grow() {
        std::vector<Slot> old(std::max<std::size_t>(1024, slots_.size() * 2));
        old.swap(slots_);
        const std::size_t mask = slots_.size() - 1;
        for (const Slot& slot : old) {
            if (slot.length_plus_one == 0) continue;
            std::size_t i = slot.hash & mask;
            while (slots_[i].length_plus_one != 0) i = (i + 1) & mask;
            slots_[i] = slot;
        }
    }

    std::string data_;
    std::vector<Slot> slots_;  // a power of two in size
    std::size_t count_ = 0;
};

template <class T>
void put_records(std::vector<std::byte>& out, const std::vector<T>& records) {
    auto bytes = std::as_bytes(std::span(records));
    out.insert(out.end(), bytes.begin(), bytes.end());
}

template <class Bytes>
void pad_to_8(Bytes& out) {
    while (out.size() % 8 != 0) out.push_back(std::byte{0});
}

uint32_t nsec_of(const Time& t) {
    return t.nsec >= 0 && t.nsec < 1000000000 ? static_cast<uint32_t>(t.nsec) : 0;
}

// What both versions encode alike: a dirent's fields but its last word, an inode's xattrs.
Dirent dirent_of(const ScannedTree& tree, const ScannedDirent& d, uint32_t name_at, uint32_t key) {
    const uint32_t mode = file_type_to_mode_bits(tree.inodes[d.ino - 1].stat.type);
    return Dirent{.ino = d.ino,
                  .name_offset = name_at,
                  .name_length = static_cast<uint16_t>(d.name.size()),
                  .type = static_cast<uint8_t>(mode >> 12),
                  .reserved = 0,
                  .name_prefix = key};
}

// Appends the inode's xattrs; its first record's index and count go to `first`, `count`.
Result<void> put_xattrs(const ScannedInode& s, BytesTable& bytes, std::vector<Xattr>& xattrs,
                        uint32_t& first, uint32_t& count) {
    if (s.xattrs.empty()) return {};
    first = static_cast<uint32_t>(xattrs.size());
    count = static_cast<uint32_t>(s.xattrs.size());
    for (const auto& [name, value] : s.xattrs) {
        auto name_at = bytes.intern(name);
        if (!name_at) return std::unexpected(name_at.error());
        auto value_at = bytes.intern(value);
        if (!value_at) return std::unexpected(value_at.error());
        xattrs.push_back(Xattr{.name_offset = *name_at,
                               .value_offset = *value_at,
                               .value_length = static_cast<uint32_t>(value.size()),
                               .name_length = static_cast<uint16_t>(name.size()),
                               .reserved = 0});
    }
    return {};
}

// Inline contents into the bytes section (their offsets set in the plan).
Result<void> put_inline_contents(ContentPlan& plan, BytesTable& bytes, uint64_t& inline_bytes) {
    for (PlannedContent& c : plan.contents) {
        if (!c.is_inline) continue;
        auto at = bytes.append(c.kept);
        if (!at) return std::unexpected(at.error());
        c.offset = *at;
        inline_bytes += c.size;
    }
    return {};
}

// The fields of v1's and v2's inode that mean the same (the first 40 bytes), but `ref`.
template <class Record>
Record inode_head(const ScannedInode& s) {
    const Stat& st = s.stat;
    Record inode{};
    inode.mode = file_type_to_mode_bits(st.type) | (st.mode & 07777);
    inode.uid = st.uid;
    inode.gid = st.gid;
    inode.nlink = s.names;
    switch (st.type) {
        case FileType::regular:
            inode.size = st.size;
            break;
        case FileType::directory:
            inode.nlink = 2 + s.subdirectories;
            inode.size = s.entry_count;
            inode.ref = s.first_dirent;
            break;
        case FileType::char_device:
        case FileType::block_device:
            inode.ref = st.rdev;
            break;
        default:
            break;
    }
    return inode;
}

// The sections of one version, before the common part lays them out.
struct Sections {
    std::vector<std::vector<std::byte>> data = std::vector<std::vector<std::byte>>(kSectionCount);
    std::vector<bool> present = std::vector<bool>(kSectionCount, false);
    template <class T>
    void put(Section which, std::span<const T> records) {
        auto bytes = std::as_bytes(records);
        auto& out = data[static_cast<std::size_t>(which)];
        out.assign(bytes.begin(), bytes.end());
        present[static_cast<std::size_t>(which)] = true;
    }
};

Result<void> encode_v1(const ScannedTree& tree, ContentPlan& plan, BytesTable& bytes, Sections& out,
                       uint64_t& inline_bytes) {
    std::vector<Dirent> dirents;
    dirents.reserve(tree.dirents.size());
    for (const ScannedDirent& d : tree.dirents) {
        auto name = bytes.intern(d.name);
        if (!name) return std::unexpected(name.error());
        dirents.push_back(dirent_of(tree, d, *name, name_prefix(d.name.data(), d.name.size())));
    }
    std::vector<Inode> inodes;
    std::vector<Xattr> xattrs;
    inodes.reserve(tree.inodes.size());
    for (const ScannedInode& s : tree.inodes) {
        Inode inode = inode_head<Inode>(s);
        if (s.stat.type == FileType::regular) inode.ref = s.content;
        if (s.stat.type == FileType::symlink) {
            auto target = bytes.intern(s.target);
            if (!target) return std::unexpected(target.error());
            inode.size = s.target.size();
            inode.ref = *target;
        }
        if (auto ok = put_xattrs(s, bytes, xattrs, inode.xattr_first, inode.xattr_count); !ok)
            return ok;
        const Stat& st = s.stat;
        inode.atime_sec = st.atime.sec;
        inode.mtime_sec = st.mtime.sec;
        inode.ctime_sec = st.ctime.sec;
        inode.atime_nsec = nsec_of(st.atime);
        inode.mtime_nsec = nsec_of(st.mtime);
        inode.ctime_nsec = nsec_of(st.ctime);
        inodes.push_back(inode);
    }
    if (auto ok = put_inline_contents(plan, bytes, inline_bytes); !ok) return ok;
    std::vector<Content> contents;
    contents.reserve(plan.contents.size());
    for (const PlannedContent& c : plan.contents) {
        Content record{.offset = c.offset, .size = c.size, .sha256 = {}};
        std::memcpy(record.sha256, c.sha256.data(), sizeof record.sha256);
        contents.push_back(record);
    }
    out.put(Section::inodes, std::span<const Inode>(inodes));
    out.put(Section::dirents, std::span<const Dirent>(dirents));
    out.put(Section::contents, std::span<const Content>(contents));
    out.put(Section::xattrs, std::span<const Xattr>(xattrs));
    return {};
}

// A directory's run of dirents sorted by (hash, name), and its buckets when it has enough
// entries (format.hpp, DirectoryBuckets). The sort is O(n log n) whatever the hashes.
void order_run(std::span<Dirent> run, std::span<const std::string_view> names,
               std::vector<uint32_t>& buckets, uint32_t& first_bucket) {
    std::vector<uint32_t> order(run.size());
    for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
        if (run[a].name_prefix != run[b].name_prefix)
            return run[a].name_prefix < run[b].name_prefix;
        return names[a] < names[b];
    });
    std::vector<Dirent> sorted(run.size());
    for (std::size_t i = 0; i < order.size(); ++i) sorted[i] = run[order[i]];
    std::copy(sorted.begin(), sorted.end(), run.begin());
    const unsigned bits = bucket_bits(run.size());
    if (bits == 0) return;
    first_bucket = static_cast<uint32_t>(buckets.size());
    const uint64_t count = uint64_t{1} << bits;
    std::size_t at = 0;
    for (uint64_t k = 0; k <= count; ++k) {
        while (at < run.size() && (run[at].name_prefix >> (32 - bits)) < k) ++at;
        buckets.push_back(static_cast<uint32_t>(at));
    }
}

Result<void> encode_v2(const ScannedTree& tree, ContentPlan& plan, const MetadataFormat& format,
                       BytesTable& bytes, Sections& out, uint64_t& inline_bytes) {
    const bool all_times = format.all_times;
    const auto hash = format.name_hash_for_tests ? format.name_hash_for_tests : &name_hash;
    // Inline contents first: an inode holds its content's offset.
    if (auto ok = put_inline_contents(plan, bytes, inline_bytes); !ok) return ok;
    std::vector<Dirent> dirents;
    dirents.reserve(tree.dirents.size());
    for (const ScannedDirent& d : tree.dirents) {
        auto name = bytes.intern(d.name);
        if (!name) return std::unexpected(name.error());
        dirents.push_back(dirent_of(tree, d, *name, hash(d.name)));
    }
    std::vector<InodeV2> inodes;
    std::vector<InodeTimes> times;
    std::vector<Xattr> xattrs;
    std::vector<uint32_t> buckets;
    std::vector<std::string_view> names;
    // Contents made of extents: their runs, in content order; each one's first index. The
    // digests: of every content but those whole in a base (which has them), in content order.
    std::vector<Extent> extents;
    std::vector<uint64_t> first_extent(plan.contents.size(), 0);
    std::vector<uint32_t> digest_index(plan.contents.size(), 0);
    std::vector<std::array<uint8_t, 32>> digests;
    digests.reserve(plan.contents.size());
    for (std::size_t c = 0; c < plan.contents.size(); ++c) {
        const PlannedContent& content = plan.contents[c];
        first_extent[c] = extents.size();
        extents.insert(extents.end(), content.extents.begin(), content.extents.end());
        if (content.in_base) continue;
        digest_index[c] = static_cast<uint32_t>(digests.size());
        std::array<uint8_t, 32>& d = digests.emplace_back();
        std::memcpy(d.data(), content.sha256.data(), d.size());
    }
    inodes.reserve(tree.inodes.size());
    for (const ScannedInode& s : tree.inodes) {
        InodeV2 inode = inode_head<InodeV2>(s);
        switch (s.stat.type) {
            case FileType::regular:
                if (s.content != 0) {
                    const PlannedContent& c = plan.contents[s.content - 1];
                    if (c.in_base) {
                        inode.ref = base_locator(c.in_base->pack, c.in_base->offset);
                        inode.aux = c.in_base->digest_index;
                    } else {
                        inode.ref = c.extents.empty()
                                        ? c.offset
                                        : kExtentLocator | first_extent[s.content - 1];
                        inode.aux = digest_index[s.content - 1];
                    }
                }
                break;
            case FileType::symlink: {
                auto target = bytes.intern(s.target);
                if (!target) return std::unexpected(target.error());
                inode.size = s.target.size();
                inode.ref = *target;
                break;
            }
            case FileType::directory: {
                names.clear();
                for (uint64_t i = 0; i < s.entry_count; ++i)
                    names.push_back(tree.dirents[s.first_dirent + i].name);
                // Names travel with their dirents: sort a permutation of both at once.
                std::span<Dirent> run(dirents.data() + s.first_dirent, s.entry_count);
                order_run(run, names, buckets, inode.aux);
                break;
            }
            default:
                break;
        }
        if (auto ok = put_xattrs(s, bytes, xattrs, inode.xattr_first, inode.xattr_count); !ok)
            return ok;
        inode.mtime_sec = s.stat.mtime.sec;
        inode.mtime_nsec = nsec_of(s.stat.mtime);
        inodes.push_back(inode);
        if (all_times) {
            times.push_back(InodeTimes{.atime_sec = s.stat.atime.sec,
                                       .ctime_sec = s.stat.ctime.sec,
                                       .atime_nsec = nsec_of(s.stat.atime),
                                       .ctime_nsec = nsec_of(s.stat.ctime)});
        }
    }
    if (buckets.size() > std::numeric_limits<uint32_t>::max())
        return fail(EFBIG, "build: directory buckets over 2^32");
    out.put(Section::inodes, std::span<const InodeV2>(inodes));
    out.put(Section::dirents, std::span<const Dirent>(dirents));
    out.put(kDigests, std::span<const std::array<uint8_t, 32>>(digests));
    out.put(Section::xattrs, std::span<const Xattr>(xattrs));
    out.put(Section::buckets, std::span<const uint32_t>(buckets));
    if (all_times) out.put(Section::times, std::span<const InodeTimes>(times));
    if (format.chunk_size != 0) {
        std::vector<BaseRecord> bases;
        for (const BaseSpec& spec : format.bases) {
            auto name = bytes.intern(spec.name);
            if (!name) return std::unexpected(name.error());
            BaseRecord record{};
            std::memcpy(record.image_digest, spec.image_digest.data(), 32);
            record.name_offset = *name;
            record.name_length = static_cast<uint32_t>(spec.name.size());
            bases.push_back(record);
        }
        out.put(Section::extents, std::span<const Extent>(extents));
        out.put(Section::bases, std::span<const BaseRecord>(bases));
    }
    return {};
}

// The header's digest and checksum: the digest over the metadata digests when the pack has
// them, else over the region.
void seal(MetadataImage& image) noexcept {
    seal_header(image.header, image.meta_digests.empty()
                                  ? std::span<const std::byte>(image.region)
                                  : std::span<const std::byte>(image.meta_digests));
}

}  // namespace

Result<MetadataImage> build_metadata(const ScannedTree& tree, ContentPlan& plan,
                                     const StreamFacts& stream, const MetadataFormat& format,
                                     const InodeNumbering* numbering) {
    if (format.version < kOldestFormatVersion || format.version > kFormatVersion)
        return fail(EINVAL, "build: unknown pack format version");
    BytesTable bytes;
    MetadataImage image;
    Sections sections;
    const bool v2 = format.version >= 2;
    auto encoded = v2 ? encode_v2(tree, plan, format, bytes, sections, image.inline_bytes)
                      : encode_v1(tree, plan, bytes, sections, image.inline_bytes);
    if (!encoded) return std::unexpected(encoded.error());
    sections.put(Section::blocks, std::span<const uint64_t>(stream.block_offsets));
    sections.put(Section::bytes, std::as_bytes(std::span(bytes.data())));
    const bool block_digests = v2 && !stream.block_digests.empty();
    if (block_digests)
        sections.put(Section::block_digests, std::span<const BlockDigest>(stream.block_digests));
    if (numbering != nullptr) {  // else their entries stay zero, as in every v1 pack
        sections.put(Section::inode_numbers, std::span<const uint64_t>(numbering->numbers));
        sections.put(Section::inode_order, std::span<const uint32_t>(numbering->order));
    }

    // The region: sections in format order, each 8-aligned.
    Header& h = image.header;
    std::memcpy(h.magic, kMagic.data(), sizeof h.magic);
    h.version = format.version;
    h.header_size = kHeaderSize;
    h.data_offset = kDataOffset;
    h.data_length = stream.data_length;
    h.stream_size = stream.stream_size;
    // v2: the region starts a cache line, and the inodes (64 bytes each) start it.
    const uint64_t meta_align = v2 ? 64 : 8;
    h.meta_offset = (kDataOffset + stream.data_length + meta_align - 1) / meta_align * meta_align;
    h.inode_count = tree.inodes.size();
    h.codec = static_cast<uint32_t>(stream.codec);
    h.block_size = stream.block_size;
    h.inline_max = stream.inline_max;
    h.meta_block_size = kMetaBlockSize;
    if (stream.codec != Codec::none) h.incompat_features |= kIncompatCompressedData;
    if (stream.holes) h.incompat_features |= kIncompatHoles;
    if (!sections.data[static_cast<std::size_t>(Section::xattrs)].empty())
        h.compat_features |= kCompatXattrs;
    if (sections.present[static_cast<std::size_t>(Section::times)])
        h.compat_features |= kCompatAllTimes;
    if (numbering != nullptr) h.incompat_features |= kIncompatInodeNumbers;
    if (block_digests) h.compat_features |= kCompatBlockDigests;
    if (v2 && format.chunk_size != 0) {
        h.incompat_features |= kIncompatExtents;
        h.chunk_size = format.chunk_size;
    }

    auto& region = image.region;
    std::size_t total = 0;
    for (std::size_t i = 0; i < kSectionCount; ++i) total += sections.data[i].size() + 7;
    region.reserve(total);  // one allocation, no copy on growth
    auto add_section = [&](Section which, std::span<const std::byte> data) {
        pad_to_8(region);
        SectionEntry& entry = section(h, static_cast<std::size_t>(which));
        entry.offset = h.meta_offset + region.size();
        entry.length = data.size();
        entry.checksum = xxh3_64(data);
        region.insert(region.end(), data.begin(), data.end());
    };
    for (std::size_t i = 0; i < kSectionCount; ++i) {
        if (sections.present[i]) add_section(static_cast<Section>(i), sections.data[i]);
    }
    pad_to_8(region);
    h.meta_length = region.size();

    std::vector<uint64_t> sums;
    for (std::size_t at = 0; at < region.size(); at += kMetaBlockSize) {
        std::size_t n = std::min<std::size_t>(kMetaBlockSize, region.size() - at);
        sums.push_back(xxh3_64(std::span(region).subspan(at, n)));
    }
    put_records(image.sums, sums);
    h.sums_offset = h.meta_offset + h.meta_length;
    h.sums_length = image.sums.size();
    h.sums_checksum = xxh3_64(image.sums);
    if (v2 && format.meta_digests) {
        h.incompat_features |= kIncompatMetaDigests;
        image.meta_digests.reserve(32 * sums.size());
        for (std::size_t at = 0; at < region.size(); at += kMetaBlockSize) {
            const std::size_t n = std::min<std::size_t>(kMetaBlockSize, region.size() - at);
            const Sha256Digest d = sha256(std::span(region).subspan(at, n));
            const auto digest = std::as_bytes(std::span(d));
            image.meta_digests.insert(image.meta_digests.end(), digest.begin(), digest.end());
        }
    }
    h.file_size = h.sums_offset + h.sums_length + image.meta_digests.size();
    seal(image);  // (the digest covers every content's SHA-256)
    return image;
}

std::vector<std::byte> frame_metadata(MetadataImage& image,
                                      std::span<const uint64_t> frame_offsets) {
    Header& h = image.header;
    h.incompat_features |= kIncompatCompressedMeta;
    h.meta_frames_length = frame_offsets.back();
    std::vector<std::byte> index;
    const auto bytes = std::as_bytes(frame_offsets);
    index.assign(bytes.begin(), bytes.end());
    h.meta_index_checksum = xxh3_64(index);
    h.sums_offset = frame_index_offset(h) + index.size();
    h.file_size = h.sums_offset + h.sums_length + image.meta_digests.size();
    seal(image);
    return index;
}

}  // namespace packfs::pack
