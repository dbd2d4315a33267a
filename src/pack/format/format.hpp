// The pack's on-disk format, versions 1 and 2 (DESIGN §8). docs/FORMAT.md is the prose form of this
// file; the two must agree. Every multi-byte integer is little-endian; every structure here is
// a plain record that is read with memcpy (never by casting a pointer into the file), after its
// offset and length were checked against the file.
//
// File layout (offsets absolute, every section 8-byte aligned):
//
//   [0, 4096)                 header (kHeaderSize bytes used, the rest of the page zero)
//   [data_offset, +data_length)    data region: file contents ("the stream"), raw or as
//                                  compressed blocks; data_offset = 4096
//   [meta_offset, +meta_length)    metadata region: every section below, contiguous, in this
//                                  order: inodes, dirents, contents, xattrs, blocks, bytes,
//                                  inode_numbers, inode_order (the last two only with
//                                  kIncompatInodeNumbers)
//   [sums_offset, +sums_length)    one XXH3-64 per metadata block of the metadata region
//   file_size = sums_offset + sums_length
//
// So a reader fetches all metadata with two reads: the header, then [meta_offset, file_size).
//
// Integrity: the header carries XXH3-64 of itself (with that field zero), of every section,
// and of the metadata-block sums. A reader checks the header and the sums array on open and
// each metadata block the first time it touches it. Each regular file's content has a
// SHA-256; the image digest is SHA-256 over (header with header_checksum and image_digest
// zeroed) followed by the metadata region, so it names the whole tree, contents included
// through their SHA-256s.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>

namespace packfs::pack {

inline constexpr std::array<char, 8> kMagic = {'P', 'A', 'C', 'K', 'F', 'S', '\r', '\n'};
inline constexpr uint32_t kFormatVersion = 2;  // the newest this reader reads and writes
inline constexpr uint32_t kOldestFormatVersion = 1;
inline constexpr uint32_t kHeaderSize = 512;      // bytes of the header record
inline constexpr uint64_t kDataOffset = 4096;     // the data region starts on its own page
inline constexpr uint32_t kMetaBlockSize = 16384;  // metadata checksum granularity (v1: fixed)
inline constexpr uint64_t kRootIno = 1;            // record numbers are table index + 1

// Feature flags. A reader refuses a pack with an incompat bit it does not know; it may read a
// pack with an unknown ro_compat bit only without writing it back (packs are never written
// back, so v1 readers treat ro_compat like compat); unknown compat bits are ignored.
inline constexpr uint64_t kIncompatCompressedData = 1u << 0;  // the blocks section exists
// The inode_numbers and inode_order sections exist: st_ino is the stored number, not the
// record's position (a reader that ignored the bit would report wrong inode numbers).
inline constexpr uint64_t kIncompatInodeNumbers = 1u << 1;
// v2, with kIncompatCompressedData: the metadata region is stored as one frame of the header's
// codec per metadata block, followed by a frame index (MetaFrames below); section offsets and
// meta_length describe the region inflated.
inline constexpr uint64_t kIncompatCompressedMeta = 1u << 2;
// v2: the stream has holes. The blocks section exists whatever the codec, and a block stored
// in zero bytes is a hole: it reads as zeros and takes no space in the data region. Without a
// codec every other block is stored raw, so raw blocks still map byte for byte.
inline constexpr uint64_t kIncompatHoles = 1u << 3;
// v2: after the sums comes a table of one SHA-256 per metadata block (of the block inflated),
// and the image digest is SHA-256 over the header (zeroed as always) followed by that table
// instead of the region. A reader that fetches the metadata block by block (a remote pack,
// docs/REMOTE.md) checks the table against the image digest once, on open, and each block
// against its entry the first time it fetches it; the digest still names the whole tree. A
// reader that ignored the bit would compute another image digest.
inline constexpr uint64_t kIncompatMetaDigests = 1u << 4;
// v2: contents made of extents (docs/FORMAT.md "Extents"): a regular file's locator with
// kExtentLocator set indexes the extents section, and its bytes are a run of extents, each a
// range of this pack's stream or of a base pack's (the bases section names them by image
// digest). Large contents are cut at content-defined boundaries (chunker.hpp) into extents
// named by their SHA-256, so a pack built over its bases stores only what they lack.
inline constexpr uint64_t kIncompatExtents = 1u << 5;
inline constexpr uint64_t kIncompatKnown = kIncompatCompressedData | kIncompatInodeNumbers |
                                           kIncompatCompressedMeta | kIncompatHoles |
                                           kIncompatMetaDigests | kIncompatExtents;
// With kIncompatExtents: the top bit of a regular file's locator (InodeV2::ref) says the rest
// is the index of its first extent.
inline constexpr uint64_t kExtentLocator = uint64_t{1} << 63;
// With kIncompatExtents: the next bit says the content is whole in a base's stream, in one run:
// the base (1 ..= the base count) in the 14 bits from kBasePackShift, the offset in its stream
// in the 48 below, and the inode's aux the index of the content's digest in that base.
inline constexpr uint64_t kBaseLocator = uint64_t{1} << 62;
inline constexpr unsigned kBasePackShift = 48;
inline constexpr uint64_t kBaseOffsetMask = (uint64_t{1} << kBasePackShift) - 1;
inline constexpr uint64_t kMaxLocatorBase = (uint64_t{1} << 14) - 1;
constexpr uint64_t base_locator(uint64_t pack, uint64_t offset) noexcept {
    return kBaseLocator | pack << kBasePackShift | offset;
}
constexpr uint32_t locator_base(uint64_t ref) noexcept {
    return static_cast<uint32_t>((ref >> kBasePackShift) & kMaxLocatorBase);
}
inline constexpr uint64_t kCompatXattrs = 1u << 0;  // some inode has xattrs (a hint: none if 0)
// v2: the times section exists, holding each inode's atime and ctime (without it a reader
// reports both equal to mtime, which is what a reader that ignores the bit reports).
inline constexpr uint64_t kCompatAllTimes = 1u << 1;
// v2: the block_digests section exists, one SHA-256 per stream block of the bytes it is stored
// in, so a reader that fetches blocks from elsewhere (a remote pack, docs/REMOTE.md) can check
// each one alone; the image digest covers the section, so a pinned digest vouches for every
// block. Readers that do not fetch ignore it.
inline constexpr uint64_t kCompatBlockDigests = 1u << 2;
inline constexpr uint64_t kCompatKnown = kCompatXattrs | kCompatAllTimes | kCompatBlockDigests;

enum class Codec : uint32_t { none = 0, zstd = 1, lz4 = 2 };

// The sections, in file order. The first six have their entries in Header::sections, the
// next two (added later, from v1's reserved bytes) in Header::numbering_sections, the next two
// (v2) in Header::more_sections, the last in Header::digests_section (from v2's reserved
// bytes); section() below finds any. Slot 2 is `contents` in v1 and
// `digests` in v2; buckets and times exist in v2 only (v1 leaves their entries zero).
enum class Section : uint32_t {
    inodes = 0,
    dirents,
    contents,  // v1: Content records. v2: `digests`, one SHA-256 per distinct content
    xattrs,
    blocks,
    bytes,
    inode_numbers,  // kIncompatInodeNumbers: one u64 per inode record, its st_ino (non-zero)
    inode_order,    // kIncompatInodeNumbers: one u32 per inode record: record indexes sorted
                    // by strictly ascending inode number (a lookup by number is a binary search)
    buckets,        // v2: directories' hash buckets, u32s (DirectoryBuckets below)
    times,          // v2 with kCompatAllTimes: one InodeTimes per inode record
    block_digests,  // v2 with kCompatBlockDigests: one SHA-256 per stream block (BlockDigest)
    extents,        // v2 with kIncompatExtents: Extent records, each content's a run
    bases,          // v2 with kIncompatExtents: BaseRecord, the packs extents may lie in
    count
};
inline constexpr Section kDigests = Section::contents;  // v2's name for slot 2
inline constexpr std::size_t kSectionCount = static_cast<std::size_t>(Section::count);
inline constexpr std::size_t kFirstSectionCount = 6;  // entries in Header::sections
inline constexpr std::size_t kNumberingSectionCount = 2;
inline constexpr std::size_t kMoreSectionCount = 2;  // buckets, times

struct SectionEntry {
    uint64_t offset;    // absolute; 8-aligned; inside the metadata region
    uint64_t length;    // bytes; a multiple of the record size for record sections
    uint64_t checksum;  // XXH3-64 (seed 0) of the section's bytes
};
static_assert(sizeof(SectionEntry) == 24);

struct Header {
    char magic[8];               // kMagic
    uint32_t version;            // kFormatVersion
    uint32_t header_size;        // kHeaderSize
    uint64_t incompat_features;  // kIncompat*
    uint64_t compat_features;    // kCompat*
    uint64_t ro_compat_features; // none in v1
    uint64_t file_size;          // exact size of the pack file
    uint64_t inode_count;        // records in the inodes section; the root is record 1
    uint64_t data_offset;        // kDataOffset
    uint64_t data_length;        // bytes of the data region as stored (compressed or not)
    uint64_t stream_size;        // bytes of the uncompressed stream (== data_length if raw)
    uint64_t meta_offset;        // start of the metadata region (8-aligned, >= data end)
    uint64_t meta_length;        // bytes: to the last section's end, rounded up to 8
    uint64_t sums_offset;        // == meta_offset + meta_length
    uint64_t sums_length;        // 8 * ceil(meta_length / kMetaBlockSize)
    uint64_t sums_checksum;      // XXH3-64 of the sums array
    uint32_t codec;              // Codec; none unless kIncompatCompressedData
    uint32_t block_size;         // stream block size: power of two, 4 KiB .. 16 MiB
    uint32_t inline_max;         // contents of at most this many bytes live in `bytes`
    uint32_t meta_block_size;    // kMetaBlockSize
    SectionEntry sections[kFirstSectionCount];  // inodes .. bytes
    uint8_t image_digest[32];    // SHA-256, see above
    // inode_numbers, inode_order: all zero (offset, length and checksum) unless
    // kIncompatInodeNumbers, as v1 writers left these reserved bytes.
    SectionEntry numbering_sections[kNumberingSectionCount];
    // v2: buckets, times (times all zero without kCompatAllTimes); v1: all zero.
    SectionEntry more_sections[kMoreSectionCount];
    // kIncompatCompressedMeta: bytes of the stored frames, and XXH3-64 of the frame index; both
    // zero without the feature.
    uint64_t meta_frames_length;
    uint64_t meta_index_checksum;
    // v2: block_digests (all zero without kCompatBlockDigests). Readers from before the feature
    // find the metadata region running past its last section they know, and refuse the pack.
    SectionEntry digests_section;
    // v2 with kIncompatExtents: the extents and bases sections, and the average chunk size the
    // writer cut large contents with (ChunkParams::around; a power of two); all zero without.
    SectionEntry extents_section;
    SectionEntry bases_section;
    uint32_t chunk_size;
    uint32_t reserved;           // zero
    uint64_t header_checksum;    // XXH3-64 of the header's first kHeaderSize bytes, this zero
};
static_assert(sizeof(Header) == kHeaderSize);
static_assert(offsetof(Header, image_digest) == 280);
static_assert(offsetof(Header, numbering_sections) == 312);
static_assert(offsetof(Header, more_sections) == 360);
static_assert(offsetof(Header, meta_frames_length) == 408);
static_assert(offsetof(Header, digests_section) == 424);
static_assert(offsetof(Header, extents_section) == 448);
static_assert(offsetof(Header, bases_section) == 472);
static_assert(offsetof(Header, chunk_size) == 496);
static_assert(offsetof(Header, header_checksum) == kHeaderSize - 8);

// The entry of section `i` (a Section as an index), wherever the header keeps it.
inline SectionEntry& section(Header& h, std::size_t i) noexcept {
    if (i < kFirstSectionCount) return h.sections[i];
    if (i < kFirstSectionCount + kNumberingSectionCount)
        return h.numbering_sections[i - kFirstSectionCount];
    if (i < kFirstSectionCount + kNumberingSectionCount + kMoreSectionCount)
        return h.more_sections[i - kFirstSectionCount - kNumberingSectionCount];
    if (i == static_cast<std::size_t>(Section::extents)) return h.extents_section;
    if (i == static_cast<std::size_t>(Section::bases)) return h.bases_section;
    return h.digests_section;
}
inline const SectionEntry& section(const Header& h, std::size_t i) noexcept {
    return section(const_cast<Header&>(h), i);
}
inline const SectionEntry& section(const Header& h, Section s) noexcept {
    return section(h, static_cast<std::size_t>(s));
}
// Byte offset of section `i`'s entry in the header, for errors that name it.
inline uint64_t section_entry_offset(std::size_t i) noexcept {
    if (i == static_cast<std::size_t>(Section::block_digests))
        return offsetof(Header, digests_section);
    if (i == static_cast<std::size_t>(Section::extents)) return offsetof(Header, extents_section);
    if (i == static_cast<std::size_t>(Section::bases)) return offsetof(Header, bases_section);
    return i < kFirstSectionCount ? offsetof(Header, sections) + i * sizeof(SectionEntry)
                                  : offsetof(Header, numbering_sections) +
                                        (i - kFirstSectionCount) * sizeof(SectionEntry);
}

// File types in inode mode and in dirents use the POSIX S_IFMT values (S_IFREG 0100000, ...).
// An inode: 80 bytes. Record i is named i + 1 by dirents (its record number); its st_ino is
// the same, or inode_numbers[i] with kIncompatInodeNumbers.
struct Inode {
    uint32_t mode;        // S_IFMT type bits | permission bits (07777)
    uint32_t uid;
    uint32_t gid;
    uint32_t nlink;       // regular: number of dirents naming it; dir: 2 + subdirectories
    uint64_t size;        // regular: content bytes; symlink: target length; dir: entry count;
                          // others 0
    uint64_t ref;         // regular: content index + 1 (0: empty file, no content);
                          // dir: index of its first dirent; symlink: offset of the target in
                          // `bytes`; char/block device: rdev (Linux dev_t encoding); else 0
    uint32_t xattr_first; // index of its first xattr record (0 when xattr_count is 0)
    uint32_t xattr_count; // its xattrs are [xattr_first, xattr_first + xattr_count)
    int64_t atime_sec;
    int64_t mtime_sec;
    int64_t ctime_sec;
    uint32_t atime_nsec;  // each < 1,000,000,000
    uint32_t mtime_nsec;
    uint32_t ctime_nsec;
    uint32_t reserved;    // zero
};
static_assert(sizeof(Inode) == 80);

// A directory entry: 16 bytes. A directory's entries are contiguous, sorted by name in byte
// order (memcmp, then length), with no duplicates, no "." and "..", no '/' or NUL in a name.
// Inode records are laid out breadth-first in that order, so a directory's children are
// mostly consecutive records.
struct Dirent {
    uint32_t ino;          // record number of the inode it names (>= 2, <= inode_count)
    uint32_t name_offset;  // offset of the name in `bytes`
    uint16_t name_length;  // 1 .. 255
    uint8_t type;          // S_IFMT >> 12 of the inode it names (must agree with the inode)
    uint8_t reserved;      // zero
    uint32_t name_prefix;  // the name's first 4 bytes, big-endian, zero-padded (fast compare)
};
static_assert(sizeof(Dirent) == 16);

// One distinct content (exact duplicates share one record): 48 bytes.
struct Content {
    uint64_t offset;  // size <= inline_max: offset in `bytes`; else offset in the stream
    uint64_t size;    // >= 1
    uint8_t sha256[32];
};
static_assert(sizeof(Content) == 48);

// One extended attribute: 16 bytes. An inode's xattrs are sorted by name (byte order).
struct Xattr {
    uint32_t name_offset;   // in `bytes`; the full name, e.g. "user.comment"
    uint32_t value_offset;  // in `bytes`
    uint32_t value_length;  // 0 .. 65536
    uint16_t name_length;   // 1 .. 255
    uint16_t reserved;      // zero
};
static_assert(sizeof(Xattr) == 16);

// One extent of a content made of extents (kIncompatExtents): 64 bytes. A content's extents are
// consecutive records; the first has `count`, the number of them (the others 0), and `at`
// runs from 0 with no gap (each record's at = the previous at + length) to the content's size.
struct Extent {
    uint64_t at;       // where in the content its bytes start
    uint64_t offset;   // where in the stream of its pack they are
    uint64_t length;   // >= 1; [offset, offset + length) inside that stream
    uint32_t pack;     // 0: this pack; k >= 1: the pack of bases record k - 1
    uint32_t count;    // the first extent of a content: how many it has; else 0
    uint8_t sha256[32];  // of its bytes: the name a later pack finds it by; all zero in a
                         // content's only extent, whose name is the content's digest
};
static_assert(sizeof(Extent) == 64);

// A pack whose stream extents may lie in (kIncompatExtents): 48 bytes.
struct BaseRecord {
    uint8_t image_digest[32];  // the base's, which names it (and is checked when it is opened)
    uint32_t name_offset;      // in `bytes`: its file name when this pack was built, a hint
    uint32_t name_length;      // 1 .. 255
    uint64_t reserved;         // zero
};
static_assert(sizeof(BaseRecord) == 48);

// The blocks section (compressed packs, and packs with holes): block_count + 1 little-endian u64
// offsets, relative to data_offset, non-decreasing, the first 0 and the last data_length.
// block_count = ceil(stream_size / block_size). Block i holds stream bytes
// [i * block_size, min((i + 1) * block_size, stream_size)); its stored bytes are
// [offsets[i], offsets[i + 1]). A block whose stored length equals its stream length is stored
// raw; otherwise it is one complete frame of the header's codec (zstd frame / LZ4 block format)
// that decompresses to exactly its stream length. With kIncompatHoles a block stored in zero
// bytes is a hole (zeros); without a codec every other block is stored raw.

// Compressed metadata (kIncompatCompressedMeta). The metadata region of meta_length bytes is
// cut into metadata blocks as for the sums; block i is stored as one frame at
// [meta_offset + index[i], meta_offset + index[i + 1]), raw when its stored length equals the
// block's length, else one frame of the codec that inflates to exactly that length. After the
// frames (meta_frames_length bytes) and zero padding to 8 comes the frame index: meta_blocks + 1
// u64s, non-decreasing, index[0] = 0 and index[meta_blocks] = meta_frames_length; then the sums,
// which are of the inflated blocks. So the stored layout is
//   [meta_offset, +meta_frames_length)  frames;  [frame_index_offset(), +8 (blocks + 1))  index;
//   [sums_offset, +sums_length)  sums;  end of file.
// Section offsets stay meta_offset + their position in the inflated region, and the image
// digest covers the inflated region, so both read as for a pack whose metadata is stored raw.
// offset + length <= limit, without overflow: how every (offset, length) from the file is
// checked against what it must lie in.
inline constexpr bool within(uint64_t offset, uint64_t length, uint64_t limit) noexcept {
    return offset <= limit && length <= limit - offset;
}

inline constexpr uint64_t meta_block_count(uint64_t meta_length) noexcept {
    return meta_length / kMetaBlockSize + (meta_length % kMetaBlockSize != 0 ? 1 : 0);
}
inline constexpr uint64_t frame_index_offset(const Header& h) noexcept {
    return h.meta_offset + (h.meta_frames_length + 7) / 8 * 8;
}

// The metadata digests (kIncompatMetaDigests): meta_blocks SHA-256s right after the sums, the
// last thing in the file, so file_size = meta_digests_offset() + meta_digests_length().
inline constexpr uint64_t meta_digests_offset(const Header& h) noexcept {
    return h.sums_offset + h.sums_length;
}
inline constexpr uint64_t meta_digests_length(const Header& h) noexcept {
    return (h.incompat_features & kIncompatMetaDigests) != 0 ? 32 * (h.sums_length / 8) : 0;
}

// The numbering sections (kIncompatInodeNumbers; both present or both absent). inode_numbers:
// inode_count little-endian u64s, numbers[i] the st_ino of record i: non-zero, no two equal.
// inode_order: inode_count little-endian u32s, a permutation of the record indexes with
// numbers[order[0]] < numbers[order[1]] < ..., so numbers[order[inode_count - 1]] is the
// largest. Dirents still name records by record number; only what a reader reports changes.

// --- version 2 ----------------------------------------------------------------------------
// What changes from v1 (docs/FORMAT.md, "Version 2"): the read path in four cache lines.
// - An inode is 64 bytes, the inodes section starts the metadata region and the region starts
//   on a 64-byte boundary, so each inode is one cache line. Its `ref` locates a regular file's
//   bytes directly (no content record): the stream offset, or the offset in `bytes` when
//   size <= inline_max.
// - SHA-256 digests sit in their own section (slot 2), read by verify and nobody else.
// - Dirents keep v1's 16-byte layout with `name_prefix` replaced by `hash` (name_hash()), and a
//   directory's run is sorted by (hash, name); a directory of kBucketMinEntries or more has a
//   bucket index (DirectoryBuckets), so a lookup is one hash, one bucket, one name compare.
// - Times: mtime in the inode; atime and ctime in the times section with kCompatAllTimes,
//   else equal to mtime.
struct InodeV2 {
    uint32_t mode;  // as v1
    uint32_t uid;
    uint32_t gid;
    uint32_t nlink;
    uint64_t size;         // as v1
    uint64_t ref;          // regular: stream offset, or offset in `bytes` when size <= inline_max
                           // (0 when size is 0); else as v1
    uint32_t xattr_first;  // as v1
    uint32_t xattr_count;
    int64_t mtime_sec;
    uint32_t mtime_nsec;  // < 1,000,000,000
    uint32_t aux;         // regular with size > 0: its content's index in `digests`;
                          // directory with buckets: index of its first u32 in `buckets`; else 0
    uint64_t reserved;    // zero
};
static_assert(sizeof(InodeV2) == 64);
static_assert(offsetof(InodeV2, xattr_count) == offsetof(Inode, xattr_count),
              "the first 40 bytes are v1's");

// With kCompatAllTimes, record i of the times section is inode i's: 24 bytes.
struct InodeTimes {
    int64_t atime_sec;
    int64_t ctime_sec;
    uint32_t atime_nsec;  // < 1,000,000,000
    uint32_t ctime_nsec;
};
static_assert(sizeof(InodeTimes) == 24);

// With kCompatBlockDigests, record i of the block_digests section is stream block i's
// (block_count = ceil(stream_size / block_size) records, none for an empty stream): SHA-256 of
// the bytes the block is stored in. Those are [offsets[i], offsets[i + 1]) of the blocks
// section when it exists (a hole's digest is of no bytes), else the stream's own bytes
// [i * block_size, min((i + 1) * block_size, stream_size)) of the data region.
using BlockDigest = std::array<uint8_t, 32>;
static_assert(sizeof(BlockDigest) == 32);

// v2 dirents are v1's Dirent with `name_prefix` holding name_hash(name) instead.
inline constexpr std::size_t kDirentHashOffset = offsetof(Dirent, name_prefix);

// A directory with at least kBucketMinEntries entries has 2^bits + 1 u32s in `buckets` from
// its inode's `aux`, bits = floor(log2(entries)) - 1 (so 2 to 4 entries per bucket on
// average): start[k] is the position in its run of the first entry whose hash's top `bits`
// bits are >= k; start[0] = 0, start[2^bits] = entries. Smaller directories have none (aux 0)
// and are searched whole (at most 15 dirents, four cache lines).
inline constexpr uint64_t kBucketMinEntries = 16;
inline constexpr unsigned bucket_bits(uint64_t entries) noexcept {
    return entries < kBucketMinEntries ? 0 : static_cast<unsigned>(std::bit_width(entries)) - 2;
}

inline constexpr const char* kSectionNames[kSectionCount] = {
    "inodes",        "dirents",     "contents", "xattrs", "blocks",       "bytes",
    "inode_numbers", "inode_order", "buckets",  "times",  "block_digests", "extents", "bases"};
inline constexpr const char* kSectionNamesV2[kSectionCount] = {
    "inodes",        "dirents",     "digests", "xattrs", "blocks",       "bytes",
    "inode_numbers", "inode_order", "buckets", "times",  "block_digests", "extents", "bases"};
// Bytes per record of each section (the bytes section is a byte array), per version; v1 has
// no buckets or times (their sizes here are never used).
inline constexpr uint64_t kSectionRecordSizes[kSectionCount] = {80, 16, 48, 16, 8,  1, 8,
                                                                4,  4,  24, 32, 64, 48};
inline constexpr uint64_t kSectionRecordSizesV2[kSectionCount] = {64, 16, 32, 16, 8,  1, 8,
                                                                  4,  4,  24, 32, 64, 48};
inline const char* section_name(uint32_t version, std::size_t i) noexcept {
    return version >= 2 ? kSectionNamesV2[i] : kSectionNames[i];
}
inline uint64_t section_record_size(uint32_t version, std::size_t i) noexcept {
    return version >= 2 ? kSectionRecordSizesV2[i] : kSectionRecordSizes[i];
}

// Little-endian reads and writes of a record (the host is little-endian; checked at compile
// time so a big-endian port fails loudly instead of misreading).
static_assert(std::endian::native == std::endian::little, "PackFS v1 assumes a little-endian host");

template <class T>
    requires std::is_trivially_copyable_v<T>
T load(const std::byte* p) noexcept {
    T value;
    std::memcpy(&value, p, sizeof(T));
    return value;
}

// The big-endian prefix stored in Dirent::name_prefix.
inline uint32_t name_prefix(const char* name, std::size_t length) noexcept {
    uint32_t prefix = 0;
    for (std::size_t i = 0; i < 4; ++i) {
        prefix <<= 8;
        if (i < length) prefix |= static_cast<unsigned char>(name[i]);
    }
    return prefix;
}

}  // namespace packfs::pack
