// Validated access to one pack (format.hpp): the header checked on open, then every record
// read through one bounds-checked accessor that checks each metadata block against its sum the
// first time any byte of it is used.
//
// Trust protocol. open() checks the header (magic, version, features, checksum, every field
// and section range against the file) and the sums array; nothing per entry, so opening is
// O(1) in the number of files. After that, no number from the file is used before it is
// checked: meta() bounds-checks every (offset, length) against the metadata region and checks
// the metadata blocks it covers; each record loader checks the record's fields (an inode's
// type bits, times, ranges into the other sections; a dirent's ino, name range and type) before
// returning it. A failed block stays failed: every later use answers EUCLEAN again.
//
// Concurrency. A PackReader is immutable after open() except for the checked-block bitmaps
// (atomics: a block may be hashed twice by two racing threads, harmlessly) and the block cache
// (sharded mutexes). It is safe to share between threads.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pack/allocated_cache.hpp"
#include "pack/block_cache.hpp"
#include "pack/digest.hpp"
#include "pack/format.hpp"
#include "pack/image.hpp"
#include "pack/meta_frames.hpp"
#include "pack/name_hash.hpp"
#include "pack/test_hooks.hpp"
#include "pack/walk_ahead.hpp"
#include "packfs/error.hpp"
#include "packfs/pack.hpp"
#include "packfs/path.hpp"
#include "packfs/types.hpp"

namespace packfs::pack {

// The operation and virtual path an access is made for, to name them in its errors. `op` must
// be a string literal (Error keeps it by view).
struct Ctx {
    std::string_view op;
    std::string_view path;
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
    enum class Where : uint8_t { empty, inline_bytes, stream };
    Where where = Where::empty;
    uint64_t size = 0;
    uint64_t offset = 0;  // stream offset (Where::stream)
    const std::byte* inline_data = nullptr;
};

class PackReader {
public:
    static Result<std::unique_ptr<PackReader>> open(std::string_view host_path,
                                                    const PackOpenOptions& options,
                                                    const OpenHooks& hooks = {});
    // The same over an image already open (a remote pack's); `name` names it in errors.
    static Result<std::unique_ptr<PackReader>> open(std::unique_ptr<PackImage> image,
                                                    std::string_view name,
                                                    const PackOpenOptions& options,
                                                    const OpenHooks& hooks = {});

    const Header& header() const noexcept { return header_; }
    uint32_t version() const noexcept { return version_; }
    const PackImage& image() const noexcept { return *image_; }
    PackInfo info() const;

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

    // Inode record `ino` (1-based record number), its fields checked.
    Result<InodeView> inode(uint64_t ino, const Ctx& ctx) const;
    // The root's record, checked to be a directory (where every walk starts).
    Result<InodeView> root(const Ctx& ctx) const;

    // --- inode numbers (what st_ino reports) -------------------------------------------------
    // A pack numbers its inodes by position (record i is inode i + 1) or, with the
    // inode-numbers feature, carries its source's numbers (docs/FORMAT.md). Either way:
    bool keeps_inode_numbers() const noexcept { return numbered_; }
    // The number st_ino and readdir report for `node`.
    uint64_t inode_number(const InodeView& node) const noexcept { return node.number; }
    // The inode whose number is `number`, nullopt when none is. With stored numbers a binary
    // search of inode_order; every entry it touches is checked (index in range, number
    // non-zero, inside the bounds the search has seen), so a damaged order answers EUCLEAN
    // or misses, never names a wrong inode.
    Result<std::optional<InodeView>> by_inode_number(uint64_t number, const Ctx& ctx) const;
    // The largest inode number: inode_count, or the number of inode_order's last entry
    // (checked: in range, and at least inode_count; verify proves the whole order sorted).
    // A Result because that entry's metadata block may not have been checked yet.
    Result<uint64_t> max_inode_number(const Ctx& ctx) const;
    // Where the content of a regular file is.
    Result<ContentRef> content(const InodeView& file, const Ctx& ctx) const;
    // A symlink's target (inside `bytes`, checked).
    Result<std::string_view> symlink_target(const InodeView& link, const Ctx& ctx) const;

    // --- names ----------------------------------------------------------------------------
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
    // each one checked; DirEntry ino is the inode number (inode_number()), not the record number.
    Result<std::vector<DirEntry>> list(const InodeView& dir, const Ctx& ctx) const;
    // The same with each entry's checked inode (for a walker that goes on into them).
    Result<std::vector<std::pair<std::string, InodeView>>> list_nodes(const InodeView& dir,
                                                                      const Ctx& ctx) const;
    // The xattrs of an inode: a value by name (nullopt-like false when absent) and all names.
    Result<bool> find_xattr(const InodeView& node, std::string_view name, std::string& value,
                            const Ctx& ctx) const;
    Result<std::vector<std::string>> xattr_names(const InodeView& node, const Ctx& ctx) const;

    Stat stat_of(const InodeView& node) const noexcept;  // st_ino: inode_number(node)

    // --- contents -------------------------------------------------------------------------
    // Copies up to out.size() bytes of `content` from `offset`; 0 at or past its end.
    Result<std::size_t> read(const ContentRef& content, uint64_t offset, std::span<std::byte> out,
                             const Ctx& ctx) const;
    // The bytes [offset, offset + length) of `content` (clipped): a span into the mapping or
    // the metadata when they are stored there raw, else copied into `scratch`.
    Result<std::span<const std::byte>> view(const ContentRef& content, uint64_t offset,
                                            std::size_t length, std::string& scratch,
                                            const Ctx& ctx) const;

    // Where bytes [offset, offset + length) of `content` (clipped) lie in the pack file when
    // they are stored there raw (an uncompressed pack's stream): the file offset and the
    // count, for a caller that reads them with pread or splice from image().fd(). nullopt for
    // inline, compressed or empty ranges, and for a remote pack (use view()).
    struct FileExtent {
        uint64_t offset;
        std::size_t length;
    };
    std::optional<FileExtent> file_extent(const ContentRef& content, uint64_t offset,
                                          std::size_t length) const {
        if (content.where != ContentRef::Where::stream || codec_ != Codec::none ||
            offset >= content.size || length == 0 || image_->remote() != nullptr)
            return std::nullopt;
        const auto n = static_cast<std::size_t>(std::min<uint64_t>(length, content.size - offset));
        auto at = raw_offset(content.offset + offset, n);
        if (!at) return std::nullopt;
        return FileExtent{*at, n};
    }

    // The first offset at or after `offset` where `content` has data (`data`), or a hole
    // (a hole block of the stream, or the end): lseek's SEEK_DATA / SEEK_HOLE. ENXIO at or past
    // the end. Without the holes feature the data is everywhere.
    Result<uint64_t> seek(const ContentRef& content, uint64_t offset, bool data,
                          const Ctx& ctx) const;

    // A remote pack: file `file` is being opened. When opens follow the order directories were
    // listed in (a walk), the files listed next are prefetched (walk_ahead.hpp).
    void note_open(const InodeView& file) const noexcept;

    // --- a pack from elsewhere (src/remote/) --------------------------------------------------
    // The image digest recomputed from the header and every metadata block (each checked
    // against its sum first): O(metadata); with metadata digests, from the header and their
    // table: O(table), no block touched. Equal to header().image_digest for a sound pack.
    Result<Sha256Digest> image_digest(const Ctx& ctx) const;
    // With metadata digests (kIncompatMetaDigests), whose table image_digest() covers: every
    // metadata block against its entry (EUCLEAN naming the first that differs). O(metadata);
    // nothing to check without them (image_digest() then covered the region itself).
    Result<void> check_metadata_digests(const Ctx& ctx) const;
    // Every stream block's stored place and digest, in order (has_block_digests() only).
    Result<std::vector<StoredBlockRef>> stored_blocks(const Ctx& ctx) const;

    // --- stored blocks, for a reader that fetches them one by one (a remote pack) ----------
    // Format 2 with the block-digests feature: every stream block's stored bytes have a SHA-256.
    bool has_block_digests() const noexcept { return block_digests_; }
    // ceil(stream_size / block_size): what block indexes below run to.
    uint64_t stream_block_count() const noexcept {
        return stream_size_ / block_size_ + (stream_size_ % block_size_ != 0 ? 1 : 0);
    }
    // Where stream block `index` is stored in the file: [offset, offset + length), length 0
    // for a hole. From the blocks section when there is one, else the raw stream's own place.
    Result<FileExtent> block_extent(uint64_t index, const Ctx& ctx) const;
    // The SHA-256 of block `index`'s stored bytes (has_block_digests() only).
    Result<BlockDigest> block_digest(uint64_t index, const Ctx& ctx) const;

    // Everything: sections, metadata blocks, compressed blocks, contents, block digests, image
    // digest (verifier.hpp).
    VerifyReport verify(const std::function<void(uint64_t, uint64_t)>& progress) const;

private:
    friend class Verifier;  // reads the raw metadata and sets the checked-block bitmaps
    PackReader() = default;
    Result<const std::byte*> meta_slow(uint64_t rel, uint64_t len, const Ctx& ctx) const;
    Result<void> check_block(uint64_t block, const Ctx& ctx) const;
    bool block_sum_matches(uint64_t block, uint64_t& expected, uint64_t& actual) const noexcept;
    std::unexpected<Error> out_of_region(uint64_t rel, uint64_t len, const Ctx& ctx) const;
    std::unexpected<Error> corrupt(const Ctx& ctx, uint64_t rel, uint64_t expected, uint64_t actual,
                                   std::string_view what) const;

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
    // A v2 dirent's key for `name` (name_hash(), or the test hook's).
    uint32_t hash_of(std::string_view name) const noexcept {
        if (name_hash_hook_ != nullptr) [[unlikely]]
            return name_hash_hook_(name);
        return name_hash(name);
    }
    Result<std::vector<DirEntry>> list_entries(const InodeView& dir, const Ctx& ctx) const;
    // Calls each(record, rel, name) for the xattr records of `node` in order, each name checked
    // (its length, its bytes in range), until `each` answers true (found) or an error, its own
    // or one it returns. The one scan behind find_xattr() and xattr_names().
    template <class Each>
    Result<bool> each_xattr(const InodeView& node, const Ctx& ctx, Each&& each) const;
    // Calls each(rec, rel, name) for the dirents of `dir` in order, each name checked (a file
    // name, its bytes in range); stops at the first error, its own or one `each` returns.
    template <class Each>
    Result<void> each_dirent(const InodeView& dir, const Ctx& ctx, Each&& each) const;
    // The hot path of inode(): true when the record's block was checked and its fields are fine.
    bool try_inode(uint64_t ino, InodeView& out) const noexcept;
    Result<InodeView> inode_slow(uint64_t ino, const Ctx& ctx) const;
    const char* try_name(const std::byte* at, uint16_t& length) const noexcept;

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

    // A dirent at index `index`, with its name (checked, inside `bytes`).
    struct DirentView {
        Dirent rec;
        std::string_view name;
    };
    Result<DirentView> dirent(const std::byte* at, uint64_t rel, const Ctx& ctx) const;
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
    // The inode a dirent names, checked against the dirent's type.
    // A dirent's inode number (in range) and type nibble, checked: its type.
    Result<FileType> dirent_type(const Dirent& d, uint64_t rel, const Ctx& ctx) const;
    Result<InodeView> child(const Dirent& d, uint64_t rel, const Ctx& ctx) const;
    Result<std::string_view> bytes(uint64_t offset, uint64_t length, uint64_t field_rel,
                                   std::string_view what, const Ctx& ctx) const;

    // A remote pack: tells it where `content`'s stored bytes end (RemoteBytes::expect).
    void expect_content(const ContentRef& content) const noexcept;
    // Where `content`'s stored bytes lie in the file, from its first block to its last; nullopt
    // when it has none there (inline, empty) or starts in a hole, or when finding out needs
    // metadata it cannot have (under MetaFrames::LocalOnly, metadata not here).
    std::optional<RemoteBytes::Range> stored_range(const ContentRef& content) const noexcept;
    // The data stream.
    Result<void> read_stream(uint64_t offset, std::span<std::byte> out, const Ctx& ctx) const;
    struct StoredBlock {
        uint64_t stored_offset = 0;  // absolute file offset of its stored bytes
        uint64_t stored_length = 0;
        uint64_t stream_length = 0;
        bool hole() const noexcept { return stored_length == 0; }  // only with kIncompatHoles
        bool raw() const noexcept { return stored_length == stream_length; }
    };
    // st_blocks of a file that may lie in hole blocks: 512-byte units of its bytes outside them.
    uint64_t allocated_blocks(const InodeView& file) const noexcept;
    // A raw pack with holes: the bytes of stream range [offset, end) outside hole blocks, from
    // the blocks section's entries for its first and last block alone.
    std::optional<uint64_t> raw_data_bytes(uint64_t offset, uint64_t end) const noexcept;
    // The file offset of stream bytes [offset, offset + length) when they are stored raw and
    // contiguous (an uncompressed stream, or raw blocks without a hole between); else nullopt.
    std::optional<uint64_t> raw_offset(uint64_t offset, uint64_t length) const;
    Result<StoredBlock> stored_block(uint64_t index, const Ctx& ctx) const;
    // Decompresses block `index` from what is stored (no cache), into `out` (stream_length).
    Result<void> decompress(uint64_t index, const StoredBlock& where, std::span<std::byte> out,
                            const Ctx& ctx) const;
    Result<CachedBlock> cached_block(uint64_t index, const StoredBlock& where,
                                     const Ctx& ctx) const;

    Header header_{};
    uint32_t version_ = 0;
    uint64_t inode_size_ = sizeof(Inode);  // 80 (v1) or 64 (v2)
    bool all_times_ = false;               // v2 with kCompatAllTimes: the times section
    uint64_t buckets_rel_ = 0, bucket_count_ = 0;
    uint64_t times_rel_ = 0;
    uint32_t (*name_hash_hook_)(std::string_view) = nullptr;  // OpenHooks::name_hash
    std::unique_ptr<PackImage> image_;
    // The metadata region: the mapping or buffer at file offset meta_offset, or with compressed
    // metadata frames_'s inflated region.
    const std::byte* meta_ = nullptr;
    const std::byte* sums_ = nullptr;     // the metadata block sums (of the inflated blocks)
    std::span<const std::byte> meta_digests_;  // kIncompatMetaDigests: SHA-256 per metadata block
    std::unique_ptr<MetaFrames> frames_;  // compressed metadata only
    uint64_t meta_offset_ = 0;
    uint64_t meta_length_ = 0;
    uint64_t inode_count_ = 0;
    uint64_t inodes_rel_ = 0;
    uint64_t dirents_rel_ = 0, dirent_count_ = 0;
    uint64_t contents_rel_ = 0, content_count_ = 0;  // v2: the digests section and its count
    uint64_t xattrs_rel_ = 0, xattr_count_ = 0;
    uint64_t blocks_rel_ = 0, block_count_ = 0;
    uint64_t bytes_rel_ = 0, bytes_length_ = 0;
    bool numbered_ = false;  // kIncompatInodeNumbers: the two sections below exist
    uint64_t numbers_rel_ = 0, order_rel_ = 0;
    uint64_t stream_size_ = 0;
    uint64_t data_offset_ = 0, data_length_ = 0;
    uint32_t block_size_ = 0;
    uint32_t inline_max_ = 0;
    Codec codec_ = Codec::none;
    bool holes_ = false;  // kIncompatHoles: the blocks section exists whatever the codec
    bool block_digests_ = false;  // kCompatBlockDigests: the block_digests section exists
    uint64_t block_digests_rel_ = 0;
    uint64_t block_sum_count_ = 0;
    std::unique_ptr<std::atomic<uint64_t>[]> checked_;  // bit b: block b matched its sum
    std::unique_ptr<std::atomic<uint64_t>[]> failed_;   // bit b: block b did not
    std::unique_ptr<BlockCache> cache_;
    std::unique_ptr<AllocatedCache> allocated_;  // compressed with holes: st_blocks walked once
    std::unique_ptr<WalkAhead> walk_;  // a remote v2 pack's: listings and opens
};

// The read-only Backend over an open reader (pack_backend.cpp): what open_pack returns, and
// what a remote pack's open (src/remote/) returns over its own reader.
std::shared_ptr<PackBackend> backend_over(std::unique_ptr<PackReader> reader);

}  // namespace packfs::pack
