// The bytes of one pack file, reached in one of two ways (PackAccess), or, for a pack that is
// not a local file, through a ByteSource (byte_source.hpp; HTTP, a registry: src/remote/):
//
// - mmap: the whole file is mapped shared and read-only. Metadata and raw file data are read
//   straight from the mapping, and read_view hands out spans into it.
// - pread: the metadata ([meta_offset, file_size): the metadata region and its block sums) is
//   read into memory when the pack is opened, and file data is read with pread(2). Nothing can
//   fault; a file that shrank gives short reads, which become EIO.
//
// Surviving a file that shrinks under a mapping (mmap access). Touching a mapped page that lies
// wholly past the file's current end raises SIGBUS. PackFS installs, once per process, a SIGBUS
// handler (SA_SIGINFO, chained to whatever handler was installed before it). When the faulting
// address lies inside a registered pack mapping, the handler maps one anonymous zero page over
// the faulting page (MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, PROT_READ, through the raw mmap
// system call) and bumps that image's `damage` counter; the faulting instruction then re-runs
// and reads zeros. Every Backend operation that reads the pack, File::pread and read_view check
// the counter after their work and answer EIO instead of their result once it has moved, so no
// caller gets the zeros as data from the API. The zero pages stay: from then on the backend
// answers EIO to everything that reads the file, until the pack is opened again. (Mutations
// answer EROFS and fstat answers from the inode the handle copied; neither reads the file.)
// Faults at other addresses go to the previous handler (or the default action: the process
// dies as it would have without PackFS). The registry of mappings is a fixed array of atomics,
// so the handler takes no lock and allocates nothing.
//
// What this cannot cover, by construction:
// - A span returned by read_view and read by the caller after the file shrank reads zeros; the
//   next operation on the backend then answers EIO, but the caller's span does not.
// - The page that holds the new end of file is not past it: the kernel shows its tail as zeros
//   without any signal. Metadata read from there fails its block checksum (EUCLEAN) when it is
//   first checked, but data, or metadata already checked, is read as zeros undetected.
// - Only shrinking is detected. A file rewritten in place (same size) is read as it now is;
//   packs are meant to be replaced by rename, never rewritten.
// - A process that installs its own SIGBUS handler after PackFS must chain to the previous one
//   (PackFS's) for addresses it does not own, as PackFS does.
// - At most kMaxMappings packs are registered at once; an mmap open beyond that falls back to
//   pread access (see PackImage::load).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "pack/format/format.hpp"
#include "pack/reader/byte_source.hpp"
#include "packfs/error.hpp"
#include "packfs/pack.hpp"

namespace packfs::pack {

inline constexpr std::size_t kMaxMappings = 4096;

class PackImage {
public:
    // Opens `host_path` read-only and reads its header bytes. ENOENT etc. from the host; EUCLEAN
    // when the file is too short to hold a header.
    static Result<std::unique_ptr<PackImage>> open(std::string_view host_path);
    // A pack reached through `source` (pread access; fd() is -1): reads its header bytes.
    static Result<std::unique_ptr<PackImage>> open(std::shared_ptr<ByteSource> source);
    ~PackImage();
    PackImage(const PackImage&) = delete;
    PackImage& operator=(const PackImage&) = delete;

    // The file's size when it was opened.
    uint64_t size() const noexcept { return size_; }
    // The first kHeaderSize bytes, as read at open.
    std::span<const std::byte, kHeaderSize> header_bytes() const noexcept { return header_; }

    // Makes [meta_offset, size()) reachable through meta(): maps the whole file (mmap) or
    // reads that range into memory (pread). Called once, after the header was validated.
    Result<void> load(PackAccess access, uint64_t meta_offset, std::string_view host_path);

    // A pack from a source with compressed metadata and metadata digests: load() fetches only what
    // follows the frames (their index, the sums, the digests), and the frames' place in
    // memory is left for the reader to fill as it uses them (fetched_frames()). Before load().
    void fetch_frames_on_demand() noexcept { frames_on_demand_ = true; }
    // Where the frames go when they are fetched on demand (writable, at meta()), else null.
    std::byte* fetched_frames() const noexcept { return frames_on_demand_ ? on_demand_ : nullptr; }

    PackAccess access() const noexcept { return access_; }
    // The byte at file offset meta_offset, and the (size() - meta_offset) that follow.
    const std::byte* meta() const noexcept { return meta_; }
    // The whole file (mmap access only; nullptr with pread access).
    const std::byte* mapping() const noexcept { return map_; }
    // Reads exactly out.size() bytes at file `offset` with pread(2), or from the source's
    // checked data blocks. An error on a short read (the file shrank). `content_end`: where the
    // stored bytes of the content being read end (0: not known), for a source to fetch on to.
    Result<void> read_at(uint64_t offset, std::span<std::byte> out, uint64_t content_end = 0) const;
    // The open file itself, for callers that move bytes kernel to kernel (splice) instead of
    // through the mapping. Valid while the image lives; -1 for a pack from a source.
    int fd() const noexcept { return fd_; }
    // The source of a pack that is not a local file, or null.
    ByteSource* source() const noexcept { return source_.get(); }

    // True once a SIGBUS was absorbed for this mapping: the file shrank underneath it.
    bool damaged() const noexcept { return damage_.load(std::memory_order_acquire) != 0; }
    uint64_t damage_count() const noexcept { return damage_.load(std::memory_order_acquire); }

private:
    PackImage() = default;

    int fd_ = -1;
    uint64_t size_ = 0;
    std::byte header_[kHeaderSize]{};
    PackAccess access_ = PackAccess::pread;
    std::byte* map_ = nullptr;
    std::size_t map_length_ = 0;
    int slot_ = -1;                        // registry slot of the mapping, -1 when none
    std::unique_ptr<std::byte[]> buffer_;  // pread access: [meta_offset, size)
    std::shared_ptr<ByteSource> source_;
    bool frames_on_demand_ = false;
    std::byte* on_demand_ = nullptr;  // [meta_offset, size) mapped anonymous, filled as used
    std::size_t on_demand_length_ = 0;
    const std::byte* meta_ = nullptr;
    std::atomic<uint64_t> damage_{0};
};

}  // namespace packfs::pack
