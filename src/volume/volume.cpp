// The volume (include/packfs/volume.hpp, docs/VOLUME.md): an overlay over the current pack,
// with every mutation recorded in the journal.
//
// Protocol. A mutation takes `mu_`, stamps the time, applies itself to the overlay, frames its
// record into the journal writer, and releases `mu_`; so records are in the order the tree
// changed. It then waits for durability as its mode says (journal_writer.hpp). If the journal
// cannot take the record (a full disk, an I/O error), the overlay goes back to the version
// before the first record the journal discarded (restore_version keeps handles usable), every
// mutation from there fails with the error, and the writer resumes: nothing the caller was
// told failed took effect, and the next mutation can succeed.
//
// Readers never take `mu_`: they read the overlay's published version, as with mem.
#include "packfs/volume.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "core/fd.hpp"
#include "core/io.hpp"
#include "mem/mem_version.hpp"
#include "mem/op_clock.hpp"
#include "overlay/pack_layer.hpp"
#include "overlay/tree_layer.hpp"
#include "pack/pack_access.hpp"
#include "packfs/mem.hpp"
#include "volume/journal_reader.hpp"
#include "volume/journal_writer.hpp"
#include "volume/manifest.hpp"
#include "volume/records.hpp"

namespace packfs {

const char* durability_name(Durability d) noexcept {
    switch (d) {
        case Durability::always: return "always";
        case Durability::batch: return "batch";
        case Durability::explicit_sync: return "explicit";
    }
    return "batch";
}

std::optional<Durability> durability_from_name(std::string_view name) noexcept {
    if (name == "always") return Durability::always;
    if (name == "batch") return Durability::batch;
    if (name == "explicit") return Durability::explicit_sync;
    return std::nullopt;
}

bool is_volume_dir(const std::string& dir) {
    struct stat st {};
    return ::stat((dir + "/" + volume::kManifestName).c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

namespace volume {
namespace {

constexpr const char* kLockName = "LOCK";

// A pack the volume reads from. Once a compaction has replaced it, `retire` is set and the
// file is unlinked when the last reader of it (a snapshot, an open file, a tree version) goes.
struct PackLease {
    std::shared_ptr<const pack::PackReader> reader;
    std::string path;
    std::atomic<bool> retire{false};
    ~PackLease() {
        if (retire.load()) ::unlink(path.c_str());
    }
};

struct OpenedPack {
    std::shared_ptr<PackLease> lease;
    mem::LowerPtr layer;
    uint64_t max_ino = 1;
    std::string digest;
    uint64_t bytes = 0;
};

Result<OpenedPack> open_volume_pack(const std::string& path) {
    auto backend = open_pack(path);
    if (!backend) return std::unexpected(backend.error());
    OpenedPack out;
    out.lease = std::make_shared<PackLease>();
    out.lease->reader = pack::reader_of(**backend);
    out.lease->path = path;
    // Everything that reads the pack holds the lease through this aliasing pointer.
    std::shared_ptr<const pack::PackReader> leased(out.lease, out.lease->reader.get());
    out.layer = overlay::make_pack_layer(leased);
    auto max = out.lease->reader->max_inode_number(pack::Ctx{"open volume", {}});
    if (!max) return std::unexpected(max.error());
    out.max_ino = *max;
    out.digest = (*backend)->info().digest;
    out.bytes = (*backend)->info().file_size;
    return out;
}

std::string join(const std::string& dir, const std::string& name) { return dir + "/" + name; }

std::array<uint8_t, 16> random_volume_id() {
    std::random_device rd;
    std::array<uint8_t, 16> id{};
    for (auto& b : id) b = static_cast<uint8_t>(rd());
    return id;
}

// Replays the records of the journal at `path` into `target` (opening a volume).
Result<JournalScan> replay_journal(const std::string& path, Backend& target) {
    return scan_journal(path, [&](const JournalRecordView& view) -> Result<void> {
        auto record = decode_record(view.type, view.payload);
        if (!record) return std::unexpected(record.error());
        if (auto ok = apply_record(target, *record); !ok) {
            return std::unexpected(Error::corrupt(
                "journal replay", record->path,
                Corruption{view.offset, 0, view.seq,
                           fmt::format("record {} ({}) does not apply: {}", view.seq,
                                       describe_record(*record), ok.error().message())}));
        }
        return {};
    });
}

RecoveryReport report_of(const JournalScan& scan) {
    RecoveryReport r;
    r.records_replayed = scan.records;
    r.dropped_records = scan.dropped_records;
    r.dropped_bytes = scan.dropped_bytes;
    r.dropped_offset = scan.dropped_offset;
    r.reason = scan.reason;
    return r;
}

Result<void> check_header(const JournalScan& scan, const Manifest& m) {
    if (scan.header.generation != m.generation || scan.header.first_seq != m.first_seq ||
        scan.header.volume_id != m.volume_id)
        return std::unexpected(Error::corrupt(
            "open volume", m.journal,
            Corruption{0, m.generation, scan.header.generation,
                       "journal header (generation, first record or volume id differ from the "
                       "manifest's)"}));
    return {};
}

// Removes files a crash may have left: packs and journals of other generations, a pack
// writer's temporary file, a manifest that was never renamed into place. Only names PackFS
// makes; never what the manifest names.
void remove_leftovers(const std::string& dir, const Manifest& m) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
        const std::string name = entry.path().filename().string();
        if (name == m.pack || name == m.journal) continue;
        // ".pack.N.tmp-...": the pack writer's temporary file (output_file.cpp), left by a
        // crash while a compaction wrote its pack.
        const bool ours = name.starts_with("pack.") || name.starts_with("journal.") ||
                          (name.starts_with(".pack.") && name.find(".tmp-") != std::string::npos) ||
                          name == std::string(kManifestName) + ".tmp";
        if (ours) ::unlink(entry.path().c_str());
    }
}

class VolumeImpl;

// A writable handle: reads go straight to the overlay's handle; writes and truncates are
// journaled by inode.
class VolumeFile final : public File {
public:
    VolumeFile(std::shared_ptr<VolumeImpl> volume, FileHandle inner, uint64_t ino, bool append)
        : volume_(std::move(volume)), inner_(std::move(inner)), ino_(ino), append_(append) {}
    Result<std::size_t> pread(std::span<std::byte> buf, uint64_t offset) override {
        return inner_->pread(buf, offset);
    }
    Result<std::size_t> pwrite(std::span<const std::byte> data, uint64_t offset) override;
    Result<void> truncate(uint64_t size) override;
    Result<void> fsync(bool data_only) override;
    Result<Stat> fstat() override { return inner_->fstat(); }

private:
    std::shared_ptr<VolumeImpl> volume_;
    FileHandle inner_;
    uint64_t ino_;
    bool append_;
};

// A read-only handle in explicit mode: reads are the overlay's, and fsync is still a
// durability point for the whole volume (coreutils' `sync FILE` opens O_RDONLY).
class SyncingReadFile final : public File {
public:
    SyncingReadFile(std::shared_ptr<VolumeImpl> volume, FileHandle inner)
        : volume_(std::move(volume)), inner_(std::move(inner)) {}
    Result<std::size_t> pread(std::span<std::byte> buf, uint64_t offset) override {
        return inner_->pread(buf, offset);
    }
    Result<std::size_t> pwrite(std::span<const std::byte> data, uint64_t offset) override {
        return inner_->pwrite(data, offset);  // EBADF: opened read-only
    }
    Result<void> truncate(uint64_t size) override { return inner_->truncate(size); }
    Result<void> fsync(bool data_only) override;
    Result<Stat> fstat() override { return inner_->fstat(); }

private:
    std::shared_ptr<VolumeImpl> volume_;
    FileHandle inner_;
};

class VolumeImpl final : public Volume, public std::enable_shared_from_this<VolumeImpl> {
public:
    VolumeImpl(std::string dir, VolumeOptions options) : dir_(std::move(dir)), options_(std::move(options)) {}
    ~VolumeImpl() override {
        stop_auto_compaction();
        if (writer_) (void)writer_->sync();  // a clean close leaves nothing only in memory
    }

    Result<void> open();

    // --- reads: the overlay's, lock-free -------------------------------------------------
    Result<Stat> stat(std::string_view p) override { return overlay_->stat(p); }
    Result<Stat> lstat(std::string_view p) override { return overlay_->lstat(p); }
    Result<std::vector<DirEntry>> readdir(std::string_view p) override { return overlay_->readdir(p); }
    Result<std::string> readlink(std::string_view p) override { return overlay_->readlink(p); }
    Result<StatFs> statfs(std::string_view p) override { return overlay_->statfs(p); }
    Result<std::string> getxattr(std::string_view p, std::string_view n) override {
        return overlay_->getxattr(p, n);
    }
    Result<std::vector<std::string>> listxattr(std::string_view p) override {
        return overlay_->listxattr(p);
    }
    Result<std::shared_ptr<Backend>> snapshot() override { return overlay_->snapshot(); }
    bool read_only() const noexcept override { return options_.read_only; }

    // --- mutations: journaled --------------------------------------------------------------
    Result<FileHandle> open(std::string_view path, int flags, uint32_t mode) override;
    Result<void> truncate(std::string_view path, uint64_t size) override {
        return journaled(RecordType::truncate, path, [&] { return overlay_->truncate(path, size); },
                         [&](OpRecord& r) { r.offset = size; });
    }
    Result<void> mkdir(std::string_view path, uint32_t mode) override {
        return journaled(RecordType::mkdir, path, [&] { return overlay_->mkdir(path, mode); },
                         [&](OpRecord& r) { r.mode = mode; });
    }
    Result<void> rmdir(std::string_view path) override {
        return journaled(RecordType::rmdir, path, [&] { return overlay_->rmdir(path); },
                         [](OpRecord&) {});
    }
    Result<void> unlink(std::string_view path) override {
        return journaled(RecordType::unlink, path, [&] { return overlay_->unlink(path); },
                         [](OpRecord&) {});
    }
    Result<void> rename(std::string_view from, std::string_view to, RenameFlags flags) override {
        return journaled(RecordType::rename, from,
                         [&] { return overlay_->rename(from, to, flags); },
                         [&](OpRecord& r) {
                             r.path2 = to;
                             r.flags = static_cast<uint32_t>(flags);
                         });
    }
    Result<void> symlink(std::string_view target, std::string_view link_path) override {
        return journaled(RecordType::symlink, link_path,
                         [&] { return overlay_->symlink(target, link_path); },
                         [&](OpRecord& r) { r.path2 = target; });
    }
    Result<void> link(std::string_view existing, std::string_view new_path) override {
        return journaled(RecordType::link, existing,
                         [&] { return overlay_->link(existing, new_path); },
                         [&](OpRecord& r) { r.path2 = new_path; });
    }
    Result<void> mknod(std::string_view path, FileType type, uint32_t mode, uint64_t rdev) override {
        return journaled(RecordType::mknod, path,
                         [&] { return overlay_->mknod(path, type, mode, rdev); },
                         [&](OpRecord& r) {
                             r.flags = static_cast<uint32_t>(type);
                             r.mode = mode;
                             r.offset = rdev;
                         });
    }
    Result<void> chmod(std::string_view path, uint32_t mode) override {
        return journaled(RecordType::chmod, path, [&] { return overlay_->chmod(path, mode); },
                         [&](OpRecord& r) { r.mode = mode; });
    }
    Result<void> chown(std::string_view path, uint32_t uid, uint32_t gid, Follow follow) override {
        return journaled(RecordType::chown, path,
                         [&] { return overlay_->chown(path, uid, gid, follow); },
                         [&](OpRecord& r) {
                             r.mode = uid;
                             r.gid = gid;
                             r.flags = follow == Follow::no ? 1 : 0;
                         });
    }
    Result<void> utimens(std::string_view path, TimeUpdate atime, TimeUpdate mtime,
                         Follow follow) override {
        return journaled(RecordType::utimens, path,
                         [&] { return overlay_->utimens(path, atime, mtime, follow); },
                         [&](OpRecord& r) {
                             r.atime = atime;
                             r.mtime = mtime;
                             r.flags = follow == Follow::no ? 1 : 0;
                         });
    }
    Result<void> setxattr(std::string_view path, std::string_view name, std::string_view value,
                          XattrMode mode) override {
        return journaled(RecordType::setxattr, path,
                         [&] { return overlay_->setxattr(path, name, value, mode); },
                         [&](OpRecord& r) {
                             r.name = name;
                             r.value = value;
                             r.flags = static_cast<uint32_t>(mode);
                         });
    }
    Result<void> removexattr(std::string_view path, std::string_view name) override {
        return journaled(RecordType::removexattr, path,
                         [&] { return overlay_->removexattr(path, name); },
                         [&](OpRecord& r) { r.name = name; });
    }

    // A handle's write or truncate of inode `ino`.
    Result<std::size_t> write_by_handle(File& inner, uint64_t ino, std::span<const std::byte> data,
                                        uint64_t offset, bool append) {
        std::size_t written = 0;
        auto ok = journaled(
            RecordType::write, {},
            [&]() -> Result<void> {
                auto n = inner.pwrite(data, offset);
                if (!n) return std::unexpected(n.error());
                written = *n;
                return {};
            },
            [&](OpRecord& r) {
                r.ino = ino;
                r.offset = offset;
                r.flags = append ? 1 : 0;
                r.data = data;
            },
            ino);
        if (!ok) return std::unexpected(ok.error());
        return written;
    }
    Result<void> truncate_by_handle(File& inner, uint64_t ino, uint64_t size) {
        return journaled(RecordType::ftruncate, {}, [&] { return inner.truncate(size); },
                         [&](OpRecord& r) {
                             r.ino = ino;
                             r.offset = size;
                         },
                         ino);
    }

    // --- the volume's own ------------------------------------------------------------------
    Result<void> sync() override {
        auto writer = current_writer();
        if (!writer) return {};
        return writer->sync();
    }
    Result<CompactionStats> compact() override;
    VolumeStatus status() const override;
    const RecoveryReport& recovery() const noexcept override { return recovery_; }
    Durability durability() const noexcept { return durability_; }

private:
    std::shared_ptr<JournalWriter> current_writer() const {
        std::lock_guard lock(mu_);
        return writer_;
    }

    // Applies `op` to the overlay and journals it (see the protocol above). `fill` completes
    // the record; `handle_ino` names the inode of a handle operation (not recorded when the
    // inode has no name left).
    template <class Op, class Fill>
    Result<void> journaled(RecordType type, std::string_view path, Op&& op, Fill&& fill,
                           uint64_t handle_ino = 0);
    // Puts the overlay back to `before` after the journal refused or discarded records.
    void undo_locked(const mem::TreePtr& before);
    void on_batch_failure(const std::shared_ptr<JournalWriter>& writer, const JournalTicket& ticket);
    // batch: rolls the overlay back to before the first record the writer discarded and
    // resumes the writer, once per failure (`epoch`: the epoch the failure ended).
    void roll_back_batch_locked(uint64_t epoch);
    void note_appended_locked(std::size_t payload_bytes);

    // Compaction's steps (volume.cpp, below).
    void start_auto_compaction();
    void stop_auto_compaction();

    std::string dir_;
    VolumeOptions options_;
    Durability durability_ = Durability::batch;
    Manifest manifest_;
    Fd lock_fd_;
    OpenedPack pack_;
    std::shared_ptr<Backend> overlay_;
    RecoveryReport recovery_;

    mutable std::mutex mu_;  // mutations, the writer pointer, the manifest
    std::shared_ptr<JournalWriter> writer_;
    std::deque<std::pair<uint64_t, mem::TreePtr>> pending_;  // batch: seq -> version before it
    std::set<uint64_t> rolled_back_epochs_;  // of writer_ (cleared when it is replaced)
    uint64_t append_epoch_ = 0;               // batch: writer_'s epoch at its last append
    bool broken_ = false;  // the journal could not be put back in order: refuse mutations
    uint64_t rollbacks_ = 0;  // times the tree went back to an earlier version (a compaction
                              // that saw one meanwhile gives up: its journal copy is void)
    uint64_t journal_records_ = 0;
    uint64_t journal_bytes_ = 0;  // the journal's length with everything appended

    std::mutex compact_mu_;  // one compaction at a time
    std::mutex auto_mu_;
    std::condition_variable auto_cv_;
    bool auto_stop_ = false;
    bool auto_wanted_ = false;
    std::thread auto_thread_;

    friend class VolumeFile;
    friend class SyncingReadFile;
};

template <class Op, class Fill>
Result<void> VolumeImpl::journaled(RecordType type, std::string_view path, Op&& op, Fill&& fill,
                                   uint64_t handle_ino) {
    if (options_.read_only) return fail(EROFS, record_type_name(type), path);
    std::unique_lock lock(mu_);
    if (broken_)
        return fail(EIO, record_type_name(type),
                    fmt::format("{} (the volume's journal failed and could not be repaired; "
                                "reopen the volume)",
                                path));
    const Time now = Time::now();
    const mem::TreePtr before = mem::live_version(*overlay_);
    Result<void> result = [&]() -> Result<void> {
        mem::OpTimeScope stamp(now);
        return op();
    }();
    if (!result) return result;
    if (handle_ino != 0) {
        const mem::Inode* inode = mem::live_version(*overlay_)->inode(handle_ino);
        if (inode && inode->nlink == 0) return result;  // no name left: nothing to recover
    }
    OpRecord record;
    record.type = type;
    record.time = now;
    record.next_ino = before->next_ino;
    record.path = path;
    fill(record);
    const std::vector<std::byte> payload = encode_record(record);
    std::shared_ptr<JournalWriter> writer = writer_;
    if (payload.size() > kMaxJournalPayload) {  // refused without failing the writer
        mem::restore_version(*overlay_, before);
        ++rollbacks_;
        return fail(EFBIG, record_type_name(type), path);
    }
    auto ticket = writer->append(static_cast<uint16_t>(type), payload);
    if (!ticket) {
        if (durability_ == Durability::batch) {
            // The writer failed a group commit whose waiters have not rolled back yet: the
            // overlay still holds the discarded records' changes, so undoing only this one
            // and resuming would let the next record be applied on top of them (and get
            // lost, acknowledged, when the waiters roll back). Roll back the whole batch now.
            mem::restore_version(*overlay_, before);
            ++rollbacks_;
            roll_back_batch_locked(append_epoch_);
        } else {
            undo_locked(before);
        }
        return std::unexpected(ticket.error().with_path(path));
    }
    note_appended_locked(payload.size());
    if (durability_ != Durability::batch) return result;
    append_epoch_ = ticket->epoch;
    pending_.emplace_back(ticket->seq, before);
    lock.unlock();
    if (auto durable = writer->wait_durable(*ticket); !durable) {
        on_batch_failure(writer, *ticket);
        return std::unexpected(durable.error().with_path(path));
    }
    lock.lock();
    const uint64_t durable_seq = writer_ == writer ? writer->durable_seq() : UINT64_MAX;
    while (!pending_.empty() && pending_.front().first <= durable_seq) pending_.pop_front();
    return result;
}

void VolumeImpl::undo_locked(const mem::TreePtr& before) {
    mem::restore_version(*overlay_, before);
    ++rollbacks_;
    if (durability_ == Durability::explicit_sync) return;  // the writer keeps what it had
    if (auto ok = writer_->resume(); !ok) broken_ = true;
}

void VolumeImpl::on_batch_failure(const std::shared_ptr<JournalWriter>& writer,
                                  const JournalTicket& ticket) {
    std::lock_guard lock(mu_);
    if (writer_ != writer) return;  // a compaction replaced it: nothing of it is pending
    roll_back_batch_locked(ticket.epoch);
}

void VolumeImpl::roll_back_batch_locked(uint64_t epoch) {
    if (!rolled_back_epochs_.insert(epoch).second) return;  // a waiter or an appender did it
    const uint64_t first = writer_->first_discarded_seq();
    auto it = std::find_if(pending_.begin(), pending_.end(),
                           [&](const auto& p) { return p.first == first; });
    if (it != pending_.end()) {
        mem::restore_version(*overlay_, it->second);
        ++rollbacks_;
        pending_.erase(it, pending_.end());
    }
    if (auto ok = writer_->resume(); !ok) broken_ = true;
}

void VolumeImpl::note_appended_locked(std::size_t payload_bytes) {
    ++journal_records_;
    // Counted as appended, not as written: explicit mode holds up to a MiB before writing.
    journal_bytes_ += journal_frame_size(payload_bytes);
    if (options_.auto_compact_journal_bytes != 0 &&
        journal_bytes_ >= options_.auto_compact_journal_bytes) {
        std::lock_guard auto_lock(auto_mu_);
        auto_wanted_ = true;
        auto_cv_.notify_one();
    }
}

Result<FileHandle> VolumeImpl::open(std::string_view path, int flags, uint32_t mode) {
    const int access = flags & O_ACCMODE;
    const bool changes = (flags & O_CREAT) || ((flags & O_TRUNC) && access != O_RDONLY);
    if (options_.read_only && (changes || access != O_RDONLY)) {
        // What exists answers first, as on any read-only filesystem.
        auto existing = overlay_->open(path, (flags & ~(O_CREAT | O_TRUNC | O_ACCMODE)) | O_RDONLY, mode);
        if (!existing && !(existing.error().code() == ENOENT && (flags & O_CREAT)))
            return std::unexpected(existing.error());
        if (existing && (flags & O_CREAT) && (flags & O_EXCL)) return fail(EEXIST, "open", path);
        return fail(EROFS, "open", path);
    }
    FileHandle inner;
    if (changes) {
        auto made = journaled(
            RecordType::open, path,
            [&]() -> Result<void> {
                auto file = overlay_->open(path, flags, mode);
                if (!file) return std::unexpected(file.error());
                inner = std::move(*file);
                return {};
            },
            [&](OpRecord& r) {
                r.flags = static_cast<uint32_t>(flags);
                r.mode = mode;
            });
        if (!made) return std::unexpected(made.error());
    } else {
        auto file = overlay_->open(path, flags, mode);
        if (!file) return std::unexpected(file.error());
        inner = std::move(*file);
    }
    if (access == O_RDONLY) {
        // Reads need nothing of the journal; in explicit mode fsync on them still syncs.
        if (options_.read_only || durability() != Durability::explicit_sync) return inner;
        return std::make_unique<SyncingReadFile>(shared_from_this(), std::move(inner));
    }
    auto st = inner->fstat();
    if (!st) return std::unexpected(st.error());
    return std::make_unique<VolumeFile>(shared_from_this(), std::move(inner), st->ino,
                                        (flags & O_APPEND) != 0);
}

Result<std::size_t> VolumeFile::pwrite(std::span<const std::byte> data, uint64_t offset) {
    return volume_->write_by_handle(*inner_, ino_, data, offset, append_);
}

Result<void> VolumeFile::truncate(uint64_t size) {
    return volume_->truncate_by_handle(*inner_, ino_, size);
}

Result<void> VolumeFile::fsync(bool) {
    // always and batch: every write was durable when it returned.
    if (volume_->durability() != Durability::explicit_sync) return {};
    return volume_->sync();
}

Result<void> SyncingReadFile::fsync(bool) { return volume_->sync(); }

Result<void> VolumeImpl::open() {
    if (!options_.read_only) {
        lock_fd_ = Fd(::open(join(dir_, kLockName).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
        if (!lock_fd_) return fail(errno, "open volume", dir_);
        if (::flock(lock_fd_.get(), LOCK_EX | LOCK_NB) != 0)
            return fail(errno == EWOULDBLOCK ? EBUSY : errno, "open volume",
                        fmt::format("{} (open read-write in another process)", dir_));
    }
    auto manifest = read_manifest(dir_);
    if (!manifest) return std::unexpected(manifest.error());
    manifest_ = std::move(*manifest);
    durability_ = options_.durability.value_or(manifest_.durability);
    if (!options_.read_only) remove_leftovers(dir_, manifest_);

    auto pack = open_volume_pack(join(dir_, manifest_.pack));
    if (!pack) return std::unexpected(pack.error());
    pack_ = std::move(*pack);
    overlay_ = mem::make_mem_backend_over(pack_.layer, {}, manifest_.next_ino);

    const std::string journal = join(dir_, manifest_.journal);
    auto scan = replay_journal(journal, *overlay_);
    if (!scan) return std::unexpected(scan.error());
    if (auto ok = check_header(*scan, manifest_); !ok) return ok;
    recovery_ = report_of(*scan);
    journal_records_ = scan->records;
    journal_bytes_ = scan->valid_end;
    if (options_.read_only) return {};
    if (!scan->clean()) {
        if (auto ok = truncate_journal(journal, scan->valid_end); !ok) return ok;
    }
    auto writer = JournalWriter::open_append(journal, *scan, durability_);
    if (!writer) return std::unexpected(writer.error());
    writer_ = std::move(*writer);
    start_auto_compaction();
    return {};
}

VolumeStatus VolumeImpl::status() const {
    std::lock_guard lock(mu_);
    VolumeStatus s;
    s.path = dir_;
    s.generation = manifest_.generation;
    s.durability = durability_;
    s.pack_bytes = pack_.bytes;
    struct stat st {};
    if (::stat(join(dir_, manifest_.journal).c_str(), &st) == 0) s.journal_bytes = uint64_t(st.st_size);
    s.journal_bytes = std::max(s.journal_bytes, journal_bytes_);
    s.journal_records = journal_records_;
    s.next_ino = mem::live_version(*overlay_)->next_ino;
    s.pack_digest = pack_.digest;
    s.created = manifest_.created;
    s.last_compaction = manifest_.last_compaction;
    s.last_compaction_seconds = manifest_.last_compaction_seconds;
    s.recovery = recovery_;
    return s;
}

// Copies the frames of the journal at `path` with seq > `after` into `to`, reading from
// `resume` (moved past every frame read). `last` is the last seq copied.
Result<void> copy_records(const std::string& path, uint64_t after, JournalWriter& to,
                          uint64_t& last, std::optional<JournalPosition>& resume) {
    auto scan = scan_journal(
        path,
        [&](const JournalRecordView& view) -> Result<void> {
            resume = JournalPosition{view.offset + journal_frame_size(view.payload.size()),
                                     view.seq + 1};
            if (view.seq <= after) return {};
            auto copied = to.append(view.type, view.payload);
            if (!copied) return std::unexpected(copied.error());
            last = view.seq;
            return {};
        },
        resume);
    if (!scan) return std::unexpected(scan.error());
    return {};
}

// The live tree `live` (an upper over the frozen version the pack was written from) moved
// onto `pack`, which holds that version with the same inode numbers: the lower is swapped,
// and the copied-up directories learn their nodes' ids in the pack (ids are per layer).
mem::TreePtr onto_pack(const mem::Tree& live, const mem::LowerPtr& pack) {
    mem::Tree next = live;
    next.lower = pack;
    std::vector<std::pair<uint64_t, mem::InodePtr>> relinked;
    for (auto it = live.inodes.begin(); it != live.inodes.end(); ++it) {
        const mem::InodePtr& inode = it.value();
        if (!inode || inode->lower_id == 0) continue;
        auto found = pack->by_ino(it.key());
        const uint64_t id = found && *found ? (*found)->id : 0;
        if (id == inode->lower_id) continue;
        auto copy = std::make_shared<mem::Inode>(*inode);
        copy->lower_id = id;
        relinked.emplace_back(it.key(), std::move(copy));
    }
    for (auto& [ino, inode] : relinked) next.inodes.insert_or_assign(ino, std::move(inode));
    return std::make_shared<const mem::Tree>(std::move(next));
}

Result<CompactionStats> VolumeImpl::compact() {
    if (options_.read_only) return fail(EROFS, "compact", dir_);
    std::lock_guard one_at_a_time(compact_mu_);
    const auto t0 = std::chrono::steady_clock::now();
    CompactionStats stats;

    // 1. For an instant, under the lock: the version to write, where the journal stands, and
    //    the live tree restarted as a fresh upper over that frozen version, so that what is
    //    done from now on is exactly what the new pack will not hold.
    mem::TreePtr frozen;
    std::shared_ptr<Backend> snap;
    uint64_t snapshot_seq = 0, generation = 0, rollbacks = 0;
    std::shared_ptr<JournalWriter> old_writer;
    {
        std::lock_guard lock(mu_);
        if (broken_) return fail(EIO, "compact", dir_);
        auto s = overlay_->snapshot();
        if (!s) return std::unexpected(s.error());
        snap = std::move(*s);
        frozen = mem::live_version(*overlay_);
        snapshot_seq = writer_->last_seq();
        generation = manifest_.generation + 1;
        old_writer = writer_;
        rollbacks = rollbacks_;
        mem::Tree fresh_upper;
        fresh_upper.next_ino = frozen->next_ino;
        fresh_upper.lower = overlay::make_tree_layer(frozen);
        mem::restore_version(*overlay_, std::make_shared<const mem::Tree>(std::move(fresh_upper)));
    }
    const uint64_t next_ino = frozen->next_ino;
    const std::string pack_name = pack_file_name(generation);
    const std::string journal_name = journal_file_name(generation);
    const std::string pack_path = join(dir_, pack_name), journal_path = join(dir_, journal_name);
    // Nothing of a failed compaction may stay behind. (The live tree stays over the frozen
    // version, which is the same tree: correct, one level deeper until the next compaction.)
    struct Cleanup {
        std::string pack, journal;
        bool armed = true;
        ~Cleanup() {
            if (!armed) return;
            ::unlink(pack.c_str());
            ::unlink(journal.c_str());
        }
    } cleanup{pack_path, journal_path};

    // 2. The pack, while readers and writers go on.
    if (auto ok = io::step("compact.before_pack"); !ok) return std::unexpected(ok.error());
    PackWriteOptions pack_options = options_.pack;
    pack_options.keep_inode_numbers = true;
    auto written = write_pack(*snap, pack_path, pack_options);
    if (!written) return std::unexpected(written.error());
    stats.pack = *written;
    snap.reset();
    if (auto ok = io::step("compact.after_pack"); !ok) return std::unexpected(ok.error());
    auto fresh = open_volume_pack(pack_path);
    if (!fresh) return std::unexpected(fresh.error());

    // 3. The new journal: the records made since the instant of step 1, copied frame by frame
    //    (no replay: the live tree already holds them). First what is there, without the lock.
    Manifest next = manifest_;
    next.generation = generation;
    next.pack = pack_name;
    next.journal = journal_name;
    next.first_seq = snapshot_seq + 1;
    next.next_ino = next_ino;
    next.pack_digest = fresh->digest;
    auto new_writer =
        JournalWriter::create(journal_path, {generation, snapshot_seq + 1, manifest_.volume_id},
                              durability_);
    if (!new_writer) return std::unexpected(new_writer.error());
    std::shared_ptr<JournalWriter> writer = std::move(*new_writer);
    uint64_t copied = snapshot_seq;
    const std::string old_journal = join(dir_, manifest_.journal);
    std::optional<JournalPosition> resume;
    for (int pass = 0; pass < 4; ++pass) {  // copying is far faster than writers add
        if (auto ok = old_writer->sync(); !ok) return std::unexpected(ok.error());
        const uint64_t before_pass = copied;
        if (auto ok = copy_records(old_journal, copied, *writer, copied, resume); !ok)
            return std::unexpected(ok.error());
        if (copied - before_pass < 256) break;
    }
    if (auto ok = io::step("compact.caught_up"); !ok) return std::unexpected(ok.error());

    // 4. The switch, with writers held: the last records, the manifest, the lower swapped.
    const auto pause_start = std::chrono::steady_clock::now();
    std::unique_lock lock(mu_);
    if (writer_ != old_writer || broken_) return fail(EIO, "compact", dir_);
    if (auto ok = writer_->sync(); !ok) return std::unexpected(ok.error());
    if (rollbacks_ != rollbacks)  // records it copied may have been discarded since
        return fail(EAGAIN, "compact (the journal failed meanwhile; try again)", dir_);
    if (auto ok = copy_records(old_journal, copied, *writer, copied, resume); !ok)
        return std::unexpected(ok.error());
    if (copied != writer_->last_seq()) return fail(EIO, "compact (journal copy incomplete)", dir_);
    if (auto ok = writer->sync(); !ok) return std::unexpected(ok.error());
    if (auto ok = io::step("compact.journal_written"); !ok) return std::unexpected(ok.error());
    next.last_compaction = utc_now_iso8601();
    next.last_compaction_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    auto switched = write_manifest(dir_, next);
    if (!switched) {
        // Before the rename the old manifest stands; after it, the new one may or may not be
        // durable: only the old files can serve both cases, so nothing may change any more.
        struct stat st {};
        const bool renamed = ::stat(join(dir_, std::string(kManifestName) + ".tmp").c_str(), &st) != 0;
        if (renamed) {
            cleanup.armed = false;
            broken_ = true;
        }
        return std::unexpected(switched.error());
    }
    cleanup.armed = false;
    // Handles go on working (restore_version carries what they hold).
    mem::restore_version(*overlay_, onto_pack(*mem::live_version(*overlay_), fresh->layer));
    pack_.lease->retire = true;  // unlinked when its last reader goes
    pack_ = std::move(*fresh);
    const std::string retired_journal = old_journal;
    writer_ = writer;
    pending_.clear();  // all durable: the old journal was synced above
    rolled_back_epochs_.clear();  // the new writer numbers its epochs from 0
    append_epoch_ = 0;
    manifest_ = next;
    stats.records_carried = copied - snapshot_seq;
    journal_records_ = stats.records_carried;
    journal_bytes_ = writer_->file_bytes();
    lock.unlock();
    ::unlink(retired_journal.c_str());
    (void)io::fsync_dir(dir_, "volume directory");
    const auto t1 = std::chrono::steady_clock::now();
    stats.generation = generation;
    stats.pause_seconds = std::chrono::duration<double>(t1 - pause_start).count();
    stats.seconds = std::chrono::duration<double>(t1 - t0).count();
    return stats;
}

void VolumeImpl::start_auto_compaction() {
    if (options_.auto_compact_journal_bytes == 0) return;
    auto_thread_ = std::thread([this] {
        std::unique_lock lock(auto_mu_);
        for (;;) {
            auto_cv_.wait(lock, [&] { return auto_stop_ || auto_wanted_; });
            if (auto_stop_) return;
            auto_wanted_ = false;
            lock.unlock();
            auto done = compact();
            lock.lock();
            // A failed compaction is retried only after more has been written, and not at once.
            if (!done) auto_cv_.wait_for(lock, std::chrono::seconds(1), [&] { return auto_stop_; });
        }
    });
}

void VolumeImpl::stop_auto_compaction() {
    if (!auto_thread_.joinable()) return;
    {
        std::lock_guard lock(auto_mu_);
        auto_stop_ = true;
    }
    auto_cv_.notify_all();
    auto_thread_.join();
}

Result<void> copy_file(const std::string& from, const std::string& to) {
    Fd in(::open(from.c_str(), O_RDONLY | O_CLOEXEC));
    if (!in) return fail(errno, "volume init", from);
    Fd out(::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    if (!out) return fail(errno, "volume init", to);
    std::vector<std::byte> buf(1 << 20);
    for (uint64_t offset = 0;;) {
        const ssize_t n = ::read(in.get(), buf.data(), buf.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            return fail(errno, "volume init", from);
        }
        if (n == 0) break;
        if (auto ok = io::pwrite_all(out.get(), std::span(buf.data(), std::size_t(n)), offset, "pack");
            !ok)
            return ok;
        offset += uint64_t(n);
    }
    return io::fsync(out.get(), "pack");
}

}  // namespace
}  // namespace volume

Result<void> Volume::create(const std::string& dir, const VolumeInit& init) {
    using namespace volume;
    if (!init.from_pack.empty() && !init.from_dir.empty())
        return fail(EINVAL, "volume init", "--from names one source");
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return fail(ec.value(), "volume init", dir);
    if (!std::filesystem::is_empty(dir, ec)) return fail(ENOTEMPTY, "volume init", dir);
    const std::string pack_name = pack_file_name(1), journal_name = journal_file_name(1);
    const std::string pack_path = join(dir, pack_name);
    if (!init.from_pack.empty()) {
        // Checked before it is taken: a volume never starts from a pack that does not open.
        auto probe = open_pack(init.from_pack);
        if (!probe) return std::unexpected(probe.error());
        if (auto ok = copy_file(init.from_pack, pack_path); !ok) return ok;
    } else if (!init.from_dir.empty()) {
        if (auto ok = write_pack_from_host(init.from_dir, pack_path, init.pack); !ok)
            return std::unexpected(ok.error());
    } else {
        auto empty = make_mem_backend();
        if (auto ok = write_pack(*empty, pack_path, init.pack); !ok)
            return std::unexpected(ok.error());
    }
    auto pack = open_volume_pack(pack_path);
    if (!pack) return std::unexpected(pack.error());
    Manifest m;
    m.volume_id = random_volume_id();
    m.generation = 1;
    m.pack = pack_name;
    m.journal = journal_name;
    m.first_seq = 1;
    m.next_ino = pack->max_ino + 1;
    m.durability = init.durability;
    m.pack_digest = pack->digest;
    m.created = utc_now_iso8601();
    auto journal = JournalWriter::create(join(dir, journal_name), {1, 1, m.volume_id}, init.durability);
    if (!journal) return std::unexpected(journal.error());
    // The manifest last: until it is in place, the directory is no volume.
    return write_manifest(dir, m);
}

Result<std::shared_ptr<Volume>> Volume::open(const std::string& dir, const VolumeOptions& options) {
    auto volume = std::make_shared<volume::VolumeImpl>(dir, options);
    if (auto ok = volume->open(); !ok) return std::unexpected(ok.error());
    return volume;
}

Result<VolumeCheck> check_volume(const std::string& dir) {
    using namespace volume;
    auto manifest = read_manifest(dir);
    if (!manifest) return std::unexpected(manifest.error());
    VolumeCheck check;
    auto pack = open_pack(join(dir, manifest->pack));
    if (!pack) return std::unexpected(pack.error());
    check.pack = (*pack)->verify();
    auto opened = open_volume_pack(join(dir, manifest->pack));
    if (!opened) return std::unexpected(opened.error());
    auto scratch = mem::make_mem_backend_over(opened->layer, {}, manifest->next_ino);
    // Every frame is scanned to the end; records are applied until one does not apply.
    auto scan = scan_journal(join(dir, manifest->journal), [&](const JournalRecordView& view) -> Result<void> {
        if (!check.replay_error.empty()) return {};
        auto record = decode_record(view.type, view.payload);
        if (!record) {
            check.replay_error = fmt::format("record {} at offset {}: {}", view.seq, view.offset,
                                             record.error().message());
            return {};
        }
        if (auto ok = apply_record(*scratch, *record); !ok)
            check.replay_error = fmt::format("record {} at offset {} ({}) does not apply: {}",
                                             view.seq, view.offset, describe_record(*record),
                                             ok.error().message());
        return {};
    });
    if (!scan) return std::unexpected(scan.error());
    if (auto ok = check_header(*scan, *manifest); !ok) check.replay_error = ok.error().message();
    check.journal = report_of(*scan);
    return check;
}

}  // namespace packfs
