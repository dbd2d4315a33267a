// HttpPackBytes's fetches (remote_bytes.hpp): the blocks a read lacks resolved (claimed, fetched
// or waited for), the runs of them fetched in requests joined up to kMaxRequestBytes, and the
// prefetch threads that fetch a walk's files ahead of it. remote_bytes.cpp has the reads.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "pack/format/digest.hpp"
#include "remote/log_limit.hpp"
#include "remote/remote_bytes.hpp"
#include "remote/remote_bytes_detail.hpp"

namespace packfs::remote {

using detail::each_run;
using detail::fetch_failed;

namespace {

constexpr uint64_t kMaxRequestBytes = 16 << 20;  // one GET fetches at most this much
constexpr std::size_t kSweepBlocks = 32;         // how far back a sweep is looked for
// A prefetch's request: large enough that the round trip is a small part of it at a few
// hundred Mbit/s, small enough that several threads share one walk's ranges.
constexpr uint64_t kPrefetchRequestBytes = 512 << 10;
constexpr std::size_t kMaxPrefetchQueue = 4096;  // runs waiting; the oldest go first past it

std::string hex(std::span<const uint8_t> bytes) {
    return pack::to_hex(bytes);
}

}  // namespace

Result<void> HttpPackBytes::resolve(std::vector<std::size_t> missing,
                                    std::vector<Fetched>& fetched, uint64_t expected_end,
                                    Clock::time_point deadline) {
    while (!missing.empty()) {
        std::vector<std::size_t> mine, theirs;
        {
            std::lock_guard lock(mutex_);
            for (std::size_t i : missing) {
                if (verified(i)) continue;
                if (in_flight_.contains(i)) {
                    theirs.push_back(i);
                } else {
                    in_flight_.insert(i);
                    mine.push_back(i);
                }
            }
        }
        // Runs of adjacent blocks this thread claimed, each fetched by one request; only the
        // last may reach on towards what the caller expects to read.
        auto done = each_run(mine, [&](std::size_t first, std::size_t last) {
            return fetch_run(first, last, last, last == mine.back() ? expected_end : 0, fetched,
                             deadline);
        });
        unclaim(mine);
        if (!done) return done;
        // Blocks another thread was fetching: wait for it, then see whether it got them.
        missing.clear();
        std::unique_lock lock(mutex_);
        for (std::size_t i : theirs) {
            if (!landed_.wait_until(lock, deadline, [&] { return !in_flight_.contains(i); })) {
                std::string line =
                    fmt::format("{}: block {} still on its way at the timeout", url_, i);
                log(line);
                return fetch_failed(ETIMEDOUT, std::move(line));
            }
            if (!verified(i)) missing.push_back(i);  // its fetch failed: try again ourselves
        }
    }
    return {};
}

Result<void> HttpPackBytes::fetch_span(std::size_t from, std::size_t to, std::size_t wanted_first,
                                       std::size_t wanted_last, std::vector<Fetched>& fetched,
                                       Clock::time_point deadline, const std::stop_token& stop) {
    // One GET for [from, to], cut into its blocks and each one checked.
    const uint64_t at = blocks_[from].offset;
    auto buffer = std::make_shared<std::vector<std::byte>>(ends_[to] - at);
    if (auto got = get(at, *buffer, deadline, stop); !got) return got;
    for (std::size_t i = from; i <= to; ++i) {
        const pack::StoredBlockRef& b = blocks_[i];
        if (b.length == 0) continue;
        auto bytes = std::span(*buffer).subspan(b.offset - at, b.length);
        if (!matches(i, bytes)) {
            const pack::Sha256Digest first_try = pack::sha256(bytes);
            // Once more on its own: a flipped bit in transit, or a server mid-update.
            if (auto got = get(b.offset, bytes, deadline, stop); !got) return got;
            if (!matches(i, bytes)) {
                std::string line = fmt::format(
                    "{}: block {} (bytes {}-{}) does not match its digest: expected {}, found {} "
                    "(then {}); not used, not cached",
                    url_, i, b.offset, b.offset + b.length - 1, hex(b.digest), hex(first_try),
                    hex(pack::sha256(bytes)));
                log(line);
                return fetch_failed(EIO, std::move(line));
            }
        }
        if (cache_.valid() && cache_.write(b.offset, bytes)) {
            mark_verified(i);
            written_.fetch_add(b.length, std::memory_order_relaxed);
        }
        if (i >= wanted_first && i <= wanted_last)
            fetched.push_back(Fetched{i, buffer, b.offset - at});
    }
    return {};
}

Result<void> HttpPackBytes::fetch_run(std::size_t first, std::size_t last,
                                      std::size_t wanted_last, uint64_t expected_end,
                                      std::vector<Fetched>& fetched, Clock::time_point deadline) {
    // Fetching ahead, of blocks nobody has or fetches (claimed here), for two reasons: the rest
    // of the content being read (expected_end, up to the readahead bound), and a sequential
    // reader: a run that starts where one of the recent fetches ended gets a window that
    // doubles with each such fetch.
    std::vector<std::size_t> extra;
    {
        std::lock_guard lock(mutex_);
        Stream* stream = nullptr;
        for (Stream& s : streams_) {
            if (s.next == first) stream = &s;
        }
        if (stream != nullptr) {
            // Doubled, at least twice this run, at most the bound (which may be 0: none).
            stream->window = std::min<uint64_t>(
                std::max<uint64_t>(2 * stream->window, 2 * (ends_[last] - blocks_[first].offset)),
                options_.readahead_bytes);
        } else {
            stream = &*std::min_element(
                std::begin(streams_), std::end(streams_),
                [](const Stream& a, const Stream& b) { return a.last_use < b.last_use; });
            stream->window = 0;
        }
        const uint64_t begin = blocks_[first].offset;
        uint64_t reach = std::max(
            begin + stream->window,
            std::min(expected_end,
                     begin + std::max<uint64_t>(options_.readahead_bytes, ends_[last] - begin)));
        // A sweep: readers that take most of the blocks just before this one (a walk reading
        // every file, in whatever order) will want the ones after it too.
        if (first >= kSweepBlocks) {
            std::size_t have = 0;
            for (std::size_t i = first - kSweepBlocks; i < first; ++i) have += verified(i) ? 1 : 0;
            if (have * 4 >= kSweepBlocks * 3)
                reach = std::max(reach, begin + options_.readahead_bytes / 4);
        }
        for (std::size_t i = last + 1;
             i < blocks_.size() && ends_[i] <= reach && ends_[i] - begin <= kMaxRequestBytes &&
             !verified(i) && !held(i) && !in_flight_.contains(i);
             ++i) {
            in_flight_.insert(i);
            extra.push_back(i);
            last = i;
        }
        stream->next = last + 1;
        stream->last_use = ++stream_clock_;
    }
    struct Unclaim {  // the readahead claims go whatever happens
        HttpPackBytes& self;
        std::vector<std::size_t>& blocks;
        ~Unclaim() {
            if (!blocks.empty()) self.unclaim(blocks);
        }
    } unclaim{*this, extra};
    return fetch_claimed(first, last, first, wanted_last, fetched, deadline, {});
}

Result<void> HttpPackBytes::fetch_claimed(std::size_t first, std::size_t last,
                                          std::size_t wanted_first, std::size_t wanted_last,
                                          std::vector<Fetched>& fetched,
                                          Clock::time_point deadline,
                                          const std::stop_token& stop) {
    // Another process may hold or be fetching these: wait for its lock, then look in the file.
    const uint64_t begin = blocks_[first].offset, end = ends_[last];
    const auto lock = cache_.lock(begin, end - begin);
    // What is still missing once the lock is ours (another process may have fetched some),
    // fetched as maximal runs of adjacent blocks, one GET each.
    std::vector<std::size_t> missing;
    for (std::size_t i = first; i <= last; ++i) {
        if (blocks_[i].length == 0 || verified(i)) continue;
        if (auto bytes = from_cache(i)) {
            mark_verified(i);
            if (i >= wanted_first && i <= wanted_last)
                fetched.push_back(Fetched{i, std::move(bytes), 0});
            continue;
        }
        missing.push_back(i);
    }
    return each_run(missing, [&](std::size_t from, std::size_t to) {
        return fetch_span(from, to, wanted_first, wanted_last, fetched, deadline, stop);
    });
}

void HttpPackBytes::prefetch(std::span<const pack::StoredRange> ranges) noexcept try {
    // Without a cache file (it could not be made) a fetched block is kept nowhere.
    if (!cache_.valid() || blocks_.empty()) return;
    std::lock_guard lock(mutex_);
    for (const pack::StoredRange& r : ranges) {
        if (r.end <= r.offset || r.end <= blocks_.front().offset || r.offset >= ends_.back())
            continue;
        auto first = static_cast<std::size_t>(
            std::upper_bound(ends_.begin(), ends_.end(), r.offset) - ends_.begin());
        // Cut into requests of about kPrefetchRequestBytes, skipping what is here already.
        while (first < blocks_.size() && blocks_[first].offset < r.end) {
            // Blocks the cache file holds need no request: their reader checks them.
            if (verified(first) || held(first) || blocks_[first].length == 0) {
                ++first;
                continue;
            }
            std::size_t last = first;
            while (last + 1 < blocks_.size() && blocks_[last + 1].offset < r.end &&
                   ends_[last + 1] - blocks_[first].offset <= kPrefetchRequestBytes &&
                   !held(last + 1))
                ++last;
            if (prefetch_queue_.size() == kMaxPrefetchQueue) prefetch_queue_.pop_front();
            prefetch_queue_.emplace_back(first, last);
            first = last + 1;
        }
    }
    if (prefetch_queue_.empty()) return;
    if (prefetchers_.empty()) {
        const unsigned threads = std::clamp(options_.connections / 2, 1u, 4u);
        for (unsigned t = 0; t < threads; ++t)
            prefetchers_.emplace_back([this](std::stop_token stop) { prefetch_loop(stop); });
    }
    prefetch_ready_.notify_all();
} catch (...) {  // no memory or no thread: the reads fetch for themselves
}

void HttpPackBytes::prefetch_loop(std::stop_token stop) {
    std::vector<Fetched> none;
    while (!stop.stop_requested()) {
        std::vector<std::size_t> mine;
        {
            std::unique_lock lock(mutex_);
            if (!prefetch_ready_.wait(lock, stop, [&] { return !prefetch_queue_.empty(); })) return;
            const auto [first, last] = prefetch_queue_.front();
            prefetch_queue_.pop_front();
            for (std::size_t i = first; i <= last; ++i) {
                if (blocks_[i].length == 0 || verified(i) || held(i) || in_flight_.contains(i))
                    continue;
                in_flight_.insert(i);
                mine.push_back(i);
            }
        }
        // Each run of adjacent claimed blocks in one request (a read may have claimed some in
        // the middle meanwhile); a failure drops the rest of this run.
        each_run(mine, [&](std::size_t first, std::size_t last) {
            return fetch_claimed(first, last, SIZE_MAX, 0, none, Clock::now() + options_.timeout,
                                 stop);
        });
        unclaim(mine);
    }
}

}  // namespace packfs::remote
