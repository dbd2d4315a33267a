#include "remote/walk_ahead.hpp"

#include <algorithm>

namespace packfs::remote {

void WalkAhead::listed(std::span<const uint64_t> files) {
    {
        std::lock_guard lock(pending_mutex_);
        pending_.insert(pending_.end(), files.begin(), files.end());
    }
    std::unique_lock lock(mutex_, std::try_to_lock);
    if (lock) take_pending_locked();
}

void WalkAhead::take_pending_locked() {
    std::vector<uint64_t> files;
    {
        std::lock_guard lock(pending_mutex_);
        files.swap(pending_);
    }
    if (files.empty()) return;
    if (ring_.empty()) {  // the first listing: a pack that is never listed costs nothing
        ring_.resize(kCapacity);
        bytes_.resize(kCapacity);
    }
    for (const uint64_t record : files) {
        const std::size_t slot = next_seq_ % kCapacity;
        if (next_seq_ >= kCapacity) {  // the oldest file listed leaves the ring
            auto old = seq_of_.find(ring_[slot]);
            if (old != seq_of_.end() && old->second == next_seq_ - kCapacity) seq_of_.erase(old);
        }
        ring_[slot] = record;
        seq_of_[record] = next_seq_++;
    }
}

void WalkAhead::opened(uint64_t record, uint64_t budget,
                       const std::function<uint64_t(uint64_t record)>& schedule) {
    std::unique_lock lock(mutex_, std::try_to_lock);
    if (!lock) return;
    take_pending_locked();
    const auto found = seq_of_.find(record);
    if (found == seq_of_.end()) return;  // never listed: opened by name
    const uint64_t seq = found->second;
    Stream* stream = nullptr;
    for (Stream& s : streams_) {
        if (s.opens != 0 && seq + kNear >= s.last && seq <= s.last + kNear) stream = &s;
    }
    ++clock_;
    if (stream == nullptr) {  // perhaps the start of a walk's stream, from here
        stream =
            &*std::min_element(std::begin(streams_), std::end(streams_),
                               [](const Stream& a, const Stream& b) { return a.used < b.used; });
        *stream = Stream{.last = seq, .lead = seq, .frontier = seq + 1, .opens = 1, .used = clock_};
        return;
    }
    Stream& s = *stream;
    s.used = clock_;
    // The same file again is no step of a walk: a FUSE mount without open handles opens the
    // file for each READ, so one large file read would otherwise look like a walk at once.
    if (seq == s.last) return;
    s.last = seq;
    ++s.opens;
    if (seq > s.lead) {  // what it scheduled up to here is being read: no longer ahead
        for (uint64_t q = s.lead + 1; q <= seq && q < s.frontier; ++q)
            s.ahead -= std::min(s.ahead, bytes_[q % kCapacity]);
        s.lead = seq;
        if (s.frontier <= seq) {
            s.frontier = seq + 1;
            s.ahead = 0;
        }
    }
    if (s.opens < kWalkOpens) return;
    // Topped up once half the budget has been read, not at every open: a batch of half the
    // budget is a directory's files or more, which the caller fetches in a few large requests
    // (in pack order); topping up a file at a time would fetch a file a request.
    if (s.ahead >= budget / 2 && s.frontier > s.lead + 1) return;
    // Never past what is listed, nor so far that a slot of bytes_ would be used twice.
    while (s.ahead < budget && s.frontier < next_seq_ && s.frontier - s.lead < kCapacity / 2) {
        const uint64_t bytes = schedule(ring_[s.frontier % kCapacity]);
        bytes_[s.frontier % kCapacity] = bytes;
        s.ahead += bytes;
        ++s.frontier;
    }
}

}  // namespace packfs::remote
