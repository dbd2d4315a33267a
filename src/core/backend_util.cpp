#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "packfs/backend.hpp"

namespace packfs {

Result<void> File::allocate(int, uint64_t, uint64_t) {
    return fail(EOPNOTSUPP, "fallocate");
}

Result<std::span<const std::byte>> File::read_view(uint64_t offset, std::size_t length,
                                                   std::string& scratch) {
    auto st = fstat();  // clipped to the end first: a caller may ask for "all of it"
    if (!st) return std::unexpected(st.error());
    if (st->type == FileType::directory) return fail(EISDIR, "read");
    scratch.resize(offset >= st->size ? 0 : std::min<uint64_t>(length, st->size - offset));
    length = scratch.size();
    std::size_t got = 0;
    while (got < length) {
        auto n = pread(std::as_writable_bytes(std::span(scratch)).subspan(got), offset + got);
        if (!n) return std::unexpected(n.error());
        if (*n == 0) break;
        got += *n;
    }
    scratch.resize(got);
    return std::as_bytes(std::span(scratch));
}

namespace {

// Bytes copied through a buffer, slice by slice (a pread past the end returns 0: done).
// `st`: the source's attributes now; `same_file`: the two handles are on one file.
Result<uint64_t> copy_through(File& from, const Result<Stat>& st, uint64_t offset, File& to,
                              uint64_t to_offset, uint64_t length, bool same_file) {
    // As Linux: the copy is clipped to the source's end as it is now (so a copy into the same
    // file never chases its own growth), and overlapping ranges of one file are EINVAL.
    if (!st) return std::unexpected(st.error());
    if (st->type == FileType::directory) return fail(EISDIR, "copy_file_range");
    if (st->type != FileType::regular) return fail(EINVAL, "copy_file_range");
    if (offset >= st->size) return 0;
    length = std::min(length, st->size - offset);
    if (same_file && to_offset < offset + length && offset < to_offset + length)
        return fail(EINVAL, "copy_file_range");
    constexpr std::size_t kSlice = 1 << 20;
    std::vector<std::byte> buffer(static_cast<std::size_t>(std::min<uint64_t>(length, kSlice)));
    uint64_t done = 0;
    while (done < length) {
        const auto want = static_cast<std::size_t>(std::min<uint64_t>(length - done, kSlice));
        auto n = from.pread(std::span(buffer).first(want), offset + done);
        if (!n) return std::unexpected(n.error());
        if (*n == 0) break;
        for (std::size_t put = 0; put < *n;) {
            auto w = to.pwrite(std::span(buffer).subspan(put, *n - put), to_offset + done + put);
            if (!w) return std::unexpected(w.error());
            put += *w;
        }
        done += *n;
    }
    return done;
}

}  // namespace

Result<uint64_t> copy_bytes(File& from, uint64_t offset, File& to, uint64_t to_offset,
                            uint64_t length) {
    // Both handles answer for themselves first (EBADF before a byte moves, as Linux checks
    // the descriptors), with calls of no bytes.
    if (auto r = from.pread({}, offset); !r) return std::unexpected(r.error());
    if (auto w = to.pwrite({}, to_offset); !w) return std::unexpected(w.error());
    auto a = from.fstat();
    if (!a) return std::unexpected(a.error());
    auto b = to.fstat();
    if (!b) return std::unexpected(b.error());
    return copy_through(from, a, offset, to, to_offset, length, a->ino == b->ino);
}

// The default: handles opened on both nodes, the bytes through them.
Result<uint64_t> Backend::copy_range(Node from, uint64_t offset, Node to, uint64_t to_offset,
                                     uint64_t length) {
    auto source = open(from, O_RDONLY);
    if (!source) return std::unexpected(source.error());
    auto target = open(to, O_WRONLY);
    if (!target) return std::unexpected(target.error());
    return copy_through(**source, (*source)->fstat(), offset, **target, to_offset, length,
                        from == to);
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
    auto st = (*file)->fstat();
    if (!st) return std::unexpected(st.error());
    // Sized to the file, so a file that keeps its size is read in place, with no copy; one
    // that grew meanwhile is read on to its end.
    std::string out(st->size, '\0');
    std::size_t got = 0;
    for (;;) {
        if (got == out.size()) out.resize(std::max<std::size_t>(out.size() * 2, 4096));
        auto n = (*file)->pread(
            std::as_writable_bytes(std::span(out.data() + got, out.size() - got)), got);
        if (!n) return std::unexpected(n.error());
        if (*n == 0) break;
        got += *n;
    }
    out.resize(got);
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
