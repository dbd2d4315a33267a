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
//
// Eviction. A pack in use that takes more than the cache's bound gives back blocks: evict()
// punches holes over them. A process may have checked a block and go on reading it from the file
// without checking it again, so the file carries an eviction epoch, shared through a mapping of
// its last page (the trailer, after the pack's bytes): evict() makes it odd, punches, makes it
// even. A reader takes the epoch before and after it reads checked blocks from the file; when it
// moved, it forgets what it had checked and reads again (remote_bytes.cpp). A reader that meets
// an odd epoch waits for the eviction's lock, and makes the epoch even again if the evicting
// process died halfway.
#pragma once

#include <atomic>
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
    // Reads the longest start of `out` the file holds as data (never a hole, which would read
    // as zeros): two lseeks and a pread. Returns how many bytes that was (0: none).
    std::size_t read_held(uint64_t offset, std::span<std::byte> out) const noexcept;
    bool write(uint64_t offset, std::span<const std::byte> bytes) const noexcept;

    // The eviction epoch: even while no eviction runs, moved by each one.
    uint64_t epoch() const noexcept;
    // Waits while an eviction runs (the epoch is odd), and repairs the epoch of one whose
    // process died before it finished.
    void wait_for_eviction() const noexcept;
    // Punches holes over `ranges` ([offset, offset + length), within the pack's bytes), each
    // under its range lock, with the epoch odd meanwhile. Returns the bytes covered.
    Result<uint64_t> evict(std::span<const std::pair<uint64_t, uint64_t>> ranges) const;
    // The parts of [from, to) that hold data (SEEK_DATA/SEEK_HOLE): what may be cached.
    std::vector<std::pair<uint64_t, uint64_t>> data_extents(uint64_t from, uint64_t to) const;

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
    // A second open file description of the file, for the eviction lock (OFD locks of one
    // description do not exclude each other, and the range locks use fd_).
    int reopen() const noexcept;
    bool lock_evictions(int fd, short type) const noexcept;

    int fd_ = -1;
    bool existed_ = false;
    uint64_t trailer_ = 0;  // where the trailer page starts
    void* mapping_ = nullptr;
    std::atomic<uint64_t>* epoch_ = nullptr;
};

// The pack size a cache file holds, from its trailer (0: not a cache file of this layout).
uint64_t cached_pack_size(const std::string& path) noexcept;

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
