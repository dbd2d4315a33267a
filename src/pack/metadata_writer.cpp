#include "pack/metadata_writer.hpp"

#include <sys/stat.h>

#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>

#include "pack/digest.hpp"

namespace packfs::pack {

namespace {

// The bytes section: names, symlink targets and xattrs interned (a name used in a thousand
// directories is stored once), inline contents appended.
class BytesTable {
public:
    Result<uint32_t> intern(std::string_view s) {
        auto found = index_.find(std::string(s));
        if (found != index_.end()) return found->second;
        auto offset = append(s);
        if (offset) index_.emplace(std::string(s), *offset);
        return offset;
    }
    Result<uint32_t> append(std::string_view s) {
        if (data_.size() + s.size() > std::numeric_limits<uint32_t>::max())
            return fail(EFBIG, "build: names and inline data over 4 GiB");
        auto offset = static_cast<uint32_t>(data_.size());
        data_.append(s);
        return offset;
    }
    const std::string& data() const noexcept { return data_; }

private:
    std::string data_;
    std::unordered_map<std::string, uint32_t> index_;
};

template <class T>
void put_records(std::vector<std::byte>& out, const std::vector<T>& records) {
    auto bytes = std::as_bytes(std::span(records));
    out.insert(out.end(), bytes.begin(), bytes.end());
}

void pad_to_8(std::vector<std::byte>& out) {
    while (out.size() % 8 != 0) out.push_back(std::byte{0});
}

uint32_t nsec_of(const Time& t) {
    return t.nsec >= 0 && t.nsec < 1000000000 ? static_cast<uint32_t>(t.nsec) : 0;
}

}  // namespace

Result<MetadataImage> build_metadata(const ScannedTree& tree, ContentPlan& plan,
                                     const StreamFacts& stream, const InodeNumbering* numbering) {
    BytesTable bytes;
    MetadataImage image;

    std::vector<Dirent> dirents;
    dirents.reserve(tree.dirents.size());
    for (const ScannedDirent& d : tree.dirents) {
        auto name = bytes.intern(d.name);
        if (!name) return std::unexpected(name.error());
        uint32_t mode = file_type_to_mode_bits(tree.inodes[d.ino - 1].stat.type);
        dirents.push_back(Dirent{.ino = d.ino,
                                 .name_offset = *name,
                                 .name_length = static_cast<uint16_t>(d.name.size()),
                                 .type = static_cast<uint8_t>(mode >> 12),
                                 .reserved = 0,
                                 .name_prefix = name_prefix(d.name.data(), d.name.size())});
    }

    std::vector<Inode> inodes;
    std::vector<Xattr> xattrs;
    inodes.reserve(tree.inodes.size());
    for (const ScannedInode& s : tree.inodes) {
        const Stat& st = s.stat;
        Inode inode{};
        inode.mode = file_type_to_mode_bits(st.type) | (st.mode & 07777);
        inode.uid = st.uid;
        inode.gid = st.gid;
        inode.nlink = s.names;
        switch (st.type) {
            case FileType::regular:
                inode.size = st.size;
                inode.ref = s.content;
                break;
            case FileType::directory:
                inode.nlink = 2 + s.subdirectories;
                inode.size = s.entry_count;
                inode.ref = s.first_dirent;
                break;
            case FileType::symlink: {
                auto target = bytes.intern(s.target);
                if (!target) return std::unexpected(target.error());
                inode.size = s.target.size();
                inode.ref = *target;
                break;
            }
            case FileType::char_device:
            case FileType::block_device:
                inode.ref = st.rdev;
                break;
            case FileType::fifo:
            case FileType::socket:
                break;
        }
        if (!s.xattrs.empty()) {
            inode.xattr_first = static_cast<uint32_t>(xattrs.size());
            inode.xattr_count = static_cast<uint32_t>(s.xattrs.size());
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
        }
        inode.atime_sec = st.atime.sec;
        inode.mtime_sec = st.mtime.sec;
        inode.ctime_sec = st.ctime.sec;
        inode.atime_nsec = nsec_of(st.atime);
        inode.mtime_nsec = nsec_of(st.mtime);
        inode.ctime_nsec = nsec_of(st.ctime);
        inodes.push_back(inode);
    }

    std::vector<Content> contents;
    contents.reserve(plan.contents.size());
    for (PlannedContent& c : plan.contents) {
        if (c.is_inline) {
            auto at = bytes.append(c.kept);
            if (!at) return std::unexpected(at.error());
            c.offset = *at;
            image.inline_bytes += c.size;
        }
        Content record{.offset = c.offset, .size = c.size, .sha256 = {}};
        std::memcpy(record.sha256, c.sha256.data(), sizeof record.sha256);
        contents.push_back(record);
    }

    // The region: sections in format order, each 8-aligned.
    Header& h = image.header;
    std::memcpy(h.magic, kMagic.data(), sizeof h.magic);
    h.version = kFormatVersion;
    h.header_size = kHeaderSize;
    h.data_offset = kDataOffset;
    h.data_length = stream.data_length;
    h.stream_size = stream.stream_size;
    h.meta_offset = (kDataOffset + stream.data_length + 7) / 8 * 8;
    h.inode_count = inodes.size();
    h.codec = static_cast<uint32_t>(stream.codec);
    h.block_size = stream.block_size;
    h.inline_max = stream.inline_max;
    h.meta_block_size = kMetaBlockSize;
    if (stream.codec != Codec::none) h.incompat_features |= kIncompatCompressedData;
    if (!xattrs.empty()) h.compat_features |= kCompatXattrs;
    if (numbering != nullptr) h.incompat_features |= kIncompatInodeNumbers;

    std::vector<std::byte>& region = image.region;
    auto add_section = [&](Section which, std::span<const std::byte> data) {
        pad_to_8(region);
        SectionEntry& entry = section(h, static_cast<std::size_t>(which));
        entry.offset = h.meta_offset + region.size();
        entry.length = data.size();
        entry.checksum = xxh3_64(data);
        region.insert(region.end(), data.begin(), data.end());
    };
    add_section(Section::inodes, std::as_bytes(std::span(inodes)));
    add_section(Section::dirents, std::as_bytes(std::span(dirents)));
    add_section(Section::contents, std::as_bytes(std::span(contents)));
    add_section(Section::xattrs, std::as_bytes(std::span(xattrs)));
    add_section(Section::blocks, std::as_bytes(std::span(stream.block_offsets)));
    add_section(Section::bytes, std::as_bytes(std::span(bytes.data())));
    if (numbering != nullptr) {  // else their entries stay zero, as in every v1 pack
        add_section(Section::inode_numbers, std::as_bytes(std::span(numbering->numbers)));
        add_section(Section::inode_order, std::as_bytes(std::span(numbering->order)));
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
    h.file_size = h.sums_offset + h.sums_length;

    // The image digest covers the header (digest and checksum zero) and the whole metadata,
    // which holds every content's SHA-256.
    Sha256 digest;
    digest.update(std::as_bytes(std::span(&h, 1)));
    digest.update(region);
    Sha256Digest d = digest.finish();
    std::memcpy(h.image_digest, d.data(), d.size());
    h.header_checksum = xxh3_64(std::as_bytes(std::span(&h, 1)));
    return image;
}

}  // namespace packfs::pack
