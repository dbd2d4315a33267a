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

namespace {

constexpr std::size_t kSparseBlock = 4096;

bool all_zero(std::span<const std::byte> bytes) noexcept {
    static const std::byte kZeros[kSparseBlock] = {};
    return std::memcmp(bytes.data(), kZeros, bytes.size()) == 0;
}

// pwrite of all of `bytes` at `offset`; 0 or the errno.
int pwrite_all(int fd, std::span<const std::byte> bytes, uint64_t offset) noexcept {
    for (std::size_t done = 0; done < bytes.size();) {
        const ssize_t n = ::pwrite(fd, bytes.data() + done, bytes.size() - done,
                                   static_cast<off_t>(offset + done));
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        done += static_cast<std::size_t>(n);
    }
    return 0;
}

// Writes `slice` (file bytes at `offset`) except its aligned 4 KiB blocks of zeros, each run of
// other blocks in one pwrite.
int write_non_zero(int fd, std::span<const std::byte> slice, uint64_t offset) noexcept {
    std::size_t run = 0;  // start of the pending run of blocks to write
    std::size_t at = 0;
    while (at < slice.size()) {
        // The block that holds file offset `offset + at`, cut at the slice's ends.
        const std::size_t end =
            std::min<std::size_t>(slice.size(), at + kSparseBlock - (offset + at) % kSparseBlock);
        const bool whole = end - at == kSparseBlock;
        if (whole && all_zero(slice.subspan(at, end - at))) {
            if (at > run) {
                if (int err = pwrite_all(fd, slice.subspan(run, at - run), offset + run))
                    return err;
            }
            run = end;
        }
        at = end;
    }
    if (slice.size() > run) return pwrite_all(fd, slice.subspan(run), offset + run);
    return 0;
}

}  // namespace

Result<void> ContentReader::write_sparse_to(int fd,
                                            const std::function<void(std::size_t)>& on_bytes) {
    auto st = file_->fstat();
    if (!st) return std::unexpected(st.error());
    const uint64_t size = st->size;
    uint64_t at = 0;
    while (at < size) {
        auto data = file_->seek_data(at, true);
        if (!data && data.error().code() == ENXIO) break;  // only a hole is left
        if (!data) return std::unexpected(data.error().relabeled("read", path_));
        if (*data > at) on_bytes(static_cast<std::size_t>(*data - at));  // a hole passed
        auto hole = file_->seek_data(*data, false);
        if (!hole) return std::unexpected(hole.error().relabeled("read", path_));
        for (uint64_t pos = *data; pos < *hole;) {
            auto slice =
                read(pos, static_cast<std::size_t>(std::min<uint64_t>(kSliceBytes, *hole - pos)));
            if (!slice) return std::unexpected(slice.error());
            if (slice->empty()) break;  // the file ended early (it changed meanwhile)
            if (int err = write_non_zero(fd, *slice, pos)) return fail(err, "write", path_);
            on_bytes(slice->size());
            pos += slice->size();
        }
        at = std::max(*hole, at + 1);
    }
    if (size > at) on_bytes(static_cast<std::size_t>(size - at));
    if (::ftruncate(fd, static_cast<off_t>(size)) != 0) return fail(errno, "truncate", path_);
    return {};
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
