#include "volume/journal_reader.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "core/fd.hpp"
#include "core/io.hpp"

namespace packfs::volume {

namespace {

constexpr std::size_t kReadAhead = 1 << 20;

template <class T>
T load(const std::byte* p) noexcept {
    T value;
    std::memcpy(&value, p, sizeof(T));
    return value;
}

// A sequential window over the file: bytes [start_, start_ + length_) are in buffer_.
class Window {
public:
    Window(int fd, uint64_t file_size, const std::string& path)
        : fd_(fd), file_size_(file_size), path_(path) {}

    // Bytes [offset, offset + n) of the file; the caller checked they lie in it. The span
    // stays valid until the next call.
    Result<std::span<const std::byte>> get(uint64_t offset, std::size_t n) {
        if (offset < start_ || offset + n > start_ + length_) {
            if (auto r = fill(offset, n); !r) return std::unexpected(r.error());
        }
        return std::span<const std::byte>(buffer_.data() + (offset - start_), n);
    }

private:
    Result<void> fill(uint64_t offset, std::size_t n) {
        const auto want = static_cast<std::size_t>(
            std::min<uint64_t>(std::max<uint64_t>(n, kReadAhead), file_size_ - offset));
        // Keep the part of the old window that the new one starts with.
        std::size_t kept = 0;
        if (offset >= start_ && offset < start_ + length_) {
            kept = static_cast<std::size_t>(start_ + length_ - offset);
            std::memmove(buffer_.data(), buffer_.data() + (offset - start_), kept);
        }
        if (buffer_.size() < want) buffer_.resize(want);
        start_ = offset;
        length_ = kept;
        while (length_ < want) {
            const ssize_t got = ::pread(fd_, buffer_.data() + length_, want - length_,
                                        static_cast<off_t>(offset + length_));
            if (got < 0) {
                if (errno == EINTR) continue;
                return fail(errno, "scan_journal", path_);
            }
            if (got == 0) return fail(EIO, "scan_journal", path_);  // shrank under us
            length_ += static_cast<std::size_t>(got);
        }
        return {};
    }

    int fd_;
    uint64_t file_size_;
    const std::string& path_;
    std::vector<std::byte> buffer_;
    uint64_t start_ = 0;
    std::size_t length_ = 0;
};

std::unexpected<Error> header_corrupt(const std::string& path, uint64_t offset,
                                      uint64_t expected, uint64_t actual, std::string_view what) {
    return std::unexpected(Error::corrupt("scan_journal", path,
                                          Corruption{offset, expected, actual, std::string(what)}));
}

// Checks the header and fills scan's header fields.
Result<void> read_header(Window& window, const std::string& path, JournalScan& scan) {
    if (scan.file_size < 16)
        return header_corrupt(path, 0, kJournalHeaderSize, scan.file_size,
                              "journal header (file too short)");
    auto fixed = window.get(0, 16);
    if (!fixed) return std::unexpected(fixed.error());
    const std::byte* p = fixed->data();
    if (std::memcmp(p, kJournalMagic.data(), kJournalMagic.size()) != 0) {
        return header_corrupt(path, 0,
                              load<uint64_t>(reinterpret_cast<const std::byte*>(kJournalMagic.data())),
                              load<uint64_t>(p), "journal magic (not a journal)");
    }
    const auto version = load<uint32_t>(p + offsetof(JournalHeader, version));
    const auto header_size = load<uint32_t>(p + offsetof(JournalHeader, header_size));
    if (header_size < kJournalHeaderSize || header_size > kJournalMaxHeaderSize ||
        header_size % 8 != 0)
        return header_corrupt(path, offsetof(JournalHeader, header_size), kJournalHeaderSize,
                              header_size, "journal header size");
    if (scan.file_size < header_size)
        return header_corrupt(path, 0, header_size, scan.file_size,
                              "journal header (file too short)");
    auto whole = window.get(0, header_size);
    if (!whole) return std::unexpected(whole.error());
    const uint64_t stored = load<uint64_t>(whole->data() + header_size - 8);
    const uint64_t sum = journal_header_checksum(*whole);
    if (stored != sum)
        return header_corrupt(path, header_size - 8, stored, sum, "journal header checksum");
    // Checked after the checksum: a newer header is still checksummed the same way.
    if (version > kJournalVersion) {
        return std::unexpected(Error(
            ENOTSUP, "scan_journal",
            fmt::format("{} (journal format version {} is newer than this PackFS reads ({}))",
                        path, version, kJournalVersion)));
    }
    if (version != kJournalVersion)
        return header_corrupt(path, offsetof(JournalHeader, version), kJournalVersion, version,
                              "journal format version");
    if (header_size != kJournalHeaderSize)
        return header_corrupt(path, offsetof(JournalHeader, header_size), kJournalHeaderSize,
                              header_size, "journal header size");
    JournalHeader h;
    std::memcpy(&h, whole->data(), sizeof h);
    if (h.reserved != 0)
        return header_corrupt(path, offsetof(JournalHeader, reserved), 0, h.reserved,
                              "journal header reserved field");
    if (h.first_seq == 0)
        return header_corrupt(path, offsetof(JournalHeader, first_seq), 1, 0,
                              "journal first sequence number");
    scan.version = version;
    scan.header_size = header_size;
    scan.header.generation = h.generation;
    scan.header.first_seq = h.first_seq;
    std::memcpy(scan.header.volume_id.data(), h.volume_id, sizeof h.volume_id);
    return {};
}

// How many frames the dropped range [offset, file_size) holds, following length fields.
Result<uint64_t> count_dropped(Window& window, uint64_t offset, uint64_t file_size) {
    uint64_t count = 0;
    while (offset < file_size) {
        ++count;
        if (file_size - offset < kFrameHeaderSize) break;
        auto h = window.get(offset, kFrameHeaderSize);
        if (!h) return std::unexpected(h.error());
        const auto length = load<uint32_t>(h->data());
        if (length > kMaxJournalPayload) break;
        const uint64_t size = journal_frame_size(length);
        if (size > file_size - offset) break;
        offset += size;
    }
    return count;
}

}  // namespace

Result<JournalScan> scan_journal(const std::string& path, const JournalRecordFn& on_record,
                                 std::optional<JournalPosition> from) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return fail(errno, "scan_journal", path);
    struct stat st;
    if (::fstat(fd.get(), &st) != 0) return fail(errno, "scan_journal", path);
    JournalScan scan;
    scan.file_size = static_cast<uint64_t>(st.st_size);
    Window window(fd.get(), scan.file_size, path);
    if (auto r = read_header(window, path, scan); !r) return std::unexpected(r.error());

    uint64_t offset = scan.header_size;
    uint64_t expected_seq = scan.header.first_seq;
    if (from && from->offset >= offset && from->offset % 8 == 0 && from->seq >= expected_seq) {
        offset = from->offset;
        expected_seq = from->seq;
        scan.last_seq = expected_seq - 1;
        scan.valid_end = offset;
    }
    const uint64_t size = scan.file_size;
    while (offset < size) {
        const uint64_t left = size - offset;
        if (left < kFrameHeaderSize) {
            scan.reason = fmt::format("truncated frame at offset {} (needs {} bytes, {} left)",
                                      offset, kFrameHeaderSize, left);
            break;
        }
        auto head = window.get(offset, kFrameHeaderSize);
        if (!head) return std::unexpected(head.error());
        const auto length = load<uint32_t>(head->data());
        if (length > kMaxJournalPayload) {
            scan.reason = fmt::format("payload length {} over the maximum {} at offset {}",
                                      length, kMaxJournalPayload, offset);
            break;
        }
        const uint64_t frame_size = journal_frame_size(length);
        if (frame_size > left) {
            scan.reason = fmt::format("truncated frame at offset {} (needs {} bytes, {} left)",
                                      offset, frame_size, left);
            break;
        }
        auto frame = window.get(offset, static_cast<std::size_t>(frame_size));
        if (!frame) return std::unexpected(frame.error());
        const std::byte* f = frame->data();
        const auto stored = load<uint64_t>(f + frame_size - kFrameTrailerSize);
        if (XXH3_64bits(f, frame_size - kFrameTrailerSize) != stored) {
            scan.reason = fmt::format("checksum mismatch at offset {}", offset);
            break;
        }
        const auto type = load<uint16_t>(f + 4);
        const auto flags = load<uint16_t>(f + 6);
        const auto seq = load<uint64_t>(f + 8);
        if (flags != 0) {
            scan.reason = fmt::format("unknown frame flags {:#x} at offset {}", flags, offset);
            break;
        }
        const bool padding_zero = std::all_of(f + kFrameHeaderSize + length,
                                              f + frame_size - kFrameTrailerSize,
                                              [](std::byte b) { return b == std::byte{0}; });
        if (!padding_zero) {
            scan.reason = fmt::format("non-zero frame padding at offset {}", offset);
            break;
        }
        if (seq != expected_seq) {
            scan.reason = fmt::format("sequence number {} at offset {}, expected {}", seq,
                                      offset, expected_seq);
            break;
        }
        if (auto r = on_record(JournalRecordView{seq, type, {f + kFrameHeaderSize, length}, offset});
            !r)
            return std::unexpected(r.error());
        ++scan.records;
        ++expected_seq;
        offset += frame_size;
    }
    scan.valid_end = offset;
    scan.last_seq = expected_seq - 1;
    if (offset < size) {
        scan.dropped_offset = offset;
        scan.dropped_bytes = size - offset;
        auto n = count_dropped(window, offset, size);
        if (!n) return std::unexpected(n.error());
        scan.dropped_records = *n;
    }
    return scan;
}

Result<void> truncate_journal(const std::string& path, uint64_t valid_end) {
    Fd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd) return fail(errno, "truncate_journal", path);
    if (auto r = io::ftruncate(fd.get(), valid_end, path); !r) return r;
    return io::fdatasync(fd.get(), path);
}

}  // namespace packfs::volume
