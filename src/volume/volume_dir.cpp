// The volume's directory (volume_impl.hpp): making one, opening one (the pack mapped, the
// journal replayed into a tree over it), checking one, and what a crash may leave in it.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include <fmt/format.h>

#include "core/io.hpp"
#include "packfs/overlay.hpp"
#include "packfs/mem.hpp"
#include "volume/volume_impl.hpp"

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

PackLease::~PackLease() {
    pack.reset();
    if (retire.load()) (void)io::unlink(path, "pack");
}

Result<OpenedPack> open_volume_pack(const std::string& path) {
    auto backend = open_pack(path);
    if (!backend) return std::unexpected(backend.error());
    OpenedPack out;
    out.lease = std::make_shared<PackLease>();
    out.lease->pack = *backend;
    out.lease->path = path;
    // Everything that reads the pack holds the lease through this aliasing pointer.
    out.lower = std::shared_ptr<Backend>(out.lease, out.lease->pack.get());
    const auto numbering = (*backend)->inode_numbering();
    if (!numbering.unique) return fail(kErrCorrupt, "open volume", path);
    out.max_ino = numbering.limit - 1;
    out.digest = (*backend)->info().digest;
    out.bytes = (*backend)->info().file_size;
    return out;
}

std::string join(const std::string& dir, const std::string& name) { return dir + "/" + name; }

std::optional<std::vector<std::string>> pack_bases(const std::string& path) {
    PackOpenOptions options;
    options.access = PackAccess::pread;
    options.without_bases = true;  // their names alone (a missing one is the open's to report)
    auto pack = open_pack(path, options);
    if (!pack) return std::nullopt;
    std::vector<std::string> out;
    for (const auto& [digest, name] : (*pack)->info().bases) out.push_back(name);
    return out;
}

Result<std::shared_ptr<Overlay>> make_volume_tree(std::shared_ptr<Backend> lower,
                                                  uint64_t first_ino) {
    OverlayOptions options;
    options.first_ino = first_ino;
    return make_overlay(std::move(lower), options);
}

namespace {

std::array<uint8_t, 16> random_volume_id() {
    std::random_device rd;
    std::array<uint8_t, 16> id{};
    for (auto& b : id) b = static_cast<uint8_t>(rd());
    return id;
}

Result<void> copy_file(const std::string& from, const std::string& to) {
    Fd in(::open(from.c_str(), O_RDONLY | O_CLOEXEC));
    if (!in) return fail(errno, "volume init", from);
    auto created = io::create_file(to, O_WRONLY | O_CREAT | O_EXCL, 0644, "pack");
    if (!created) return fail(created.error().code(), "volume init", to);
    Fd out = std::move(*created);
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

Result<void> apply_journaled(Overlay& tree, const OpRecord& record) {
    if (record.next_ino > tree.inode_numbering().limit) tree.reserve_inode_numbers(record.next_ino);
    return apply_record(tree, record);
}

Result<void> replay_record(Overlay& tree, const JournalRecordView& view) {
    auto record = decode_record(view.type, view.payload);
    if (!record) return std::unexpected(record.error());
    if (auto ok = apply_journaled(tree, *record); !ok) {
        return std::unexpected(Error::corrupt(
            "journal replay", record->path,
            Corruption{view.offset, 0, view.seq,
                       fmt::format("record {} ({}) does not apply: {}", view.seq,
                                   describe_record(*record), ok.error().message())}));
    }
    return {};
}

Result<JournalScan> replay_journal(const std::string& path, Overlay& tree) {
    return scan_journal(path, [&](const JournalRecordView& view) -> Result<void> {
        return replay_record(tree, view);
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
    // The packs the current one was built over (an incremental compaction's) stay; when it
    // cannot be read, every pack does (the open then says what is wrong).
    const auto bases = pack_bases(join(dir, m.pack));
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
        const std::string name = entry.path().filename().string();
        if (name == m.pack || name == m.journal) continue;
        if (name.starts_with("pack.") &&
            (!bases || std::find(bases->begin(), bases->end(), name) != bases->end()))
            continue;
        // ".pack.N.tmp-...": the pack writer's temporary file (output_file.cpp), left by a
        // crash while a compaction wrote its pack.
        const bool ours = name.starts_with("pack.") || name.starts_with("journal.") ||
                          (name.starts_with(".pack.") && name.find(".tmp-") != std::string::npos) ||
                          name == std::string(kManifestName) + ".tmp";
        if (ours) (void)io::unlink(entry.path().string(), "leftover");
    }
}

Result<void> VolumeImpl::open() {
    if (!options_.read_only) {
        auto lock = io::create_file(join(dir_, kLockName), O_RDWR | O_CREAT, 0644, kLockName);
        if (!lock) return fail(lock.error().code(), "open volume", dir_);
        lock_fd_ = std::move(*lock);
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
    auto made = make_volume_tree(pack_.lower, manifest_.next_ino);
    if (!made) return std::unexpected(made.error());
    std::shared_ptr<Overlay> tree = std::move(*made);

    const std::string journal = join(dir_, manifest_.journal);
    auto scan = replay_journal(journal, *tree);
    if (!scan) return std::unexpected(scan.error());
    if (auto ok = check_header(*scan, manifest_); !ok) return ok;
    recovery_ = report_of(*scan);
    journal_records_ = scan->records;
    journal_bytes_ = scan->valid_end;
    tree_ = std::move(tree);
    if (options_.read_only) return {};
    if (!scan->clean()) {
        if (auto ok = truncate_journal(journal, scan->valid_end); !ok) return ok;
    }
    auto writer = JournalWriter::open_append(journal, *scan, durability_);
    if (!writer) return std::unexpected(writer.error());
    writer_ = std::move(*writer);
    start_auto_compaction();
    start_commit_timer();
    return {};
}

// --- the volume's own ------------------------------------------------------------------------------

Result<void> VolumeImpl::sync() {
    std::shared_ptr<JournalWriter> writer;
    {
        std::lock_guard lock(mu_);
        writer = writer_;
    }
    if (!writer) return {};
    return writer->sync();
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
    s.next_ino = tree_->inode_numbering().limit;
    s.pack_digest = pack_.digest;
    s.created = manifest_.created;
    s.last_compaction = manifest_.last_compaction;
    s.last_compaction_seconds = manifest_.last_compaction_seconds;
    s.recovery = recovery_;
    return s;
}

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
    auto made = make_volume_tree(opened->lower, manifest->next_ino);
    if (!made) return std::unexpected(made.error());
    std::shared_ptr<Overlay> scratch = std::move(*made);
    // Every frame is scanned to the end; records are applied until one does not apply.
    auto scan = scan_journal(join(dir, manifest->journal), [&](const JournalRecordView& view) -> Result<void> {
        if (!check.replay_error.empty()) return {};
        auto record = decode_record(view.type, view.payload);
        if (!record) {
            check.replay_error = fmt::format("record {} at offset {}: {}", view.seq, view.offset,
                                             record.error().message());
            return {};
        }
        if (auto ok = apply_journaled(*scratch, *record); !ok)
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
