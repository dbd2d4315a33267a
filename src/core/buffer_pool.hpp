// Byte buffers shared by the threads that need one for the length of a call (a pack's stored
// block read with pread, a FUSE read's reply), instead of one kept per thread for good: a FUSE
// daemon runs up to 64 worker threads, and a buffer of 128 KiB or more that each of them kept
// made most of its private memory (docs/FUSE.md, "Memory").
//
// A call takes a buffer (an idle one, or a new empty one) and gives it back when its Lease ends.
// At most `max_idle` buffers stay idle, each of at most `max_kept` bytes; others are freed. So
// the buffers alive are those of the calls running now, plus max_idle. One mutex, held for a
// pointer swap: a buffer is taken once per block read or per request, far less often than the
// work done with it.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace packfs {

class BufferPool {
public:
    using Buffer = std::vector<std::byte>;

    BufferPool(std::size_t max_idle, std::size_t max_kept)
        : max_idle_(max_idle), max_kept_(max_kept) {
        idle_.reserve(max_idle);
    }
    BufferPool(const BufferPool&) = delete;
    BufferPool& operator=(const BufferPool&) = delete;

    class Lease {
    public:
        Lease(Lease&& other) noexcept
            : pool_(std::exchange(other.pool_, nullptr)), buffer_(std::move(other.buffer_)) {}
        Lease(const Lease&) = delete;
        Lease& operator=(const Lease&) = delete;
        Lease& operator=(Lease&&) = delete;
        ~Lease() {
            if (pool_ != nullptr) pool_->give(std::move(buffer_));
        }
        // The buffer, `size` bytes long (its bytes unspecified).
        std::byte* resize(std::size_t size) {
            if (buffer_->size() < size) buffer_->resize(size);
            return buffer_->data();
        }

    private:
        friend class BufferPool;
        Lease(BufferPool* pool, std::unique_ptr<Buffer> buffer)
            : pool_(pool), buffer_(std::move(buffer)) {}
        BufferPool* pool_;
        std::unique_ptr<Buffer> buffer_;
    };

    Lease take() {
        {
            std::lock_guard lock(mutex_);
            if (!idle_.empty()) {
                std::unique_ptr<Buffer> buffer = std::move(idle_.back());
                idle_.pop_back();
                return Lease(this, std::move(buffer));
            }
        }
        return Lease(this, std::make_unique<Buffer>());
    }

    // Buffers idle now (for tests).
    std::size_t idle() const {
        std::lock_guard lock(mutex_);
        return idle_.size();
    }

private:
    void give(std::unique_ptr<Buffer> buffer) noexcept {
        if (buffer == nullptr || buffer->capacity() > max_kept_) return;
        std::lock_guard lock(mutex_);
        if (idle_.size() < max_idle_) idle_.push_back(std::move(buffer));
    }

    const std::size_t max_idle_, max_kept_;
    mutable std::mutex mutex_;
    std::vector<std::unique_ptr<Buffer>> idle_;
};

}  // namespace packfs
