#include "pack/writer/files_cache.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <random>

namespace packfs::pack {

// The file, all little-endian: the magic; u64 entry count; each entry as kFixed bytes (size,
// ino, mtime sec, ctime sec, mtime nsec, ctime nsec, SHA-256) then a u32 path length and the
// path; last, XXH3-64 of everything before it.
namespace {

constexpr char kFilesMagic[16] = "PACKFS files 1\n";
constexpr std::size_t kFixed = 8 + 8 + 8 + 8 + 4 + 4 + 32;
constexpr uint64_t kMostBytes = uint64_t{1} << 30;
constexpr std::string_view kSuffix = ".files";

std::string cache_path(const std::string& dir, const Sha256Digest& digest) {
    return fmt::format("{}/{}{}", dir, to_hex(digest), kSuffix);
}

template <typename T>
T take(const char*& at) {
    T value;
    std::memcpy(&value, at, sizeof value);
    at += sizeof value;
    return value;
}

template <typename T>
void put(std::string& out, T value) {
    out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

bool read_file(const std::string& path, std::vector<char>& out) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat st {};
    bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
              static_cast<uint64_t>(st.st_size) <= kMostBytes;
    if (ok) {
        out.resize(static_cast<std::size_t>(st.st_size));
        std::size_t done = 0;
        while (ok && done < out.size()) {
            const ssize_t n = ::pread(fd, out.data() + done, out.size() - done,
                                      static_cast<off_t>(done));
            ok = n > 0;
            if (ok) done += static_cast<std::size_t>(n);
        }
        // Marked used: the pruning below keeps the newest.
        if (ok) (void)::futimens(fd, nullptr);
    }
    ::close(fd);
    return ok;
}

// Leaves the `keep` most recent caches of `dir` (by mtime, which a use renews).
void prune(const std::string& dir, std::size_t keep) {
    namespace fs = std::filesystem;
    std::error_code ec;
    std::vector<std::pair<fs::file_time_type, fs::path>> caches;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        if (entry.path().extension() != kSuffix || !entry.is_regular_file(ec)) continue;
        caches.emplace_back(entry.last_write_time(ec), entry.path());
    }
    if (caches.size() <= keep) return;
    std::sort(caches.begin(), caches.end(), [](const auto& a, const auto& b) { return a > b; });
    for (std::size_t i = keep; i < caches.size(); ++i) fs::remove(caches[i].second, ec);
}

}  // namespace

FilesCache FilesCache::load(const std::string& dir, const Sha256Digest& digest) {
    FilesCache cache;
    std::vector<char>& bytes = cache.bytes_;
    if (!read_file(cache_path(dir, digest), bytes)) return {};
    constexpr std::size_t kHead = sizeof kFilesMagic + 8, kTail = 8;
    if (bytes.size() < kHead + kTail || std::memcmp(bytes.data(), kFilesMagic, sizeof kFilesMagic) != 0)
        return {};
    const std::size_t body = bytes.size() - kTail;
    uint64_t sum;
    std::memcpy(&sum, bytes.data() + body, sizeof sum);
    if (sum != xxh3_64(std::as_bytes(std::span(bytes.data(), body)))) return {};
    const char* at = bytes.data() + sizeof kFilesMagic;
    const char* const end = bytes.data() + body;
    const auto count = take<uint64_t>(at);
    if (count > body / kFixed) return {};
    cache.entries_.reserve(count);
    for (uint64_t i = 0; i < count; ++i) {
        if (static_cast<std::size_t>(end - at) < kFixed + 4) return {};
        FilesCacheEntry e;
        e.stamp.size = take<uint64_t>(at);
        e.stamp.ino = take<uint64_t>(at);
        e.stamp.mtime.sec = take<int64_t>(at);
        e.stamp.ctime.sec = take<int64_t>(at);
        e.stamp.mtime.nsec = take<uint32_t>(at);
        e.stamp.ctime.nsec = take<uint32_t>(at);
        std::memcpy(e.sha256.data(), at, 32);
        at += 32;
        const auto length = take<uint32_t>(at);
        if (length == 0 || length > static_cast<std::size_t>(end - at)) return {};
        e.path = std::string_view(at, length);
        at += length;
        cache.entries_.emplace(e.path, e);
    }
    if (at != end) return {};
    return cache;
}

const Sha256Digest* FilesCache::find(std::string_view path, const FileStamp& now) const noexcept {
    auto it = entries_.find(path);
    return it == entries_.end() || it->second.stamp != now ? nullptr : &it->second.sha256;
}

bool FilesCache::settled(const FileStamp& stamp, Time scan_start) noexcept {
    const Time limit{scan_start.sec - kRacySeconds, scan_start.nsec};
    return stamp.mtime < limit && stamp.ctime < limit;
}

Result<void> FilesCache::write(const std::string& dir, const Sha256Digest& digest,
                               std::span<const FilesCacheEntry> entries) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return fail(ec.value(), "files cache", dir);
    std::string out(kFilesMagic, sizeof kFilesMagic);
    put<uint64_t>(out, entries.size());
    for (const FilesCacheEntry& e : entries) {
        put<uint64_t>(out, e.stamp.size);
        put<uint64_t>(out, e.stamp.ino);
        put<int64_t>(out, e.stamp.mtime.sec);
        put<int64_t>(out, e.stamp.ctime.sec);
        put<uint32_t>(out, static_cast<uint32_t>(e.stamp.mtime.nsec));
        put<uint32_t>(out, static_cast<uint32_t>(e.stamp.ctime.nsec));
        out.append(reinterpret_cast<const char*>(e.sha256.data()), 32);
        put<uint32_t>(out, static_cast<uint32_t>(e.path.size()));
        out.append(e.path);
    }
    put<uint64_t>(out, xxh3_64(std::as_bytes(std::span(out))));
    const std::string path = cache_path(dir, digest);
    const std::string temp = fmt::format("{}.{}-{:08x}.tmp", path, ::getpid(), std::random_device{}());
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return fail(errno, "files cache", temp);
    std::size_t done = 0;
    while (done < out.size()) {
        const ssize_t n = ::write(fd, out.data() + done, out.size() - done);
        if (n <= 0) break;
        done += static_cast<std::size_t>(n);
    }
    const int saved = errno;
    ::close(fd);
    if (done != out.size() || ::rename(temp.c_str(), path.c_str()) != 0) {
        const int code = done != out.size() ? saved : errno;
        ::unlink(temp.c_str());
        return fail(code, "files cache", path);
    }
    prune(dir, kFilesCachesKept);
    return {};
}

}  // namespace packfs::pack
