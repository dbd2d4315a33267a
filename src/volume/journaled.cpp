// The volume's journaled tree (volume_impl.hpp has the protocol): every mutation made on the
// tree and recorded by node, reads straight from the tree, and the tree made again from the
// pack and the journal when the journal could not take a record.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <type_traits>

#include "core/op_clock.hpp"
#include "core/path_api.hpp"
#include "mem/mem_backend.hpp"
#include "volume/volume_impl.hpp"

namespace packfs::volume {

// --- the tree ------------------------------------------------------------------------------------

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
    old_trees_.flush();
}

std::shared_ptr<Backend> VolumeImpl::current_tree() const {
    std::lock_guard lock(mu_);
    return tree_owner_;
}

template <class Body>
auto VolumeImpl::on_tree(Node node, Body&& body) {
    if (has_orphans_.load(std::memory_order_acquire)) {
        std::shared_ptr<Backend> old;
        {
            std::lock_guard lock(held_mu_);
            if (auto it = orphans_.find(node.id); it != orphans_.end()) old = it->second;
        }
        if (old) return body(*old);
    }
    rcu::ReadSection section;
    return body(tree_now());
}

std::shared_ptr<Backend> VolumeImpl::tree_for_locked(Node node) const {
    if (has_orphans_.load(std::memory_order_acquire)) {
        std::lock_guard lock(held_mu_);
        if (auto it = orphans_.find(node.id); it != orphans_.end()) return it->second;
    }
    return tree_owner_;
}

std::shared_ptr<Backend> VolumeImpl::unnamed_tree(Node node) const {
    if (!has_orphans_.load(std::memory_order_acquire)) return nullptr;
    std::shared_lock no_replacement(nodes_mu_);
    auto tree = tree_for_locked(node);
    return tree != tree_owner_ ? tree : nullptr;
}

void VolumeImpl::add_file(VolumeFile* file) {
    std::lock_guard lock(held_mu_);
    files_.insert(file);
}

void VolumeImpl::remove_file(VolumeFile* file) noexcept {
    std::lock_guard lock(held_mu_);
    files_.erase(file);
}

void VolumeImpl::release_tree(std::shared_ptr<Backend> old) noexcept {
    rcu::synchronize();
    old.reset();
}

std::shared_ptr<Backend> VolumeImpl::replace_tree_locked(std::shared_ptr<Backend> next) {
    std::unique_lock nodes(nodes_mu_);
    std::lock_guard maps(held_mu_);
    const std::shared_ptr<Backend> old = tree_owner_;
    // Node references move by number; one whose object has no name left stays where it is.
    for (auto& [ino, count] : held_) {
        if (orphans_.contains(ino)) continue;
        uint64_t moved = 0;
        for (; moved < count; ++moved) {
            auto e = next->lookup_ino(ino);
            if (!e) break;
        }
        if (moved == count) {
            old->forget(Node{ino}, count);
        } else {
            next->forget(Node{ino}, moved);
            orphans_[ino] = old;
        }
    }
    has_orphans_.store(!orphans_.empty(), std::memory_order_release);
    // Open files move now, each holding its inode in the new tree, so a name removed after this
    // leaves an orphan there that they still read and write (moving lazily would find it gone).
    for (VolumeFile* file : files_) (void)file->move_to(*next);
    tree_owner_ = std::move(next);
    tree_.store(tree_owner_.get(), std::memory_order_release);
    return old;
}

Result<std::shared_ptr<Backend>> VolumeImpl::rebuild_tree_locked() {
    auto tree = mem::make_mem_backend_over(pack_.lower, {}, manifest_.next_ino);
    const std::string journal = join(dir_, manifest_.journal);
    std::vector<std::pair<std::vector<std::byte>, JournalRecordView>> kept;
    auto durable_end = writer_->retained([&](const JournalRecordView& view) -> Result<void> {
        kept.emplace_back(std::vector<std::byte>(view.payload.begin(), view.payload.end()), view);
        return {};
    });
    if (!durable_end) return std::unexpected(durable_end.error());
    auto scan = replay_journal(journal, *tree, *durable_end);
    if (!scan) return std::unexpected(scan.error());
    for (auto& [payload, view] : kept) {
        view.payload = payload;
        if (auto ok = replay_record(*tree, view); !ok) return std::unexpected(ok.error());
    }
    return tree;
}

void VolumeImpl::recover_locked() {
    auto fresh = rebuild_tree_locked();
    if (!fresh) {
        broken_ = true;
        return;
    }
    // (Readers in a section may still use the old tree: it is freed after a grace period.)
    old_trees_.retire_shared(replace_tree_locked(std::move(*fresh)));
    old_trees_.flush();
    ++recoveries_;
    if (auto ok = writer_->resume(); !ok) broken_ = true;
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
    const Time now = Time::now();
    Backend& tree = *tree_owner_;
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
    if (payload.size() > kMaxJournalPayload) {  // refused without failing the writer
        recover_locked();
        return fail(EFBIG, record_type_name(type), what);
    }
    auto ticket = writer->append(static_cast<uint16_t>(type), payload);
    if (!ticket) {
        // The journal did not take it (and, in batch mode, discarded what a failed group
        // commit held): the tree is made again from what the journal kept.
        if (recovered_epochs_.insert(append_epoch_).second || durability_ != Durability::batch)
            recover_locked();
        return std::unexpected(ticket.error().with_path(what));
    }
    note_appended_locked(payload.size());
    if (durability_ != Durability::batch) return result;
    append_epoch_ = ticket->epoch;
    lock.unlock();
    if (auto durable = writer->wait_durable(*ticket); !durable) {
        lock.lock();
        if (writer_ == writer && recovered_epochs_.insert(ticket->epoch).second) recover_locked();
        return std::unexpected(durable.error().with_path(what));
    }
    return result;
}

// --- node references ------------------------------------------------------------------------------

void VolumeImpl::count_hold(uint64_t ino) {
    std::lock_guard lock(held_mu_);
    ++held_[ino];
}

Result<Entry> VolumeImpl::lookup(Node dir, std::string_view name) {
    std::shared_lock no_replacement(nodes_mu_);
    Result<Entry> e = [&] {
        {
            std::lock_guard lock(held_mu_);
            if (auto it = orphans_.find(dir.id); it != orphans_.end()) {
                auto tree = it->second;
                return tree->lookup(dir, name);
            }
        }
        rcu::ReadSection section;
        return tree_now().lookup(dir, name);
    }();
    if (e) count_hold(e->node.id);
    return e;
}

Result<Entry> VolumeImpl::lookup_ino(uint64_t ino) {
    std::shared_lock no_replacement(nodes_mu_);
    auto e = tree_for_locked(Node{ino})->lookup_ino(ino);
    if (e) count_hold(e->node.id);
    return e;
}

void VolumeImpl::forget(Node node, uint64_t count) noexcept {
    if (!node || node == kRootNode) return;
    std::shared_lock no_replacement(nodes_mu_);
    std::shared_ptr<Backend> tree;
    {
        std::lock_guard lock(held_mu_);
        auto it = held_.find(node.id);
        if (it == held_.end()) return;
        count = std::min(count, it->second);
        it->second -= count;
        auto orphan = orphans_.find(node.id);
        tree = orphan != orphans_.end() ? orphan->second : tree_owner_;
        if (it->second == 0) {
            held_.erase(it);
            if (orphan != orphans_.end()) {
                orphans_.erase(orphan);
                has_orphans_.store(!orphans_.empty(), std::memory_order_release);
            }
        }
    }
    tree->forget(node, count);
}

template <class Op, class Fill>
Result<Entry> VolumeImpl::make_entry(RecordType type, std::string_view name, Op&& op,
                                     Fill&& fill) {
    uint64_t counted = 0;
    auto e = journaled<Entry>(
        type, name,
        [&](Backend& tree) -> Result<Entry> {
            auto made = op(tree);
            if (made) {
                count_hold(made->node.id);
                counted = made->node.id;
            }
            return made;
        },
        fill);
    if (!e && counted) forget(Node{counted}, 1);  // the journal failed after the call
    return e;
}

// --- reads ---------------------------------------------------------------------------------------

Result<Stat> VolumeImpl::getattr(Node node) {
    return on_tree(node, [&](Backend& tree) { return tree.getattr(node); });
}
Result<std::vector<DirEntry>> VolumeImpl::list(Node dir) {
    return on_tree(dir, [&](Backend& tree) { return tree.list(dir); });
}
Result<std::string> VolumeImpl::readlink(Node node) {
    return on_tree(node, [&](Backend& tree) { return tree.readlink(node); });
}
Result<StatFs> VolumeImpl::statfs(Node node) {
    return on_tree(node, [&](Backend& tree) { return tree.statfs(node); });
}
Result<std::string> VolumeImpl::getxattr(Node node, std::string_view name) {
    return on_tree(node, [&](Backend& tree) { return tree.getxattr(node, name); });
}
Result<std::vector<std::string>> VolumeImpl::listxattr(Node node) {
    return on_tree(node, [&](Backend& tree) { return tree.listxattr(node); });
}
Backend::InodeNumbering VolumeImpl::inode_numbering() const {
    rcu::ReadSection section;
    return tree_now().inode_numbering();
}

Result<Stat> VolumeImpl::stat(std::string_view p) {
    rcu::ReadSection section;
    return tree_now().stat(p);
}
Result<Stat> VolumeImpl::lstat(std::string_view p) {
    rcu::ReadSection section;
    return tree_now().lstat(p);
}
Result<std::vector<DirEntry>> VolumeImpl::readdir(std::string_view p) {
    rcu::ReadSection section;
    return tree_now().readdir(p);
}
Result<std::string> VolumeImpl::readlink(std::string_view p) {
    rcu::ReadSection section;
    return tree_now().readlink(p);
}
Result<StatFs> VolumeImpl::statfs(std::string_view p) {
    rcu::ReadSection section;
    return tree_now().statfs(p);
}
Result<std::string> VolumeImpl::getxattr(std::string_view p, std::string_view n) {
    rcu::ReadSection section;
    return tree_now().getxattr(p, n);
}
Result<std::vector<std::string>> VolumeImpl::listxattr(std::string_view p) {
    rcu::ReadSection section;
    return tree_now().listxattr(p);
}
Result<std::shared_ptr<Backend>> VolumeImpl::snapshot() {
    rcu::ReadSection section;
    return tree_now().snapshot();
}

// --- files ---------------------------------------------------------------------------------------

VolumeFile::VolumeFile(std::shared_ptr<VolumeImpl> volume, FileHandle inner, uint64_t ino,
                       int flags)
    : volume_(std::move(volume)),
      inner_(std::move(inner)),
      ino_(ino),
      flags_(flags & (O_ACCMODE | O_APPEND)) {
    volume_->add_file(this);
}

VolumeFile::~VolumeFile() { volume_->remove_file(this); }

bool VolumeFile::move_to(Backend& next) {
    auto moved = next.open(Node{ino_}, flags_);
    std::unique_lock lock(mu_);
    if (!moved) {
        // Not there: it has no name left and stays on its tree. But a named file that could
        // not be opened on the new tree (no memory, a lower's I/O error) would read and write
        // a copy the volume no longer journals against: it fails from now on instead.
        auto st = inner_->fstat();
        if (st && st->nlink > 0) lost_ = moved.error().relabeled("volume file", {});
        return false;
    }
    inner_ = std::move(*moved);
    return true;
}

template <class Body>
auto VolumeFile::with_inner(Body&& body) -> decltype(body(std::declval<File&>())) {
    std::shared_lock lock(mu_);
    if (lost_) return std::unexpected(*lost_);
    return body(*inner_);
}

Result<File*> VolumeFile::inner_locked() {
    if (lost_) return std::unexpected(*lost_);
    return inner_.get();
}

Result<std::size_t> VolumeFile::pread(std::span<std::byte> buf, uint64_t offset) {
    return with_inner([&](File& f) { return f.pread(buf, offset); });
}
Result<Stat> VolumeFile::fstat() {
    return with_inner([&](File& f) { return f.fstat(); });
}
Result<uint64_t> VolumeFile::seek_data(uint64_t offset, bool data) {
    return with_inner([&](File& f) { return f.seek_data(offset, data); });
}
Result<void> VolumeFile::allocate(int mode, uint64_t offset, uint64_t length) {
    if ((flags_ & O_ACCMODE) == O_RDONLY) return fail(EBADF, "fallocate");
    return volume_->allocate_by_handle(*this, mode, offset, length);
}
Result<std::size_t> VolumeFile::pwrite(std::span<const std::byte> data, uint64_t offset) {
    if ((flags_ & O_ACCMODE) == O_RDONLY) return fail(EBADF, "write");
    return volume_->write_by_handle(*this, data, offset);
}
Result<void> VolumeFile::truncate(uint64_t size) {
    if ((flags_ & O_ACCMODE) == O_RDONLY) return fail(EINVAL, "ftruncate");
    return volume_->truncate_by_handle(*this, size);
}
Result<void> VolumeFile::fsync(bool) {
    // always and batch: every change was durable when it returned. explicit: any handle's
    // fsync (a read-only one too: coreutils' `sync FILE`) makes the volume durable.
    if (volume_->durability() != Durability::explicit_sync) return {};
    return volume_->sync();
}

// Whether a change through a handle needs a record: not for a file with no name left (after a
// crash it is gone, as on any filesystem).
static bool named(File& inner) {
    auto st = inner.fstat();
    return st && st->nlink > 0;
}

template <class T, class Change, class Describe>
Result<T> VolumeImpl::journaled_by_handle(VolumeFile& file, RecordType type, Change&& change,
                                          Describe&& describe) {
    File* inner = nullptr;
    return journaled<T>(
        type, {},
        [&](Backend&) -> Result<T> {
            auto usable = file.inner_locked();
            if (!usable) return std::unexpected(usable.error());
            inner = *usable;
            return change(*inner);
        },
        [&](OpRecord& r, const auto&...) {  // (and the result, when there is one)
            if (!named(*inner)) return false;
            r.ino = file.ino();
            describe(r);
            return true;
        });
}

Result<std::size_t> VolumeImpl::write_by_handle(VolumeFile& file, std::span<const std::byte> data,
                                                uint64_t offset) {
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
    std::shared_lock no_replacement(nodes_mu_);  // between the tree's open and joining files_
    auto inner = tree_for_locked(node)->open(node, flags);
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
    if (unnamed_tree(dir)) return fail(ENOENT, "create", name);  // a removed directory
    uint64_t counted = 0;
    auto made = journaled<Created>(
        RecordType::create_at, name,
        [&](Backend& tree) -> Result<Created> {
            // Again under mu_: a compaction since the check above may have orphaned `dir`.
            if (unnamed_tree(dir)) return fail(ENOENT, "create", name);
            auto c = tree.create(dir, name, flags, mode, owner);
            if (c) {
                count_hold(c->entry.node.id);
                counted = c->entry.node.id;
                // Joins files_ under mu_: no replacement between the create and the joining.
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
        if (counted) forget(Node{counted}, 1);
        return std::unexpected(made.error());
    }
    return made;
}

Result<Entry> VolumeImpl::mkdir(Node dir, std::string_view name, uint32_t mode,
                                std::optional<Owner> owner) {
    if (unnamed_tree(dir)) return fail(ENOENT, "mkdir", name);  // a removed directory
    return make_entry(
        RecordType::mkdir_at, name,
        [&](Backend& tree) -> Result<Entry> {
            if (unnamed_tree(dir)) return fail(ENOENT, "mkdir", name);  // orphaned since
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
    if (unnamed_tree(dir)) return fail(ENOENT, "mknod", name);  // a removed directory
    return make_entry(
        RecordType::mknod_at, name,
        [&](Backend& tree) -> Result<Entry> {
            if (unnamed_tree(dir)) return fail(ENOENT, "mknod", name);  // orphaned since
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
    if (unnamed_tree(dir)) return fail(ENOENT, "symlink", name);  // a removed directory
    return make_entry(
        RecordType::symlink_at, name,
        [&](Backend& tree) -> Result<Entry> {
            if (unnamed_tree(dir)) return fail(ENOENT, "symlink", name);  // orphaned since
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
    // An object with no name left gets none back (as on Linux), nor a name in a removed
    // directory.
    if (unnamed_tree(node) || unnamed_tree(dir)) return fail(ENOENT, "link", name);
    return make_entry(
        RecordType::link_at, name,
        [&](Backend& tree) -> Result<Entry> {
            if (unnamed_tree(node) || unnamed_tree(dir)) return fail(ENOENT, "link", name);
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
    if (unnamed_tree(to_dir)) return fail(ENOENT, "rename", to_name);  // a removed directory
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
    if (auto old = unnamed_tree(node)) return old->setattr(node, change);
    return journaled<Stat>(
        RecordType::setattr, {},
        [&](Backend& tree) {
            // Orphaned by a compaction since the check above: its tree, not journaled (nlink 0).
            if (auto old = unnamed_tree(node)) return old->setattr(node, change);
            return tree.setattr(node, change);
        },
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
    if (unnamed_tree(from) || unnamed_tree(to))
        return Backend::copy_range(from, offset, to, to_offset, length);
    bool target_named = false;
    auto copied = journaled<std::optional<uint64_t>>(
        RecordType::clone_range, {},
        [&](Backend& tree) -> Result<std::optional<uint64_t>> {
            // Orphaned by a compaction since the check above: through handles, below.
            if (unnamed_tree(from) || unnamed_tree(to)) return std::optional<uint64_t>();
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
    if (auto old = unnamed_tree(node)) return old->setxattr(node, name, value, mode);
    auto done = journaled<bool>(
        RecordType::setxattr_at, name,
        [&](Backend& tree) -> Result<bool> {
            if (auto old = unnamed_tree(node)) {  // orphaned since the check: not journaled
                if (auto ok = old->setxattr(node, name, value, mode); !ok)
                    return std::unexpected(ok.error());
                return false;
            }
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
    if (auto old = unnamed_tree(node)) return old->removexattr(node, name);
    auto done = journaled<bool>(
        RecordType::removexattr_at, name,
        [&](Backend& tree) -> Result<bool> {
            if (auto old = unnamed_tree(node)) {  // orphaned since the check: not journaled
                if (auto ok = old->removexattr(node, name); !ok) return std::unexpected(ok.error());
                return false;
            }
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

// --- path mutations: the path layer over the tree's lookups and the journaled node calls ---------

namespace {

struct VolumeOps {
    using NodeT = Node;
    VolumeImpl& volume;
    std::shared_ptr<Backend> tree;

    Result<Node> root() const noexcept { return kRootNode; }
    Result<std::optional<walk::Step<Node>>> lookup(Node dir, std::string_view name) const {
        auto e = tree->lookup(dir, name);
        if (!e) {
            if (e.error().code() == ENOENT) return std::nullopt;
            return std::unexpected(e.error());
        }
        return walk::Step<Node>{e->node, e->stat.type};
    }
    Result<std::string> readlink(Node n) const { return tree->readlink(n); }
    void release(Node n) const noexcept {
        if (n && n != kRootNode) tree->forget(n, 1);
    }
    bool read_only() const noexcept { return volume.read_only(); }
    bool same(Node a, Node b) const noexcept { return a == b; }
    bool has_entries(Node dir) const {
        auto entries = tree->list(dir);
        return !entries || !entries->empty();
    }
    Result<Stat> getattr(Node n) const { return tree->getattr(n); }
    Result<std::vector<DirEntry>> list(Node n) const { return tree->list(n); }
    Result<FileHandle> open(Node n, int flags) const { return volume.open(n, flags); }
    Result<std::string> getxattr(Node n, std::string_view name) const {
        return tree->getxattr(n, name);
    }
    Result<std::vector<std::string>> listxattr(Node n) const { return tree->listxattr(n); }
    Result<StatFs> statfs(Node n) const { return tree->statfs(n); }

    Result<FileHandle> create(Node dir, std::string_view name, int flags, uint32_t mode) const {
        auto made = volume.create(dir, name, flags, mode, std::nullopt);
        if (!made) return std::unexpected(made.error());
        volume.forget(made->entry.node, 1);
        return std::move(made->file);
    }
    Result<void> made(Result<Entry>&& e) const {
        if (!e) return std::unexpected(e.error());
        volume.forget(e->node, 1);
        return {};
    }
    Result<void> mkdir(Node dir, std::string_view name, uint32_t mode) const {
        return made(volume.mkdir(dir, name, mode, std::nullopt));
    }
    Result<void> mknod(Node dir, std::string_view name, FileType type, uint32_t mode,
                       uint64_t rdev) const {
        return made(volume.mknod(dir, name, type, mode, rdev, std::nullopt));
    }
    Result<void> symlink(Node dir, std::string_view name, std::string_view target) const {
        return made(volume.symlink(dir, name, target, std::nullopt));
    }
    Result<void> link(Node node, Node dir, std::string_view name) const {
        return made(volume.link(node, dir, name));
    }
    Result<void> unlink(Node dir, std::string_view name) const { return volume.unlink(dir, name); }
    Result<void> rmdir(Node dir, std::string_view name) const { return volume.rmdir(dir, name); }
    Result<void> rename(Node dir, std::string_view name, Node to_dir, std::string_view to_name,
                        RenameFlags flags) const {
        return volume.rename(dir, name, to_dir, to_name, flags);
    }
    Result<void> setattr(Node n, const SetAttr& change) const {
        auto st = volume.setattr(n, change);
        if (!st) return std::unexpected(st.error());
        return {};
    }
    Result<void> setxattr(Node n, std::string_view name, std::string_view value,
                          XattrMode mode) const {
        return volume.setxattr(n, name, value, mode);
    }
    Result<void> removexattr(Node n, std::string_view name) const {
        return volume.removexattr(n, name);
    }
};

}  // namespace

#define PACKFS_VOLUME_PATHS                                 \
    VolumeOps ops{*this, current_tree()};                   \
    paths::PathApi<VolumeOps> api(ops)

Result<FileHandle> VolumeImpl::open(std::string_view path, int flags, uint32_t mode) {
    PACKFS_VOLUME_PATHS;
    return api.open(path, flags, mode);
}
Result<void> VolumeImpl::truncate(std::string_view path, uint64_t size) {
    PACKFS_VOLUME_PATHS;
    return api.truncate(path, size);
}
Result<void> VolumeImpl::mkdir(std::string_view path, uint32_t mode) {
    PACKFS_VOLUME_PATHS;
    return api.mkdir(path, mode);
}
Result<void> VolumeImpl::rmdir(std::string_view path) {
    PACKFS_VOLUME_PATHS;
    return api.rmdir(path);
}
Result<void> VolumeImpl::unlink(std::string_view path) {
    PACKFS_VOLUME_PATHS;
    return api.unlink(path);
}
Result<void> VolumeImpl::rename(std::string_view from, std::string_view to, RenameFlags flags) {
    PACKFS_VOLUME_PATHS;
    return api.rename(from, to, flags);
}
Result<void> VolumeImpl::symlink(std::string_view target, std::string_view link_path) {
    PACKFS_VOLUME_PATHS;
    return api.symlink(target, link_path);
}
Result<void> VolumeImpl::link(std::string_view existing, std::string_view new_path) {
    PACKFS_VOLUME_PATHS;
    return api.link(existing, new_path);
}
Result<void> VolumeImpl::mknod(std::string_view path, FileType type, uint32_t mode, uint64_t rdev) {
    PACKFS_VOLUME_PATHS;
    return api.mknod(path, type, mode, rdev);
}
Result<void> VolumeImpl::chmod(std::string_view path, uint32_t mode) {
    PACKFS_VOLUME_PATHS;
    return api.chmod(path, mode);
}
Result<void> VolumeImpl::chown(std::string_view path, uint32_t uid, uint32_t gid, Follow follow) {
    PACKFS_VOLUME_PATHS;
    return api.chown(path, uid, gid, follow);
}
Result<void> VolumeImpl::utimens(std::string_view path, TimeUpdate atime, TimeUpdate mtime,
                                 Follow follow) {
    PACKFS_VOLUME_PATHS;
    return api.utimens(path, atime, mtime, follow);
}
Result<void> VolumeImpl::setxattr(std::string_view path, std::string_view name,
                                  std::string_view value, XattrMode mode) {
    PACKFS_VOLUME_PATHS;
    return api.setxattr(path, name, value, mode);
}
Result<void> VolumeImpl::removexattr(std::string_view path, std::string_view name) {
    PACKFS_VOLUME_PATHS;
    return api.removexattr(path, name);
}

#undef PACKFS_VOLUME_PATHS

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
    s.next_ino = tree_owner_->inode_numbering().limit;
    s.pack_digest = pack_.digest;
    s.created = manifest_.created;
    s.last_compaction = manifest_.last_compaction;
    s.last_compaction_seconds = manifest_.last_compaction_seconds;
    s.recovery = recovery_;
    return s;
}

}  // namespace packfs::volume
