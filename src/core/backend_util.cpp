#include <array>

#include "packfs/backend.hpp"

namespace packfs {

Result<void> File::allocate(int, uint64_t, uint64_t) {
    return fail(EOPNOTSUPP, "fallocate");
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
