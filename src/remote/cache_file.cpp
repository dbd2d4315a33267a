#include "remote/cache_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "core/io.hpp"

namespace packfs::remote {

namespace {

constexpr std::string_view kSuffix = ".pack";

// The trailer: the page after the pack's bytes (rounded up to a page). Its first 16 bytes say
// whose it is; the eviction epoch has a cache line of its own.
constexpr uint64_t kPage = 4096;
constexpr char kTrailerMagic[8] = {'P', 'F', 'S', 'C', 'A', 'C', 'H', '1'};
constexpr std::size_t kEpochAt = 64;
static_assert(std::atomic<uint64_t>::is_always_lock_free, "the epoch is shared between processes");

uint64_t trailer_offset(uint64_t pack_size) {
    return (pack_size + kPage - 1) / kPage * kPage;
}

bool is_digest_name(std::string_view name) {
    if (name.size() != 64 + kSuffix.size() || !name.ends_with(kSuffix)) return false;
    return std::all_of(name.begin(), name.begin() + 64,
                       [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// An open-file-description lock on [offset, offset + length): the same description's locks
// never conflict, another description's (another process or a reopen) do. Waits when asked.
bool ofd_lock(int fd, short type, uint64_t offset, uint64_t length, bool wait) noexcept {
    struct flock l {};
    l.l_type = type;
    l.l_whence = SEEK_SET;
    l.l_start = static_cast<off_t>(offset);
    l.l_len = static_cast<off_t>(length);
    while (::fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &l) != 0) {
        if (errno != EINTR) return false;
    }
    return true;
}

// The pack size a cache file of file_size bytes names in its trailer, 0 if it has none.
uint64_t trailer_pack_size(int fd, uint64_t file_size) noexcept {
    if (file_size < kPage) return 0;
    char head[16];
    if (::pread(fd, head, sizeof head, static_cast<off_t>(file_size - kPage)) !=
            static_cast<ssize_t>(sizeof head) ||
        std::memcmp(head, kTrailerMagic, 8) != 0)
        return 0;
    uint64_t size = 0;
    std::memcpy(&size, head + 8, 8);
    return trailer_offset(size) + kPage == file_size ? size : 0;
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
    file.trailer_ = trailer_offset(size);
    const uint64_t file_size = file.trailer_ + kPage;
    struct stat st {};
    if (::fstat(file.fd_, &st) != 0) return fail(errno, "cache", dir);
    if (static_cast<uint64_t>(st.st_size) != file_size ||
        trailer_pack_size(file.fd_, file_size) != size) {
        // New, or not this pack's (a damaged or foreign file, or one of an older layout
        // without the trailer): start it over, unless another process has it open as it is
        // (a PackFS from before the trailer, which would read the holes starting over makes
        // as its checked blocks): then this pack's blocks go to a private file instead.
        if (file.existed_ && ::flock(file.fd_, LOCK_EX | LOCK_NB) != 0)
            return CacheFile::open("none", digest_hex, size);
        const bool convert_back = file.existed_;
        file.existed_ = false;
        char head[16];
        std::memcpy(head, kTrailerMagic, 8);
        std::memcpy(head + 8, &size, 8);
        if (::ftruncate(file.fd_, 0) != 0 ||
            ::ftruncate(file.fd_, static_cast<off_t>(file_size)) != 0 ||
            ::pwrite(file.fd_, head, sizeof head, static_cast<off_t>(file.trailer_)) !=
                static_cast<ssize_t>(sizeof head))
            return fail(errno, "cache", dir);
        if (convert_back) ::flock(file.fd_, LOCK_SH);
    }
    file.mapping_ = ::mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_SHARED, file.fd_,
                           static_cast<off_t>(file.trailer_));
    if (file.mapping_ == MAP_FAILED) {
        file.mapping_ = nullptr;
        return fail(errno, "cache", dir);
    }
    file.epoch_ =
        reinterpret_cast<std::atomic<uint64_t>*>(static_cast<char*>(file.mapping_) + kEpochAt);
    return file;
}

CacheFile::CacheFile(CacheFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      existed_(other.existed_),
      trailer_(other.trailer_),
      mapping_(std::exchange(other.mapping_, nullptr)),
      epoch_(std::exchange(other.epoch_, nullptr)) {}

CacheFile& CacheFile::operator=(CacheFile&& other) noexcept {
    if (this != &other) {
        CacheFile gone(std::move(*this));  // closes and unmaps what this held
        fd_ = std::exchange(other.fd_, -1);
        existed_ = other.existed_;
        trailer_ = other.trailer_;
        mapping_ = std::exchange(other.mapping_, nullptr);
        epoch_ = std::exchange(other.epoch_, nullptr);
    }
    return *this;
}

CacheFile::~CacheFile() {
    if (mapping_ != nullptr) ::munmap(mapping_, kPage);
    if (fd_ >= 0) ::close(fd_);  // drops the flock too
}

uint64_t CacheFile::epoch() const noexcept {
    return epoch_ != nullptr ? epoch_->load(std::memory_order_seq_cst) : 0;
}

int CacheFile::reopen() const noexcept {
    return ::open(fmt::format("/proc/self/fd/{}", fd_).c_str(), O_RDWR | O_CLOEXEC);
}

bool CacheFile::lock_evictions(int fd, short type) const noexcept {
    return ofd_lock(fd, type, trailer_, kPage, true);
}

void CacheFile::wait_for_eviction() const noexcept {
    if (epoch_ == nullptr) return;
    const int fd = reopen();
    if (fd < 0) return;
    // Exclusive: once it is ours no eviction runs, so an odd epoch is one whose process died
    // between its two steps (its lock went with it).
    if (lock_evictions(fd, F_WRLCK) && epoch_->load() % 2 == 1) epoch_->fetch_add(1);
    ::close(fd);  // unlocks
}

Result<uint64_t> CacheFile::evict(std::span<const std::pair<uint64_t, uint64_t>> ranges) const {
    const int fd = reopen();
    if (fd < 0) return fail(errno, "cache", "reopening the cache file to evict");
    if (!lock_evictions(fd, F_WRLCK)) {
        const int code = errno;
        ::close(fd);
        return fail(code, "cache", "locking the cache file to evict");
    }
    epoch_->fetch_add(1);  // odd: readers of checked blocks wait, or read again
    uint64_t covered = 0;
    int failed = 0;
    for (const auto& [offset, length] : ranges) {
        // Its range lock (this description's, so this process's own fetches count too): a
        // process fetching the block finishes first.
        const RangeLock lock(fd, offset, length);
        if (::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                        static_cast<off_t>(length)) != 0) {
            failed = errno;
            break;
        }
        covered += length;
    }
    epoch_->fetch_add(1);  // even again, and moved: checked blocks are checked again
    ::close(fd);
    if (failed != 0) return fail(failed, "cache", "punching a hole in the cache file");
    return covered;
}

std::vector<std::pair<uint64_t, uint64_t>> CacheFile::data_extents(uint64_t from,
                                                                   uint64_t to) const {
    std::vector<std::pair<uint64_t, uint64_t>> out;
    for (uint64_t at = from; at < to;) {
        const off_t data = ::lseek(fd_, static_cast<off_t>(at), SEEK_DATA);
        if (data < 0 || static_cast<uint64_t>(data) >= to) break;  // ENXIO: no data after
        const off_t hole = ::lseek(fd_, data, SEEK_HOLE);
        const uint64_t end = hole < 0 ? to : std::min<uint64_t>(static_cast<uint64_t>(hole), to);
        out.emplace_back(static_cast<uint64_t>(data), end);
        at = end;
    }
    return out;
}

uint64_t cached_pack_size(const std::string& path) noexcept {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    struct stat st {};
    const uint64_t size =
        ::fstat(fd, &st) == 0 ? trailer_pack_size(fd, static_cast<uint64_t>(st.st_size)) : 0;
    ::close(fd);
    return size;
}

bool CacheFile::read(uint64_t offset, std::span<std::byte> out) const noexcept {
    const auto n = io::pread_full(fd_, out, offset, "cache file");
    return n && *n == out.size();
}

std::size_t CacheFile::read_held(uint64_t offset, std::span<std::byte> out) const noexcept {
    if (out.empty() ||
        ::lseek(fd_, static_cast<off_t>(offset), SEEK_DATA) != static_cast<off_t>(offset))
        return 0;  // a hole here (ENXIO: no data after it at all)
    const off_t hole = ::lseek(fd_, static_cast<off_t>(offset), SEEK_HOLE);
    if (hole < 0) return 0;
    const std::size_t held = std::min<uint64_t>(out.size(), static_cast<uint64_t>(hole) - offset);
    return read(offset, out.first(held)) ? held : 0;
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
    // No lock (an error other than EINTR): at worst a block is fetched twice.
    held_ = ofd_lock(fd_, F_WRLCK, offset_, length_, true);
}

CacheFile::RangeLock::~RangeLock() {
    if (held_) ofd_lock(fd_, F_UNLCK, offset_, length_, false);
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
            // The pack's, without the trailer
            p.size = trailer_pack_size(fd, static_cast<uint64_t>(st.st_size));
            if (p.size == 0) p.size = static_cast<uint64_t>(st.st_size);  // an older layout
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

namespace {

// The records of which pack a URL held (remote_pack.cpp, <dir>/urls/<hash of the URL>, the
// digest in hex) that name a pack no longer cached go with it; the directory too once empty.
void drop_url_records(const std::string& dir) {
    const std::string urls = dir + "/urls";
    DIR* d = ::opendir(urls.c_str());
    if (d == nullptr) return;
    while (const dirent* e = ::readdir(d)) {
        if (e->d_name[0] == '.') continue;
        const std::string path = fmt::format("{}/{}", urls, e->d_name);
        char digest[64];
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        const ssize_t n = ::read(fd, digest, sizeof digest);
        ::close(fd);
        const std::string name = fmt::format(
            "{}{}", std::string_view(digest, n > 0 ? static_cast<std::size_t>(n) : 0), kSuffix);
        struct stat st {};
        if (!is_digest_name(name) || ::stat(fmt::format("{}/{}", dir, name).c_str(), &st) != 0)
            ::unlink(path.c_str());
    }
    ::closedir(d);
    ::rmdir(urls.c_str());  // only when empty
}

}  // namespace

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
    if (freed != 0 || bound == 0) drop_url_records(dir);
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
