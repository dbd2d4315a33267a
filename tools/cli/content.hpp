// Reading a file's bytes in bounded slices, never the whole file at once (open() + pread on any
// backend); cat, extract, diff and info all read this way. Where the bytes lie raw in a host
// file (a pack's uncompressed data: File::host_bytes), copy_to() has the kernel move them
// straight from that file to the output (sendfile), without passing them through memory.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "packfs/backend.hpp"
#include "packfs/pack.hpp"

namespace packfs::cli {

inline constexpr std::size_t kSliceBytes = 1 << 20;

class ContentReader {
public:
    // The file at `path`, following a final symlink as cat(1) does. A directory is EISDIR; a
    // special file is what the backend's open() says (ENOTSUP).
    static Result<ContentReader> open(Backend& fs, std::string_view path);

    // Up to `max` bytes at `offset`, empty at the end of the file. The span stays valid until
    // the next read.
    Result<std::span<const std::byte>> read(uint64_t offset, std::size_t max = kSliceBytes);

    // Hands every slice, in order, to `sink`; stops at the first error of either.
    Result<void> for_each_slice(
        const std::function<Result<void>(std::span<const std::byte>)>& sink);

    // Writes the whole file to `fd` (sendfile from the host file where it can, else slices);
    // the errno of a failed write comes back as the error's code.
    Result<void> copy_to(int fd);

    // Writes the whole file into `fd`, a new empty host file, keeping its holes: only the data
    // the backend reports is read (File::seek_data), aligned 4 KiB blocks of zeros within it
    // are not written either (as cp --sparse=always: a pack stores holes as zeros), and the
    // size is set at the end. `on_bytes` hears the file's bytes as they are passed, a hole's
    // with the rest (progress and totals count the file's size, not what was read).
    Result<void> write_sparse_to(int fd, const std::function<void(std::size_t)>& on_bytes);

private:
    ContentReader(std::string path, FileHandle file) : path_(std::move(path)), file_(std::move(file)) {}

    std::string path_;
    FileHandle file_;
    std::vector<std::byte> buffer_;
};

// Whether two files hold the same bytes, compared slice by slice (callers that know both
// sizes compare them first, for free).
Result<bool> same_content(Backend& a, std::string_view path_a, Backend& b, std::string_view path_b);

}  // namespace packfs::cli
