#include "pack/writer/stream_writer.hpp"

#include <algorithm>
#include <cstring>

#include "pack/format/codec.hpp"
#include "pack/format/digest.hpp"

namespace packfs::pack {

namespace {

bool all_zero(std::span<const std::byte> bytes) noexcept {
    return !bytes.empty() && bytes[0] == std::byte{0} &&
           std::memcmp(bytes.data(), bytes.data() + 1, bytes.size() - 1) == 0;
}

BlockDigest digest_of(std::span<const std::byte> stored) noexcept {
    const Sha256Digest d = sha256(stored);
    BlockDigest out;
    std::memcpy(out.data(), d.data(), out.size());
    return out;
}

}  // namespace

StreamWriter::StreamWriter(OutputFile& out, Codec codec, int level, uint32_t block_size,
                           unsigned jobs, bool holes, bool digests)
    : out_(out),
      codec_(codec),
      holes_(holes),
      digesting_(digests && holes),
      level_(level),
      block_size_(block_size),
      window_(4 * std::size_t{std::max(1u, jobs)}) {
    if (!blocked()) return;
    current_.reserve(block_size_);
    if (codec_ == Codec::none) return;  // raw blocks with holes: written by the caller's thread
    for (unsigned i = 0; i < std::max(1u, jobs); ++i) workers_.emplace_back([this] { work(); });
}

StreamWriter::~StreamWriter() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    work_ready_.notify_all();
    workers_.clear();  // joins
}

// A worker: claims the oldest block nobody compresses yet, compresses it outside the lock.
// std::deque keeps the addresses of its elements while the writer pushes at the back and pops
// at the front, and a block is popped only once it is done, so the reference stays valid.
void StreamWriter::work() {
    std::unique_lock lock(mutex_);
    for (;;) {
        work_ready_.wait(lock, [&] { return stopping_ || next_to_compress_ < in_flight_.size(); });
        if (stopping_) return;
        Block& block = in_flight_[next_to_compress_++];
        lock.unlock();
        block.hole = block.hole || (holes_ && all_zero(block.raw));
        if (!block.hole)
            block.smaller = compress_block(codec_, level_, block.raw, block.compressed);
        if (digesting_) {
            block.digest = block.hole ? digest_of({})
                                      : digest_of(block.smaller ? block.compressed : block.raw);
        }
        lock.lock();
        block.done = true;
        block_done_.notify_all();
    }
}

void StreamWriter::submit(bool hole) {
    {
        std::lock_guard lock(mutex_);
        in_flight_.push_back(
            Block{hole ? std::vector<std::byte>{} : std::move(current_), {}, false, hole, false});
    }
    work_ready_.notify_one();
    if (hole) return;  // current_ was not handed over
    current_ = {};
    current_.reserve(block_size_);
}

// Writes the finished blocks at the front, in order, waiting for the front one while more than
// `keep_at_most` blocks are in flight.
Result<void> StreamWriter::write_ready(std::size_t keep_at_most) {
    std::unique_lock lock(mutex_);
    for (;;) {
        if (in_flight_.empty()) return {};
        if (!in_flight_.front().done) {
            if (in_flight_.size() <= keep_at_most) return {};
            block_done_.wait(lock, [&] { return in_flight_.front().done; });
        }
        Block block = std::move(in_flight_.front());
        in_flight_.pop_front();
        --next_to_compress_;  // every claimed block is at or after the front
        lock.unlock();
        if (block.hole) {
            wrote_holes_ = true;
        } else {
            const auto& stored = block.smaller ? block.compressed : block.raw;
            if (auto r = out_.append(stored); !r) return r;
            stored_bytes_ += stored.size();
        }
        offsets_.push_back(stored_bytes_);
        if (digesting_) digests_.push_back(block.digest);
        lock.lock();
    }
}

Result<void> StreamWriter::put_block(std::span<const std::byte> block) {
    const bool hole = all_zero(block);
    if (hole) {
        wrote_holes_ = true;
    } else {
        if (auto r = out_.append(block); !r) return r;
        stored_bytes_ += block.size();
    }
    offsets_.push_back(stored_bytes_);
    if (digesting_) digests_.push_back(digest_of(hole ? std::span<const std::byte>() : block));
    return {};
}

Result<void> StreamWriter::put(std::span<const std::byte> bytes) {
    stream_bytes_ += bytes.size();
    if (!blocked()) {
        stored_bytes_ += bytes.size();
        return out_.append(bytes);
    }
    while (!bytes.empty()) {
        if (codec_ == Codec::none && current_.empty() && bytes.size() >= block_size_) {
            // A whole raw block straight from the caller's bytes, without a copy.
            if (auto r = put_block(bytes.first(block_size_)); !r) return r;
            bytes = bytes.subspan(block_size_);
            continue;
        }
        std::size_t room = block_size_ - current_.size();
        std::size_t n = std::min(room, bytes.size());
        current_.insert(current_.end(), bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
        bytes = bytes.subspan(n);
        if (current_.size() == block_size_) {
            if (codec_ == Codec::none) {
                if (auto r = put_block(current_); !r) return r;
                current_.clear();
                continue;
            }
            submit();
            if (auto r = write_ready(window_); !r) return r;
        }
    }
    return {};
}

Result<void> StreamWriter::put_zeros(uint64_t count) {
    static constexpr std::byte kZeros[4096]{};
    auto put_some = [&](uint64_t n) -> Result<void> {
        while (n > 0) {
            const auto part = static_cast<std::size_t>(std::min<uint64_t>(n, sizeof kZeros));
            if (auto r = put({kZeros, part}); !r) return r;
            n -= part;
        }
        return {};
    };
    if (!holes_) return put_some(count);
    // Up to the next block boundary as bytes, then whole blocks as holes, then the rest.
    const uint64_t head = std::min<uint64_t>(count, (block_size_ - current_.size()) % block_size_);
    if (auto r = put_some(head); !r) return r;
    count -= head;
    for (; count >= block_size_; count -= block_size_) {
        stream_bytes_ += block_size_;
        if (codec_ == Codec::none) {
            wrote_holes_ = true;
            offsets_.push_back(stored_bytes_);
            if (digesting_) digests_.push_back(digest_of({}));
            continue;
        }
        submit(/*hole=*/true);
        if (auto r = write_ready(window_); !r) return r;
    }
    return put_some(count);
}

Result<std::vector<uint64_t>> StreamWriter::finish() {
    if (!blocked()) return std::vector<uint64_t>{};
    if (codec_ == Codec::none) {
        if (!current_.empty()) {
            if (auto r = put_block(current_); !r) return std::unexpected(r.error());
            current_.clear();
        }
        // No hole met: the stream was written as a raw one, and is described as one.
        if (!wrote_holes_) return std::vector<uint64_t>{};
        return std::move(offsets_);
    }
    if (!current_.empty()) submit();
    if (auto r = write_ready(0); !r) return std::unexpected(r.error());
    return std::move(offsets_);
}

}  // namespace packfs::pack
