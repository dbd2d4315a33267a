// The files cache of builds (PackWriteOptions::files_cache, docs/PACK.md "Builds over a base"):
// what each regular file of a pack's source was when it was packed (its path, size, mtime,
// ctime and inode number) and the SHA-256 of what was read, kept beside the pack's image digest
// in a directory of the user's (`packfs build`: ~/.cache/packfs/files). A build over that pack
// takes a file whose path and stamp are unchanged as the content the pack holds, without
// reading it: borg's files cache, with ctime, which no tool sets back, so trees whose mtimes
// are normalised (build outputs, SOURCE_DATE_EPOCH) are still read when they change.
//
// Only a stamp that cannot be racy is recorded: a file whose mtime or ctime is less than
// kRacySeconds before the build's scan began (or after it) may be written again within the same
// clock tick as it was read, times unchanged (git's "racily clean" entries), and is read by the
// next build. The file is not part of the pack and not trusted: one that fails its checksum or
// any bound is no cache (every file is read), and a digest it names is used only when a base
// holds that content.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "pack/format/digest.hpp"
#include "packfs/types.hpp"

namespace packfs::pack {

struct FileStamp {
    uint64_t size = 0, ino = 0;
    Time mtime, ctime;
    friend bool operator==(const FileStamp&, const FileStamp&) = default;
};

struct FilesCacheEntry {
    std::string_view path;  // the file's virtual path in its tree ("/a/b")
    FileStamp stamp;
    Sha256Digest sha256{};
};

inline constexpr int64_t kRacySeconds = 1;
// Caches kept in a directory: the most recently written or used.
inline constexpr std::size_t kFilesCachesKept = 64;

class FilesCache {
public:
    // The cache of the pack `digest` in `dir`; an empty one when there is none, or it is
    // damaged or not a files cache. A cache found is marked used (it is kept longest).
    static FilesCache load(const std::string& dir, const Sha256Digest& digest);

    // The digest recorded for `path` when `now` is the stamp recorded with it, else nullptr.
    const Sha256Digest* find(std::string_view path, const FileStamp& now) const noexcept;
    std::size_t size() const noexcept { return entries_.size(); }

    // Whether a file stamped `stamp` may be recorded by a build whose scan began at `scan_start`.
    static bool settled(const FileStamp& stamp, Time scan_start) noexcept;
    // Writes the cache of the pack `digest` (replacing one there), then leaves the
    // kFilesCachesKept newest caches of `dir`. Best effort for the caller: a cache that cannot
    // be written costs the next build its reads, nothing else.
    static Result<void> write(const std::string& dir, const Sha256Digest& digest,
                              std::span<const FilesCacheEntry> entries);

private:
    std::vector<char> bytes_;  // the file; entries_ look into it (a move keeps its buffer)
    std::unordered_map<std::string_view, FilesCacheEntry> entries_;
};

}  // namespace packfs::pack
