#include "remote/cache_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "core/io.hpp"

namespace packfs::remote {

namespace {

constexpr std::string_view kSuffix = ".pack";

bool is_digest_name(std::string_view name) {
    if (name.size() != 64 + kSuffix.size() || !name.ends_with(kSuffix)) return false;
    return std::all_of(name.begin(), name.begin() + 64,
                       [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

Result<void> make_dirs(const std::string& dir) {
    for (std::size_t at = 1; at <= dir.size(); ++at) {
        if (at != dir.size() && dir[at] != '/') continue;
        const std::string prefix = dir.substr(0, at);
        if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST)
            return fail(errno, "cache", prefix);
    }
    return {};
}

}  // namespace

std::string default_cache_dir() {
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] == '/')
        return std::string(xdg) + "/packfs";
    if (const char* home = std::getenv("HOME"); home != nullptr && home[0] == '/')
        return std::string(home) + "/.cache/packfs";
    return fmt::format("/tmp/packfs-cache-{}", ::getuid());
}

Result<CacheFile> CacheFile::open(const std::string& dir, const std::string& digest_hex,
                                  uint64_t size) {
    CacheFile file;
    if (dir == "none") {
        const char* tmp = std::getenv("TMPDIR");
        const std::string where = tmp != nullptr && tmp[0] == '/' ? tmp : "/tmp";
        file.fd_ = ::open(where.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (file.fd_ < 0) return fail(errno, "cache", where);
    } else {
        if (auto ok = make_dirs(dir); !ok) return std::unexpected(ok.error());
        const std::string path = fmt::format("{}/{}{}", dir, digest_hex, kSuffix);
        file.fd_ = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
        file.existed_ = file.fd_ >= 0;
        if (file.fd_ < 0 && errno == ENOENT)
            file.fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (file.fd_ < 0) return fail(errno, "cache", path);
        // Shared: pruning, which needs it exclusive, leaves the file alone while it is held.
        while (::flock(file.fd_, LOCK_SH) != 0) {
            if (errno != EINTR) return fail(errno, "cache", path);
        }
        ::futimens(file.fd_, nullptr);  // last used: now
    }
    struct stat st {};
    if (::fstat(file.fd_, &st) != 0) return fail(errno, "cache", dir);
    if (static_cast<uint64_t>(st.st_size) != size) {
        // New, or not this pack's size (a damaged or foreign file): start it over.
        file.existed_ = false;
        if (::ftruncate(file.fd_, 0) != 0 || ::ftruncate(file.fd_, static_cast<off_t>(size)) != 0)
            return fail(errno, "cache", dir);
    }
    return file;
}

CacheFile::CacheFile(CacheFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), existed_(other.existed_) {}

CacheFile& CacheFile::operator=(CacheFile&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = std::exchange(other.fd_, -1);
        existed_ = other.existed_;
    }
    return *this;
}

CacheFile::~CacheFile() {
    if (fd_ >= 0) ::close(fd_);  // drops the flock too
}

bool CacheFile::read(uint64_t offset, std::span<std::byte> out) const noexcept {
    const auto n = io::pread_full(fd_, out, offset, "cache file");
    return n && *n == out.size();
}

bool CacheFile::write(uint64_t offset, std::span<const std::byte> bytes) const noexcept {
    for (std::size_t done = 0; done < bytes.size();) {
        const ssize_t n = ::pwrite(fd_, bytes.data() + done, bytes.size() - done,
                                   static_cast<off_t>(offset + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;  // a full disk: the block is served from memory this once
        done += static_cast<std::size_t>(n);
    }
    return true;
}

CacheFile::RangeLock::RangeLock(int fd, uint64_t offset, uint64_t length) noexcept
    : fd_(fd), offset_(offset), length_(length) {
    if (fd_ < 0 || length_ == 0) return;
    struct flock l {};
    l.l_type = F_WRLCK;
    l.l_whence = SEEK_SET;
    l.l_start = static_cast<off_t>(offset_);
    l.l_len = static_cast<off_t>(length_);
    while (::fcntl(fd_, F_OFD_SETLKW, &l) != 0) {
        if (errno != EINTR) return;  // no lock: at worst a block is fetched twice
    }
    held_ = true;
}

CacheFile::RangeLock::~RangeLock() {
    if (!held_) return;
    struct flock l {};
    l.l_type = F_UNLCK;
    l.l_whence = SEEK_SET;
    l.l_start = static_cast<off_t>(offset_);
    l.l_len = static_cast<off_t>(length_);
    ::fcntl(fd_, F_OFD_SETLK, &l);
}

Result<std::vector<CachedPack>> list_cache(const std::string& dir) {
    std::vector<CachedPack> out;
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) {
        if (errno == ENOENT) return out;
        return fail(errno, "cache", dir);
    }
    while (const dirent* e = ::readdir(d)) {
        const std::string_view name(e->d_name);
        if (!is_digest_name(name)) continue;
        CachedPack p;
        p.digest = std::string(name.substr(0, 64));
        p.path = fmt::format("{}/{}", dir, name);
        const int fd = ::open(p.path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;  // removed meanwhile
        struct stat st {};
        if (::fstat(fd, &st) == 0) {
            p.size = static_cast<uint64_t>(st.st_size);
            p.on_disk = static_cast<uint64_t>(st.st_blocks) * 512;
            p.last_used = st.st_mtim.tv_sec;
            p.in_use = ::flock(fd, LOCK_EX | LOCK_NB) != 0;
            out.push_back(std::move(p));
        }
        ::close(fd);
    }
    ::closedir(d);
    std::sort(out.begin(), out.end(),
              [](const CachedPack& a, const CachedPack& b) { return a.last_used < b.last_used; });
    return out;
}

Result<uint64_t> prune_cache(const std::string& dir, uint64_t bound) {
    auto packs = list_cache(dir);
    if (!packs) return std::unexpected(packs.error());
    uint64_t total = 0;
    for (const CachedPack& p : *packs) total += p.on_disk;
    uint64_t freed = 0;
    for (const CachedPack& p : *packs) {  // least recently used first
        if (total <= bound && bound != 0) break;
        const int fd = ::open(p.path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        // Exclusive without waiting: a pack some process holds open stays.
        if (::flock(fd, LOCK_EX | LOCK_NB) == 0 && ::unlink(p.path.c_str()) == 0) {
            total -= p.on_disk;
            freed += p.on_disk;
        }
        ::close(fd);
    }
    return freed;
}

uint64_t default_cache_bound(const std::string& dir) {
    std::string at = dir;
    struct statvfs fs {};
    while (::statvfs(at.c_str(), &fs) != 0) {
        const auto slash = at.rfind('/');
        if (slash == std::string::npos || at == "/") return 1ull << 30;
        at = slash == 0 ? "/" : at.substr(0, slash);
    }
    return static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize / 4;
}

}  // namespace packfs::remote
