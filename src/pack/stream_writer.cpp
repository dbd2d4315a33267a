#include "pack/stream_writer.hpp"

#include <algorithm>

#include "pack/codec.hpp"

namespace packfs::pack {

StreamWriter::StreamWriter(OutputFile& out, Codec codec, int level, uint32_t block_size,
                           unsigned jobs)
    : out_(out),
      codec_(codec),
      level_(level),
      block_size_(block_size),
      window_(4 * std::size_t{std::max(1u, jobs)}) {
    if (codec_ == Codec::none) return;
    current_.reserve(block_size_);
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
        block.smaller = compress_block(codec_, level_, block.raw, block.compressed);
        lock.lock();
        block.done = true;
        block_done_.notify_all();
    }
}

void StreamWriter::submit() {
    {
        std::lock_guard lock(mutex_);
        in_flight_.push_back(Block{std::move(current_), {}, false, false});
    }
    work_ready_.notify_one();
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
        const auto& stored = block.smaller ? block.compressed : block.raw;
        if (auto r = out_.append(stored); !r) return r;
        stored_bytes_ += stored.size();
        offsets_.push_back(stored_bytes_);
        lock.lock();
    }
}

Result<void> StreamWriter::put(std::span<const std::byte> bytes) {
    stream_bytes_ += bytes.size();
    if (codec_ == Codec::none) {
        stored_bytes_ += bytes.size();
        return out_.append(bytes);
    }
    while (!bytes.empty()) {
        std::size_t room = block_size_ - current_.size();
        std::size_t n = std::min(room, bytes.size());
        current_.insert(current_.end(), bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
        bytes = bytes.subspan(n);
        if (current_.size() == block_size_) {
            submit();
            if (auto r = write_ready(window_); !r) return r;
        }
    }
    return {};
}

Result<void> StreamWriter::put_zeros(uint64_t count) {
    static constexpr std::byte kZeros[4096]{};
    while (count > 0) {
        std::size_t n = static_cast<std::size_t>(std::min<uint64_t>(count, sizeof kZeros));
        if (auto r = put({kZeros, n}); !r) return r;
        count -= n;
    }
    return {};
}

Result<std::vector<uint64_t>> StreamWriter::finish() {
    if (codec_ == Codec::none) return std::vector<uint64_t>{};
    if (!current_.empty()) submit();
    if (auto r = write_ready(0); !r) return std::unexpected(r.error());
    return std::move(offsets_);
}

}  // namespace packfs::pack
