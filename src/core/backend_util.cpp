#include <algorithm>
#include <array>
#include <vector>

#include "packfs/backend.hpp"

namespace packfs {

Result<void> File::allocate(int, uint64_t, uint64_t) {
    return fail(EOPNOTSUPP, "fallocate");
}

// Bytes copied through a buffer, slice by slice (a pread past the end returns 0: done).
Result<uint64_t> File::copy_range(uint64_t offset, File& dest, uint64_t dest_offset,
                                  uint64_t length) {
    // Both handles answer for themselves first (EBADF before a byte moves, as Linux checks
    // the descriptors), with calls of no bytes.
    if (auto r = pread({}, offset); !r) return std::unexpected(r.error());
    if (auto w = dest.pwrite({}, dest_offset); !w) return std::unexpected(w.error());
    // As Linux: the copy is clipped to the source's end as it is now (so a copy into the same
    // file never chases its own growth), and overlapping ranges of one file are EINVAL.
    auto st = fstat();
    if (!st) return std::unexpected(st.error());
    if (offset >= st->size) return 0;
    length = std::min(length, st->size - offset);
    if (&innermost() == &dest.innermost() && dest_offset < offset + length &&
        offset < dest_offset + length)
        return fail(EINVAL, "copy_file_range");
    constexpr std::size_t kSlice = 1 << 20;
    std::vector<std::byte> buffer(static_cast<std::size_t>(std::min<uint64_t>(length, kSlice)));
    uint64_t done = 0;
    while (done < length) {
        const auto want = static_cast<std::size_t>(std::min<uint64_t>(length - done, kSlice));
        auto n = pread(std::span(buffer).first(want), offset + done);
        if (!n) return std::unexpected(n.error());
        if (*n == 0) break;
        for (std::size_t put = 0; put < *n;) {
            auto w =
                dest.pwrite(std::span(buffer).subspan(put, *n - put), dest_offset + done + put);
            if (!w) return std::unexpected(w.error());
            put += *w;
        }
        done += *n;
    }
    return done;
}

// A file without holes: data from anywhere before the end, the end the only hole.
Result<uint64_t> File::seek_data(uint64_t offset, bool data) {
    auto st = fstat();
    if (!st) return std::unexpected(st.error());
    if (offset >= st->size) return fail(ENXIO, "lseek");
    return data ? offset : st->size;
}

Result<std::string> read_file(Backend& fs, std::string_view path) {
    auto file = fs.open(path, O_RDONLY);
    if (!file) return std::unexpected(file.error());
    std::string out;
    std::array<std::byte, 64 * 1024> buf;
    for (;;) {
        auto n = (*file)->pread(buf, out.size());
        if (!n) return std::unexpected(n.error());
        if (*n == 0) break;
        out.append(reinterpret_cast<const char*>(buf.data()), *n);
    }
    return out;
}

Result<void> write_file(Backend& fs, std::string_view path, std::string_view data,
                        uint32_t mode) {
    auto file = fs.open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    if (!file) return std::unexpected(file.error());
    auto n = (*file)->pwrite(std::as_bytes(std::span(data.data(), data.size())), 0);
    if (!n) return std::unexpected(n.error());
    return {};
}

}  // namespace packfs
