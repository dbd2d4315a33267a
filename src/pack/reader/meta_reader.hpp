// The metadata part of a pack's reader (PackReader, reader.hpp): one bounds-checked accessor to
// the metadata region that checks each metadata block against its sum the first time any byte
// of it is used, and the records read through it: inodes, where contents are, symlink targets,
// dirents (lookup and listing), xattrs and inode numbers.
//
// Trust protocol. PackReader::open checks the header (validate_header, header_check.hpp); then
// MetaReader::open checks the sums array, and the frame index when the metadata is compressed;
// nothing per entry, so opening is O(1) in the number of files. After that, no number from the
// file is used before it is checked: meta() bounds-checks every (offset, length) against the
// metadata region and checks the metadata blocks it covers; each record loader checks the
// record's fields (an inode's type bits, times, ranges into the other sections; a dirent's ino,
// name range and type) before returning it. A failed block stays failed: every later use
// answers EUCLEAN again.
//
// Concurrency. Immutable after open() except for the checked-block bitmaps (atomics: a block
// may be hashed twice by two racing threads, harmlessly) and, with compressed metadata, the
// frames it inflates (MetaFrames, striped locks). Safe to share between threads.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pack/format/digest.hpp"
#include "pack/format/format.hpp"
#include "pack/format/name_hash.hpp"
#include "pack/reader/image.hpp"
#include "pack/reader/meta_frames.hpp"
#include "pack/test_hooks.hpp"
#include "packfs/error.hpp"
#include "packfs/types.hpp"

namespace packfs::pack {

// The operation and virtual path an access is made for, to name them in its errors. `op` must
// be a string literal (Error keeps it by view). `here_only`: metadata fetched on demand is taken
// only from what is here already, never waiting on the server (meta_frames.hpp, HereOnly).
struct Ctx {
    std::string_view op;
    std::string_view path;
    HereOnly* here_only = nullptr;
};

// The fields of an inode record that both versions lay out alike (its first 40 bytes): all a
// lookup, a read or a listing needs. The times are read again from the record by stat_of(), so
// a node stays one cache line and a walk copies 64 bytes per step, not 104.
struct InodeCore {
    uint32_t mode, uid, gid, nlink;
    uint64_t size, ref;
    uint32_t xattr_first, xattr_count;
};
static_assert(sizeof(InodeCore) == 40 && offsetof(Inode, xattr_count) == 36);

// One inode record whose fields were checked (its times too, though they are not kept here).
// No default member initialisers: a lookup makes several of these and must not pay for zeroing
// them each time.
struct InodeView {
    uint64_t ino;     // record number (index + 1): what dirents name, what inode() takes
    uint64_t number;  // the inode number reported (st_ino): `ino`, or the stored one (non-zero)
    FileType type;
    uint32_t aux;  // v2: InodeV2::aux (a content's digest index, a directory's buckets); v1: 0
    InodeCore rec;
};
static_assert(sizeof(InodeView) == 64);

// Where a regular file's bytes are: nowhere (empty), inline in `bytes` (a checked pointer
// into the metadata), or in the data stream at `offset`.
struct ContentRef {
    // extents: a run of Extent records (kIncompatExtents), each a range of this pack's stream
    // or a base's; base: whole in the stream of base `pack` (kBaseLocator).
    enum class Where : uint8_t { empty, inline_bytes, stream, extents, base };
    Where where = Where::empty;
    uint64_t size = 0;
    // stream offset (Where::stream, and base: in that base's); first extent's index (extents)
    uint64_t offset = 0;
    const std::byte* inline_data = nullptr;
    uint64_t extent_count = 0;  // Where::extents: how many (>= 1, all inside the section)
    uint32_t pack = 0;          // Where::base: the base, 1 ..= base_count()
};

// A base pack as a pack with extents names it (BaseRecord).
struct BaseRef {
    Sha256Digest image_digest{};
    std::string_view name;  // its file name when the pack was built (a hint where to find it)
};

class MetaReader {
public:
    MetaReader() = default;
    MetaReader(const MetaReader&) = delete;
    MetaReader& operator=(const MetaReader&) = delete;

    // Takes the metadata of `image`, whose header `h` passed validate_header() and whose
    // metadata image.load() made reachable: the sections' places, the sums array checked against
    // its checksum, with compressed metadata the frame index checked too. `name` names the pack
    // in errors; hooks.name_hash replaces the v2 name hash.
    Result<void> open(const Header& h, PackImage& image, std::string_view name,
                      const OpenHooks& hooks);

    const Header& header() const noexcept { return header_; }
    uint32_t version() const noexcept { return version_; }
    // Stored as compressed frames (kIncompatCompressedMeta).
    bool framed() const noexcept { return frames_ != nullptr; }
    // A SHA-256 per metadata block follows the sums (kIncompatMetaDigests).
    bool has_meta_digests() const noexcept { return !meta_digests_.empty(); }
    // atime and ctime stored: always in v1, in v2 with kCompatAllTimes.
    bool stores_all_times() const noexcept { return version_ == 1 || all_times_; }
    uint32_t inline_max() const noexcept { return inline_max_; }

    // --- checked access to the metadata ------------------------------------------------
    // [rel, rel + len) of the metadata region (rel counted from meta_offset), after checking
    // that it lies inside the region and that every metadata block it touches matches its sum.
    Result<const std::byte*> meta(uint64_t rel, uint64_t len, const Ctx& ctx) const {
        if (const std::byte* at = checked(rel, len)) [[likely]]
            return at;
        return meta_slow(rel, len, ctx);
    }
    // The same without a check: the address when the range is inside the region and each of
    // its blocks was checked already (the hot path: a bit test per block), else nullptr.
    const std::byte* checked(uint64_t rel, uint64_t len) const noexcept {
        if (rel > meta_length_ || len > meta_length_ - rel) [[unlikely]]
            return nullptr;
        if (len != 0) {
            const uint64_t last = (rel + len - 1) / kMetaBlockSize;
            for (uint64_t b = rel / kMetaBlockSize; b <= last; ++b) {
                if (!((checked_[b / 64].load(std::memory_order_acquire) >> (b % 64)) & 1))
                    return nullptr;
            }
        }
        return meta_ + rel;
    }
    // EUCLEAN for the metadata at `rel`: its file offset, what was expected and found.
    std::unexpected<Error> corrupt(const Ctx& ctx, uint64_t rel, uint64_t expected, uint64_t actual,
                                   std::string_view what) const;

    // --- records ---------------------------------------------------------------------------
    // Inode record `ino` (1-based record number), its fields checked (meta_nodes.cpp).
    Result<InodeView> inode(uint64_t ino, const Ctx& ctx) const;
    // The root's record, checked to be a directory (where every walk starts).
    Result<InodeView> root(const Ctx& ctx) const;
    // Where the content of a regular file is.
    Result<ContentRef> content(const InodeView& file, const Ctx& ctx) const;
    // The index of a regular file's content (v1: its content record, v2: its digest), shared by
    // every file with those bytes. The file must have some (size > 0). For a content a base
    // holds (kBaseLocator), the index of its digest in that base.
    uint64_t content_index(const InodeView& file) const noexcept {
        return version_ >= 2 ? file.aux : file.rec.ref - 1;
    }
    // Extent `index` of the extents section (kIncompatExtents), checked: inside the section,
    // length >= 1, its pack 0 or a base this pack names. Its range is checked against that
    // pack's stream by the reader of it (DataReader), its `at` against the run by the caller.
    Result<Extent> extent(uint64_t index, const Ctx& ctx) const;
    uint64_t extent_count() const noexcept { return extent_count_; }
    // Where extent `index` is in the metadata region (for errors that name it).
    uint64_t extent_rel(uint64_t index) const noexcept {
        return extents_rel_ + index * sizeof(Extent);
    }
    // The bases (kIncompatExtents): how many, and record `index` (its name checked).
    uint64_t base_count() const noexcept { return base_count_; }
    Result<BaseRef> base(uint64_t index, const Ctx& ctx) const;
    // The SHA-256 of content `index` (content_index()): v2's digests record, v1's content's.
    Result<Sha256Digest> content_digest(uint64_t index, const Ctx& ctx) const;
    // A symlink's target (inside `bytes`, checked).
    Result<std::string_view> symlink_target(const InodeView& link, const Ctx& ctx) const;
    // Every field of a node's Stat, st_ino its inode number, st_blocks its size in 512-byte
    // units (PackReader::stat_of counts a file's holes out).
    Stat stat_of(const InodeView& node) const noexcept;

    // --- inode numbers (what st_ino reports) -------------------------------------------------
    // A pack numbers its inodes by position (record i is inode i + 1) or, with the
    // inode-numbers feature, carries its source's numbers (docs/FORMAT.md). Either way:
    bool keeps_inode_numbers() const noexcept { return numbered_; }
    // The inode whose number is `number`, nullopt when none is. With stored numbers a binary
    // search of inode_order; every entry it touches is checked (index in range, number
    // non-zero, inside the bounds the search has seen), so a damaged order answers EUCLEAN
    // or misses, never names a wrong inode.
    Result<std::optional<InodeView>> by_inode_number(uint64_t number, const Ctx& ctx) const;
    // The largest inode number: inode_count, or the number of inode_order's last entry
    // (checked: in range, and at least inode_count; verify proves the whole order sorted).
    // A Result because that entry's metadata block may not have been checked yet.
    Result<uint64_t> max_inode_number(const Ctx& ctx) const;

    // --- names (meta_nodes.cpp) ------------------------------------------------------------
    // The entry `name` (one component) of directory `dir`, nullopt when it has none: a
    // binary search of its dirents, then the inode checked against the dirent. "." and ".."
    // are never entries (a walker handles them); ENOTDIR when `dir` is not a directory,
    // ENAMETOOLONG past 255 bytes.
    Result<std::optional<InodeView>> lookup(const InodeView& dir, std::string_view name,
                                            const Ctx& ctx) const;
    // The same for a plain name (1 to 255 bytes, no '/' or NUL, not "." or "..": what the
    // walker's fast try hands over), from bytes already checked and without building a Result:
    // `found` (into `out`), `absent`, or `unsure` for anything else (an error to report, a block
    // not checked yet), which lookup() answers. The hot path of every walk.
    enum class Probe : uint8_t { found, absent, unsure };
    Probe probe(const InodeView& dir, std::string_view name, InodeView& out) const noexcept;
    // The entries of a directory, in pack order (v1: by name; v2: by name hash, then name),
    // each one checked; DirEntry ino is the inode number, not the record number. With
    // `regular_files`, v2 also appends the record numbers of its regular files, in order.
    Result<std::vector<DirEntry>> list(const InodeView& dir, const Ctx& ctx,
                                       std::vector<uint64_t>* regular_files = nullptr) const;
    // The same with each entry's checked inode (for a walker that goes on into them).
    Result<std::vector<std::pair<std::string, InodeView>>> list_nodes(const InodeView& dir,
                                                                      const Ctx& ctx) const;

    // --- xattrs ----------------------------------------------------------------------------
    // A value by name (false when absent) and all names.
    Result<bool> find_xattr(const InodeView& node, std::string_view name, std::string& value,
                            const Ctx& ctx) const;
    Result<std::vector<std::string>> xattr_names(const InodeView& node, const Ctx& ctx) const;

    // --- the region as a whole (a pack from elsewhere, src/remote/) --------------------------
    // The image digest recomputed from the header and every metadata block (each checked
    // against its sum first): O(metadata); with metadata digests, from the header and their
    // table: O(table), no block touched. Equal to header().image_digest for a sound pack.
    Result<Sha256Digest> image_digest(const Ctx& ctx) const;
    // With metadata digests (kIncompatMetaDigests), whose table image_digest() covers: every
    // metadata block against its entry (EUCLEAN naming the first that differs). O(metadata);
    // nothing to check without them (image_digest() then covered the region itself).
    Result<void> check_metadata_digests(const Ctx& ctx) const;

private:
    friend class Verifier;  // reads the raw region and sets the checked-block bitmaps

    // open()'s parts: the sums array checked (and where the metadata digests are); the frame
    // index of compressed metadata checked, and the frames set up.
    Result<void> open_sums(const PackImage& image, std::string_view name);
    Result<void> open_frames(PackImage& image, std::string_view name);

    Result<const std::byte*> meta_slow(uint64_t rel, uint64_t len, const Ctx& ctx) const;
    Result<void> check_block(uint64_t block, const Ctx& ctx) const;
    bool block_sum_matches(uint64_t block, uint64_t& expected, uint64_t& actual) const noexcept;
    std::unexpected<Error> out_of_region(uint64_t rel, uint64_t len, const Ctx& ctx) const;
    Result<std::string_view> bytes(uint64_t offset, uint64_t length, uint64_t field_rel,
                                   std::string_view what, const Ctx& ctx) const;

    enum class InodeFault : uint8_t { none, mode, nsec, xattrs, reference };
    // The field checks of an inode record (sets `type`); one place for the fast and slow paths.
    InodeFault inode_fault(const InodeCore& n, uint32_t max_nsec, uint32_t aux,
                           FileType& type) const noexcept;
    // Record `index`'s bytes decoded into `out` (rec and aux); returns the largest of its times'
    // nanoseconds (v2: atime and ctime from `times`, null: equal to its mtime), for the check.
    uint32_t decode_inode(const std::byte* at, const std::byte* times,
                          InodeView& out) const noexcept;
    // A checked node's atime, mtime and ctime, read again from its records.
    void times_of(const InodeView& node, Stat& st) const noexcept;
    // Where record `index` is in the metadata region, and its times record (v2, all times).
    uint64_t inode_rel(uint64_t index) const noexcept { return inodes_rel_ + index * inode_size_; }
    uint64_t times_rel(uint64_t index) const noexcept {
        return times_rel_ + index * sizeof(InodeTimes);
    }
    // A v2 dirent's key for `name` (name_hash(), or the hook's).
    uint32_t hash_of(std::string_view name) const noexcept {
        if (name_hash_hook_ != nullptr) [[unlikely]]
            return name_hash_hook_(name);
        return name_hash(name);
    }
    // The hot path of inode() (meta_nodes.cpp, with the lookups that use it): true when the
    // record's block was checked and its fields are fine.
    bool try_inode(uint64_t ino, InodeView& out) const noexcept;
    Result<InodeView> inode_slow(uint64_t ino, const Ctx& ctx) const;

    // The stored number of record `index` (0-based) through the hot path: 0 when its block
    // is not checked yet (or it is 0, which no record may hold).
    uint64_t try_number(uint64_t index) const noexcept;
    Result<uint64_t> stored_number(uint64_t index, const Ctx& ctx) const;
    // inode_order[position]: the record index there (checked in range) and its number.
    struct OrderEntry {
        uint64_t index;
        uint64_t number;
    };
    Result<OrderEntry> order_entry(uint64_t position, const Ctx& ctx) const;

    // Calls each(record, rel, name) for the xattr records of `node` in order, each name checked
    // (its length, its bytes in range), until `each` answers true (found) or an error, its own
    // or one it returns. The one scan behind find_xattr() and xattr_names().
    template <class Each>
    Result<bool> each_xattr(const InodeView& node, const Ctx& ctx, Each&& each) const;

    // Names (meta_nodes.cpp).
    Result<std::vector<DirEntry>> list_entries(const InodeView& dir, const Ctx& ctx,
                                               std::vector<uint64_t>* regular_files) const;
    // Calls each(rec, rel, name) for the dirents of `dir` in order, each name checked (a file
    // name, its bytes in range); stops at the first error, its own or one `each` returns.
    template <class Each>
    Result<void> each_dirent(const InodeView& dir, const Ctx& ctx, Each&& each) const;
    const char* try_name(const std::byte* at, uint16_t& length) const noexcept;
    // The dirent's name: read in place when its block was checked (try_name), else checked now.
    Result<std::string_view> name_at(const std::byte* at, uint64_t rel, const Ctx& ctx) const;
    // What try_find() could not read from checked bytes: a range whose blocks are not checked
    // yet, or a bucket or dirent name field out of range (at `rel`).
    struct Unsure {
        enum class What : uint8_t { nothing, block, bucket, name };
        What what = What::nothing;
        uint64_t rel = 0, len = 0;
    };
    const std::byte* try_find(const InodeView& dir, std::string_view name,
                              Unsure& unsure) const noexcept;
    // The entry `name` of directory `dir`: its address in the metadata, or nullptr if absent.
    Result<const std::byte*> find(const InodeView& dir, std::string_view name,
                                  const Ctx& ctx) const;
    // A dirent's inode number (in range) and type nibble, checked: its type.
    Result<FileType> dirent_type(const Dirent& d, uint64_t rel, const Ctx& ctx) const;
    // The inode a dirent names, checked against the dirent's type.
    Result<InodeView> child(const Dirent& d, uint64_t rel, const Ctx& ctx) const;

    Header header_{};
    uint32_t version_ = 0;
    uint64_t inode_size_ = sizeof(Inode);  // 80 (v1) or 64 (v2)
    bool all_times_ = false;               // v2 with kCompatAllTimes: the times section
    uint64_t buckets_rel_ = 0, bucket_count_ = 0;
    uint64_t times_rel_ = 0;
    uint32_t (*name_hash_hook_)(std::string_view) = nullptr;  // OpenHooks::name_hash
    // The metadata region: the mapping or buffer at file offset meta_offset, or with compressed
    // metadata frames_'s inflated region.
    const std::byte* meta_ = nullptr;
    const std::byte* sums_ = nullptr;          // the metadata block sums (of the inflated blocks)
    std::span<const std::byte> meta_digests_;  // kIncompatMetaDigests: SHA-256 per metadata block
    std::unique_ptr<MetaFrames> frames_;       // compressed metadata only
    uint64_t meta_offset_ = 0;
    uint64_t meta_length_ = 0;
    uint64_t inode_count_ = 0;
    uint64_t inodes_rel_ = 0;
    uint64_t dirents_rel_ = 0, dirent_count_ = 0;
    uint64_t contents_rel_ = 0, content_count_ = 0;  // v2: the digests section and its count
    uint64_t xattrs_rel_ = 0, xattr_count_ = 0;
    uint64_t bytes_rel_ = 0, bytes_length_ = 0;
    bool numbered_ = false;  // kIncompatInodeNumbers: the two sections below exist
    uint64_t numbers_rel_ = 0, order_rel_ = 0;
    uint64_t stream_size_ = 0;  // what a file's range in the stream is checked against
    bool extents_ = false;                         // kIncompatExtents
    uint64_t extents_rel_ = 0, extent_count_ = 0;
    uint64_t bases_rel_ = 0, base_count_ = 0;
    uint32_t inline_max_ = 0;
    uint64_t block_sum_count_ = 0;
    std::unique_ptr<std::atomic<uint64_t>[]> checked_;  // bit b: block b matched its sum
    std::unique_ptr<std::atomic<uint64_t>[]> failed_;   // bit b: block b did not
};

}  // namespace packfs::pack
