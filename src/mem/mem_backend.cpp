// The mem backend: the live, writable tree (MemBackend) and its frozen snapshots
// (SnapshotBackend), over the versions described in mem_tree.hpp and the protocol in
// mem_state.hpp.
#include <cstring>
#include <limits>

#include "mem/mem_edit.hpp"
#include "mem/op_clock.hpp"
#include "mem/mem_state.hpp"
#include "mem/tree_reader.hpp"
#include "mem/mem_version.hpp"
#include "core/refuse_mutations.hpp"
#include "packfs/mem.hpp"
#include "packfs/path.hpp"

namespace packfs::mem {
namespace {

constexpr uint64_t kMaxFileSize = 1ull << 52;  // 4 PiB: offsets stay far from overflow
constexpr std::size_t kMaxXattrValue = 64 * 1024;
constexpr uint32_t kUnchangedId = std::numeric_limits<uint32_t>::max();

Result<void> check_fits(uint64_t offset, std::size_t length, std::string_view op) {
    if (offset > kMaxFileSize || length > kMaxFileSize - offset) return fail(EFBIG, op);
    return {};
}

// Applies utimens-style updates to one time.
void apply_time(Time& field, const TimeUpdate& update, Time now) {
    switch (update.kind) {
        case TimeUpdate::Kind::omit: break;
        case TimeUpdate::Kind::now: field = now; break;
        case TimeUpdate::Kind::set: field = update.time; break;
    }
}

Result<void> check_time(const TimeUpdate& update, std::string_view path) {
    if (update.kind == TimeUpdate::Kind::set &&
        (update.time.nsec < 0 || update.time.nsec > 999'999'999))
        return fail(EINVAL, "utimens", path);
    return {};
}

// Checks an open's flags against what it resolved to.
Result<void> check_open_target(FileType type, int flags, std::string_view path) {
    const int access = flags & O_ACCMODE;
    if ((flags & O_DIRECTORY) && type != FileType::directory) return fail(ENOTDIR, "open", path);
    if (type == FileType::directory && access != O_RDONLY) return fail(EISDIR, "open", path);
    if (type == FileType::symlink) return fail(ELOOP, "open", path);  // O_NOFOLLOW
    if (type != FileType::regular && type != FileType::directory)
        return fail(ENOTSUP, "open", path);
    return {};
}

// The bytes of a lower file a handle reads until the file is changed (null for anything else).
std::shared_ptr<const LowerContent> lower_content_of(const Tree& tree, const NodeRef& node) {
    if (node.upper || node.type != FileType::regular) return nullptr;
    return lower_value(tree.lower->content(node.lower));
}

// Reads from a node of `tree`: its own content, or the lower's through `cached` when that is
// the same lower file (else looked up again).
Result<std::size_t> read_node(const Tree& tree, const NodeRef& node, const LowerContent* cached,
                              const LowerLayer* cached_layer, uint64_t cached_id,
                              std::span<std::byte> buf, uint64_t offset) {
    if (node.is_dir()) return fail(EISDIR, "read");
    if (node.upper) return node.upper->content.read(node.upper->size, offset, buf);
    if (cached && cached_layer == tree.lower.get() && cached_id == node.lower.id)
        return cached->read(offset, buf);
    return guard_lower({}, [&]() -> Result<std::size_t> {
        return lower_value(tree.lower->content(node.lower))->read(offset, buf);
    });
}

// --- files -------------------------------------------------------------------------------

// A handle on a live inode: reads see the latest version; writes publish a new one.
class LiveFile final : public File {
public:
    LiveFile(std::shared_ptr<MemState> state, uint64_t ino, int flags,
             std::shared_ptr<const LowerContent> lower = nullptr, LowerPtr layer = nullptr,
             uint64_t lower_id = 0)
        : state_(std::move(state)),
          ino_(ino),
          readable_((flags & O_ACCMODE) != O_WRONLY),
          writable_((flags & O_ACCMODE) != O_RDONLY),
          append_(flags & O_APPEND),
          lower_(std::move(lower)),
          layer_(std::move(layer)),
          lower_id_(lower_id) {}
    ~LiveFile() override { state_->release_handle(ino_); }

    Result<std::size_t> pread(std::span<std::byte> buf, uint64_t offset) override {
        if (!readable_) return fail(EBADF, "read");
        TreePtr tree = state_->load();
        auto node = guard_lower({}, [&]() -> Result<NodeRef> { return tree->node(ino_); });
        if (!node) return std::unexpected(node.error());
        if (!*node) return fail(ESTALE, "read");
        return read_node(*tree, *node, lower_.get(), layer_.get(), lower_id_, buf, offset);
    }

    Result<std::size_t> pwrite(std::span<const std::byte> data, uint64_t offset) override {
        if (!writable_) return fail(EBADF, "write");
        return write_inode(*state_, ino_, data, offset, append_);
    }

    // Shared by pwrite and the volume's replay: writes `data` into regular file `ino`.
    static Result<std::size_t> write_inode(MemState& state, uint64_t ino,
                                           std::span<const std::byte> data, uint64_t offset,
                                           bool append) {
        return state.mutate([&](Tree& next) -> Result<std::size_t> {
            const NodeRef node = next.node(ino);
            if (!node) return fail(ESTALE, "write");
            if (node.type != FileType::regular) return fail(EBADF, "write");
            const uint64_t at = append ? stat_of(next, node).size : offset;
            if (auto ok = check_fits(at, data.size(), "write"); !ok)
                return std::unexpected(ok.error());
            if (data.empty()) return 0;
            Inode& edited = edit_inode(next, ino);
            const uint64_t before = edited.content.allocated();
            edited.content.write(edited.size, at, data);
            edited.size = std::max<uint64_t>(edited.size, at + data.size());
            edited.mtime = edited.ctime = op_now();
            next.bytes_used += edited.content.allocated() - before;
            return data.size();
        });
    }

    Result<void> truncate(uint64_t size) override {
        if (!writable_) return fail(EINVAL, "ftruncate");  // as ftruncate(2) on a read-only fd
        return state_->mutate([&](Tree& next) -> Result<void> { return resize(next, size); });
    }

    Result<void> fsync(bool) override { return {}; }  // memory is as durable as it gets

    Result<Stat> fstat() override {
        TreePtr tree = state_->load();
        return guard_lower({}, [&]() -> Result<Stat> {
            const NodeRef node = tree->node(ino_);
            if (!node) return fail(ESTALE, "fstat");
            return stat_of(*tree, node);
        });
    }

    // Shared by ftruncate and truncate(path): sets the size of regular file `ino`.
    static Result<void> resize_inode(Tree& next, uint64_t ino, uint64_t size,
                                     std::string_view path) {
        if (size > kMaxFileSize) return fail(EFBIG, "truncate", path);
        const NodeRef node = next.node(ino);
        if (!node) return fail(ESTALE, "truncate", path);
        if (node.type == FileType::directory) return fail(EISDIR, "truncate", path);
        if (node.type != FileType::regular) return fail(EINVAL, "truncate", path);
        Inode& edited = edit_inode(next, ino);
        const uint64_t before = edited.content.allocated();
        edited.content.resize(edited.size, size);
        edited.size = size;
        edited.mtime = edited.ctime = op_now();
        next.bytes_used += edited.content.allocated() - before;
        return {};
    }

private:
    Result<void> resize(Tree& next, uint64_t size) { return resize_inode(next, ino_, size, {}); }

    std::shared_ptr<MemState> state_;
    uint64_t ino_;
    bool readable_, writable_, append_;
    // The lower file this handle opened, while it is unchanged (reads skip the lookup).
    std::shared_ptr<const LowerContent> lower_;
    LowerPtr layer_;
    uint64_t lower_id_;
};

// A handle on a frozen version: the inode it opened, forever.
class SnapshotFile final : public File {
public:
    SnapshotFile(TreePtr tree, const NodeRef& node, std::shared_ptr<const LowerContent> lower)
        : tree_(std::move(tree)), node_(node), lower_(std::move(lower)) {}

    Result<std::size_t> pread(std::span<std::byte> buf, uint64_t offset) override {
        return read_node(*tree_, node_, lower_.get(), tree_->lower.get(), node_.lower.id, buf,
                         offset);
    }
    Result<std::size_t> pwrite(std::span<const std::byte>, uint64_t) override {
        return fail(EBADF, "write");
    }
    Result<void> truncate(uint64_t) override { return fail(EINVAL, "ftruncate"); }
    Result<void> fsync(bool) override { return {}; }
    Result<Stat> fstat() override {
        return guard_lower({}, [&]() -> Result<Stat> { return stat_of(*tree_, node_); });
    }

private:
    TreePtr tree_;  // keeps node_ alive
    NodeRef node_;
    std::shared_ptr<const LowerContent> lower_;
};

// --- backends ------------------------------------------------------------------------------

// The queries both kinds of mem backend answer the same way, from one version of the tree.
class TreeQueries : public Backend {
public:
    Result<Stat> stat(std::string_view path) override {
        TreePtr t = version();
        return TreeReader(*t).stat(path, true, "stat");
    }
    Result<Stat> lstat(std::string_view path) override {
        TreePtr t = version();
        return TreeReader(*t).stat(path, false, "lstat");
    }
    Result<std::vector<DirEntry>> readdir(std::string_view path) override {
        TreePtr t = version();
        return TreeReader(*t).readdir(path);
    }
    Result<std::string> readlink(std::string_view path) override {
        TreePtr t = version();
        return TreeReader(*t).readlink(path);
    }
    Result<StatFs> statfs(std::string_view path) override {
        TreePtr t = version();
        TreeReader reader(*t);
        if (auto s = reader.stat(path, true, "statfs"); !s) return std::unexpected(s.error());
        return reader.statfs(capacity());
    }
    Result<std::string> getxattr(std::string_view path, std::string_view name) override {
        TreePtr t = version();
        return TreeReader(*t).getxattr(path, name);
    }
    Result<std::vector<std::string>> listxattr(std::string_view path) override {
        TreePtr t = version();
        return TreeReader(*t).listxattr(path);
    }

    TreePtr current_version() const { return version(); }

protected:
    virtual TreePtr version() const = 0;
    virtual uint64_t capacity() const = 0;
};

class SnapshotBackend final : public RefuseMutations<TreeQueries> {
public:
    SnapshotBackend(TreePtr tree, uint64_t capacity) : tree_(std::move(tree)), capacity_(capacity) {}

    Result<FileHandle> open(std::string_view path, int flags, uint32_t) override {
        if ((flags & O_ACCMODE) == O_ACCMODE) return fail(EINVAL, "open", path);
        auto normal = NormalPath::make(path, "open");
        if (!normal) return std::unexpected(normal.error());
        auto r = TreeReader(*tree_).resolve(*normal, !(flags & O_NOFOLLOW), "open", path);
        // As on a read-only mount: what exists answers first (EEXIST, EISDIR), then EROFS.
        if (!r) {
            if (r.error().code() == ENOENT && (flags & O_CREAT)) return fail(EROFS, "open", path);
            return std::unexpected(r.error());
        }
        if ((flags & O_CREAT) && (flags & O_EXCL)) return fail(EEXIST, "open", path);
        if (auto ok = check_open_target(r->type, flags, path); !ok)
            return std::unexpected(ok.error());
        if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC)) return fail(EROFS, "open", path);
        auto lower = guard_lower(path, [&]() -> Result<std::shared_ptr<const LowerContent>> {
            return lower_content_of(*tree_, *r);
        });
        if (!lower) return std::unexpected(lower.error());
        return std::make_unique<SnapshotFile>(tree_, *r, std::move(*lower));
    }
    Result<std::shared_ptr<Backend>> snapshot() override {
        return std::make_shared<SnapshotBackend>(tree_, capacity_);
    }
protected:
    TreePtr version() const override { return tree_; }
    uint64_t capacity() const override { return capacity_; }

private:
    TreePtr tree_;
    uint64_t capacity_;
};

class MemBackend final : public TreeQueries {
public:
    explicit MemBackend(const MemOptions& options, LowerPtr lower = nullptr, uint64_t next_ino = 0)
        : state_(std::make_shared<MemState>(options, std::move(lower), next_ino)) {}

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
    Result<std::shared_ptr<Backend>> snapshot() override {
        return std::make_shared<SnapshotBackend>(state_->load(), capacity());
    }
    bool read_only() const noexcept override { return false; }

    MemState& state() noexcept { return *state_; }

protected:
    TreePtr version() const override { return state_->load(); }
    uint64_t capacity() const override { return state_->options().capacity_bytes; }

private:
    // Creates a new entry `path` holding a fresh inode made by `init`, after the common checks.
    template <class Init>
    Result<void> create_entry(std::string_view op, std::string_view path, FileType type,
                              uint32_t mode, Init&& init);
    // Runs `edit(inode)` on the inode `path` resolves to, and sets its ctime.
    template <class Edit>
    Result<void> edit_attributes(std::string_view op, std::string_view path, bool follow,
                                 Edit&& edit);
    // A fresh inode linked as parent/name (owner from the options, nlink 1), the parent's
    // times and link count updated. The caller has checked that the name is free.
    Inode& add_new_inode(Tree& next, uint64_t parent, std::string_view name, FileType type,
                         uint32_t mode);
    Result<FileHandle> open_existing(std::string_view path, const NormalPath& normal, int flags);
    Result<FileHandle> open_for_change(std::string_view path, const NormalPath& normal, int flags,
                                       uint32_t mode);

    std::shared_ptr<MemState> state_;
};

template <class Init>
Result<void> MemBackend::create_entry(std::string_view op, std::string_view path, FileType type,
                                      uint32_t mode, Init&& init) {
    auto normal = NormalPath::make(path, op);
    if (!normal) return std::unexpected(normal.error());
    if (normal->is_root()) return fail(EEXIST, op, path);
    return state_->mutate([&](Tree& next) -> Result<void> {
        auto where = TreeReader(next).resolve_parent(*normal, op, path);
        if (!where) return std::unexpected(where.error());
        if (next.child(where->dir, where->name())) return fail(EEXIST, op, path);
        if (normal->wants_dir() && type != FileType::directory) return fail(ENOENT, op, path);
        init(add_new_inode(next, where->parent, where->name(), type, mode), where->parent);
        return {};
    });
}

Inode& MemBackend::add_new_inode(Tree& next, uint64_t parent, std::string_view name,
                                 FileType type, uint32_t mode) {
    const Time now = op_now();
    const MemOptions& o = state_->options();
    Inode& inode = new_inode(next, type, mode, now);
    inode.uid = o.uid;
    inode.gid = o.gid;
    inode.nlink = 1;
    add_entry(next, parent, name, inode.ino, type);
    Inode& dir = edit_inode(next, parent);
    dir.mtime = dir.ctime = now;
    if (type == FileType::directory) dir.nlink += 1;  // the new directory's ".."
    return inode;
}

Result<void> MemBackend::mkdir(std::string_view path, uint32_t mode) {
    return create_entry("mkdir", path, FileType::directory, mode,
                        [&](Inode& inode, uint64_t) { inode.nlink = 2; });
}

Result<void> MemBackend::mknod(std::string_view path, FileType type, uint32_t mode,
                               uint64_t rdev) {
    if (type == FileType::directory || type == FileType::symlink) return fail(EINVAL, "mknod", path);
    const bool device = type == FileType::char_device || type == FileType::block_device;
    return create_entry("mknod", path, type, mode,
                        [&](Inode& inode, uint64_t) { inode.rdev = device ? rdev : 0; });
}

Result<void> MemBackend::symlink(std::string_view target, std::string_view link_path) {
    if (auto ok = check_symlink_target(target, link_path); !ok) return ok;
    return create_entry("symlink", link_path, FileType::symlink, 0777,
                        [&](Inode& inode, uint64_t) {
                            inode.target = std::string(target);
                            inode.size = target.size();
                        });
}

Result<void> MemBackend::link(std::string_view existing, std::string_view new_path) {
    auto from = NormalPath::make(existing, "link");
    if (!from) return std::unexpected(from.error());
    auto to = NormalPath::make(new_path, "link");
    if (!to) return std::unexpected(to.error());
    if (to->is_root()) return fail(EEXIST, "link", new_path);
    return state_->mutate([&](Tree& next) -> Result<void> {
        TreeReader reader(next);
        auto source = reader.resolve(*from, false, "link", existing);
        if (!source) return std::unexpected(source.error());
        auto where = reader.resolve_parent(*to, "link", new_path);
        if (!where) return std::unexpected(where.error());
        if (next.child(where->dir, where->name())) return fail(EEXIST, "link", new_path);
        if (to->wants_dir()) return fail(ENOENT, "link", new_path);
        if (source->is_dir()) return fail(EPERM, "link", existing);
        const Time now = op_now();
        Inode& inode = edit_inode(next, source->ino);
        inode.nlink += 1;
        inode.ctime = now;
        add_entry(next, where->parent, where->name(), inode.ino, inode.type);
        touch_dir(next, where->parent, now);
        return {};
    });
}

Result<void> MemBackend::unlink(std::string_view path) {
    auto normal = NormalPath::make(path, "unlink");
    if (!normal) return std::unexpected(normal.error());
    if (normal->is_root()) return fail(EISDIR, "unlink", path);
    return state_->mutate(
        [&](Tree& next) -> Result<void> {
            auto where = TreeReader(next).resolve_parent(*normal, "unlink", path);
            if (!where) return std::unexpected(where.error());
            const NodeRef entry = next.child(where->dir, where->name());
            if (!entry) return fail(ENOENT, "unlink", path);
            if (entry.is_dir()) return fail(EISDIR, "unlink", path);
            if (normal->wants_dir()) return fail(ENOTDIR, "unlink", path);
            const uint64_t ino = entry.ino;
            const Time now = op_now();
            remove_entry(next, where->dir, where->name());
            drop_link(next, ino, now, state_->is_open_locked(ino));
            touch_dir(next, where->parent, now);
            return {};
        },
        true);
}

Result<void> MemBackend::rmdir(std::string_view path) {
    auto normal = NormalPath::make(path, "rmdir");
    if (!normal) return std::unexpected(normal.error());
    if (normal->is_root()) return fail(EBUSY, "rmdir", path);
    return state_->mutate(
        [&](Tree& next) -> Result<void> {
            auto where = TreeReader(next).resolve_parent(*normal, "rmdir", path);
            if (!where) return std::unexpected(where.error());
            const NodeRef entry = next.child(where->dir, where->name());
            if (!entry) return fail(ENOENT, "rmdir", path);
            if (!entry.is_dir()) return fail(ENOTDIR, "rmdir", path);
            const uint64_t ino = entry.ino;
            if (next.has_entries(entry)) return fail(ENOTEMPTY, "rmdir", path);
            const Time now = op_now();
            remove_entry(next, where->dir, where->name());
            drop_link(next, ino, now, state_->is_open_locked(ino));
            Inode& parent = edit_inode(next, where->parent);
            parent.nlink -= 1;
            parent.mtime = parent.ctime = now;
            return {};
        },
        true);
}

Result<void> MemBackend::rename(std::string_view from, std::string_view to, RenameFlags flags) {
    if (flags != RenameFlags::none && flags != RenameFlags::noreplace &&
        flags != RenameFlags::exchange)
        return fail(EINVAL, "rename", from);
    auto src_path = NormalPath::make(from, "rename");
    if (!src_path) return std::unexpected(src_path.error());
    auto dst_path = NormalPath::make(to, "rename");
    if (!dst_path) return std::unexpected(dst_path.error());
    if (src_path->is_root() || dst_path->is_root()) return fail(EBUSY, "rename", from);
    const bool exchange = flags == RenameFlags::exchange;
    return state_->mutate(
        [&](Tree& next) -> Result<void> {
            TreeReader reader(next);
            auto src = reader.resolve_parent(*src_path, "rename", from);
            if (!src) return std::unexpected(src.error());
            auto dst = reader.resolve_parent(*dst_path, "rename", to);
            if (!dst) return std::unexpected(dst.error());
            const NodeRef moved = next.child(src->dir, src->name());
            if (!moved) return fail(ENOENT, "rename", from);
            const NodeRef victim = next.child(dst->dir, dst->name());
            const bool has_victim = bool(victim);
            const bool src_dir = moved.type == FileType::directory;
            const bool victim_dir = has_victim && victim.type == FileType::directory;
            // The checks in the order Linux makes them, so each failure has Linux's errno.
            if (exchange && !has_victim) return fail(ENOENT, "rename", to);
            if (has_victim && flags == RenameFlags::noreplace) return fail(EEXIST, "rename", to);
            if (exchange && !victim_dir && dst_path->wants_dir()) return fail(ENOTDIR, "rename", to);
            if (!src_dir && (src_path->wants_dir() || (!exchange && dst_path->wants_dir())))
                return fail(ENOTDIR, "rename", from);
            // The walks' stacks are the ancestors of each parent, root first.
            if (src_dir && dst->stack.contains(moved.ino)) return fail(EINVAL, "rename", from);
            if (victim_dir && src->stack.contains(victim.ino))
                return fail(exchange ? EINVAL : ENOTEMPTY, "rename", to);
            if (has_victim && victim.ino == moved.ino) return {};  // same file: nothing to do
            if (has_victim && !exchange) {
                if (src_dir && !victim_dir) return fail(ENOTDIR, "rename", to);
                if (!src_dir && victim_dir) return fail(EISDIR, "rename", to);
                if (victim_dir && next.has_entries(victim)) return fail(ENOTEMPTY, "rename", to);
            }

            const Time now = op_now();
            const uint64_t src_parent = src->parent, dst_parent = dst->parent;
            if (exchange) {
                edit_inode(next, victim.ino).ctime = now;
                edit_inode(next, moved.ino);  // entries name inodes the tree holds itself
                add_entry(next, src_parent, src->name(), victim.ino, victim.type);
                add_entry(next, dst_parent, dst->name(), moved.ino, moved.type);
                if (victim_dir != src_dir && src_parent != dst_parent) {
                    // One directory moved each way is no change; one moved one way is.
                    const int64_t delta = src_dir ? 1 : -1;
                    edit_inode(next, dst_parent).nlink += delta;
                    edit_inode(next, src_parent).nlink -= delta;
                }
            } else {
                edit_inode(next, moved.ino);  // entries name inodes the tree holds itself
                remove_entry(next, src->dir, src->name());
                add_entry(next, dst_parent, dst->name(), moved.ino, moved.type);
                if (has_victim) {
                    if (victim_dir) edit_inode(next, dst_parent).nlink -= 1;
                    drop_link(next, victim.ino, now, state_->is_open_locked(victim.ino));
                }
                if (src_dir && src_parent != dst_parent) {
                    edit_inode(next, src_parent).nlink -= 1;
                    edit_inode(next, dst_parent).nlink += 1;
                }
            }
            edit_inode(next, moved.ino).ctime = now;
            touch_dir(next, src_parent, now);
            if (dst_parent != src_parent) touch_dir(next, dst_parent, now);
            return {};
        },
        true);
}

Result<FileHandle> MemBackend::open(std::string_view path, int flags, uint32_t mode) {
    if ((flags & O_ACCMODE) == O_ACCMODE) return fail(EINVAL, "open", path);
    auto normal = NormalPath::make(path, "open");
    if (!normal) return std::unexpected(normal.error());
    const bool truncates = (flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY;
    if ((flags & O_CREAT) || truncates) return open_for_change(path, *normal, flags, mode);
    return open_existing(path, *normal, flags);
}

// The common case takes no lock but the open table's: resolve on the current version, count
// the handle, and make sure no unlink slipped in between (see mem_state.hpp).
Result<FileHandle> MemBackend::open_existing(std::string_view path, const NormalPath& normal,
                                             int flags) {
    for (int attempt = 0; attempt < 8; ++attempt) {
        TreePtr tree = state_->load();
        auto r = TreeReader(*tree).resolve(normal, !(flags & O_NOFOLLOW), "open", path);
        if (!r) return std::unexpected(r.error());
        if (auto ok = check_open_target(r->type, flags, path); !ok)
            return std::unexpected(ok.error());
        auto lower = guard_lower(path, [&]() -> Result<std::shared_ptr<const LowerContent>> {
            return lower_content_of(*tree, *r);
        });
        if (!lower) return std::unexpected(lower.error());
        if (state_->acquire_handle(r->ino, tree.get()))
            return std::make_unique<LiveFile>(state_, r->ino, flags, std::move(*lower),
                                              tree->lower, r->lower.id);
    }
    return fail(ENOENT, "open", path);  // unlinked under us every time
}

// O_CREAT or O_TRUNC: a mutation, under the writer lock.
Result<FileHandle> MemBackend::open_for_change(std::string_view path, const NormalPath& normal,
                                               int flags, uint32_t mode) {
    uint64_t ino = 0;
    auto opened = state_->mutate([&](Tree& next) -> Result<void> {
        TreeReader reader(next);
        if (flags & O_CREAT) {
            if (normal.is_root()) return fail(EISDIR, "open", path);
            auto where = reader.resolve_parent(normal, "open", path);
            if (!where && where.error().code() == EEXIST) return fail(EISDIR, "open", path);
            if (!where) return std::unexpected(where.error());
            if (normal.wants_dir()) return fail(EISDIR, "open", path);
            // A final symlink is followed to where it points, creating the file there.
            for (int follows = 0;; ++follows) {
                const NodeRef entry = next.child(where->dir, where->name());
                if (!entry) {
                    ino = add_new_inode(next, where->parent, where->name(), FileType::regular,
                                        mode)
                              .ino;
                    break;
                }
                if (flags & O_EXCL) return fail(EEXIST, "open", path);
                if (entry.type == FileType::symlink && !(flags & O_NOFOLLOW)) {
                    if (follows >= kMaxSymlinkFollows) return fail(ELOOP, "open", path);
                    auto target = reader.resolve_target_parent(reader.target_of(entry), *where,
                                                               "open", path);
                    if (!target && target.error().code() == EEXIST)  // a link to "/" or "."
                        return fail(EISDIR, "open", path);
                    if (!target) return std::unexpected(target.error());
                    where = std::move(target);
                    continue;
                }
                ino = entry.ino;
                break;
            }
        } else {
            auto r = reader.resolve(normal, !(flags & O_NOFOLLOW), "open", path);
            if (!r) return std::unexpected(r.error());
            ino = r->ino;
        }
        const NodeRef node = next.node(ino);
        if ((flags & O_CREAT) && node.is_dir()) return fail(EISDIR, "open", path);
        if (auto ok = check_open_target(node.type, flags, path); !ok)
            return std::unexpected(ok.error());
        if ((flags & O_TRUNC) && stat_of(next, node).size > 0) {
            if (auto ok = LiveFile::resize_inode(next, ino, 0, path); !ok) return ok;
        }
        state_->acquire_handle_locked(ino);
        return {};
    });
    if (!opened) return std::unexpected(opened.error());
    return std::make_unique<LiveFile>(state_, ino, flags);
}

Result<void> MemBackend::truncate(std::string_view path, uint64_t size) {
    auto normal = NormalPath::make(path, "truncate");
    if (!normal) return std::unexpected(normal.error());
    return state_->mutate([&](Tree& next) -> Result<void> {
        auto r = TreeReader(next).resolve(*normal, true, "truncate", path);
        if (!r) return std::unexpected(r.error());
        return LiveFile::resize_inode(next, r->ino, size, path);
    });
}

template <class Edit>
Result<void> MemBackend::edit_attributes(std::string_view op, std::string_view path, bool follow,
                                         Edit&& edit) {
    auto normal = NormalPath::make(path, op);
    if (!normal) return std::unexpected(normal.error());
    return state_->mutate([&](Tree& next) -> Result<void> {
        auto r = TreeReader(next).resolve(*normal, follow, op, path);
        if (!r) return std::unexpected(r.error());
        const Time now = op_now();
        Inode& inode = edit_inode(next, r->ino);
        if (auto ok = edit(inode, now); !ok) return ok;
        inode.ctime = now;
        return {};
    });
}

Result<void> MemBackend::chmod(std::string_view path, uint32_t mode) {
    return edit_attributes("chmod", path, true, [&](Inode& inode, Time) -> Result<void> {
        inode.mode = mode & 07777;
        return {};
    });
}

Result<void> MemBackend::chown(std::string_view path, uint32_t uid, uint32_t gid, Follow follow) {
    return edit_attributes("chown", path, follow == Follow::yes,
                           [&](Inode& inode, Time) -> Result<void> {
                               if (uid != kUnchangedId) inode.uid = uid;
                               if (gid != kUnchangedId) inode.gid = gid;
                               return {};
                           });
}

Result<void> MemBackend::utimens(std::string_view path, TimeUpdate atime, TimeUpdate mtime,
                                 Follow follow) {
    if (auto ok = check_time(atime, path); !ok) return ok;
    if (auto ok = check_time(mtime, path); !ok) return ok;
    return edit_attributes("utimens", path, follow == Follow::yes,
                           [&](Inode& inode, Time now) -> Result<void> {
                               apply_time(inode.atime, atime, now);
                               apply_time(inode.mtime, mtime, now);
                               return {};
                           });
}

Result<void> MemBackend::setxattr(std::string_view path, std::string_view name,
                                  std::string_view value, XattrMode mode) {
    if (auto ok = check_xattr_name(name, "setxattr", path); !ok) return ok;
    if (value.size() > kMaxXattrValue) return fail(E2BIG, "setxattr", path);
    return edit_attributes("setxattr", path, false, [&](Inode& inode, Time) -> Result<void> {
        const bool exists = inode.xattrs.contains(name);
        if (exists && mode == XattrMode::create) return fail(EEXIST, "setxattr", path);
        if (!exists && mode == XattrMode::replace) return fail(ENODATA, "setxattr", path);
        inode.xattrs.insert_or_assign(std::string(name), std::string(value));
        return {};
    });
}

Result<void> MemBackend::removexattr(std::string_view path, std::string_view name) {
    if (auto ok = check_xattr_name(name, "removexattr", path); !ok) return ok;
    return edit_attributes("removexattr", path, false, [&](Inode& inode, Time) -> Result<void> {
        if (!inode.xattrs.erase(name)) return fail(ENODATA, "removexattr", path);
        return {};
    });
}

}  // namespace

TreePtr version_of(Backend& backend) {
    auto* queries = dynamic_cast<TreeQueries*>(&backend);
    if (!queries) return nullptr;
    TreePtr tree = queries->current_version();
    return tree->lower ? nullptr : tree;  // an overlay's tree holds only what changed
}

std::shared_ptr<Backend> make_mem_backend_over(LowerPtr lower, const MemOptions& options,
                                               uint64_t next_ino) {
    return std::make_shared<MemBackend>(options, std::move(lower), next_ino);
}

namespace {
MemState& state_of(Backend& live) { return dynamic_cast<MemBackend&>(live).state(); }
}  // namespace

TreePtr live_version(Backend& live) { return state_of(live).load(); }

void restore_version(Backend& live, TreePtr version) { state_of(live).restore(std::move(version)); }

Result<std::size_t> write_inode(Backend& live, uint64_t ino, std::span<const std::byte> data,
                                uint64_t offset, bool append) {
    return LiveFile::write_inode(state_of(live), ino, data, offset, append);
}

Result<void> truncate_inode(Backend& live, uint64_t ino, uint64_t size) {
    return state_of(live).mutate(
        [&](Tree& next) -> Result<void> { return LiveFile::resize_inode(next, ino, size, {}); });
}

}  // namespace packfs::mem

namespace packfs {

std::shared_ptr<Backend> make_mem_backend(const MemOptions& options) {
    return std::make_shared<mem::MemBackend>(options);
}

}  // namespace packfs
