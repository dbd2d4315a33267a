#include "core/io.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <limits>
#include <memory>
#include <mutex>

namespace packfs::io {

namespace {

// The hook: a shared_ptr copied out under a mutex, so a hook being replaced stays alive for
// the calls already running it. `installed` keeps the no-hook path to one relaxed load.
struct HookSlot {
    std::atomic<bool> installed{false};
    std::mutex mu;
    std::shared_ptr<const FaultHook> hook;
};

HookSlot& slot() {
    static HookSlot s;
    return s;
}

// The hook's answer for (op, what): 0 to go ahead.
int ask_hook(IoOp op, std::string_view what) {
    HookSlot& s = slot();
    if (!s.installed.load(std::memory_order_relaxed)) return 0;
    std::shared_ptr<const FaultHook> hook;
    {
        std::lock_guard lock(s.mu);
        hook = s.hook;
    }
    const int answer = hook ? (*hook)(op, what) : 0;
    // kShortWrite (or any negative answer) means something only for a write.
    return answer < 0 && op != IoOp::write ? EIO : answer;
}

// pwrite (offset >= 0) or write (offset < 0) of every byte, EINTR retried.
Result<void> write_loop(int fd, const std::byte* data, std::size_t size, int64_t offset,
                        std::string_view what) {
    while (size > 0) {
        const ssize_t n = offset >= 0 ? ::pwrite(fd, data, size, static_cast<off_t>(offset))
                                      : ::write(fd, data, size);
        if (n < 0) {
            if (errno == EINTR) continue;
            return fail(errno, "write", what);
        }
        if (n == 0) return fail(EIO, "write", what);  // no progress: never loop forever
        data += n;
        size -= static_cast<std::size_t>(n);
        if (offset >= 0) offset += n;
    }
    return {};
}

Result<void> hooked_write(int fd, std::span<const std::byte> data, int64_t offset,
                          std::string_view what) {
    if (const int injected = ask_hook(IoOp::write, what); injected != 0) {
        if (injected != kShortWrite) return fail(injected > 0 ? injected : EIO, "write", what);
        if (auto r = write_loop(fd, data.data(), data.size() / 2, offset, what); !r) return r;
        return fail(ENOSPC, "write", what);
    }
    return write_loop(fd, data.data(), data.size(), offset, what);
}

}  // namespace

void set_fault_hook(FaultHook hook) {
    HookSlot& s = slot();
    std::shared_ptr<const FaultHook> next =
        hook ? std::make_shared<const FaultHook>(std::move(hook)) : nullptr;
    std::lock_guard lock(s.mu);
    s.hook = std::move(next);
    s.installed.store(s.hook != nullptr, std::memory_order_relaxed);
}

Result<void> pwrite_all(int fd, std::span<const std::byte> data, uint64_t offset,
                        std::string_view what) {
    if (offset > static_cast<uint64_t>(INT64_MAX)) return fail(EFBIG, "write", what);
    return hooked_write(fd, data, static_cast<int64_t>(offset), what);
}

Result<std::size_t> pread_full(int fd, std::span<std::byte> out, uint64_t offset,
                               std::string_view what) {
    std::size_t done = 0;
    while (done < out.size()) {
        const ssize_t n =
            ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
        if (n < 0) {
            if (errno == EINTR) continue;
            return fail(errno, "read", what);
        }
        if (n == 0) break;
        done += static_cast<std::size_t>(n);
    }
    return done;
}

Result<uint64_t> copy_file_range_all(int in_fd, uint64_t in_offset, int out_fd, uint64_t out_offset,
                                     uint64_t length, std::string_view what) {
    constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<off_t>::max());
    if (in_offset > kMax || out_offset > kMax) return fail(EFBIG, "copy_file_range", what);
    uint64_t done = 0;
    do {  // at least one call: a copy of nothing still answers for the descriptors
        auto in = static_cast<off_t>(in_offset + done), out = static_cast<off_t>(out_offset + done);
        const auto want = static_cast<std::size_t>(std::min<uint64_t>(length - done, 1u << 30));
        const ssize_t n = ::copy_file_range(in_fd, &in, out_fd, &out, want, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            return fail(errno, "copy_file_range", what);
        }
        if (n == 0) break;
        done += static_cast<uint64_t>(n);
    } while (done < length);
    return done;
}

Result<void> write_all(int fd, std::span<const std::byte> data, std::string_view what) {
    return hooked_write(fd, data, -1, what);
}

Result<void> fdatasync(int fd, std::string_view what) {
    if (const int injected = ask_hook(IoOp::fsync, what); injected != 0)
        return fail(injected, "fdatasync", what);
    while (::fdatasync(fd) != 0) {
        if (errno != EINTR) return fail(errno, "fdatasync", what);
    }
    return {};
}

Result<void> fsync(int fd, std::string_view what) {
    if (const int injected = ask_hook(IoOp::fsync, what); injected != 0)
        return fail(injected, "fsync", what);
    while (::fsync(fd) != 0) {
        if (errno != EINTR) return fail(errno, "fsync", what);
    }
    return {};
}

Result<void> ftruncate(int fd, uint64_t size, std::string_view what) {
    if (const int injected = ask_hook(IoOp::truncate, what); injected != 0)
        return fail(injected, "ftruncate", what);
    if (size > static_cast<uint64_t>(INT64_MAX)) return fail(EFBIG, "ftruncate", what);
    while (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
        if (errno != EINTR) return fail(errno, "ftruncate", what);
    }
    return {};
}

Result<void> rename(const std::string& from, const std::string& to, std::string_view what) {
    if (const int injected = ask_hook(IoOp::rename, what); injected != 0)
        return fail(injected, "rename", what);
    if (std::rename(from.c_str(), to.c_str()) != 0) return fail(errno, "rename", what);
    return {};
}

Result<void> fsync_dir(const std::string& dir, std::string_view what) {
    if (const int injected = ask_hook(IoOp::fsync_dir, what); injected != 0)
        return fail(injected, "fsync_dir", what);
    int fd;
    do {
        fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) return fail(errno, "fsync_dir", what);
    int rc;
    while ((rc = ::fsync(fd)) != 0 && errno == EINTR) {
    }
    const int err = errno;
    ::close(fd);
    if (rc != 0) return fail(err, "fsync_dir", what);
    return {};
}

Result<void> step(std::string_view name) {
    if (const int injected = ask_hook(IoOp::step, name); injected != 0)
        return fail(injected, "step", name);
    return {};
}

}  // namespace packfs::io
