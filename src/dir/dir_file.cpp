// An open file of the dir backend: the host fd, with the contract's explicit offsets.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>

#include "core/host_stat.hpp"
#include "dir/dir_backend.hpp"

namespace packfs::dir {
namespace {

class DirFile final : public File {
public:
    explicit DirFile(Fd fd) noexcept : fd_(std::move(fd)) {}

    Result<std::size_t> pread(std::span<std::byte> buf, uint64_t offset) override {
        for (;;) {
            ssize_t n = ::pread(fd_.get(), buf.data(), buf.size(), static_cast<off_t>(offset));
            if (n >= 0) return static_cast<std::size_t>(n);
            if (errno != EINTR) return fail(errno, "pread");
        }
    }

    Result<std::size_t> pwrite(std::span<const std::byte> data, uint64_t offset) override {
        // At least one call, so a zero-length write on a read-only handle is EBADF as the
        // kernel says; then until all is written (a regular file takes it all short of ENOSPC).
        std::size_t done = 0;
        do {
            ssize_t n = ::pwrite(fd_.get(), data.data() + done, data.size() - done,
                                 static_cast<off_t>(offset + done));
            if (n < 0) {
                if (errno == EINTR) continue;
                return fail(errno, "pwrite");
            }
            if (n == 0 && done < data.size()) return fail(EIO, "pwrite");
            done += static_cast<std::size_t>(n);
        } while (done < data.size());
        return done;
    }

    Result<void> truncate(uint64_t size) override {
        if (::ftruncate(fd_.get(), static_cast<off_t>(size)) != 0) return fail(errno, "truncate");
        return {};
    }

    Result<void> fsync(bool data_only) override {
        if ((data_only ? ::fdatasync(fd_.get()) : ::fsync(fd_.get())) != 0) return fail(errno, "fsync");
        return {};
    }

    Result<uint64_t> seek_data(uint64_t offset, bool data) override {
        if (offset > static_cast<uint64_t>(std::numeric_limits<off_t>::max()))
            return fail(ENXIO, "lseek");
        const off_t at =
            ::lseek(fd_.get(), static_cast<off_t>(offset), data ? SEEK_DATA : SEEK_HOLE);
        if (at < 0) return fail(errno, "lseek");
        return static_cast<uint64_t>(at);
    }

    Result<void> allocate(int mode, uint64_t offset, uint64_t length) override {
        constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<off_t>::max());
        if (offset > kMax || length > kMax) return fail(EFBIG, "fallocate");
        for (;;) {
            if (::fallocate(fd_.get(), mode, static_cast<off_t>(offset),
                            static_cast<off_t>(length)) == 0)
                return {};
            if (errno != EINTR) return fail(errno, "fallocate");
        }
    }

    Result<Stat> fstat() override {
        struct statx st;
        if (::statx(fd_.get(), "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT, STATX_BASIC_STATS, &st) != 0)
            return fail(errno, "fstat");
        return stat_from_statx(st);
    }

private:
    Fd fd_;
};

}  // namespace

FileHandle make_dir_file(Fd fd) { return std::make_unique<DirFile>(std::move(fd)); }

}  // namespace packfs::dir
