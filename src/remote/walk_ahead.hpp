// What a walk will read next, for a remote pack's prefetch. find, tar, rsync, du and a data
// loader's scan list a directory, then open its files in the listing's order, then go on to the
// next directory listed: so the listings, in the order they were made, are nearly the order the
// files will be opened in. Listing alone fetches nothing (an `ls -lR` reads no file).
//
// Files are numbered by their place in the listings (seq). A walk's readers each open a run of
// files one after another (xargs -P 8 hands each a run), so their opens form streams: an open
// within kNear of a stream's last one continues it, any other starts a new stream (the least
// recently used one goes); an open of the file the stream opened last is no step (it is the
// same file read on: without open handles, FUSE opens a file for each READ). Once a stream has
// had kWalkOpens opens of distinct files, the files listed after its
// furthest open are scheduled, up to a byte budget ahead of it, topped up to the whole budget
// each time less than half of it is left ahead (a batch, fetched in a few large requests).
// Opens that jump about (a sample of files read by name after a listing) make no stream long
// enough to schedule anything.
//
// WalkPrefetch (walk_prefetch.hpp) feeds it the pack reader's listings and opens and prefetches
// what it schedules. The record numbers of the files listed last are kept in a ring (kCapacity of
// them, more than a walk's readers lag behind its listings); a file listed again takes its new
// place.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

namespace packfs::remote {

class WalkAhead {
public:
    static constexpr std::size_t kCapacity = 1 << 16;
    static constexpr uint64_t kNear = 64;      // how far apart two opens of one stream may be
    static constexpr unsigned kWalkOpens = 3;  // a stream's opens before it schedules
    static constexpr std::size_t kStreams = 16;

    // The regular files of one listing, in its order (record numbers). Never waits for a
    // thread that is scheduling: the files wait for it instead.
    void listed(std::span<const uint64_t> files);

    // File `record` was opened. When its stream is a walk with less than half of `budget`
    // scheduled ahead of its furthest open, calls `schedule` with each file to fetch ahead now,
    // in order, until the files scheduled ahead add up to `budget` (schedule returns a file's
    // stored bytes). One thread schedules at a
    // time; another's open meanwhile is skipped (the stream's next open tops up).
    void opened(uint64_t record, uint64_t budget,
                const std::function<uint64_t(uint64_t record)>& schedule);

private:
    struct Stream {
        uint64_t last = 0;      // its last open's seq
        uint64_t lead = 0;      // its furthest open
        uint64_t frontier = 0;  // the first file after lead not scheduled by it yet
        uint64_t ahead = 0;     // the bytes it scheduled for (lead, frontier)
        unsigned opens = 0;     // 0: unused
        uint64_t used = 0;      // when it last had an open (the oldest is replaced)
    };

    // The files listed (pending_) go into the ring under mutex_, by the next thread to hold it.
    void take_pending_locked();

    std::mutex pending_mutex_;
    std::vector<uint64_t> pending_;  // listed, in order, not in the ring yet
    std::mutex mutex_;               // the rest
    std::vector<uint64_t> ring_;     // ring_[seq % kCapacity]: the record listed seq-th
    std::vector<uint64_t> bytes_;    // the same slot: its stored bytes, once scheduled
    std::unordered_map<uint64_t, uint64_t> seq_of_;  // record -> its latest seq
    uint64_t next_seq_ = 0;
    Stream streams_[kStreams];
    uint64_t clock_ = 0;
};

}  // namespace packfs::remote
