#include "pack/format/codec.hpp"

#include <lz4.h>
#include <lz4hc.h>
#include <zstd.h>

#include <array>
#include <climits>
#include <memory>
#include <mutex>

namespace packfs::pack {

namespace {

// One compression context per thread: creating a zstd context costs more than a small block.
ZSTD_CCtx* thread_zstd_cctx() {
    thread_local std::unique_ptr<ZSTD_CCtx, decltype(&ZSTD_freeCCtx)> ctx(ZSTD_createCCtx(),
                                                                          &ZSTD_freeCCtx);
    return ctx.get();
}

// Decompression contexts (96 KiB each with libzstd 1.5) are shared through a small pool rather
// than kept one per thread: a FUSE daemon has up to 64 worker threads, and each would keep its
// own for good. A decompression takes one (or makes one when none is idle) and gives it back; at
// most kIdleMax stay idle, so the contexts alive are the decompressions running now, plus that
// many.
class DctxPool {
public:
    ZSTD_DCtx* take() {
        {
            std::lock_guard lock(mutex_);
            if (count_ > 0) return idle_[--count_];
        }
        return ZSTD_createDCtx();
    }
    void give(ZSTD_DCtx* ctx) {
        {
            std::lock_guard lock(mutex_);
            if (count_ < idle_.size()) {
                idle_[count_++] = ctx;
                return;
            }
        }
        ZSTD_freeDCtx(ctx);
    }

private:
    static constexpr std::size_t kIdleMax = 8;
    std::mutex mutex_;
    std::array<ZSTD_DCtx*, kIdleMax> idle_{};
    std::size_t count_ = 0;
};

// Never destroyed: a thread may still decompress while the process exits.
DctxPool& dctx_pool() {
    static DctxPool* pool = new DctxPool();
    return *pool;
}

struct PooledDctx {
    ZSTD_DCtx* ctx = dctx_pool().take();
    PooledDctx() = default;
    PooledDctx(const PooledDctx&) = delete;
    PooledDctx& operator=(const PooledDctx&) = delete;
    ~PooledDctx() {
        if (ctx != nullptr) dctx_pool().give(ctx);
    }
};

}  // namespace

bool compress_block(Codec codec, int level, std::span<const std::byte> input,
                    std::vector<std::byte>& out) {
    switch (codec) {
        case Codec::zstd: {
            out.resize(ZSTD_compressBound(input.size()));
            ZSTD_CCtx* ctx = thread_zstd_cctx();
            if (!ctx) return false;
            std::size_t n = ZSTD_compressCCtx(ctx, out.data(), out.size(), input.data(),
                                              input.size(), level == 0 ? 3 : level);
            if (ZSTD_isError(n) || n >= input.size()) return false;
            out.resize(n);
            return true;
        }
        case Codec::lz4: {
            if (input.size() > static_cast<std::size_t>(LZ4_MAX_INPUT_SIZE)) return false;
            int src_size = static_cast<int>(input.size());
            out.resize(static_cast<std::size_t>(LZ4_compressBound(src_size)));
            const char* src = reinterpret_cast<const char*>(input.data());
            char* dst = reinterpret_cast<char*>(out.data());
            int capacity = static_cast<int>(out.size());
            // Level 0 or 1: the fast compressor; 2 and up: LZ4 HC at that level (lz4hc).
            int n = level <= 1 ? LZ4_compress_default(src, dst, src_size, capacity)
                               : LZ4_compress_HC(src, dst, src_size, capacity, level);
            if (n <= 0 || static_cast<std::size_t>(n) >= input.size()) return false;
            out.resize(static_cast<std::size_t>(n));
            return true;
        }
        case Codec::none:
            return false;
    }
    return false;
}

bool decompress_block(Codec codec, std::span<const std::byte> stored, std::span<std::byte> out) {
    switch (codec) {
        case Codec::zstd: {
            const PooledDctx pooled;
            if (!pooled.ctx) return false;
            std::size_t n = ZSTD_decompressDCtx(pooled.ctx, out.data(), out.size(), stored.data(),
                                                stored.size());
            return !ZSTD_isError(n) && n == out.size();
        }
        case Codec::lz4: {
            if (stored.size() > INT_MAX || out.size() > INT_MAX) return false;
            int n = LZ4_decompress_safe(reinterpret_cast<const char*>(stored.data()),
                                        reinterpret_cast<char*>(out.data()),
                                        static_cast<int>(stored.size()),
                                        static_cast<int>(out.size()));
            return n >= 0 && static_cast<std::size_t>(n) == out.size();
        }
        case Codec::none:
            return false;
    }
    return false;
}

const char* codec_name(Codec codec) noexcept {
    switch (codec) {
        case Codec::none: return "none";
        case Codec::zstd: return "zstd";
        case Codec::lz4: return "lz4";
    }
    return "unknown";
}

}  // namespace packfs::pack
