#include "volume/journal_writer.hpp"

#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "core/io.hpp"

namespace packfs::volume {

// Where the bytes are, per mode (all under mu_):
//   always    buffer_ holds the one record append() is writing; empty between calls.
//   batch     buffer_ holds the records appended since the last leader took its batch; the
//             leader's batch is in spare_ and goes at written_end_ (== durable_end_: a batch
//             is written and synced in one go).
//   explicit  buffer_ holds every byte after durable_end_; its first buffer_written_ bytes
//             are in the file already, so written_end_ == durable_end_ + buffer_written_.
//             While a leader flushes, its batch (the bytes after durable_end_ when it started)
//             is in spare_ and buffer_ holds what was appended since, written by no one until
//             the flush ends (then it starts at the new durable_end_).

namespace {

std::string directory_of(const std::string& path) {
    const auto slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    if (slash == 0) return "/";
    return path.substr(0, slash);
}

// A buffer that once held a huge record gives its memory back.
void clear_buffer(std::vector<std::byte>& buffer) {
    if (buffer.capacity() > 4 * JournalWriter::kFlushBytes)
        std::vector<std::byte>().swap(buffer);
    else
        buffer.clear();
}

}  // namespace

JournalWriter::JournalWriter(Fd fd, std::string path, Durability durability, uint64_t end,
                             uint64_t last_seq)
    : fd_(std::move(fd)),
      path_(std::move(path)),
      durability_(durability),
      next_seq_(last_seq + 1),
      durable_seq_(last_seq),
      durable_end_(end),
      written_end_(end) {}

Result<std::unique_ptr<JournalWriter>> JournalWriter::create(const std::string& path,
                                                             const JournalHeaderFields& header,
                                                             Durability durability) {
    if (header.first_seq == 0) return fail(EINVAL, "create_journal", path);
    auto created = io::create_file(path, O_WRONLY | O_CREAT | O_EXCL, 0644, path);
    if (!created) return fail(created.error().code(), "create_journal", path);
    Fd fd = std::move(*created);
    const auto bytes = encode_journal_header(header);
    auto r = io::pwrite_all(fd.get(), bytes, 0, path);
    if (r) r = io::fdatasync(fd.get(), path);
    if (r) r = io::fsync_dir(directory_of(path), path);
    if (!r) {
        (void)io::unlink(path, path);  // a retry may create it again
        return std::unexpected(r.error());
    }
    return std::unique_ptr<JournalWriter>(new JournalWriter(
        std::move(fd), path, durability, kJournalHeaderSize, header.first_seq - 1));
}

Result<std::unique_ptr<JournalWriter>> JournalWriter::open_append(const std::string& path,
                                                                  const JournalScan& scan,
                                                                  Durability durability) {
    if (scan.header_size == 0 || scan.header.first_seq == 0)
        return fail(EINVAL, "open_journal", path);
    Fd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd) return fail(errno, "open_journal", path);
    struct stat st;
    if (::fstat(fd.get(), &st) != 0) return fail(errno, "open_journal", path);
    // The torn tail must be gone: appending after it would bury new records behind it.
    if (static_cast<uint64_t>(st.st_size) != scan.valid_end)
        return fail(EINVAL, "open_journal", path);
    // What the scan read may still be only in the page cache (a crashed process's writes).
    if (auto r = io::fdatasync(fd.get(), path); !r) return std::unexpected(r.error());
    return std::unique_ptr<JournalWriter>(
        new JournalWriter(std::move(fd), path, durability, scan.valid_end, scan.last_seq));
}

Result<JournalTicket> JournalWriter::append(uint16_t type, std::span<const std::byte> payload) {
    std::unique_lock lock(mu_);
    if (broken_) return fail(EIO, "journal_append", path_);
    if (failed_) return std::unexpected(*failed_);
    if (payload.size() > kMaxJournalPayload) return fail(EFBIG, "journal_append", path_);
    const uint64_t frame = journal_frame_size(payload.size());
    if (durability_ == Durability::explicit_sync && !std::exchange(room_made_, false)) {
        if (auto ok = make_room_locked(lock, frame); !ok) return std::unexpected(ok.error());
    }

    const JournalTicket ticket{epoch_, next_seq_++};
    append_journal_frame(buffer_, ticket.seq, type, payload);
    switch (durability_) {
        case Durability::always:
            if (auto r = write_and_sync_locked(); !r) return std::unexpected(r.error());
            break;
        case Durability::batch:
            break;
        case Durability::explicit_sync:
            // Bounded memory: write out past kFlushBytes, sync past kSyncBytes (asked of the
            // volume's commit thread where there is one). A failure keeps the bytes pending;
            // the next try waits for another kFlushBytes (or sync()). While a leader flushes,
            // the file's tail is its own: the new bytes wait for the next flush.
            if (!flushing_ && buffer_.size() - buffer_written_ >= kFlushBytes &&
                buffer_.size() >= retry_at_) {
                auto r = explicit_write_locked();
                if (r && buffer_written_ >= kSyncBytes) {
                    if (!sync_due_) {
                        r = explicit_flush(lock);
                    } else if (!sync_asked_) {
                        sync_asked_ = true;
                        sync_due_();
                    }
                }
                if (!r) retry_at_ = buffer_.size() + kFlushBytes;
            }
            break;
    }
    return ticket;
}

Result<void> JournalWriter::make_room() {
    std::unique_lock lock(mu_);
    if (broken_) return fail(EIO, "journal_append", path_);
    if (failed_) return std::unexpected(*failed_);
    if (durability_ != Durability::explicit_sync) return {};
    if (auto ok = make_room_locked(lock, 1); !ok) return ok;
    room_made_ = true;
    return {};
}

Result<void> JournalWriter::make_room_locked(std::unique_lock<std::mutex>& lock,
                                             std::size_t frame) {
    // Past the bound: a flush under way frees its batch when it ends, so wait for it; with none
    // under way (the commit thread was asked to sync and has not begun: it lags a fast writer
    // on a busy machine) flush here rather than refuse. Refused only when that flush fails too:
    // the disk is failing, and memory must stay bounded.
    while (!buffer_.empty() && buffer_.size() + frame > kMaxPendingBytes) {
        if (flushing_) {
            flushed_.wait(lock);
            continue;
        }
        if (!explicit_flush(lock)) return fail(ENOSPC, "journal_append", path_);
    }
    return {};
}

Result<void> JournalWriter::write_and_sync_locked() {
    auto r = io::pwrite_all(fd_.get(), buffer_, written_end_, path_);
    if (r) r = io::fdatasync(fd_.get(), path_);
    if (!r) {
        discard_locked(r.error());
        return r;
    }
    ++fsyncs_;
    written_end_ += buffer_.size();
    durable_end_ = written_end_;
    durable_seq_ = next_seq_ - 1;
    clear_buffer(buffer_);
    return {};
}

void JournalWriter::discard_locked(const Error& error) {
    first_discarded_ = durable_seq_ + 1;
    clear_buffer(buffer_);
    epoch_ends_.push_back(EpochEnd{first_discarded_, error});
    epoch_ = epoch_ends_.size();
    failed_ = error;
    auto r = io::ftruncate(fd_.get(), durable_end_, path_);
    if (r) r = io::fdatasync(fd_.get(), path_);
    if (!r) {
        broken_ = true;
        failed_ = Error(EIO, "journal_append", path_);
    }
    written_end_ = durable_end_;
}

Result<void> JournalWriter::explicit_write_locked() {
    if (buffer_written_ == buffer_.size()) return {};
    const uint64_t at = durable_end_ + buffer_written_;
    auto r = io::pwrite_all(fd_.get(), std::span(buffer_).subspan(buffer_written_), at, path_);
    if (!r) {
        // Cut what a torn write left. Should the cut fail too, the retry still rewrites the
        // same bytes at the same offset, so no torn frame can stay in the middle.
        (void)io::ftruncate(fd_.get(), at, path_);
        return r;
    }
    buffer_written_ = buffer_.size();
    written_end_ = durable_end_ + buffer_written_;
    return {};
}

Result<void> JournalWriter::explicit_flush(std::unique_lock<std::mutex>& lock) {
    if (buffer_.empty()) return {};  // nothing since the last sync
    flushing_ = true;
    sync_asked_ = false;
    std::swap(buffer_, spare_);  // the batch; appends go on into a fresh buffer
    const std::size_t already = buffer_written_;
    const uint64_t at = durable_end_;
    const uint64_t batch_last = next_seq_ - 1;
    buffer_written_ = 0;
    retry_at_ = 0;
    lock.unlock();
    auto r = io::pwrite_all(fd_.get(), std::span(spare_).subspan(already), at + already, path_);
    const bool written = r.has_value();
    if (r) r = io::fdatasync(fd_.get(), path_);
    // A failed write: cut what a torn write left (the prefix written before stays good; should
    // the cut fail too, the retry rewrites the same bytes at the same offsets). A failed
    // fdatasync: everything since the last good sync is suspect and is rewritten next time.
    if (!r) (void)io::ftruncate(fd_.get(), written ? at : at + already, path_);
    lock.lock();
    flushing_ = false;
    if (r) {
        ++fsyncs_;
        durable_end_ = at + spare_.size();
        written_end_ = durable_end_;
        durable_seq_ = batch_last;
        clear_buffer(spare_);
    } else {
        // Still pending, in order: the batch, then what was appended meanwhile.
        spare_.insert(spare_.end(), buffer_.begin(), buffer_.end());
        std::swap(buffer_, spare_);
        clear_buffer(spare_);
        buffer_written_ = written ? 0 : already;
        written_end_ = durable_end_ + buffer_written_;
    }
    flushed_.notify_all();
    return r;
}

Result<void> JournalWriter::explicit_group_sync(std::unique_lock<std::mutex>& lock) {
    const uint64_t target = next_seq_ - 1;
    for (;;) {
        if (durable_seq_ >= target) return {};
        if (!flushing_) return explicit_flush(lock);
        flushed_.wait(lock);  // then lead the next flush if that one did not cover target
    }
}

void JournalWriter::set_sync_due(std::function<void()> notify) {
    std::lock_guard lock(mu_);
    sync_due_ = std::move(notify);
}

Result<void> JournalWriter::batch_sync(std::unique_lock<std::mutex>& lock, JournalTicket ticket) {
    for (;;) {
        if (ticket.epoch != epoch_) {
            if (ticket.epoch >= epoch_ends_.size()) return fail(EINVAL, "journal_sync", path_);
            const EpochEnd& end = epoch_ends_[ticket.epoch];
            if (ticket.seq < end.first_discarded) return {};
            return std::unexpected(end.error);
        }
        if (ticket.seq <= durable_seq_) return {};
        if (ticket.seq >= next_seq_) return fail(EINVAL, "journal_sync", path_);
        if (failed_) return std::unexpected(*failed_);
        if (flushing_) {
            flushed_.wait(lock);
            continue;
        }
        // Lead: take everything buffered, write and sync it outside the mutex.
        flushing_ = true;
        std::swap(buffer_, spare_);
        const uint64_t batch_last = next_seq_ - 1;
        const uint64_t at = written_end_;
        lock.unlock();
        auto r = io::pwrite_all(fd_.get(), spare_, at, path_);
        if (r) r = io::fdatasync(fd_.get(), path_);
        lock.lock();
        flushing_ = false;
        if (r) {
            ++fsyncs_;
            written_end_ = at + spare_.size();
            durable_end_ = written_end_;
            durable_seq_ = batch_last;
        } else {
            discard_locked(r.error());
        }
        clear_buffer(spare_);
        flushed_.notify_all();
    }
}

Result<void> JournalWriter::wait_durable(JournalTicket ticket) {
    if (durability_ != Durability::batch) return {};
    std::unique_lock lock(mu_);
    return batch_sync(lock, ticket);
}

Result<void> JournalWriter::sync() {
    std::unique_lock lock(mu_);
    switch (durability_) {
        case Durability::always:
            if (broken_) return fail(EIO, "journal_sync", path_);
            if (failed_) return std::unexpected(*failed_);
            return {};
        case Durability::batch:
            if (broken_) return fail(EIO, "journal_sync", path_);
            if (failed_) return std::unexpected(*failed_);
            if (next_seq_ - 1 <= durable_seq_) return {};
            return batch_sync(lock, JournalTicket{epoch_, next_seq_ - 1});
        case Durability::explicit_sync:
            return explicit_group_sync(lock);
    }
    return {};
}

uint64_t JournalWriter::first_discarded_seq() const {
    std::lock_guard lock(mu_);
    return first_discarded_;
}

Result<void> JournalWriter::resume() {
    std::lock_guard lock(mu_);
    if (broken_) return fail(EIO, "journal_resume", path_);
    if (!failed_) return {};
    failed_.reset();
    next_seq_ = first_discarded_;
    return {};
}

uint64_t JournalWriter::durable_seq() const {
    std::lock_guard lock(mu_);
    return durable_seq_;
}

uint64_t JournalWriter::last_seq() const {
    std::lock_guard lock(mu_);
    return next_seq_ - 1;
}

uint64_t JournalWriter::file_bytes() const {
    std::lock_guard lock(mu_);
    return written_end_;
}

uint64_t JournalWriter::fsync_count() const {
    std::lock_guard lock(mu_);
    return fsyncs_;
}

}  // namespace packfs::volume
