#include "bench/raw_target.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <utility>
#include <vector>

#include "bench/budget.hpp"

namespace packfs::bench {

Result<TempDir> TempDir::create(const std::string& parent, const std::string& prefix) {
    std::string templ = parent + "/" + prefix + "XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()) == nullptr) return fail(errno, "mkdtemp", templ);
    return TempDir(std::string(buf.data()));
}

TempDir& TempDir::operator=(TempDir&& other) noexcept {
    if (this != &other) {
        remove();
        path_ = std::move(other.path_);
        other.path_.clear();
    }
    return *this;
}

TempDir::~TempDir() { remove(); }

void TempDir::remove() noexcept {
    if (path_.empty()) return;
    std::error_code ec;
    const auto start = std::chrono::steady_clock::now();
    // Best effort: a leftover is not a result. What it cost bounds how much the next
    // disk-bound runs may make (budget.hpp).
    const auto removed = std::filesystem::remove_all(path_, ec);
    if (!ec) {
        RemovalCost::scratch().record(
            removed,
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    path_.clear();
}

namespace {

class RawTarget final : public Target {
public:
    RawTarget(TempDir dir, bool fsync_files) : dir_(std::move(dir)), fsync_(fsync_files) {}

    std::string path(std::string_view rel) const override {
        std::string out = dir_.path();
        out += '/';
        out += rel;
        return out;
    }

    Result<void> create_file(const std::string& path, std::span<const std::byte> data) override {
        const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0) return fail(errno, "open", path);
        Result<void> result = write_all(fd, path, data, 0);
        if (result && fsync_ && ::fsync(fd) != 0) result = fail(errno, "fsync", path);
        if (::close(fd) != 0 && result) result = fail(errno, "close", path);
        return result;
    }

    Result<void> create_empty(const std::string& path) override {
        const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0) return fail(errno, "open", path);
        if (::close(fd) != 0) return fail(errno, "close", path);
        return {};
    }

    Result<std::size_t> read_file(const std::string& path, std::span<std::byte> buf) override {
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) return fail(errno, "open", path);
        const ssize_t n = ::pread(fd, buf.data(), buf.size(), 0);
        const int err = errno;
        ::close(fd);
        if (n < 0) return fail(err, "pread", path);
        return static_cast<std::size_t>(n);
    }

    Result<void> stat(const std::string& path) override {
        struct ::stat st;
        if (::stat(path.c_str(), &st) != 0) return fail(errno, "stat", path);
        return {};
    }

    Result<std::size_t> list_dir(const std::string& path) override {
        DIR* dir = ::opendir(path.c_str());
        if (dir == nullptr) return fail(errno, "opendir", path);
        std::size_t count = 0;
        errno = 0;
        while (const dirent* entry = ::readdir(dir)) {
            const char* name = entry->d_name;
            const bool dot = name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
            if (!dot) ++count;
        }
        const int err = errno;
        ::closedir(dir);
        if (err != 0) return fail(err, "readdir", path);
        return count;
    }

    Result<void> unlink(const std::string& path) override {
        if (::unlink(path.c_str()) != 0) return fail(errno, "unlink", path);
        return {};
    }

    Result<void> mkdir(const std::string& path) override {
        if (::mkdir(path.c_str(), 0755) != 0) return fail(errno, "mkdir", path);
        return {};
    }

    Result<void> rmdir(const std::string& path) override {
        if (::rmdir(path.c_str()) != 0) return fail(errno, "rmdir", path);
        return {};
    }

    Result<void> write_large(const std::string& path, std::span<std::byte> chunk,
                             uint64_t size) override {
        const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0) return fail(errno, "open", path);
        Result<void> result;
        for (uint64_t offset = 0, index = 0; result && offset < size; ++index) {
            const uint64_t len = std::min<uint64_t>(chunk.size(), size - offset);
            stamp(chunk, index);
            result = write_all(fd, path, chunk.first(len), offset);
            offset += len;
        }
        if (result && fsync_ && ::fsync(fd) != 0) result = fail(errno, "fsync", path);
        if (::close(fd) != 0 && result) result = fail(errno, "close", path);
        return result;
    }

    Result<uint64_t> read_large(const std::string& path, std::span<std::byte> chunk) override {
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) return fail(errno, "open", path);
        uint64_t total = 0;
        for (;;) {
            const ssize_t n = ::pread(fd, chunk.data(), chunk.size(), static_cast<off_t>(total));
            if (n < 0) {
                const int err = errno;
                ::close(fd);
                return fail(err, "pread", path);
            }
            if (n == 0) break;
            total += static_cast<uint64_t>(n);
        }
        ::close(fd);
        return total;
    }

private:
    // One pwrite, repeated only if the kernel takes less than asked (it does not for a
    // regular file short of ENOSPC, so the shape stays one syscall per chunk).
    static Result<void> write_all(int fd, const std::string& path, std::span<const std::byte> data,
                                  uint64_t offset) {
        while (!data.empty()) {
            const ssize_t n = ::pwrite(fd, data.data(), data.size(), static_cast<off_t>(offset));
            if (n < 0) {
                if (errno == EINTR) continue;
                return fail(errno, "pwrite", path);
            }
            if (n == 0) return fail(EIO, "pwrite", path);
            data = data.subspan(static_cast<std::size_t>(n));
            offset += static_cast<uint64_t>(n);
        }
        return {};
    }

    TempDir dir_;
    bool fsync_;
};

}  // namespace

Result<std::unique_ptr<Target>> make_raw_target(const std::string& parent, bool fsync_files) {
    auto dir = TempDir::create(parent, "raw-");
    if (!dir) return std::unexpected(dir.error());
    return std::make_unique<RawTarget>(std::move(*dir), fsync_files);
}

}  // namespace packfs::bench
