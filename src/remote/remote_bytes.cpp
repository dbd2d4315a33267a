#include "remote/remote_bytes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "pack/format/digest.hpp"
#include "remote/log_limit.hpp"
#include "remote/remote_bytes_detail.hpp"

namespace packfs::remote {

using detail::each_run;
using detail::fetch_failed;

HttpPackBytes::HttpPackBytes(std::string url, FetchOptions options)
    : url_(std::move(url)), options_(std::move(options)), http_(options_.connections) {
    http_.set_headers(options_.headers);
}

std::function<void(std::string_view)> remote_log(std::function<void(std::string_view)> log) {
    if (!log) {
        log = [](std::string_view line) {
            static std::mutex m;  // one line at a time from every thread
            std::lock_guard lock(m);
            std::fprintf(stderr, "packfs: remote: %.*s\n", static_cast<int>(line.size()),
                         line.data());
        };
    }
    return rate_limited(std::move(log));
}

void HttpPackBytes::set_cache(CacheFile cache, bool prefer_cache) {
    cache_ = std::move(cache);
    prefer_cache_ = prefer_cache;
}

Result<void> HttpPackBytes::get(uint64_t offset, std::span<std::byte> out,
                                Clock::time_point deadline, const std::stop_token& stop) {
    uint64_t total = 0;
    HttpFailure why;
    uint64_t generation = 0;
    if (options_.reauthorize) {
        std::lock_guard lock(auth_mutex_);
        generation = auth_generation_;
    }
    bool ok = http_.get_range(url_, offset, out, deadline, total, why, stop);
    if (!ok && why.code == EACCES && options_.reauthorize) {
        // Refused: a registry's token that expired or was revoked. New headers (unless
        // another thread got them since this request went out), then once more.
        bool fresh = true;
        {
            std::lock_guard lock(auth_mutex_);
            if (auth_generation_ == generation) {
                auto headers = options_.reauthorize();
                if (headers) {
                    http_.set_headers(std::move(*headers));
                    ++auth_generation_;
                    log(fmt::format("{}: refused (HTTP 401/403); authenticated again", url_));
                } else {
                    fresh = false;
                    why.detail +=
                        fmt::format("; authenticating again: {}", headers.error().message());
                }
            }
        }
        if (fresh) ok = http_.get_range(url_, offset, out, deadline, total, why, stop);
    }
    if (!ok) {
        std::string line =
            fmt::format("{}: bytes {}-{}: {}", url_, offset, offset + out.size() - 1, why.detail);
        // The pack being closed is nothing that went wrong: not logged.
        if (why.code != ECANCELED) log(line);
        return fetch_failed(why.code, std::move(line));
    }
    if (size_ == 0) {  // only while opening, before any other thread reads
        size_ = total;
    } else if (total != size_) {
        std::string line = fmt::format("{}: the resource is now {} bytes, the pack opened was {}",
                                       url_, total, size_);
        log(line);
        return fetch_failed(EIO, std::move(line));
    }
    return {};
}

Result<void> HttpPackBytes::read(uint64_t offset, std::span<std::byte> out) {
    if (out.empty()) return {};
    // A warm open: from the cache when it holds all of it (metadata fetched by block leaves
    // holes in the region, which would read as zeros), else from the server.
    if (prefer_cache_ && cache_.valid() && cache_.read_held(offset, out) == out.size()) return {};
    const auto deadline =
        Clock::now() + (options_.open_timeout.count() > 0
                            ? std::min(options_.open_timeout, options_.timeout)
                            : options_.timeout);
    if (size_ == 0 && offset == 0) {
        // The first request: the size is not known yet, and a pack smaller than what is asked
        // answers 416. Ask for the first byte alone when the whole header would not fit.
        uint64_t total = 0;
        HttpFailure why;
        if (!http_.get_range(url_, 0, out, deadline, total, why)) {
            if (why.detail.starts_with("HTTP 416")) {
                return std::unexpected(Error::corrupt(
                    "open_pack", url_,
                    Corruption{0, out.size(), 0, "resource size (shorter than a pack header)"}));
            }
            // With a cached copy to fall back on, the open says what it did instead.
            if (options_.open_timeout.count() == 0)
                log(fmt::format("{}: bytes 0-{}: {}", url_, out.size() - 1, why.detail));
            return fail(why.code, "open_pack", fmt::format("{} ({})", url_, why.detail));
        }
        size_ = total;
        return {};
    }
    if (auto got = get(offset, out, deadline); !got)
        return std::unexpected(
            got.error().relabeled("open_pack", fmt::format("{} (fetching the metadata)", url_)));
    if (cache_.valid()) cache_.write(offset, out);  // checked by the reader before any use
    return {};
}

std::size_t HttpPackBytes::cached_metadata(uint64_t offset, std::span<std::byte> out) {
    return cache_.valid() ? cache_.read_held(offset, out) : 0;
}

Result<void> HttpPackBytes::fetch_metadata(uint64_t offset, std::span<std::byte> out) {
    if (out.empty()) return {};
    if (auto got = get(offset, out, Clock::now() + options_.timeout); !got)
        return std::unexpected(got.error().relabeled(
            "read", fmt::format("{} (metadata bytes {}-{})", url_, offset, offset + out.size() - 1)));
    return {};
}

void HttpPackBytes::keep_metadata(uint64_t offset, std::span<const std::byte> bytes) {
    if (cache_.valid()) cache_.write(offset, bytes);
}

void HttpPackBytes::reject_metadata(uint64_t, std::string_view why) {
    log(fmt::format("{}: {}", url_, why));  // nothing was kept: only the log to tell
}

void HttpPackBytes::set_blocks(std::vector<pack::StoredBlockRef> blocks) {
    blocks_ = std::move(blocks);
    ends_.resize(blocks_.size());
    for (std::size_t i = 0; i < blocks_.size(); ++i)
        ends_[i] = blocks_[i].offset + blocks_[i].length;
    verified_ = std::make_unique<std::atomic<uint64_t>[]>((blocks_.size() + 63) / 64);
    if (cache_.valid() && cache_.existed() && !blocks_.empty()) {
        // What an earlier run (or another process) left in the cache file: a few lseeks for
        // a file that holds most of the pack.
        held_ = std::make_unique<std::atomic<uint64_t>[]>((blocks_.size() + 63) / 64);
        std::size_t held = 0, stored = 0;
        for (const auto& [from, to] : cache_.data_extents(blocks_.front().offset, ends_.back())) {
            auto i = static_cast<std::size_t>(std::upper_bound(ends_.begin(), ends_.end(), from) -
                                              ends_.begin());
            for (; i < blocks_.size() && ends_[i] <= to; ++i) {
                if (blocks_[i].offset >= from && blocks_[i].length != 0) {
                    held_[i / 64].fetch_or(uint64_t{1} << (i % 64), std::memory_order_relaxed);
                    ++held;
                }
            }
        }
        for (const pack::StoredBlockRef& b : blocks_) stored += b.length != 0 ? 1 : 0;
        all_held_ = held == stored;
    }
    if (options_.cache_bound != 0) {
        last_use_ = std::make_unique<std::atomic<uint32_t>[]>(blocks_.size());
        // The first read checks the bound: the file may hold more than it allows already (an
        // earlier run's blocks, another process's, or a bound lowered since).
        written_.store(options_.cache_bound, std::memory_order_relaxed);
    }
    prefer_cache_ = false;
}

void HttpPackBytes::forget_verified() noexcept {
    for (std::size_t w = 0; w < (blocks_.size() + 63) / 64; ++w) {
        verified_[w].store(0, std::memory_order_release);
        if (held_ != nullptr) held_[w].store(0, std::memory_order_release);
    }
}

uint64_t HttpPackBytes::settle_epoch() noexcept {
    uint64_t epoch = cache_.epoch();
    while (epoch % 2 == 1) {  // an eviction is punching holes: wait for it to finish
        cache_.wait_for_eviction();
        epoch = cache_.epoch();
    }
    if (epoch != seen_epoch_.load(std::memory_order_acquire)) {
        // Blocks were evicted (by this process or another): any checked one may be a hole now.
        forget_verified();
        seen_epoch_.store(epoch, std::memory_order_release);
    }
    return epoch;
}

void HttpPackBytes::keep_within_bound() noexcept try {
    std::unique_lock one(evict_mutex_, std::try_to_lock);
    if (!one) return;  // another thread is at it
    written_.store(0, std::memory_order_relaxed);
    const uint64_t bound = options_.cache_bound;
    (void)prune_cache(options_.cache_dir, bound);
    auto packs = list_cache(options_.cache_dir);
    if (!packs) return;
    uint64_t total = 0;
    for (const CachedPack& p : *packs) total += p.on_disk;
    if (total <= bound) return;
    const uint64_t goal = total - bound / 4 * 3;  // give back down to three quarters
    // This pack's blocks that have data in the file, never read here first, then the least
    // recently read. Sorted on a copy of their last uses: readers go on updating those, and a
    // sort whose keys change under it is no ordering at all (it runs off the array).
    std::vector<std::pair<uint32_t, std::size_t>> present;  // (last use, block)
    for (const auto& [from, to] : cache_.data_extents(blocks_.front().offset, ends_.back())) {
        auto i = static_cast<std::size_t>(std::upper_bound(ends_.begin(), ends_.end(), from) -
                                          ends_.begin());
        for (; i < blocks_.size() && blocks_[i].offset < to; ++i) {
            if (blocks_[i].length != 0 && (present.empty() || present.back().second < i))
                present.emplace_back(last_use_[i].load(std::memory_order_relaxed), i);
        }
    }
    std::sort(present.begin(), present.end());
    std::vector<std::size_t> victims;
    {
        // Claimed like a fetch, so no thread of this process fetches or checks one meanwhile.
        std::lock_guard lock(mutex_);
        uint64_t chosen = 0;
        for (const auto& entry : present) {
            const std::size_t i = entry.second;
            if (chosen >= goal) break;
            if (in_flight_.contains(i)) continue;
            in_flight_.insert(i);
            victims.push_back(i);
            chosen += blocks_[i].length;
        }
    }
    std::sort(victims.begin(), victims.end());
    std::vector<std::pair<uint64_t, uint64_t>> ranges;  // adjacent blocks as one range
    for (std::size_t i : victims) {
        if (!ranges.empty() && ranges.back().first + ranges.back().second == blocks_[i].offset)
            ranges.back().second += blocks_[i].length;
        else
            ranges.emplace_back(blocks_[i].offset, blocks_[i].length);
    }
    auto evicted = cache_.evict(ranges);
    unclaim(victims);
    if (!evicted)  // the blocks stay, checked again when next read; the bound is exceeded
        log(
            fmt::format("{}: the cache takes {} bytes, over its bound of {}, and evicting "
                        "{} blocks failed: {}",
                        url_, total, bound, victims.size(), evicted.error().message()));
} catch (const std::bad_alloc&) {
}

bool HttpPackBytes::matches(std::size_t i, std::span<const std::byte> bytes) const noexcept {
    const pack::Sha256Digest got = pack::sha256(bytes);
    return std::memcmp(got.data(), blocks_[i].digest.data(), got.size()) == 0;
}

std::shared_ptr<std::vector<std::byte>> HttpPackBytes::from_cache(std::size_t i) {
    if (!cache_.valid()) return nullptr;
    // What the file holds as data only: a block never fetched is a hole, and reading it as
    // zeros to hash them was a read and a SHA-256 of every block fetched cold. A block held at
    // open is read at once (a hole punched since reads as zeros, which do not match).
    auto bytes = std::make_shared<std::vector<std::byte>>(blocks_[i].length);
    const bool read = held(i) ? cache_.read(blocks_[i].offset, *bytes)
                              : cache_.read_held(blocks_[i].offset, *bytes) == bytes->size();
    if (read && matches(i, *bytes)) return bytes;
    if (held_ != nullptr)
        held_[i / 64].fetch_and(~(uint64_t{1} << (i % 64)), std::memory_order_acq_rel);
    return nullptr;
}

void HttpPackBytes::unclaim(std::span<const std::size_t> blocks) {
    {
        std::lock_guard lock(mutex_);
        for (std::size_t i : blocks) in_flight_.erase(i);
    }
    landed_.notify_all();
}

Result<void> HttpPackBytes::read_data(uint64_t offset, std::span<std::byte> out,
                                      uint64_t content_end) {
    // A data read that fails is EIO, what a disk's failure is, whatever the cause: the cause,
    // the URL and the bytes are its detail.
    auto done = read_blocks(offset, out, content_end);
    if (!done && done.error().code() != EIO)
        return fetch_failed(EIO, done.error().detail());
    return done;
}

Result<void> HttpPackBytes::read_blocks(uint64_t offset, std::span<std::byte> out,
                                        uint64_t content_end) try {
    if (out.empty()) return {};
    const uint64_t end = offset + out.size();
    // Outside the data blocks (the header page's padding, the gap before the metadata: what
    // verify reads to check they are zero) nothing is cached or checked by digest.
    if (blocks_.empty() || end <= blocks_.front().offset || offset >= ends_.back())
        return get(offset, out, Clock::now() + options_.timeout);
    // The blocks [first, last] hold the range; holes (length 0) hold nothing and are skipped.
    const auto first = static_cast<std::size_t>(
        std::upper_bound(ends_.begin(), ends_.end(), offset) - ends_.begin());
    std::size_t last = first;
    for (std::size_t i = first; i < blocks_.size() && blocks_[i].offset < end; ++i) last = i;
    if (first >= blocks_.size() || ends_[last] < end) {
        std::string line =
            fmt::format("{}: bytes {}-{} lie outside the data blocks", url_, offset, end - 1);
        log(line);
        return fetch_failed(EIO, std::move(line));
    }
    // Blocks checked before are read from the cache file; an eviction that ran meanwhile (the
    // epoch moved) may have punched one, so then the read starts over, checking again.
    for (int attempt = 0;; ++attempt) {
        const uint64_t epoch = settle_epoch();
        std::vector<std::size_t> missing;
        for (std::size_t i = first; i <= last; ++i)
            if (blocks_[i].length != 0 && !verified(i)) missing.push_back(i);
        std::vector<Fetched> fetched;
        std::vector<std::size_t> direct;  // read and checked in `out` already
        if (!missing.empty() && held_ != nullptr) read_held(missing, offset, out, direct);
        if (!missing.empty()) {
            auto got = resolve(std::move(missing), fetched, content_end,
                               Clock::now() + options_.timeout);
            if (!got) return got;
        }
        bool from_cache = false;
        for (std::size_t i = first; i <= last; ++i) {
            const pack::StoredBlockRef& b = blocks_[i];
            const uint64_t from = std::max(offset, b.offset), to = std::min(end, ends_[i]);
            if (from >= to || std::binary_search(direct.begin(), direct.end(), i)) continue;
            auto part = out.subspan(from - offset, to - from);
            auto mine = std::find_if(fetched.begin(), fetched.end(),
                                     [i](const Fetched& f) { return f.index == i; });
            if (mine != fetched.end()) {
                std::memcpy(part.data(), mine->buffer->data() + mine->at + (from - b.offset),
                            part.size());
            } else if (cache_.read(from, part)) {
                from_cache = true;
            } else {
                std::string line =
                    fmt::format("{}: the cache file could not be read at {}", url_, from);
                log(line);
                return fetch_failed(EIO, std::move(line));
            }
        }
        if (!from_cache || cache_.epoch() == epoch) break;
        if (attempt == 100) {  // evictions back to back without end: a bound far too small
            std::string line = fmt::format(
                "{}: bytes {}-{} evicted from the cache 100 times while being read", url_, offset,
                end - 1);
            log(line);
            return fetch_failed(EIO, std::move(line));
        }
    }
    if (last_use_ != nullptr) {
        const uint32_t now = use_clock_.fetch_add(1, std::memory_order_relaxed) + 1;
        for (std::size_t i = first; i <= last; ++i)
            last_use_[i].store(now, std::memory_order_relaxed);
        // At least a block's worth between checks: with a bound under 16 bytes, bound / 16 is
        // 0, and every read would list the cache directory.
        constexpr uint64_t kMinCheckBytes = 64 * 1024;
        if (written_.load(std::memory_order_relaxed) >=
            std::max(options_.cache_bound / 16, kMinCheckBytes))
            keep_within_bound();
    }
    return {};
} catch (const std::bad_alloc&) {
    return fail(ENOMEM, "read");
}

void HttpPackBytes::read_held(std::vector<std::size_t>& missing, uint64_t offset,
                              std::span<std::byte> out, std::vector<std::size_t>& direct) {
    const uint64_t end = offset + out.size();
    std::vector<std::size_t> mine;
    {
        // Claimed as a fetch would claim them: no eviction by this process punches them and
        // no other thread checks them meanwhile (one that wants them waits, then has them).
        std::lock_guard lock(mutex_);
        for (std::size_t i : missing) {
            if (held(i) && blocks_[i].offset >= offset && ends_[i] <= end && !verified(i) &&
                !in_flight_.contains(i)) {
                in_flight_.insert(i);
                mine.push_back(i);
            }
        }
    }
    if (mine.empty()) return;
    {
        // And locked against another process's eviction, as a fetch is.
        const uint64_t begin = blocks_[mine.front()].offset;
        const auto lock = cache_.lock(begin, ends_[mine.back()] - begin);
        for (std::size_t i : mine) {
            auto part = out.subspan(blocks_[i].offset - offset, blocks_[i].length);
            if (cache_.read(blocks_[i].offset, part) && matches(i, part)) {
                mark_verified(i);
                direct.push_back(i);
            } else {  // a hole punched since, or damage: fetched as a missing block
                held_[i / 64].fetch_and(~(uint64_t{1} << (i % 64)), std::memory_order_acq_rel);
            }
        }
    }
    unclaim(mine);
    std::erase_if(missing, [&](std::size_t i) {
        return std::binary_search(direct.begin(), direct.end(), i);
    });
}
}  // namespace packfs::remote
