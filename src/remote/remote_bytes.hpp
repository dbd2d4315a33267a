// The bytes of a pack behind an HTTP URL (pack::ByteSource): the header and metadata fetched
// at open (whole, or with large metadata what follows its frames, the frames then fetched as
// the reader uses them: fetch_metadata, in windows FrameWindows decides), data fetched by stored
// block, each block checked against its SHA-256 before it is used or written to the cache file,
// and read from the cache file once it is there. remote_bytes.cpp has the reads, block_fetch.cpp
// the fetches and the prefetch threads.
//
// A read of blocks that are not here yet:
// 1. claims them in this process (a thread that finds a block claimed waits for it instead of
//    fetching it again);
// 2. looks for each in the cache file (another process, or an earlier run, may have fetched it),
//    which counts only when its bytes match the digest (blocks the file held at open, held(),
//    are only checked so: no readahead or prefetch is scheduled over them, and a pack whose
//    every block is cached reads with no request, each block checked once by its first
//    reader);
// 3. takes the cache file's lock over each run of adjacent blocks still missing, so another
//    process that misses them too waits and then finds them, and fetches the run in one ranged
//    GET; a run that starts where the last fetch ended (a sequential reader) is extended by a
//    readahead window that doubles with each such fetch, up to readahead_bytes, and a read
//    that says where its content ends (read_data's content_end) reaches on to there, up to the
//    same bound;
// 4. checks every block of the answer; a block that does not match is fetched once more on its
//    own, and if it still does not match the read fails (EIO, logged with the URL, offset and
//    both digests) and nothing is cached.
// A read waits at most the timeout for all of it, retries included; connection refused fails
// at once. Nothing here outlives a failure: the next read tries the server again.
//
// Prefetched ranges (prefetch(): what a walk will read next, walk_prefetch.hpp) are fetched by a
// few background threads, started on the first call, claiming blocks as a read does, never more
// than half the connections, into the cache file (without one, nothing would keep what they
// fetch). A failed prefetch is dropped: the read that wants the block fetches it and reports
// what went wrong.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "pack/reader/byte_source.hpp"
#include "remote/cache_file.hpp"
#include "remote/frame_windows.hpp"
#include "remote/http_client.hpp"

namespace packfs::remote {

struct FetchOptions {
    std::chrono::milliseconds timeout{30'000};
    unsigned connections = 8;
    uint64_t readahead_bytes = 8 << 20;
    std::function<void(std::string_view)> log;  // never empty
    std::vector<std::string> headers;           // sent with every request (a registry's auth)
    // How long the open's requests (the header, the metadata region) wait, when shorter than
    // `timeout` (0: `timeout`): an open that has a cached copy to fall back on.
    std::chrono::milliseconds open_timeout{0};
    // A registry's: fresh auth headers once a request was refused (401/403: its token expired
    // or was revoked), or an error. Empty: a refusal is final.
    std::function<Result<std::vector<std::string>>()> reauthorize;
    // The cache's bound while the pack is open (0: none). Each time this pack has written a
    // sixteenth of it more into its cache file, the cache directory is pruned to the bound
    // (packs not in use, least recently used first); if the packs in use still take more, this
    // pack's least recently read blocks are evicted until they take at most three quarters.
    uint64_t cache_bound = 0;
    std::string cache_dir;
};

// The log of one opened pack or transfer: `log` when set, else standard error ("packfs:
// remote: ..." lines, whole), rate-limited (log_limit.hpp).
std::function<void(std::string_view)> remote_log(std::function<void(std::string_view)> log);

class HttpPackBytes final : public pack::ByteSource {
public:
    HttpPackBytes(std::string url, FetchOptions options);

    // --- pack::ByteSource ----------------------------------------------------------------
    uint64_t size() const noexcept override { return size_; }
    const std::string& name() const noexcept override { return url_; }
    Result<void> read(uint64_t offset, std::span<std::byte> out) override;
    Result<void> read_data(uint64_t offset, std::span<std::byte> out,
                           uint64_t content_end) override;
    uint64_t frame_window(uint64_t offset) noexcept override { return frames_.next(offset); }
    std::size_t cached_metadata(uint64_t offset, std::span<std::byte> out) override;
    Result<void> fetch_metadata(uint64_t offset, std::span<std::byte> out) override;
    void keep_metadata(uint64_t offset, std::span<const std::byte> bytes) override;
    void reject_metadata(uint64_t offset, std::string_view why) override;

    // The stored blocks, in stream order, each inside the data region (from the checked
    // metadata): from now on read_data() serves data, every block checked against its digest.
    void set_blocks(std::vector<pack::StoredBlockRef> blocks);
    // Stored bytes of the data region a walk will read soon (walk_prefetch.hpp): fetched in the
    // background, best effort, into the cache. Ranges in the order they will be wanted.
    void prefetch(std::span<const pack::StoredRange> ranges) noexcept;
    // Whether the cache file held every block when the blocks were set: nothing to fetch ahead
    // of a walk (unless blocks are evicted meanwhile, which a read then fetches itself).
    bool all_held() const noexcept { return all_held_; }
    // How far ahead of a reader the server is asked for more (RemoteOptions::readahead_bytes).
    uint64_t readahead_bytes() const noexcept { return options_.readahead_bytes; }

    // Where fetched blocks go from now on (and where read() looks first while
    // `prefer_cache` is set: a warm open). Before set_cache, blocks are kept nowhere.
    void set_cache(CacheFile cache, bool prefer_cache);
    // The size when it is known without a request (a warm open from the cache file).
    void assume_size(uint64_t size) noexcept { size_ = size; }

private:
    struct Fetched {  // a block this read fetched itself (served from memory, cache or not)
        std::size_t index;
        std::shared_ptr<std::vector<std::byte>> buffer;
        std::size_t at;  // its bytes' place in `buffer`
    };
    bool verified(std::size_t i) const noexcept {
        return (verified_[i / 64].load(std::memory_order_acquire) >> (i % 64)) & 1;
    }
    void mark_verified(std::size_t i) noexcept {
        verified_[i / 64].fetch_or(uint64_t{1} << (i % 64), std::memory_order_acq_rel);
    }
    // Blocks whose bytes the cache file held (as data, not holes) when the blocks were set: not
    // checked yet, but no request is needed for them, so neither readahead nor a walk's
    // prefetch schedules them (their first reader checks them; a cached pack is read like a
    // local one). Cleared for a block that fails its check, and for all once blocks were
    // evicted.
    bool held(std::size_t i) const noexcept {
        return held_ != nullptr &&
               ((held_[i / 64].load(std::memory_order_acquire) >> (i % 64)) & 1);
    }
    void forget_verified() noexcept;
    // The cache file's eviction epoch once no eviction runs; what this process had checked is
    // forgotten when it moved since the last call.
    uint64_t settle_epoch() noexcept;
    // Prunes the cache to options_.cache_bound, evicting this pack's least recently read blocks
    // when the packs in use alone are over it.
    void keep_within_bound() noexcept;
    bool matches(std::size_t i, std::span<const std::byte> bytes) const noexcept;
    // Blocks this thread claimed (in in_flight_) given back, and their waiters woken.
    void unclaim(std::span<const std::size_t> blocks);
    // Block i from the cache file when its bytes there match its digest: the bytes (so that the
    // read that checked them need not read them again), else null.
    std::shared_ptr<std::vector<std::byte>> from_cache(std::size_t i);
    // The blocks of `missing` that the cache file held at open and that [offset, offset +
    // out.size()) covers whole, claimed, read from the file straight into `out` and checked
    // there: those that match are marked checked and moved from `missing` to `direct`.
    void read_held(std::vector<std::size_t>& missing, uint64_t offset, std::span<std::byte> out,
                   std::vector<std::size_t>& direct);
    // read_data() with the cause's own code (ETIMEDOUT, ENOENT, ...).
    Result<void> read_blocks(uint64_t offset, std::span<std::byte> out, uint64_t content_end);
    Result<void> resolve(std::vector<std::size_t> missing, std::vector<Fetched>& fetched,
                 uint64_t expected_end, Clock::time_point deadline);
    Result<void> fetch_run(std::size_t first, std::size_t last, std::size_t wanted_last,
                   uint64_t expected_end, std::vector<Fetched>& fetched,
                   Clock::time_point deadline);
    // Blocks [first, last], claimed by this thread: under the cache file's lock, those still
    // in neither the file nor memory fetched, one GET per run of adjacent ones. Those in
    // [wanted_first, wanted_last] go to `fetched`.
    Result<void> fetch_claimed(std::size_t first, std::size_t last, std::size_t wanted_first,
                       std::size_t wanted_last, std::vector<Fetched>& fetched,
                       Clock::time_point deadline, const std::stop_token& stop);
    Result<void> fetch_span(std::size_t from, std::size_t to, std::size_t wanted_first,
                    std::size_t wanted_last, std::vector<Fetched>& fetched,
                    Clock::time_point deadline, const std::stop_token& stop);
    // One GET: the failure's code is the cause's errno, its detail the line logged.
    Result<void> get(uint64_t offset, std::span<std::byte> out, Clock::time_point deadline,
                     const std::stop_token& stop = {});
    // A background thread's loop: takes queued runs of blocks and fetches them until stopped.
    void prefetch_loop(std::stop_token stop);
    void log(std::string_view line) const { options_.log(line); }

    std::string url_;
    FetchOptions options_;
    FrameWindows frames_;
    HttpClient http_;
    uint64_t size_ = 0;
    CacheFile cache_;
    bool prefer_cache_ = false;

    std::vector<pack::StoredBlockRef> blocks_;           // in offset order
    std::vector<uint64_t> ends_;                         // blocks_[i].offset + length, for lookups
    std::unique_ptr<std::atomic<uint64_t>[]> verified_;  // bit i: block i is good in the cache
    std::unique_ptr<std::atomic<uint64_t>[]> held_;      // bit i: held(i)
    bool all_held_ = false;
    std::atomic<uint64_t> seen_epoch_{0};                // the cache's epoch verified_ holds for
    // With a bound: block i's last read (a tick of use_clock_), the order eviction follows, and
    // the bytes written to the cache since the bound was last checked.
    std::unique_ptr<std::atomic<uint32_t>[]> last_use_;
    std::atomic<uint32_t> use_clock_{0};
    std::atomic<uint64_t> written_{0};
    std::mutex evict_mutex_;  // one eviction at a time

    std::mutex auth_mutex_;         // one re-authentication at a time
    uint64_t auth_generation_ = 0;  // headers replaced this many times (under auth_mutex_)
    std::mutex mutex_;  // guards in_flight_ and the readahead state
    std::condition_variable landed_;
    std::set<std::size_t> in_flight_;
    // Sequential readers, several at once (interleaved readers of different files): for each,
    // the block after its last fetch and the readahead its next sequential fetch gets.
    struct Stream {
        std::size_t next = SIZE_MAX;
        uint64_t window = 0;
        uint64_t last_use = 0;
    };
    static constexpr std::size_t kStreams = 16;
    Stream streams_[kStreams];
    uint64_t stream_clock_ = 0;

    // Runs of blocks to prefetch, oldest first (under mutex_), and the threads that fetch
    // them: last, so they are stopped and joined before anything they use goes.
    std::deque<std::pair<std::size_t, std::size_t>> prefetch_queue_;
    std::condition_variable_any prefetch_ready_;
    std::vector<std::jthread> prefetchers_;
};

}  // namespace packfs::remote
