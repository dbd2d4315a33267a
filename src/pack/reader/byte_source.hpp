// How the pack reader reaches a pack that is not a local file, and what it tells the world it
// is doing. Two narrow interfaces, both implemented elsewhere (src/remote/: HTTP, a registry):
//
// - ByteSource: the pack's bytes. The reader checks what it reads through read() itself (the
//   header, the metadata region and its sums); data blocks come through read_data(), checked
//   by the source against the digests the reader's checked metadata lists; metadata frames
//   fetched as they are used come through the frame calls (MetaFrames checks each one, and
//   tells the source which to keep).
// - AccessObserver: listings and opens, as they happen. The reader calls it and knows nothing
//   of what is done with it (a remote pack fetches a walk's files ahead of it).
//
// Neither says anything about prefetch budgets, readahead or fetch windows: that policy is the
// source's (src/remote/). What the reader knows and passes along is explicit: the end of the
// content a data read belongs to, where a file's stored bytes lie.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "pack/format/format.hpp"
#include "packfs/error.hpp"

namespace packfs::pack {

// One stored block of a pack, as a source that checks blocks one by one fetches it:
// [offset, offset + length) of the file (length 0: a hole, nothing to fetch) and the SHA-256 of
// those bytes (format 2's block digests).
struct StoredBlockRef {
    uint64_t offset;
    uint64_t length;
    BlockDigest digest;
};

// Stored bytes [offset, end) of the pack file.
struct StoredRange {
    uint64_t offset, end;
};

class ByteSource {
public:
    virtual ~ByteSource() = default;
    // The pack's size, known once the first bytes were read.
    virtual uint64_t size() const noexcept = 0;
    // What to call the pack in errors: its URL.
    virtual const std::string& name() const noexcept = 0;
    // Exactly out.size() bytes at `offset`, which the reader checks itself (the header, the
    // metadata region and its sums, at open).
    virtual Result<void> read(uint64_t offset, std::span<std::byte> out) = 0;
    // Exactly out.size() bytes at `offset`: inside the data blocks, from blocks the source
    // checked against their digests (outside them, the padding verify checks is zero, as they
    // are). `content_end`: where the stored bytes of the content being read end (0: not known),
    // so that fetching on to there saves round trips and fetches nothing the reader will not
    // want. When the bytes cannot be had: EIO, its detail the URL, the bytes and the cause.
    virtual Result<void> read_data(uint64_t offset, std::span<std::byte> out,
                                   uint64_t content_end) = 0;

    // Metadata frames fetched as they are used (MetaFrames), each checked by the reader
    // against the metadata digests. frame_window: how many stored bytes from `offset` a fetch
    // that needs the frame there should take (the reader stops earlier at a frame it has or is
    // fetching). cached_metadata reads the longest start of `out` the source holds already and
    // returns its length (0: none); fetch_metadata fetches all of it.
    virtual uint64_t frame_window(uint64_t offset) noexcept = 0;
    virtual std::size_t cached_metadata(uint64_t offset, std::span<std::byte> out) = 0;
    virtual Result<void> fetch_metadata(uint64_t offset, std::span<std::byte> out) = 0;
    // A fetched frame that passed its check: keep it (nothing unchecked is kept).
    virtual void keep_metadata(uint64_t offset, std::span<const std::byte> bytes) = 0;
    // A frame fetched from the server that failed its check (`why`): not kept.
    virtual void reject_metadata(uint64_t offset, std::string_view why) = 0;
};

// Where regular files' stored bytes lie, from metadata the reader has already: never waiting
// on the server (nullopt when that metadata is not here, or the file stores nothing in the
// data region: empty, inline, or starting in a hole).
class StoredRanges {
public:
    virtual std::optional<StoredRange> of(uint64_t file) const noexcept = 0;

protected:
    ~StoredRanges() = default;
};

class AccessObserver {
public:
    virtual ~AccessObserver() = default;
    // One listing's regular files (record numbers), in its order.
    virtual void listed(std::span<const uint64_t> files) noexcept = 0;
    // File `file` (a record number) was opened; `ranges` answers for any file during the call.
    // Without open handles (a FUSE mount) each READ is an open: the same file opened again.
    virtual void opened(uint64_t file, const StoredRanges& ranges) noexcept = 0;
};

}  // namespace packfs::pack
