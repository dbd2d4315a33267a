#include "pack/stream_writer.hpp"

#include <algorithm>

#include "pack/codec.hpp"
#include "pack/parallel.hpp"

namespace packfs::pack {

StreamWriter::StreamWriter(OutputFile& out, Codec codec, int level, uint32_t block_size,
                           unsigned jobs)
    : out_(out), codec_(codec), level_(level), block_size_(block_size), jobs_(std::max(1u, jobs)) {
    if (codec_ != Codec::none) current_.reserve(block_size_);
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
            batch_.push_back(std::move(current_));
            current_ = {};
            current_.reserve(block_size_);
            // A batch of a few blocks per thread keeps every core busy and memory bounded.
            if (batch_.size() >= 4 * jobs_) {
                if (auto r = flush_batch(); !r) return r;
            }
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

Result<void> StreamWriter::flush_batch() {
    std::vector<std::vector<std::byte>> compressed(batch_.size());
    std::vector<char> ok(batch_.size(), 0);
    auto compress = [&](std::size_t i) -> Result<void> {
        ok[i] = compress_block(codec_, level_, batch_[i], compressed[i]) ? 1 : 0;
        return {};
    };
    if (auto r = parallel_for(batch_.size(), jobs_, compress, [] {}); !r) return r;
    for (std::size_t i = 0; i < batch_.size(); ++i) {
        // Stored raw when compression did not make it smaller (the format's rule).
        const auto& stored = ok[i] ? compressed[i] : batch_[i];
        if (auto r = out_.append(stored); !r) return r;
        stored_bytes_ += stored.size();
        offsets_.push_back(stored_bytes_);
    }
    batch_.clear();
    return {};
}

Result<std::vector<uint64_t>> StreamWriter::finish() {
    if (codec_ == Codec::none) return std::vector<uint64_t>{};
    if (!current_.empty()) batch_.push_back(std::move(current_));
    current_ = {};
    if (auto r = flush_batch(); !r) return std::unexpected(r.error());
    return std::move(offsets_);
}

}  // namespace packfs::pack
