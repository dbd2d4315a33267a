// The volume (include/packfs/volume.hpp, docs/VOLUME.md), in these parts: the directory it lives
// in (volume_dir.cpp: create, open, check, leftovers), the journaled node calls (journaled.cpp),
// the path calls over them (volume_paths.cpp), open files (volume_file.cpp), putting the tree
// back after a journal failure (rollback.cpp), compaction (compaction.cpp) and the commit
// interval (commit_timer.cpp).
//
// THE TREE. An overlay (packfs/overlay.hpp, make_volume_tree) over the current pack, holding every change the
// journal holds: it is a cache of pack + journal, and can always be made again from them. It is
// one tree for the volume's life, so node references and open files are simply the tree's: a
// compaction moves it onto the new pack (Overlay::rebase), and a journal failure puts it back
// to a checkpoint taken before the first change the journal lost (Overlay::rollback; "a
// mutation that fails changes nothing"). An object with no name left (unlinked while open or
// held) is not in any journal: changes to it are made and not journaled.
//
// MUTATIONS. A mutation holds `mu_`, stamps the time, makes its node call on the tree, frames
// its record (by node: records.hpp) into the journal writer, and releases `mu_`; so records are
// in the order the tree changed. It then waits for durability as its mode says
// (journal_writer.hpp). A path mutation is the generic path layer over the tree's lookups and
// the volume's journaled node calls.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "core/fd.hpp"
#include "packfs/overlay.hpp"
#include "packfs/volume.hpp"
#include "volume/journal_reader.hpp"
#include "volume/journal_writer.hpp"
#include "volume/manifest.hpp"
#include "volume/records.hpp"

namespace packfs::volume {

// A pack the volume reads from. Once a compaction has replaced it, `retire` is set and the
// file is unlinked when the last reader of it (a snapshot, an open file, an old tree) goes.
struct PackLease {
    std::shared_ptr<PackBackend> pack;
    std::string path;
    std::atomic<bool> retire{false};
    ~PackLease();
};

struct OpenedPack {
    std::shared_ptr<PackLease> lease;
    std::shared_ptr<Backend> lower;  // the pack, holding the lease
    uint64_t max_ino = 1;
    std::string digest;
    uint64_t bytes = 0;
};

Result<OpenedPack> open_volume_pack(const std::string& path);
// The volume's tree: an overlay (packfs/overlay.hpp) over its pack, numbering new inodes from
// `first_ino` (the manifest's).
Result<std::shared_ptr<Overlay>> make_volume_tree(std::shared_ptr<Backend> lower,
                                                  uint64_t first_ino);
std::string join(const std::string& dir, const std::string& name);
// The file names of the packs the pack at `path` was built over (an incremental compaction's,
// which stay while it names them); nullopt when it cannot be read.
std::optional<std::vector<std::string>> pack_bases(const std::string& path);

// Replays every record of the journal at `path` into `tree`.
Result<JournalScan> replay_journal(const std::string& path, Overlay& tree);
// Applies one record, telling a record that does not apply as the journal's damage.
Result<void> replay_record(Overlay& tree, const JournalRecordView& view);
// Applies one decoded record: the inode numbers a rollback left unused (the record's next
// inode number above the tree's) are skipped first.
Result<void> apply_journaled(Overlay& tree, const OpRecord& record);
RecoveryReport report_of(const JournalScan& scan);
Result<void> check_header(const JournalScan& scan, const Manifest& m);
void remove_leftovers(const std::string& dir, const Manifest& m);

inline constexpr const char* kLockName = "LOCK";

class VolumeFile;

class VolumeImpl final : public Volume, public std::enable_shared_from_this<VolumeImpl> {
public:
    VolumeImpl(std::string dir, VolumeOptions options);
    ~VolumeImpl() override;

    Result<void> open();  // volume_dir.cpp

    // --- nodes ---------------------------------------------------------------------------
    Result<Entry> lookup(Node dir, std::string_view name) override;
    Result<Entry> lookup_ino(uint64_t ino) override;
    void forget(Node node, uint64_t count) noexcept override;
    Result<Stat> getattr(Node node) override;
    Result<std::vector<DirEntry>> list(Node dir) override;
    Result<std::string> readlink(Node node) override;
    Result<FileHandle> open(Node node, int flags) override;
    Result<StatFs> statfs(Node node) override;
    Result<std::string> getxattr(Node node, std::string_view name) override;
    Result<std::vector<std::string>> listxattr(Node node) override;
    InodeNumbering inode_numbering() const override;

    Result<Created> create(Node dir, std::string_view name, int flags, uint32_t mode,
                           std::optional<Owner> owner) override;
    Result<Entry> mkdir(Node dir, std::string_view name, uint32_t mode,
                        std::optional<Owner> owner) override;
    Result<Entry> mknod(Node dir, std::string_view name, FileType type, uint32_t mode,
                        uint64_t rdev, std::optional<Owner> owner) override;
    Result<Entry> symlink(Node dir, std::string_view name, std::string_view target,
                          std::optional<Owner> owner) override;
    Result<Entry> link(Node node, Node dir, std::string_view name) override;
    Result<void> unlink(Node dir, std::string_view name) override;
    Result<void> rmdir(Node dir, std::string_view name) override;
    Result<void> rename(Node dir, std::string_view name, Node to_dir, std::string_view to_name,
                        RenameFlags flags) override;
    Result<Stat> setattr(Node node, const SetAttr& change) override;
    Result<uint64_t> copy_range(Node from, uint64_t offset, Node to, uint64_t to_offset,
                                uint64_t length) override;
    Result<void> setxattr(Node node, std::string_view name, std::string_view value,
                          XattrMode mode) override;
    Result<void> removexattr(Node node, std::string_view name) override;

    // --- paths: reads are the tree's own (lock-free); mutations through the path layer ----
    Result<Stat> stat(std::string_view p) override;
    Result<Stat> lstat(std::string_view p) override;
    Result<std::vector<DirEntry>> readdir(std::string_view p) override;
    Result<std::string> readlink(std::string_view p) override;
    Result<StatFs> statfs(std::string_view p) override;
    Result<std::string> getxattr(std::string_view p, std::string_view n) override;
    Result<std::vector<std::string>> listxattr(std::string_view p) override;
    Result<FileHandle> open(std::string_view path, int flags, uint32_t mode) override;
    Result<void> truncate(std::string_view path, uint64_t size) override;
    Result<void> mkdir(std::string_view path, uint32_t mode) override;
    Result<void> rmdir(std::string_view path) override;
    Result<void> unlink(std::string_view path) override;
    Result<void> rename(std::string_view from, std::string_view to, RenameFlags flags) override;
    Result<void> symlink(std::string_view target, std::string_view link_path) override;
    Result<void> link(std::string_view existing, std::string_view new_path) override;
    Result<void> mknod(std::string_view path, FileType type, uint32_t mode,
                       uint64_t rdev) override;
    Result<void> chmod(std::string_view path, uint32_t mode) override;
    Result<void> chown(std::string_view path, uint32_t uid, uint32_t gid, Follow follow) override;
    Result<void> utimens(std::string_view path, TimeUpdate atime, TimeUpdate mtime,
                         Follow follow) override;
    Result<void> setxattr(std::string_view path, std::string_view name, std::string_view value,
                          XattrMode mode) override;
    Result<void> removexattr(std::string_view path, std::string_view name) override;

    Result<std::shared_ptr<Backend>> snapshot() override;
    bool read_only() const noexcept override { return options_.read_only; }

    // --- the volume's own --------------------------------------------------------------------
    Result<void> sync() override;
    Result<CompactionStats> compact() override;  // compaction.cpp
    VolumeStatus status() const override;
    const RecoveryReport& recovery() const noexcept override { return recovery_; }
    Durability durability() const noexcept { return durability_; }

    // --- for VolumeFile ----------------------------------------------------------------------
    Result<std::size_t> write_by_handle(VolumeFile& file, std::span<const std::byte> data,
                                        uint64_t offset);
    Result<void> truncate_by_handle(VolumeFile& file, uint64_t size);
    Result<void> allocate_by_handle(VolumeFile& file, int mode, uint64_t offset, uint64_t length);

private:
    friend class VolumeFile;

    // Before a change the journal may still lose (always, batch: under mu_): a checkpoint of
    // the tree for the record it will make, unless one is there; those of records already
    // durable go (rollback.cpp).
    Result<void> checkpoint_locked();
    // After the journal refused or discarded records (always, batch): the tree put back to the
    // checkpoint of the first one it lost, and the writer resumed; `first_lost` is that
    // record's seq. On failure the volume refuses mutations until reopened.
    void recover_locked(uint64_t first_lost);

    // Applies `op(tree)` and journals the record `fill` completes (see the top of the file):
    // fill(record, value), or fill(record) when T is void; false keeps no record.
    template <class T, class Op, class Fill>
    Result<T> journaled(RecordType type, std::string_view what, Op&& op, Fill&& fill);
    // unlink (unlink_at) and rmdir (rmdir_at): `name` removed from `dir`, journaled.
    Result<void> remove_name(RecordType type, Node dir, std::string_view name);
    // A change through an open file (its tree handle, under mu_), journaled by inode while the
    // file has a name: `describe` adds the change's own fields to the record.
    template <class T, class Change, class Describe>
    Result<T> journaled_by_handle(VolumeFile& file, RecordType type, Change&& change,
                                  Describe&& describe);
    void note_appended_locked(std::size_t payload_bytes);
    // Entry-making node calls: the reference the tree hands out is given back when the journal
    // then fails.
    template <class Op, class Fill>
    Result<Entry> make_entry(RecordType type, std::string_view name, Op&& op, Fill&& fill);

    // Compaction's steps (compaction.cpp).
    // Step 4's switch: the manifest replaced. `keep_files` is set when the new pack and
    // journal must stay: it worked, or it failed where the rename may have happened (then the
    // volume refuses mutations until reopened).
    Result<void> write_manifest_locked(const Manifest& next, bool& keep_files);
    void start_auto_compaction();
    // The journal size auto-compaction starts at (VolumeOptions; 0: never), and whether the
    // journal passed it; under mu_.
    uint64_t auto_compaction_threshold_locked() const;
    bool auto_compaction_due_locked() const;
    // Once due: whether the writers paused for kAutoQuiet, or the journal passed kAutoForce
    // times the threshold (compaction.cpp says why).
    bool auto_compaction_may_start() const;
    static constexpr std::chrono::milliseconds kAutoQuiet{1000};
    static constexpr uint64_t kAutoForce = 4;
    // Stamps the time of the latest mutation (for auto_compaction_may_start).
    void note_mutation() noexcept;
    std::atomic<std::chrono::steady_clock::rep> last_mutation_{0};
    // The commit interval's thread (commit_timer.cpp): explicit mode only.
    void start_commit_timer();
    // Has `writer` ask the commit thread for its syncs past kSyncBytes (when there is one).
    void hook_writer(JournalWriter& writer);

    std::string dir_;
    VolumeOptions options_;
    Durability durability_ = Durability::batch;
    Manifest manifest_;
    Fd lock_fd_;
    OpenedPack pack_;
    RecoveryReport recovery_;

    std::shared_ptr<Overlay> tree_;  // set by open(), then the same for the volume's life

    mutable std::mutex mu_;  // mutations, the writer pointer, the manifest, the tree
    // Compactions waiting for mu_. std::mutex is not fair: a writer that releases it and takes
    // it again at once wins every time, and a compaction waiting for its instant or its switch
    // would wait as long as the writer keeps writing. Mutations wait while this is non-zero.
    mutable std::atomic<uint32_t> compaction_waits_{0};
    std::unique_lock<std::mutex> lock_for_mutation() const;
    std::unique_lock<std::mutex> lock_for_compaction() const;
    std::shared_ptr<JournalWriter> writer_;
    std::set<uint64_t> recovered_epochs_;  // of writer_: failures already recovered from
    uint64_t append_epoch_ = 0;            // batch: writer_'s epoch at its last append
    bool broken_ = false;  // the journal could not be put back in order: refuse mutations
    uint64_t recoveries_ = 0;  // times the tree was put back (a compaction that saw one
                               // meanwhile gives up: its journal copy is void)
    // always, batch (under mu_): the checkpoint taken before the change that made record
    // `seq`, for every record not yet known durable, oldest first.
    struct SeqCheckpoint {
        uint64_t seq;
        Overlay::Checkpoint checkpoint;
    };
    std::deque<SeqCheckpoint> checkpoints_;
    uint64_t journal_records_ = 0;
    uint64_t journal_bytes_ = 0;  // the journal's length with everything appended

    std::mutex compact_mu_;  // one compaction at a time
    // A thread of the volume's own and what wakes it (under `mu`): stop() makes it end (its
    // loop returns once it sees `stopping`) and joins it.
    struct Background {
        std::mutex mu;
        std::condition_variable cv;
        bool stopping = false;
        std::thread thread;
        void stop();
    };
    Background auto_compactor_;
    bool auto_wanted_ = false;  // under auto_compactor_.mu
    Background committer_;      // explicit mode's commit interval
    bool commit_due_ = false;   // under committer_.mu: the writer asked for a sync
};

// An open file of the volume: the tree's handle; writes and truncates go through the volume,
// journaled by inode.
class VolumeFile final : public File {
public:
    VolumeFile(std::shared_ptr<VolumeImpl> volume, FileHandle inner, uint64_t ino, int flags);
    VolumeFile(const VolumeFile&) = delete;
    VolumeFile& operator=(const VolumeFile&) = delete;

    Result<std::size_t> pread(std::span<std::byte> buf, uint64_t offset) override;
    Result<std::size_t> pwrite(std::span<const std::byte> data, uint64_t offset) override;
    Result<void> truncate(uint64_t size) override;
    Result<void> fsync(bool data_only) override;
    Result<Stat> fstat() override;
    Result<uint64_t> seek_data(uint64_t offset, bool data) override;
    Result<void> allocate(int mode, uint64_t offset, uint64_t length) override;

    uint64_t ino() const noexcept { return ino_; }
    bool append() const noexcept { return (flags_ & O_APPEND) != 0; }
    // The tree's handle, for a change the volume makes under its mu_.
    File& inner() noexcept { return *inner_; }

private:
    std::shared_ptr<VolumeImpl> volume_;
    const FileHandle inner_;
    const uint64_t ino_;
    const int flags_;
};

}  // namespace packfs::volume
