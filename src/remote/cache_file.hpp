// The local copy of one remote pack: a sparse file of the pack's size, named by its image digest
// (<dir>/<64 hex digits>.pack), holding each fetched block at its own offset. Nothing in it is
// trusted: a block is used only after its bytes matched the block's SHA-256 in this process
// (remote_bytes.cpp), so a file left half-written by a killed process, a hole where a block
// never arrived, or a damaged disk block is simply a miss that is fetched again. No index, no
// journal, nothing to recover.
//
// Sharing. Every process that has the pack open holds a shared flock on the file, so pruning
// (which takes an exclusive one without waiting) never removes a pack in use. Two processes
// that miss the same block serialise on an OFD byte-range lock over it: the second finds the
// first one's copy instead of fetching it again. Blocks are written whole with pwrite and read
// with pread; two writers of one block write the same bytes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "packfs/error.hpp"
#include "packfs/remote.hpp"

namespace packfs::remote {

class CacheFile {
public:
    // <dir>/<digest_hex>.pack, created sparse at `size` bytes if missing (and `dir` with it),
    // shared-locked; its mtime set to now (the LRU order pruning follows). `dir` "none": an
    // unnamed private file in $TMPDIR that goes with the object.
    static Result<CacheFile> open(const std::string& dir, const std::string& digest_hex,
                                  uint64_t size);
    CacheFile() = default;
    CacheFile(CacheFile&& other) noexcept;
    CacheFile& operator=(CacheFile&& other) noexcept;
    ~CacheFile();

    bool valid() const noexcept { return fd_ >= 0; }
    // Whether the file existed before open() (a warm cache may hold the metadata too).
    bool existed() const noexcept { return existed_; }
    bool read(uint64_t offset, std::span<std::byte> out) const noexcept;
    bool write(uint64_t offset, std::span<const std::byte> bytes) const noexcept;

    // An exclusive lock on [offset, offset + length) against other processes, held while the
    // object lives (threads of one process do not exclude each other: remote_bytes.cpp keeps
    // them apart itself).
    class RangeLock {
    public:
        RangeLock(int fd, uint64_t offset, uint64_t length) noexcept;
        ~RangeLock();
        RangeLock(const RangeLock&) = delete;
        RangeLock& operator=(const RangeLock&) = delete;

    private:
        int fd_;
        uint64_t offset_, length_;
        bool held_ = false;
    };
    RangeLock lock(uint64_t offset, uint64_t length) const noexcept {
        return RangeLock(fd_, offset, length);
    }

private:
    int fd_ = -1;
    bool existed_ = false;
};

// The default cache directory: $XDG_CACHE_HOME/packfs, else $HOME/.cache/packfs, else
// /tmp/packfs-cache-<uid>.
std::string default_cache_dir();

Result<std::vector<CachedPack>> list_cache(const std::string& dir);

// Removes packs not in use, least recently used first, until the directory's packs take at most
// `bound` bytes on disk (0: remove every pack not in use). Returns the bytes freed. A pack in use
// is never removed, so the directory may stay above the bound while they are open.
Result<uint64_t> prune_cache(const std::string& dir, uint64_t bound);

// A quarter of the free space of the filesystem that holds `dir` (or its nearest existing
// parent), the default bound.
uint64_t default_cache_bound(const std::string& dir);

}  // namespace packfs::remote
