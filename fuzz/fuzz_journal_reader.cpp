// libFuzzer target: the journal's recovery reader on arbitrary files (DESIGN §10, §14).
//
// Input: one mode byte, then the journal file's bytes.
//   mode bit 0: recompute the header checksum first (over the header_size the header claims,
//               when it is sane), so mutations get past it and reach the frames;
//   mode bit 1: also recompute each frame's checksum, following the frames by their length
//               fields, so mutations of lengths, seqs, flags and padding reach those checks.
// The seed corpus (fuzz/corpus/journal, written by fuzz_make_corpus) uses mode 3 on valid
// journals, and mode 0 on one.
//
// The file goes into a memfd (no disk I/O) read through /proc/self/fd. Checked: errors are
// values (EUCLEAN carries what it found); records come in seq order from first_seq, each
// frame inside [header_size, valid_end), back to back, with a sane length; valid_end <= size
// and the dropped counts add up. When the scan succeeds, recovery is run for real: the tail
// is cut, a writer appends one record, and a second scan must be clean with that one more.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "volume/journal_format.hpp"
#include "volume/journal_reader.hpp"
#include "volume/journal_writer.hpp"

namespace {

using namespace packfs;
using namespace packfs::volume;

[[noreturn]] void die(const char* what) {
    std::fprintf(stderr, "fuzz_journal_reader: invariant: %s\n", what);
    std::abort();
}

int memfd() {
    static const int fd = [] {
        const int f = ::memfd_create("fuzz-journal", MFD_CLOEXEC);
        if (f < 0) die("memfd_create");
        return f;
    }();
    return fd;
}

void fix(std::string& file, bool frames) {
    if (file.size() < 16) return;
    uint32_t header_size;
    std::memcpy(&header_size, file.data() + 12, 4);
    if (header_size < 16 || header_size > kJournalMaxHeaderSize || header_size % 8 != 0 ||
        header_size > file.size())
        return;
    auto* base = reinterpret_cast<std::byte*>(file.data());
    const uint64_t sum = journal_header_checksum({base, header_size});
    std::memcpy(base + header_size - 8, &sum, 8);
    if (!frames) return;
    uint64_t at = header_size;
    while (file.size() - at >= kFrameHeaderSize) {
        uint32_t length;
        std::memcpy(&length, base + at, 4);
        if (length > kMaxJournalPayload) return;
        const uint64_t size = journal_frame_size(length);
        if (size > file.size() - at) return;
        const uint64_t frame_sum = XXH3_64bits(base + at, size - kFrameTrailerSize);
        std::memcpy(base + at + size - kFrameTrailerSize, &frame_sum, 8);
        at += size;
    }
}

void check_error(const Error& e) {
    if (e.code() <= 0) die("error with a non-positive code");
    if (e.code() == EUCLEAN && (!e.corruption() || e.corruption()->what.empty()))
        die("EUCLEAN without a corruption detail");
    (void)e.message();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const uint8_t mode = data[0];
    std::string file(reinterpret_cast<const char*>(data + 1), size - 1);
    if (mode & 1) fix(file, (mode & 2) != 0);

    const int fd = memfd();
    if (::ftruncate(fd, 0) != 0) die("ftruncate");
    if (!file.empty() &&
        ::pwrite(fd, file.data(), file.size(), 0) != static_cast<ssize_t>(file.size()))
        die("pwrite");
    const std::string path = "/proc/self/fd/" + std::to_string(fd);

    uint64_t count = 0;
    uint64_t next_offset = 0;
    uint64_t next_seq = 0;
    auto scan = scan_journal(path, [&](const JournalRecordView& r) -> Result<void> {
        if (count == 0) {
            next_seq = r.seq;
            next_offset = r.offset;
        }
        if (r.seq != next_seq) die("records out of seq order");
        if (r.offset != next_offset) die("frames not back to back");
        if (r.payload.size() > kMaxJournalPayload) die("payload over the maximum");
        if (r.offset + journal_frame_size(r.payload.size()) > file.size()) die("frame past the end");
        ++count;
        ++next_seq;
        next_offset = r.offset + journal_frame_size(r.payload.size());
        return {};
    });
    if (!scan) {
        check_error(scan.error());
        return 0;
    }
    const JournalScan& s = *scan;
    if (s.records != count) die("records count differs from the records passed");
    if (s.valid_end > file.size() || s.valid_end < s.header_size) die("valid_end out of range");
    if (count > 0 && (s.header.first_seq != next_seq - count || next_offset != s.valid_end ||
                      s.last_seq != next_seq - 1))
        die("first_seq, last_seq or valid_end inconsistent with the records");
    if (count == 0 && (s.valid_end != s.header_size || s.last_seq + 1 != s.header.first_seq))
        die("empty scan with a wrong valid_end or last_seq");
    if (s.valid_end + s.dropped_bytes != file.size()) die("dropped bytes do not add up");
    if ((s.dropped_bytes > 0) != (s.dropped_records > 0) || (s.dropped_bytes > 0) == s.reason.empty())
        die("dropped records or reason inconsistent with dropped bytes");
    if (s.dropped_records > s.dropped_bytes) die("more dropped records than bytes");

    // Recovery for real: cut, append one record, scan clean.
    if (s.last_seq == UINT64_MAX) return 0;  // no next seq to give
    if (auto t = truncate_journal(path, s.valid_end); !t) die("truncate_journal failed");
    auto w = JournalWriter::open_append(path, s, Durability::always);
    if (!w) die("open_append after recovery failed");
    const std::byte payload[3] = {std::byte{1}, std::byte{2}, std::byte{3}};
    auto ticket = (*w)->append(7, payload);
    if (!ticket || ticket->seq != s.last_seq + 1) die("append after recovery failed");
    uint64_t again = 0;
    auto rescan = scan_journal(path, [&](const JournalRecordView&) -> Result<void> {
        ++again;
        return {};
    });
    if (!rescan || !rescan->clean() || again != count + 1) die("rescan after recovery not clean");
    return 0;
}
