#include "content.hpp"

#include <algorithm>
#include <cstring>

#include <sys/sendfile.h>
#include <unistd.h>

namespace packfs::cli {

Result<ContentReader> ContentReader::open(Backend& fs, std::string_view path) {
    auto file = fs.open(path, O_RDONLY);
    if (!file) return std::unexpected(file.error());
    auto resolved = (*file)->fstat();
    if (!resolved) return std::unexpected(resolved.error());
    if (resolved->type == FileType::directory) return fail(EISDIR, "read", path);
    return ContentReader(std::string(path), std::move(*file));
}

Result<std::span<const std::byte>> ContentReader::read(uint64_t offset, std::size_t max) {
    buffer_.resize(max);
    auto n = file_->pread(buffer_, offset);
    if (!n) return std::unexpected(n.error());
    return std::span<const std::byte>(buffer_.data(), *n);
}

Result<void> ContentReader::copy_to(int fd) {
    uint64_t offset = 0;
    for (;;) {
        auto raw = file_->host_bytes(offset, kSliceBytes);
        if (!raw || raw->length == 0) break;
        off_t at = static_cast<off_t>(raw->offset);
        const ssize_t n = ::sendfile(fd, raw->fd, &at, raw->length);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EINVAL || errno == ENOSYS) break;  // this fd takes no sendfile
            return fail(errno, "write", "<output>");
        }
        if (n == 0) break;
        offset += static_cast<uint64_t>(n);
    }
    for (;;) {
        auto slice = read(offset);
        if (!slice) return std::unexpected(slice.error());
        if (slice->empty()) return {};
        for (std::size_t done = 0; done < slice->size();) {
            const ssize_t n = ::write(fd, slice->data() + done, slice->size() - done);
            if (n < 0) {
                if (errno == EINTR) continue;
                return fail(errno, "write", "<output>");
            }
            done += static_cast<std::size_t>(n);
        }
        offset += slice->size();
    }
}

Result<void> ContentReader::for_each_slice(
    const std::function<Result<void>(std::span<const std::byte>)>& sink) {
    for (uint64_t offset = 0;;) {
        auto slice = read(offset);
        if (!slice) return std::unexpected(slice.error());
        if (slice->empty()) return {};
        if (auto ok = sink(*slice); !ok) return ok;
        offset += slice->size();
    }
}

Result<bool> same_content(Backend& a, std::string_view path_a, Backend& b,
                          std::string_view path_b) {
    auto reader_a = ContentReader::open(a, path_a);
    if (!reader_a) return std::unexpected(reader_a.error());
    auto reader_b = ContentReader::open(b, path_b);
    if (!reader_b) return std::unexpected(reader_b.error());
    uint64_t offset_a = 0, offset_b = 0;
    std::span<const std::byte> pending_a, pending_b;
    // Slices of the two sides need not line up (short reads): compare what both have.
    for (;;) {
        if (pending_a.empty()) {
            auto slice = reader_a->read(offset_a);
            if (!slice) return std::unexpected(slice.error());
            pending_a = *slice;
            offset_a += slice->size();
        }
        if (pending_b.empty()) {
            auto slice = reader_b->read(offset_b);
            if (!slice) return std::unexpected(slice.error());
            pending_b = *slice;
            offset_b += slice->size();
        }
        if (pending_a.empty() || pending_b.empty()) return pending_a.empty() && pending_b.empty();
        const std::size_t n = std::min(pending_a.size(), pending_b.size());
        if (std::memcmp(pending_a.data(), pending_b.data(), n) != 0) return false;
        pending_a = pending_a.subspan(n);
        pending_b = pending_b.subspan(n);
    }
}

}  // namespace packfs::cli
