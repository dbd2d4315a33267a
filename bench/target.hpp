// What a benchmark category drives: one filesystem, seen as the handful of operation shapes
// the categories time. Two kinds implement it:
// - BackendTarget runs each shape through the packfs::Backend contract (mem and vfs today;
//   dir, pack, overlay, volume later), exactly as an embedding application would.
// - RawTarget runs the same shape as direct syscalls on a fresh host directory, so its
//   figures are what a program gets from the kernel with no library in between.
// A category builds its paths with path() before it starts the clock, so string building is
// never timed, and both kinds receive the same strings they would receive from a program.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "packfs/backend.hpp"
#include "packfs/error.hpp"

namespace packfs::bench {

class Target {
public:
    virtual ~Target() = default;

    // The path the operations take for `rel` ("d/file-17"), in this target's namespace.
    virtual std::string path(std::string_view rel) const = 0;

    // open(O_WRONLY|O_CREAT|O_EXCL) + one pwrite of `data` at offset 0 (+ fsync on a durable
    // target) + close.
    virtual Result<void> create_file(const std::string& path, std::span<const std::byte> data) = 0;
    // open(O_WRONLY|O_CREAT|O_EXCL) + close: an empty file, as `touch` makes it.
    virtual Result<void> create_empty(const std::string& path) = 0;
    // open(O_RDONLY) + one pread into `buf` at offset 0 + close; returns the count read.
    virtual Result<std::size_t> read_file(const std::string& path, std::span<std::byte> buf) = 0;
    virtual Result<void> stat(const std::string& path) = 0;
    // Lists a directory; returns the number of entries, without "." and "..".
    virtual Result<std::size_t> list_dir(const std::string& path) = 0;
    virtual Result<void> unlink(const std::string& path) = 0;
    virtual Result<void> mkdir(const std::string& path) = 0;
    virtual Result<void> rmdir(const std::string& path) = 0;
    // open(O_WRONLY|O_CREAT|O_EXCL) + `size` bytes in sequential pwrite calls of
    // chunk.size() bytes (+ one fsync on a durable target) + close. Each chunk is stamped
    // with its index first (see stamp()), so no two chunks of a file are identical.
    virtual Result<void> write_large(const std::string& path, std::span<std::byte> chunk,
                                     uint64_t size) = 0;
    // open(O_RDONLY) + sequential pread calls of chunk.size() bytes to end of file + close;
    // returns the bytes read.
    virtual Result<uint64_t> read_large(const std::string& path, std::span<std::byte> chunk) = 0;

    // The Backend behind this target, for categories that time the API itself (snapshot);
    // null for a raw target.
    virtual Backend* backend() noexcept { return nullptr; }
};

// Writes `index` into the first 8 bytes of `data` (fewer if it is shorter), so contents
// differ per file and per chunk and cannot flatter a backend that deduplicates.
inline void stamp(std::span<std::byte> data, uint64_t index) noexcept {
    std::memcpy(data.data(), &index, data.size() < sizeof index ? data.size() : sizeof index);
}

}  // namespace packfs::bench
