// A remote pack's pack::AccessObserver (pack/reader/byte_source.hpp): the reader's listings and
// opens go to a WalkAhead (walk_ahead.hpp), and the files it schedules ahead of a walk are
// prefetched through the pack's HttpPackBytes, up to `budget` stored bytes ahead
// (RemoteOptions::readahead_bytes). The pack reader only reports what it does; how far ahead,
// and in what requests, is decided here.
//
// An open must never wait on the server for another file's sake (in an outage, a cached file
// must still open): the files ahead are scheduled from the ranges the reader finds in metadata
// fetched already or in the cache (pack::StoredRanges), and skipped when theirs is neither.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "pack/reader/byte_source.hpp"
#include "remote/remote_bytes.hpp"
#include "remote/walk_ahead.hpp"

namespace packfs::remote {

class WalkPrefetch final : public pack::AccessObserver {
public:
    // A directory's files lie next to each other in the pack, but a walk meets them in listing
    // (name hash) order, so a batch holds every other file of a directory or so. In pack
    // order, ranges less than kGap apart become one, the gap being files of the same directory
    // the walk will read next: a directory is fetched in a few large requests instead of one
    // request a file (what is fetched already is not fetched again).
    static constexpr uint64_t kGap = 64 << 10;

    WalkPrefetch(std::shared_ptr<HttpPackBytes> bytes, uint64_t budget)
        : bytes_(std::move(bytes)), budget_(budget) {}

    void listed(std::span<const uint64_t> files) noexcept override;
    void opened(uint64_t file, const pack::StoredRanges& ranges) noexcept override;

private:
    std::shared_ptr<HttpPackBytes> bytes_;
    uint64_t budget_;
    WalkAhead walk_;
};

}  // namespace packfs::remote
