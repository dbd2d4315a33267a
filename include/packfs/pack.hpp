// Packs (DESIGN §8): one immutable file holding a whole directory tree, written once by
// write_pack() and read through a read-only Backend over a memory mapping (open_pack()).
// The format is specified byte by byte in docs/FORMAT.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "packfs/backend.hpp"
#include "packfs/error.hpp"
#include "packfs/exclude.hpp"
#include "packfs/export.hpp"

namespace packfs {

enum class Compression : uint8_t { none, zstd, lz4 };

// Where a build is, for progress displays. Called from the building thread only.
struct BuildProgress {
    // hash: files hashed, deduplicated and written (the three overlap); write: no longer
    // reported (kept so that code naming it still builds).
    enum class Phase : uint8_t { scan, hash, write, finish };
    Phase phase = Phase::scan;
    uint64_t done = 0;   // entries scanned / files hashed and written so far
    uint64_t total = 0;  // 0 while unknown (scan)
};

// Which times a pack records (DESIGN §8). `mtime`: the modification time only, with its
// nanoseconds, readers seeing atime = ctime = mtime; what a copy of a tree preserves, so the
// same tree packs to the same bytes from any copy and after any read (the default). `all`:
// atime and ctime too, as the source has them (a volume's compaction, which must not change
// what stat reports).
enum class PackTimes : uint8_t { mtime, all };

struct PackWriteOptions {
    // The pack format version (docs/FORMAT.md): 2, a lookup in one hash probe and the read path
    // in four cache lines; or 1, for readers that predate version 2.
    uint32_t format = 2;
    Compression compression = Compression::none;
    int level = 0;                      // codec level; 0 = the codec's default
    // Compression block: a power of two, 4 KiB .. 16 MiB. 64 KiB by default: a small file read
    // at random inflates half of what 128 KiB blocks cost it, for a pack ~2% larger
    // (docs/BENCH.md, "Compressed packs through a mount").
    uint32_t block_size = 64 * 1024;
    unsigned jobs = 0;                  // worker threads for hashing and compression; 0 = cores
    uint32_t inline_max = 64;           // contents up to this size are stored in the metadata
    bool dedup = true;                  // store exact-duplicate contents once
    // Format 2 with compression: store the metadata compressed too, one frame per 16 KiB block
    // inflated on first use (docs/FORMAT.md, "Compressed metadata"). False keeps it raw: a
    // larger pack whose first lookups need no inflating.
    bool compress_metadata = true;
    // Store each inode's st_ino from the source (a hard link's shared one) and report it
    // instead of the record position, as a volume's compaction needs (docs/FORMAT.md, the
    // inode-numbers feature). The build fails with EINVAL, naming the path, when an st_ino is 0
    // or two different inodes of the source report the same one.
    bool keep_inode_numbers = false;
    // Where contents go in the data stream. `walk` (the default): in the order a depth-first
    // walk of the finished pack meets them (each directory in its listing order, by name hash),
    // which is the order find, tar and cp -r read files in; their reads then stream the pack
    // front to back, which a cold page cache and a remote pack's readahead (docs/REMOTE.md)
    // both reward. `inodes`: in inode order (breadth-first, each directory's entries by name).
    // Format 2 only: a format 1 pack is laid out in inode order whatever this says.
    enum class Layout : uint8_t { inodes, walk };
    Layout layout = Layout::walk;
    // Format 2: store a SHA-256 of each stored block (docs/FORMAT.md, "Block digests"), so a
    // reader that fetches blocks one at a time (a remote pack) can check each before using it.
    // 32 bytes of metadata per block, and one more SHA-256 pass over the data while building.
    bool block_digests = true;
    // Format 2, with block_digests: store a SHA-256 of each 16 KiB metadata block too, which the
    // image digest then covers (docs/FORMAT.md, "Metadata digests"), so a remote reader can
    // fetch large metadata a block at a time and check each. 32 bytes per 16 KiB of metadata.
    bool metadata_digests = true;
    PackTimes times = PackTimes::mtime;
    // When set, every recorded time later than this is recorded as this (the SOURCE_DATE_EPOCH
    // convention of reproducible builds), so a tree touched today packs like yesterday's.
    std::optional<Time> clamp_time;
    // Entries left out of the pack (gitignore syntax, paths from the source's root; see
    // exclude.hpp). A directory left out is not read at all.
    ExcludePatterns exclude;
    // Format 2: cut contents of at least this many bytes at content-defined boundaries into
    // extents of about this size on average (a power of two, 1 KiB .. 4 MiB; 0: contents whole,
    // as before), each named by its SHA-256, so that a later pack built over this one
    // (`bases`) stores only the chunks it lacks (docs/FORMAT.md, "Extents"). When `bases` is
    // given and this is 0: the size the first base was cut with, else 64 KiB.
    uint32_t chunk_size = 0;
    // Format 2: packs this one is built over (`packfs build --base`): a content one of them
    // holds, and a chunk of a large content they hold, is referenced there instead of stored.
    // Reading the pack then needs them (PackOpenOptions::bases, or beside it under the same
    // file names). Each base's own bases are found the same way and named too.
    std::vector<std::string> bases = {};
    // A directory of files caches (docs/PACK.md "Builds over a base"); empty: none. Each build
    // records there what every file of its source was (path, size, mtime, ctime, inode number)
    // and the SHA-256 of what it read; a build over bases then takes a file whose record in the
    // first base's cache still holds as the content that base has, without reading it (borg's
    // files cache). `packfs build` uses ~/.cache/packfs/files unless told --no-files-cache.
    std::string files_cache;
    std::function<void(const BuildProgress&)> progress;
};

// Whether a build with `options` stores its metadata compressed: asked for, format 2, and a
// codec to compress it with.
inline bool compresses_metadata(const PackWriteOptions& options) noexcept {
    return options.compress_metadata && options.format >= 2 &&
           options.compression != Compression::none;
}

// What a build wrote, for `packfs build` and `packfs info`.
struct PackStats {
    uint64_t inodes = 0, directories = 0, regular_files = 0, symlinks = 0, specials = 0;
    uint64_t hard_links = 0;       // dirents beyond the first naming an inode
    uint64_t xattrs = 0;
    uint64_t excluded = 0;         // entries PackWriteOptions::exclude left out (a directory
                                   // once: what is under it is not read)
    uint64_t file_bytes = 0;       // sum of regular file sizes, each inode once
    uint64_t unique_bytes = 0;     // after dedup
    uint64_t inline_bytes = 0;     // contents stored in the metadata
    uint64_t stream_bytes = 0;     // uncompressed data stream, alignment included
    uint64_t data_bytes = 0;       // data region as stored (after compression)
    uint64_t metadata_bytes = 0;   // metadata as stored: region or frames + index, block sums
    uint64_t pack_bytes = 0;       // file size
    // With bases: the bytes of contents referenced in them instead of stored, and of chunks.
    uint64_t base_bytes = 0;
    uint64_t extents = 0;          // extent records (contents cut into chunks, or in bases)
    uint64_t unchanged_files = 0;  // files the first base's files cache knew: not read
    std::string digest;            // image digest, hex SHA-256
    // Where the build's time went, in seconds: reading the tree; hashing, dedup and writing
    // the data (one overlapped pass); flushing the last compressed blocks; encoding and writing
    // the metadata (with fsync and rename).
    double scan_seconds = 0, hash_seconds = 0, data_seconds = 0, finish_seconds = 0;
};

// Builds a pack at `out_path` from the tree under `root` of `source` (any Backend: mem, a
// snapshot, the Vfs, ...). Writes to a temporary file beside `out_path`, fsyncs it, renames it
// into place and fsyncs the directory; on failure nothing is left at `out_path` or beside it.
// The same tree and options always give the same bytes, whatever order the source lists in
// and however many jobs: the tree being its names, types, modes, owners, xattrs, contents,
// hard-link groups and the times `options.times` records.
PACKFS_API Result<PackStats> write_pack(Backend& source, std::string_view out_path,
                                        const PackWriteOptions& options = {},
                                        std::string_view root = "/");

// The same from a host directory, read by node through a read-only dir backend (dir.hpp): no
// symlink is followed, and files and directories are read with O_NOATIME where the kernel
// allows it (the caller owns them, or has CAP_FOWNER), so a build does not move their atimes.
// A symlink's atime may still move: Linux updates it on every readlink (under relatime, the
// first one after a change) and has no way to ask otherwise. Errors name paths relative to
// `host_dir`.
PACKFS_API Result<PackStats> write_pack_from_host(std::string_view host_dir,
                                                  std::string_view out_path,
                                                  const PackWriteOptions& options = {});

// How a pack's bytes are reached. mmap: metadata and raw data are read straight from a shared
// mapping (zero-copy views). pread: the metadata is read into memory on open and data is read
// with pread, so nothing can fault; for packs on storage that can fail or shrink underneath.
enum class PackAccess : uint8_t { mmap, pread };

// The decompressed blocks a compressed pack's reader keeps by default: 8 MiB, 128 blocks of the
// default 64 KiB. The kernel's page cache keeps what a FUSE mount has read, so this cache only
// has to serve reads that land on a block again soon (a file read in pieces, small files
// sharing a block); a larger one mostly costs memory (docs/FUSE.md, "Memory").
inline constexpr std::size_t kDefaultBlockCacheBytes = std::size_t{8} << 20;

struct PackOpenOptions {
    PackAccess access = PackAccess::mmap;
    // Decompressed blocks kept (compressed packs): the cache never holds more. Below one block,
    // nothing is kept.
    std::size_t block_cache_bytes = kDefaultBlockCacheBytes;
    // Packs a pack built over bases may read from (format 2 with extents, `packfs build
    // --base`): each is opened and used where its image digest is one the pack names. A base
    // not given here is looked for beside the pack, under the file name it had when the pack was
    // built. A base found nowhere fails the open with ENOENT naming it (digest and name).
    std::vector<std::string> bases = {};
    // Open a pack built over bases without them: its metadata (info() names its bases) and its
    // own stream read; a read of an extent in a base fails with EIO.
    bool without_bases = false;
};

// The header's facts, for `packfs info`.
struct PackInfo {
    uint32_t version = 0;
    uint64_t file_size = 0, inode_count = 0, data_length = 0, stream_size = 0;
    uint64_t meta_length = 0;          // the metadata region, inflated
    bool compressed_metadata = false;  // stored as compressed frames (format 2, compressed data)
    uint64_t meta_stored_length = 0;   // bytes the metadata takes in the file, sums included
    Compression compression = Compression::none;
    uint32_t block_size = 0, inline_max = 0;
    bool has_xattrs = false;
    bool keeps_inode_numbers = false;  // st_ino is the source's, stored (not the position)
    // Whether atime and ctime are stored (else readers see the mtime): always in version 1, whose
    // inodes hold all three (equal when the build recorded the mtime alone); in version 2 only
    // for a pack built with PackTimes::all.
    bool stores_all_times = false;
    // Blocks of zeros are stored in nothing (format 2, the holes feature): `stream_size` counts
    // them, `data_length` does not.
    bool has_holes = false;
    // Each stored block has its SHA-256 in the metadata (format 2, the block-digests feature):
    // the pack can be read remotely, every fetched block checked.
    bool has_block_digests = false;
    // Each metadata block has its SHA-256 too (format 2, the metadata-digests feature), and the
    // image digest covers their table: a remote reader can fetch the metadata by block.
    bool has_metadata_digests = false;
    std::string digest;  // hex SHA-256
    // Format 2 with extents: the average size large contents were cut at (0 without), how many
    // extents, and the packs it was built over (hex image digest and file name at build).
    uint32_t chunk_size = 0;
    uint64_t extents = 0;
    std::vector<std::pair<std::string, std::string>> bases = {};
};

// A problem `verify` found: where (virtual path or structure) and what.
struct VerifyProblem {
    std::string where;
    std::string what;
};

struct VerifyReport {
    uint64_t sections_checked = 0, blocks_checked = 0, files_checked = 0, bytes_checked = 0;
    std::vector<VerifyProblem> problems;
    bool ok() const noexcept { return problems.empty(); }
};

// A read-only Backend over one pack. Safe for concurrent use. Every mutation answers EROFS;
// snapshot() returns the backend itself (a pack never changes).
class PACKFS_API PackBackend : public Backend {
public:
    virtual const PackInfo& info() const noexcept = 0;

    // The bytes [offset, offset + length) of the regular file at `path` (clipped to its
    // size), without copying when they are stored raw in the mapping (mmap access), else
    // copied into `scratch` (resized as needed). The span lives as long as the backend and
    // `scratch` do.
    virtual Result<std::span<const std::byte>> read_view(std::string_view path, uint64_t offset,
                                                         std::size_t length,
                                                         std::string& scratch) = 0;

    // Checks every section, metadata block, compressed block and file SHA-256, and the image
    // digest. `progress` (may be empty) gets bytes checked so far and the total.
    virtual VerifyReport verify(std::function<void(uint64_t, uint64_t)> progress = {}) = 0;
};

// Opens the pack at the host path `pack_path`: checks the header and the metadata block sums,
// nothing per entry, so opening is O(1) in the number of files. A truncated or damaged pack
// gives EUCLEAN (kErrCorrupt) with what was wrong; a newer format version or an unknown
// incompatible feature gives ENOTSUP naming it.
PACKFS_API Result<std::shared_ptr<PackBackend>> open_pack(std::string_view pack_path,
                                                          const PackOpenOptions& options = {});

}  // namespace packfs
