// The volume's journaled node calls (volume_impl.hpp has the protocol): every mutation made on
// the tree and recorded by node, reads and node references straight from the tree. Beside
// it: rollback.cpp (the tree put back after a journal failure), volume_file.cpp (open files),
// volume_paths.cpp (the path calls).
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <type_traits>

#include "core/checks.hpp"
#include "core/op_clock.hpp"
#include "volume/volume_impl.hpp"

namespace packfs::volume {

// --- the volume ----------------------------------------------------------------------------------

VolumeImpl::VolumeImpl(std::string dir, VolumeOptions options)
    : dir_(std::move(dir)), options_(std::move(options)) {}

VolumeImpl::~VolumeImpl() {
    committer_.stop();
    auto_compactor_.stop();
    // A journal left past the auto-compaction threshold (a burst of writes that ended with the
    // close, before a quiet moment came) is compacted now, so the next open replays little.
    const bool due = [&] {
        std::lock_guard lock(mu_);
        return writer_ && !broken_ && auto_compaction_due_locked();
    }();
    if (due) (void)compact();
    if (writer_) (void)writer_->sync();  // a clean close leaves nothing only in memory
    checkpoints_.clear();
}

void VolumeImpl::note_appended_locked(std::size_t payload_bytes) {
    note_mutation();
    ++journal_records_;
    // Counted as appended, not as written: explicit mode holds up to a MiB before writing.
    journal_bytes_ += journal_frame_size(payload_bytes);
    if (auto_compaction_due_locked()) {
        std::lock_guard auto_lock(auto_compactor_.mu);
        auto_wanted_ = true;
        auto_compactor_.cv.notify_one();
    }
}

std::unique_lock<std::mutex> VolumeImpl::lock_for_mutation() const {
    // One load of a line only compactions write; a mutation that passes just before a
    // compaction starts waiting is one operation, and the next one waits.
    for (uint32_t w; (w = compaction_waits_.load(std::memory_order_acquire)) != 0;)
        compaction_waits_.wait(w, std::memory_order_acquire);
    return std::unique_lock(mu_);
}

std::unique_lock<std::mutex> VolumeImpl::lock_for_compaction() const {
    compaction_waits_.fetch_add(1, std::memory_order_acq_rel);
    std::unique_lock lock(mu_);
    compaction_waits_.fetch_sub(1, std::memory_order_acq_rel);
    compaction_waits_.notify_all();
    return lock;
}

template <class T, class Op, class Fill>
Result<T> VolumeImpl::journaled(RecordType type, std::string_view what, Op&& op, Fill&& fill) {
    if (options_.read_only) return fail(EROFS, record_type_name(type), what);
    std::unique_lock lock = lock_for_mutation();
    if (broken_)
        return fail(EIO, record_type_name(type),
                    fmt::format("{} (the volume's journal failed and could not be repaired; "
                                "reopen the volume)",
                                what));
    // What the journal may lose can be undone; what it would refuse is not done (rollback.cpp).
    if (auto ready = durability_ == Durability::explicit_sync ? writer_->make_room()
                                                              : checkpoint_locked();
        !ready)
        return std::unexpected(ready.error().with_path(what));
    const Time now = Time::now();
    Backend& tree = *tree_;
    OpRecord record;
    record.type = type;
    record.time = now;
    record.next_ino = tree.inode_numbering().limit;
    Result<T> result = [&]() -> Result<T> {
        OpTimeScope stamp(now);
        return op(tree);
    }();
    if (!result) return result;
    bool keep;  // false: nothing a crash could need back
    if constexpr (std::is_void_v<T>) {
        keep = fill(record);
    } else {
        keep = fill(record, *result);
    }
    if (!keep) return result;
    const std::vector<std::byte> payload = encode_record(record);
    std::shared_ptr<JournalWriter> writer = writer_;
    auto ticket = payload.size() > kMaxJournalPayload  // refused without failing the writer
                      ? fail(EFBIG, record_type_name(type), what)
                      : writer->append(static_cast<uint16_t>(type), payload);
    if (!ticket) {
        if (durability_ == Durability::explicit_sync) {
            // (make_room said it would take it: the tree holds a change the journal lacks.)
            broken_ = true;
        } else if (ticket.error().code() == EFBIG) {
            recover_locked(writer->last_seq() + 1);  // this change alone
        } else if (recovered_epochs_.insert(append_epoch_).second ||
                   durability_ != Durability::batch) {
            // The journal did not take it (and, in batch mode, discarded what a failed group
            // commit held): the tree goes back to before the first record lost.
            recover_locked(writer->first_discarded_seq());
        }
        return std::unexpected(ticket.error().with_path(what));
    }
    note_appended_locked(payload.size());
    if (durability_ != Durability::batch) return result;
    append_epoch_ = ticket->epoch;
    lock.unlock();
    if (auto durable = writer->wait_durable(*ticket); !durable) {
        lock.lock();
        if (writer_ == writer && recovered_epochs_.insert(ticket->epoch).second)
            recover_locked(writer->first_discarded_seq());
        return std::unexpected(durable.error().with_path(what));
    }
    return result;
}

// --- entries ------------------------------------------------------------------------------------

template <class Op, class Fill>
Result<Entry> VolumeImpl::make_entry(RecordType type, std::string_view name, Op&& op,
                                     Fill&& fill) {
    uint64_t made = 0;
    auto e = journaled<Entry>(
        type, name,
        [&](Backend& tree) -> Result<Entry> {
            auto r = op(tree);
            if (r) made = r->node.id;
            return r;
        },
        fill);
    if (!e && made) tree_->forget(Node{made}, 1);  // the journal failed after the call
    return e;
}

// --- reads (the tree's own: node references are the tree's too) ---------------------------------------------------------------------------------------

Result<Entry> VolumeImpl::lookup(Node dir, std::string_view name) {
    return tree_->lookup(dir, name);
}
Result<Entry> VolumeImpl::lookup_ino(uint64_t ino) { return tree_->lookup_ino(ino); }
void VolumeImpl::forget(Node node, uint64_t count) noexcept { tree_->forget(node, count); }

Result<Stat> VolumeImpl::getattr(Node node) {
    return tree_->getattr(node);
}
Result<std::vector<DirEntry>> VolumeImpl::list(Node dir) {
    return tree_->list(dir);
}
Result<std::string> VolumeImpl::readlink(Node node) {
    return tree_->readlink(node);
}
Result<StatFs> VolumeImpl::statfs(Node node) {
    return tree_->statfs(node);
}
Result<std::string> VolumeImpl::getxattr(Node node, std::string_view name) {
    return tree_->getxattr(node, name);
}
Result<std::vector<std::string>> VolumeImpl::listxattr(Node node) {
    return tree_->listxattr(node);
}
Backend::InodeNumbering VolumeImpl::inode_numbering() const { return tree_->inode_numbering(); }

// --- changes through open files ------------------------------------------------------------------

// Whether a change through a handle needs a record: not for a file with no name left (after a
// crash it is gone, as on any filesystem).
static constexpr std::size_t kMaxWriteRecord = std::size_t{256} << 20;
static_assert(kMaxWriteRecord + 4096 < kMaxJournalPayload);

static bool named(File& inner) {
    auto st = inner.fstat();
    return st && st->nlink > 0;
}

template <class T, class Change, class Describe>
Result<T> VolumeImpl::journaled_by_handle(VolumeFile& file, RecordType type, Change&& change,
                                          Describe&& describe) {
    return journaled<T>(
        type, {}, [&](Backend&) -> Result<T> { return change(file.inner()); },
        [&](OpRecord& r, const auto&...) {  // (and the result, when there is one)
            if (!named(file.inner())) return false;
            r.ino = file.ino();
            describe(r);
            return true;
        });
}

Result<std::size_t> VolumeImpl::write_by_handle(VolumeFile& file, std::span<const std::byte> data,
                                                uint64_t offset) {
    // One record per write, and a record has a bound: a larger write is made in part (a short
    // write, as POSIX allows), so the journal never refuses one after it was made.
    data = data.first(std::min<std::size_t>(data.size(), kMaxWriteRecord));
    return journaled_by_handle<std::size_t>(
        file, RecordType::write, [&](File& inner) { return inner.pwrite(data, offset); },
        [&](OpRecord& r) {
            r.offset = offset;
            r.flags = file.append() ? 1 : 0;
            r.data = data;
        });
}

Result<void> VolumeImpl::truncate_by_handle(VolumeFile& file, uint64_t size) {
    return journaled_by_handle<void>(
        file, RecordType::ftruncate, [&](File& inner) { return inner.truncate(size); },
        [&](OpRecord& r) { r.offset = size; });
}

// Journaled as asked (mode and range), so a replay punches the same holes: the record is what
// the tree did, not the zeros it reads.
Result<void> VolumeImpl::allocate_by_handle(VolumeFile& file, int mode, uint64_t offset,
                                            uint64_t length) {
    return journaled_by_handle<void>(
        file, RecordType::fallocate,
        [&](File& inner) { return inner.allocate(mode, offset, length); },
        [&](OpRecord& r) {
            r.flags = static_cast<uint32_t>(mode);
            r.offset = offset;
            r.length = length;
        });
}

Result<FileHandle> VolumeImpl::open(Node node, int flags) {
    if ((flags & O_ACCMODE) == O_ACCMODE) return fail(EINVAL, "open");
    const bool writes = (flags & O_ACCMODE) != O_RDONLY;
    if (options_.read_only && (writes || (flags & O_TRUNC))) {
        auto st = getattr(node);
        if (!st) return std::unexpected(st.error());
        if (auto ok = check_open_target(st->type, flags); !ok) return std::unexpected(ok.error());
        return fail(EROFS, "open");
    }
    if ((flags & O_TRUNC) && writes) {
        // O_TRUNC is a change: journaled as a setattr of the size, when there is one to cut.
        auto st = getattr(node);
        if (!st) return std::unexpected(st.error());
        if (auto ok = check_open_target(st->type, flags); !ok) return std::unexpected(ok.error());
        if (st->size > 0) {
            auto cut = setattr(node, SetAttr::resize(0));
            if (!cut) return std::unexpected(cut.error());
        }
        flags &= ~O_TRUNC;
    }
    auto inner = tree_->open(node, flags);
    if (!inner) return std::unexpected(inner.error());
    return std::make_unique<VolumeFile>(shared_from_this(), std::move(*inner), node.id, flags);
}

// --- node mutations --------------------------------------------------------------------------------

namespace {

void owner_into(OpRecord& r, const std::optional<Owner>& owner) {
    r.has_owner = owner.has_value();
    if (owner) {
        r.uid = owner->uid;
        r.gid = owner->gid;
    }
}

}  // namespace

Result<Created> VolumeImpl::create(Node dir, std::string_view name, int flags, uint32_t mode,
                                   std::optional<Owner> owner) {
    uint64_t made_ino = 0;
    auto made = journaled<Created>(
        RecordType::create_at, name,
        [&](Backend& tree) -> Result<Created> {
            // Again under mu_: a compaction since the check above may have orphaned `dir`.
                    auto c = tree.create(dir, name, flags, mode, owner);
            if (c) {
                made_ino = c->entry.node.id;
                c->file = std::make_unique<VolumeFile>(shared_from_this(), std::move(c->file),
                                                       c->entry.node.id, flags);
            }
            return c;
        },
        [&](OpRecord& r, const Created&) {
            r.ino = dir.id;
            r.name = name;
            r.mode = mode;
            r.flags = static_cast<uint32_t>(flags);
            owner_into(r, owner);
            return true;
        });
    if (!made) {
        if (made_ino) tree_->forget(Node{made_ino}, 1);  // the journal failed after the call
        return std::unexpected(made.error());
    }
    return made;
}

Result<Entry> VolumeImpl::mkdir(Node dir, std::string_view name, uint32_t mode,
                                std::optional<Owner> owner) {
    return make_entry(
        RecordType::mkdir_at, name,
        [&](Backend& tree) -> Result<Entry> {
                    return tree.mkdir(dir, name, mode, owner);
        },
        [&](OpRecord& r, const Entry&) {
            r.ino = dir.id;
            r.name = name;
            r.mode = mode;
            owner_into(r, owner);
            return true;
        });
}

Result<Entry> VolumeImpl::mknod(Node dir, std::string_view name, FileType type, uint32_t mode,
                                uint64_t rdev, std::optional<Owner> owner) {
    return make_entry(
        RecordType::mknod_at, name,
        [&](Backend& tree) -> Result<Entry> {
                    return tree.mknod(dir, name, type, mode, rdev, owner);
        },
        [&](OpRecord& r, const Entry&) {
            r.ino = dir.id;
            r.name = name;
            r.flags = static_cast<uint32_t>(type);
            r.mode = mode;
            r.offset = rdev;
            owner_into(r, owner);
            return true;
        });
}

Result<Entry> VolumeImpl::symlink(Node dir, std::string_view name, std::string_view target,
                                  std::optional<Owner> owner) {
    return make_entry(
        RecordType::symlink_at, name,
        [&](Backend& tree) -> Result<Entry> {
                    return tree.symlink(dir, name, target, owner);
        },
        [&](OpRecord& r, const Entry&) {
            r.ino = dir.id;
            r.name = name;
            r.value = target;
            owner_into(r, owner);
            return true;
        });
}

Result<Entry> VolumeImpl::link(Node node, Node dir, std::string_view name) {
    // (An object with no name left gets none back, as on Linux, nor a name in a removed
    // directory: the tree refuses both.)
    return make_entry(
        RecordType::link_at, name,
        [&](Backend& tree) -> Result<Entry> {
                    return tree.link(node, dir, name);
        },
        [&](OpRecord& r, const Entry&) {
            r.ino = node.id;
            r.ino2 = dir.id;
            r.name = name;
            return true;
        });
}

Result<void> VolumeImpl::remove_name(RecordType type, Node dir, std::string_view name) {
    auto done = journaled<bool>(
        type, name,
        [&](Backend& tree) -> Result<bool> {
            auto ok = type == RecordType::rmdir_at ? tree.rmdir(dir, name) : tree.unlink(dir, name);
            if (!ok) return std::unexpected(ok.error());
            return true;
        },
        [&](OpRecord& r, bool) {
            r.ino = dir.id;
            r.name = name;
            return true;
        });
    if (!done) return std::unexpected(done.error());
    return {};
}

Result<void> VolumeImpl::unlink(Node dir, std::string_view name) {
    return remove_name(RecordType::unlink_at, dir, name);
}

Result<void> VolumeImpl::rmdir(Node dir, std::string_view name) {
    return remove_name(RecordType::rmdir_at, dir, name);
}

Result<void> VolumeImpl::rename(Node dir, std::string_view name, Node to_dir,
                                std::string_view to_name, RenameFlags flags) {
    auto done = journaled<bool>(
        RecordType::rename_at, name,
        [&](Backend& tree) -> Result<bool> {
            if (auto ok = tree.rename(dir, name, to_dir, to_name, flags); !ok)
                return std::unexpected(ok.error());
            return true;
        },
        [&](OpRecord& r, bool) {
            r.ino = dir.id;
            r.name = name;
            r.ino2 = to_dir.id;
            r.name2 = to_name;
            r.flags = static_cast<uint32_t>(flags);
            return true;
        });
    if (!done) return std::unexpected(done.error());
    return {};
}

Result<Stat> VolumeImpl::setattr(Node node, const SetAttr& change) {
    return journaled<Stat>(
        RecordType::setattr, {}, [&](Backend& tree) { return tree.setattr(node, change); },
        [&](OpRecord& r, const Stat& st) {
            if (st.nlink == 0) return false;  // unnamed: nothing to recover
            r.ino = node.id;
            r.mode = change.mode;
            r.uid = change.uid;
            r.gid = change.gid;
            r.flags = change.truncate ? 1 : 0;
            r.offset = change.size;
            r.atime = change.atime;
            r.mtime = change.mtime;
            return true;
        });
}

// Whether `node` still has a name after a change made on `tree` (under mu_): a change to an
// unnamed object is not journaled (its record would name an inode a replay never makes).
static Result<bool> still_named(Backend& tree, Node node) {
    auto st = tree.getattr(node);
    if (!st) return std::unexpected(st.error());
    return st->nlink > 0;
}

// Between two of the volume's files: the tree shares their chunks, and one record names both
// by inode. A copy from a file with no name left (a replay could not find it) is the default's
// copy through handles, journaled as the destination's writes; into one, it is not journaled.
Result<uint64_t> VolumeImpl::copy_range(Node from, uint64_t offset, Node to, uint64_t to_offset,
                                        uint64_t length) {
    bool target_named = false;
    auto copied = journaled<std::optional<uint64_t>>(
        RecordType::clone_range, {},
        [&](Backend& tree) -> Result<std::optional<uint64_t>> {
            // Orphaned by a compaction since the check above: through handles, below.
                    auto source_named = still_named(tree, from);  // under mu_: no race
            if (!source_named) return std::unexpected(source_named.error());
            if (!*source_named) return std::optional<uint64_t>();
            auto n = tree.copy_range(from, offset, to, to_offset, length);
            if (!n) return std::unexpected(n.error());
            auto named = still_named(tree, to);
            if (!named) return std::unexpected(named.error());
            target_named = *named;
            return std::optional<uint64_t>(*n);
        },
        [&](OpRecord& r, const std::optional<uint64_t>& n) {
            if (!n || *n == 0 || !target_named) return false;
            r.ino = from.id;
            r.ino2 = to.id;
            r.offset = offset;
            r.offset2 = to_offset;
            r.length = *n;
            return true;
        });
    if (!copied) return std::unexpected(copied.error());
    if (*copied) return **copied;
    return Backend::copy_range(from, offset, to, to_offset, length);
}

Result<void> VolumeImpl::setxattr(Node node, std::string_view name, std::string_view value,
                                  XattrMode mode) {
    auto done = journaled<bool>(
        RecordType::setxattr_at, name,
        [&](Backend& tree) -> Result<bool> {
            if (auto ok = tree.setxattr(node, name, value, mode); !ok)
                return std::unexpected(ok.error());
            return still_named(tree, node);
        },
        [&](OpRecord& r, bool named) {
            if (!named) return false;
            r.ino = node.id;
            r.name = name;
            r.value = value;
            r.flags = static_cast<uint32_t>(mode);
            return true;
        });
    if (!done) return std::unexpected(done.error());
    return {};
}

Result<void> VolumeImpl::removexattr(Node node, std::string_view name) {
    auto done = journaled<bool>(
        RecordType::removexattr_at, name,
        [&](Backend& tree) -> Result<bool> {
            if (auto ok = tree.removexattr(node, name); !ok) return std::unexpected(ok.error());
            return still_named(tree, node);
        },
        [&](OpRecord& r, bool named) {
            if (!named) return false;
            r.ino = node.id;
            r.name = name;
            return true;
        });
    if (!done) return std::unexpected(done.error());
    return {};
}

}  // namespace packfs::volume
