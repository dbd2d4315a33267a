#include "core/io.hpp"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
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

// What is installed: one word for both, so a call with neither pays one relaxed load.
constexpr unsigned kHookInstalled = 1;
constexpr unsigned kRecorderInstalled = 2;

// The hook: a shared_ptr copied out under a mutex, so a hook being replaced stays alive for
// the calls already running it. The recorder: set and called under `serial`, which a recorded
// call holds across its system call (see io.hpp).
struct HookSlot {
    std::atomic<unsigned> installed{0};
    std::mutex mu;
    std::shared_ptr<const FaultHook> hook;
    std::mutex serial;
    Recorder recorder;
};

HookSlot& slot() {
    static HookSlot s;
    return s;
}

unsigned installed() { return slot().installed.load(std::memory_order_relaxed); }

void set_installed(HookSlot& s, unsigned bit, bool on) {
    if (on)
        s.installed.fetch_or(bit, std::memory_order_relaxed);
    else
        s.installed.fetch_and(~bit, std::memory_order_relaxed);
}

// The hook's answer for (op, what): 0 to go ahead.
int ask_hook(unsigned active, IoOp op, std::string_view what) {
    if (!(active & kHookInstalled)) return 0;
    HookSlot& s = slot();
    std::shared_ptr<const FaultHook> hook;
    {
        std::lock_guard lock(s.mu);
        hook = s.hook;
    }
    const int answer = hook ? (*hook)(op, what) : 0;
    // kShortWrite (or any negative answer) means something only for a write.
    return answer < 0 && op != IoOp::write ? EIO : answer;
}

// `path` made absolute, with the symlinks of its directory resolved (the file itself may not
// exist yet, or any more): the name the recorder reports. As given when that fails.
std::string absolute_name(const std::string& path) {
    const auto slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "."
                            : slash == 0                 ? "/"
                                                         : path.substr(0, slash);
    const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    char resolved[PATH_MAX];
    if (::realpath(dir.c_str(), resolved) == nullptr) return path;
    const std::string base(resolved);
    return base == "/" ? "/" + name : base + "/" + name;
}

// The path a descriptor names now (/proc/self/fd), "" if it cannot be read.
std::string path_of(int fd) {
    char link[64], target[PATH_MAX];
    std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    const ssize_t n = ::readlink(link, target, sizeof target - 1);
    return n > 0 ? std::string(target, static_cast<std::size_t>(n)) : std::string();
}

uint64_t ino_of(int fd) {
    struct stat st {};
    return ::fstat(fd, &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

// One recorded call: while a recorder is installed, holds `serial` from before the system call
// until the event is reported (io.hpp). Without one it is empty and does nothing.
class Recording {
public:
    explicit Recording(unsigned active) {
        if (!(active & kRecorderInstalled)) return;
        lock_ = std::unique_lock(slot().serial);
        if (!slot().recorder) lock_.unlock();  // removed meanwhile
    }
    bool on() const noexcept { return lock_.owns_lock(); }
    void report(const IoEvent& event) const {
        if (on()) slot().recorder(event);
    }
    // An event about the file `fd` is open on.
    void report_fd(IoEventKind kind, int fd, IoEvent event = {}) const {
        if (!on()) return;
        const std::string path = path_of(fd);
        event.kind = kind;
        event.path = path;
        event.ino = ino_of(fd);
        slot().recorder(event);
    }

private:
    std::unique_lock<std::mutex> lock_;
};

// pwrite (offset >= 0) or write (offset < 0) of every byte, EINTR retried; `written` counts
// the bytes that went, on failure too.
Result<void> write_loop(int fd, const std::byte* data, std::size_t size, int64_t offset,
                        std::string_view what, std::size_t& written) {
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
        written += static_cast<std::size_t>(n);
        if (offset >= 0) offset += n;
    }
    return {};
}

// The write, recorded as the bytes it put where (a write at the position: where it was).
Result<void> recorded_write(unsigned active, int fd, std::span<const std::byte> data,
                            int64_t offset, std::string_view what) {
    const Recording recording(active);
    int64_t at = offset;
    if (recording.on() && at < 0) at = ::lseek(fd, 0, SEEK_CUR);
    std::size_t written = 0;
    auto r = write_loop(fd, data.data(), data.size(), offset, what, written);
    if (written > 0 && at >= 0) {
        IoEvent event;
        event.offset = static_cast<uint64_t>(at);
        event.data = data.first(written);
        recording.report_fd(IoEventKind::write, fd, event);
    }
    return r;
}

Result<void> hooked_write(int fd, std::span<const std::byte> data, int64_t offset,
                          std::string_view what) {
    const unsigned active = installed();
    if (const int injected = ask_hook(active, IoOp::write, what); injected != 0) {
        if (injected != kShortWrite) return fail(injected > 0 ? injected : EIO, "write", what);
        if (auto r = recorded_write(active, fd, data.first(data.size() / 2), offset, what); !r)
            return r;
        return fail(ENOSPC, "write", what);
    }
    return recorded_write(active, fd, data, offset, what);
}

}  // namespace

void set_fault_hook(FaultHook hook) {
    HookSlot& s = slot();
    std::shared_ptr<const FaultHook> next =
        hook ? std::make_shared<const FaultHook>(std::move(hook)) : nullptr;
    std::lock_guard lock(s.mu);
    s.hook = std::move(next);
    set_installed(s, kHookInstalled, s.hook != nullptr);
}

void set_recorder(Recorder recorder) {
    HookSlot& s = slot();
    std::lock_guard lock(s.serial);
    s.recorder = std::move(recorder);
    set_installed(s, kRecorderInstalled, static_cast<bool>(s.recorder));
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
    const unsigned active = installed();
    if (const int injected = ask_hook(active, IoOp::fsync, what); injected != 0)
        return fail(injected, "fdatasync", what);
    const Recording recording(active);
    while (::fdatasync(fd) != 0) {
        if (errno != EINTR) return fail(errno, "fdatasync", what);
    }
    IoEvent event;
    event.data_only = true;
    recording.report_fd(IoEventKind::fsync, fd, event);
    return {};
}

Result<void> fsync(int fd, std::string_view what) {
    const unsigned active = installed();
    if (const int injected = ask_hook(active, IoOp::fsync, what); injected != 0)
        return fail(injected, "fsync", what);
    const Recording recording(active);
    while (::fsync(fd) != 0) {
        if (errno != EINTR) return fail(errno, "fsync", what);
    }
    recording.report_fd(IoEventKind::fsync, fd);
    return {};
}

Result<void> ftruncate(int fd, uint64_t size, std::string_view what) {
    const unsigned active = installed();
    if (const int injected = ask_hook(active, IoOp::truncate, what); injected != 0)
        return fail(injected, "ftruncate", what);
    if (size > static_cast<uint64_t>(INT64_MAX)) return fail(EFBIG, "ftruncate", what);
    const Recording recording(active);
    while (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
        if (errno != EINTR) return fail(errno, "ftruncate", what);
    }
    IoEvent event;
    event.offset = size;
    recording.report_fd(IoEventKind::truncate, fd, event);
    return {};
}

Result<void> rename(const std::string& from, const std::string& to, std::string_view what) {
    const unsigned active = installed();
    if (const int injected = ask_hook(active, IoOp::rename, what); injected != 0)
        return fail(injected, "rename", what);
    const Recording recording(active);
    // Named before the call: after it, `from` no longer exists to be resolved.
    const std::string from_name = recording.on() ? absolute_name(from) : std::string();
    const std::string to_name = recording.on() ? absolute_name(to) : std::string();
    if (std::rename(from.c_str(), to.c_str()) != 0) return fail(errno, "rename", what);
    IoEvent event;
    event.kind = IoEventKind::rename;
    event.path = from_name;
    event.to = to_name;
    recording.report(event);
    return {};
}

Result<void> fsync_dir(const std::string& dir, std::string_view what) {
    const unsigned active = installed();
    if (const int injected = ask_hook(active, IoOp::fsync_dir, what); injected != 0)
        return fail(injected, "fsync_dir", what);
    const Recording recording(active);
    int fd;
    do {
        fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) return fail(errno, "fsync_dir", what);
    int rc;
    while ((rc = ::fsync(fd)) != 0 && errno == EINTR) {
    }
    const int err = errno;
    const std::string path = recording.on() ? path_of(fd) : std::string();
    ::close(fd);
    if (rc != 0) return fail(err, "fsync_dir", what);
    IoEvent event;
    event.kind = IoEventKind::fsync_dir;
    event.path = path;
    recording.report(event);
    return {};
}

Result<void> step(std::string_view name) {
    if (const int injected = ask_hook(installed(), IoOp::step, name); injected != 0)
        return fail(injected, "step", name);
    return {};
}

Result<Fd> create_file(const std::string& path, int flags, uint32_t mode, std::string_view what) {
    const Recording recording(installed());
    // Whether the call makes the file or opens one that is there (to truncate it with O_TRUNC):
    // asked before, under the recorder's lock.
    struct stat before {};
    const bool existed = recording.on() && ::lstat(path.c_str(), &before) == 0;
    int fd;
    do {
        fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) return fail(errno, "open", what);
    Fd file(fd);
    if (!existed) {
        const std::string name = recording.on() ? absolute_name(path) : std::string();
        IoEvent event;
        event.kind = IoEventKind::create;
        event.path = name;
        event.ino = recording.on() ? ino_of(file.get()) : 0;
        recording.report(event);
    } else if (flags & O_TRUNC) {
        recording.report_fd(IoEventKind::truncate, file.get());  // to size 0
    }
    return file;
}

Result<void> unlink(const std::string& path, std::string_view what) {
    const Recording recording(installed());
    const std::string name = recording.on() ? absolute_name(path) : std::string();
    if (::unlink(path.c_str()) != 0) return fail(errno, "unlink", what);
    IoEvent event;
    event.kind = IoEventKind::unlink;
    event.path = name;
    recording.report(event);
    return {};
}

}  // namespace packfs::io
