// The kernel's requests, translated onto NodeFs. Each callback replies exactly once. Errors
// are the Backend's errno (EUCLEAN for a damaged pack). Open files and directory listings
// live in fi->fh: a file keeps its OpenFile; a directory keeps the listing taken at its first
// readdir, so offsets stay valid across the many readdir calls of a large directory.
#include "fuse_ops.hpp"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace packfs::fuse {

namespace {

struct OpenState {
    uint64_t node;
    std::unique_ptr<OpenFile> file;
};

struct DirState {
    uint64_t node = 0;
    std::unique_ptr<OpenFile> held;  // NodeFs::opendir's, while the directory is open
    NodeFs::Listing items;           // null until the first readdir
};

MountContext& mount_of(fuse_req_t req) {
    return *static_cast<MountContext*>(fuse_req_userdata(req));
}
NodeFs& fs_of(fuse_req_t req) { return *mount_of(req).fs; }

OpenState* open_of(fuse_file_info* fi) { return reinterpret_cast<OpenState*>(fi->fh); }

void reply_error(fuse_req_t req, const Error& e) {
    const int code = e.code();
    fuse_reply_err(req, code > 0 ? code : EIO);
}

struct stat to_host(const Stat& s) {
    struct stat st {};
    st.st_ino = s.ino;
    st.st_mode = file_type_to_mode_bits(s.type) | (s.mode & 07777);
    st.st_nlink = s.nlink;
    st.st_uid = s.uid;
    st.st_gid = s.gid;
    st.st_rdev = s.rdev;
    st.st_size = static_cast<off_t>(s.size);
    st.st_blksize = 4096;
    st.st_blocks = static_cast<blkcnt_t>(s.blocks);
    st.st_atim = {s.atime.sec, s.atime.nsec};
    st.st_mtim = {s.mtime.sec, s.mtime.nsec};
    st.st_ctim = {s.ctime.sec, s.ctime.nsec};
    return st;
}

fuse_entry_param to_entry(const MountContext& m, const Entry& e) {
    fuse_entry_param out{};
    out.ino = e.node;
    out.generation = 0;  // node ids are never reused while the mount lives
    out.attr = to_host(e.stat);
    out.attr_timeout = m.policy.attr_seconds;
    out.entry_timeout = m.policy.entry_seconds;
    return out;
}

// Replies with a new entry the kernel now references (lookup, mkdir, ...).
void reply_new_entry(fuse_req_t req, fuse_ino_t parent, std::string_view name,
                     Result<Entry> entry) {
    if (!entry) return reply_error(req, entry.error());
    MountContext& m = mount_of(req);
    m.fs->remember(parent, name, *entry);
    const fuse_entry_param e = to_entry(m, *entry);
    if (fuse_reply_entry(req, &e) != 0) m.fs->forget(entry->node, 1);
}

// New files belong to the caller, as on a kernel filesystem; the Backend made them as the
// daemon. In a set-group-ID directory they take the directory's group instead, and a new
// subdirectory the S_ISGID bit too. One setattr when that differs from what was made (never
// for a daemon serving its own user outside such directories).
Result<Entry> owned_by_caller(fuse_req_t req, fuse_ino_t parent, Result<Entry> made) {
    if (!made) return made;
    NodeFs& fs = fs_of(req);
    const fuse_ctx* ctx = fuse_req_ctx(req);
    uint32_t gid = ctx->gid;
    bool inherit_setgid = false;
    auto dir = fs.getattr(parent, nullptr);
    if (dir && (dir->mode & S_ISGID)) {
        gid = dir->gid;
        inherit_setgid = made->stat.type == FileType::directory && !(made->stat.mode & S_ISGID);
    }
    AttrChange change;
    if (made->stat.uid != ctx->uid || made->stat.gid != gid) {
        change.uid = change.gid = true;
        change.to.uid = ctx->uid;
        change.to.gid = gid;
    }
    if (inherit_setgid) {
        change.mode = true;
        change.to.mode = made->stat.mode | S_ISGID;
    }
    if (!change.uid && !change.mode) return made;
    auto st = fs.setattr(made->node, change, nullptr);
    if (!st) return std::unexpected(st.error());
    made->stat = *st;
    return made;
}

void op_init(void* userdata, fuse_conn_info* conn) {
    auto& m = *static_cast<MountContext*>(userdata);
    if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC) conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
    if (m.read_only && (conn->capable & FUSE_CAP_CACHE_SYMLINKS))
        conn->want |= FUSE_CAP_CACHE_SYMLINKS;
    // Large requests: fewer round trips for big reads and writes.
    conn->max_write = 1u << 20;
    conn->max_readahead = 1u << 20;
    conn->want &= ~FUSE_CAP_SPLICE_READ;
    if (conn->capable & FUSE_CAP_SPLICE_WRITE) conn->want |= FUSE_CAP_SPLICE_WRITE;
    if (conn->capable & FUSE_CAP_SPLICE_MOVE) conn->want |= FUSE_CAP_SPLICE_MOVE;
    // A pack needs no open state: ENOSYS from open/opendir tells the kernel to stop sending
    // OPEN, OPENDIR and RELEASE at all, and it then keeps pages and listings cached.
    const uint64_t zero_open = FUSE_CAP_NO_OPEN_SUPPORT | FUSE_CAP_NO_OPENDIR_SUPPORT;
    m.stateless_open = m.policy.stateless_open && (conn->capable & zero_open) == zero_open;
}

void op_lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
    MountContext& m = mount_of(req);
    auto entry = m.fs->lookup(parent, name);
    if (!entry && entry.error().code() == ENOENT && m.policy.cache_negative) {
        // Remembered as missing for as long as names are (the tree cannot change).
        fuse_entry_param e{};
        e.ino = 0;
        e.entry_timeout = m.policy.entry_seconds;
        fuse_reply_entry(req, &e);
        return;
    }
    reply_new_entry(req, parent, name, std::move(entry));
}

void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
    fs_of(req).forget(ino, nlookup);
    fuse_reply_none(req);
}

void op_forget_multi(fuse_req_t req, size_t count, fuse_forget_data* forgets) {
    NodeFs& fs = fs_of(req);
    for (size_t i = 0; i < count; ++i) fs.forget(forgets[i].ino, forgets[i].nlookup);
    fuse_reply_none(req);
}

void op_getattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    MountContext& m = mount_of(req);
    OpenFile* file = fi && fi->fh ? open_of(fi)->file.get() : nullptr;
    auto st = m.fs->getattr(ino, file);
    if (!st) return reply_error(req, st.error());
    const struct stat out = to_host(*st);
    fuse_reply_attr(req, &out, m.policy.attr_seconds);
}

TimeUpdate time_update(int to_set, int set_bit, int now_bit, const timespec& t) {
    if (to_set & now_bit) return TimeUpdate::now();
    if (to_set & set_bit) return TimeUpdate::at(Time{t.tv_sec, t.tv_nsec});
    return TimeUpdate::omit();
}

void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set,
                fuse_file_info* fi) {
    MountContext& m = mount_of(req);
    AttrChange change;
    change.mode = to_set & FUSE_SET_ATTR_MODE;
    change.uid = to_set & FUSE_SET_ATTR_UID;
    change.gid = to_set & FUSE_SET_ATTR_GID;
    change.size = to_set & FUSE_SET_ATTR_SIZE;
    change.to.mode = attr->st_mode & 07777;
    change.to.uid = attr->st_uid;
    change.to.gid = attr->st_gid;
    change.to.size = static_cast<uint64_t>(attr->st_size);
    change.atime = time_update(to_set, FUSE_SET_ATTR_ATIME, FUSE_SET_ATTR_ATIME_NOW, attr->st_atim);
    change.mtime = time_update(to_set, FUSE_SET_ATTR_MTIME, FUSE_SET_ATTR_MTIME_NOW, attr->st_mtim);
    OpenFile* file = fi && fi->fh ? open_of(fi)->file.get() : nullptr;
    auto st = m.fs->setattr(ino, change, file);
    if (!st) return reply_error(req, st.error());
    const struct stat out = to_host(*st);
    fuse_reply_attr(req, &out, m.policy.attr_seconds);
}

void op_readlink(fuse_req_t req, fuse_ino_t ino) {
    auto target = fs_of(req).readlink(ino);
    if (!target) return reply_error(req, target.error());
    fuse_reply_readlink(req, target->c_str());
}

void op_mknod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, dev_t rdev) {
    FileType type;
    if (!file_type_from_mode_bits(mode & S_IFMT, type) || type == FileType::directory ||
        type == FileType::symlink)
        return (void)fuse_reply_err(req, EINVAL);
    reply_new_entry(req, parent, name,
                    owned_by_caller(req, parent, fs_of(req).mknod(parent, name, type, mode & 07777, rdev)));
}

void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) {
    reply_new_entry(req, parent, name,
                    owned_by_caller(req, parent, fs_of(req).mkdir(parent, name, mode & 07777)));
}

void op_symlink(fuse_req_t req, const char* target, fuse_ino_t parent, const char* name) {
    reply_new_entry(req, parent, name,
                    owned_by_caller(req, parent, fs_of(req).symlink(parent, name, target)));
}

void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t new_parent, const char* new_name) {
    reply_new_entry(req, new_parent, new_name, fs_of(req).link(ino, new_parent, new_name));
}

void reply_void(fuse_req_t req, const Result<void>& r) {
    if (!r) return reply_error(req, r.error());
    fuse_reply_err(req, 0);
}

void op_unlink(fuse_req_t req, fuse_ino_t parent, const char* name) {
    reply_void(req, fs_of(req).unlink(parent, name));
}

void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char* name) {
    reply_void(req, fs_of(req).rmdir(parent, name));
}

void op_rename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t new_parent,
               const char* new_name, unsigned int flags) {
    RenameFlags how = RenameFlags::none;
    if (flags == RENAME_NOREPLACE) how = RenameFlags::noreplace;
    else if (flags == RENAME_EXCHANGE) how = RenameFlags::exchange;
    else if (flags != 0) return (void)fuse_reply_err(req, EINVAL);  // RENAME_WHITEOUT, or both
    reply_void(req, fs_of(req).rename(parent, name, new_parent, new_name, how));
}

void set_open_flags(const MountContext& m, fuse_file_info* fi) {
    fi->keep_cache = m.policy.keep_page_cache;
    fi->noflush = 1;  // close() is no durability point: no FLUSH round trip per close
}

void op_open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    MountContext& m = mount_of(req);
    if (m.stateless_open && (fi->flags & O_ACCMODE) == O_RDONLY && !(fi->flags & O_TRUNC))
        return (void)fuse_reply_err(req, ENOSYS);
    auto file = m.fs->open(ino, fi->flags);
    if (!file) return reply_error(req, file.error());
    auto state = std::make_unique<OpenState>(OpenState{ino, std::move(*file)});
    fi->fh = reinterpret_cast<uint64_t>(state.get());
    set_open_flags(m, fi);
    if (fuse_reply_open(req, fi) == 0) {
        state.release();
    } else {
        m.fs->release(ino, *state->file);
    }
}

void op_create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode,
               fuse_file_info* fi) {
    MountContext& m = mount_of(req);
    auto made = m.fs->create(parent, name, fi->flags, mode & 07777);
    if (!made) return reply_error(req, made.error());
    auto& [entry_made, file] = *made;
    auto entry = owned_by_caller(req, parent, entry_made);
    if (!entry) {
        m.fs->release(entry_made.node, *file);
        return reply_error(req, entry.error());
    }
    m.fs->remember(parent, name, *entry);
    auto state = std::make_unique<OpenState>(OpenState{entry->node, std::move(file)});
    fi->fh = reinterpret_cast<uint64_t>(state.get());
    set_open_flags(m, fi);
    const fuse_entry_param e = to_entry(m, *entry);
    if (fuse_reply_create(req, &e, fi) == 0) {
        state.release();
    } else {
        m.fs->release(entry->node, *state->file);
        m.fs->forget(entry->node, 1);
    }
}

void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
    thread_local std::string scratch;
    std::unique_ptr<OpenFile> opened;  // a zero-message open: this read opens for itself
    OpenFile* file = fi->fh ? open_of(fi)->file.get() : nullptr;
    if (!file) {
        auto made = fs_of(req).open(ino, O_RDONLY);
        if (!made) return reply_error(req, made.error());
        opened = std::move(*made);
        file = opened.get();
    }
    if (auto raw = file->file_bytes(static_cast<uint64_t>(off), size)) {
        // Kernel to kernel: libfuse splices the range from the pack file into the reply.
        fuse_bufvec buf = FUSE_BUFVEC_INIT(raw->length);
        buf.buf[0].flags = static_cast<fuse_buf_flags>(FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK);
        buf.buf[0].fd = raw->fd;
        buf.buf[0].pos = static_cast<off_t>(raw->offset);
        fuse_reply_data(req, &buf, FUSE_BUF_SPLICE_MOVE);
        return;
    }
    auto bytes = file->read(static_cast<uint64_t>(off), size, scratch);
    if (!bytes) return reply_error(req, bytes.error());
    // From the mapping (inline bytes) or the scratch copy into the kernel's buffer.
    fuse_reply_buf(req, reinterpret_cast<const char*>(bytes->data()), bytes->size());
}

void op_write(fuse_req_t req, fuse_ino_t, const char* buf, size_t size, off_t off,
              fuse_file_info* fi) {
    auto n = open_of(fi)->file->write(std::as_bytes(std::span(buf, size)),
                                      static_cast<uint64_t>(off));
    if (!n) return reply_error(req, n.error());
    fuse_reply_write(req, *n);
}

// close() is no durability point (fsync is): ENOSYS tells the kernel never to send FLUSH
// again, which zero-message opens (no open reply to carry noflush) would otherwise send.
void op_flush(fuse_req_t req, fuse_ino_t, fuse_file_info*) { fuse_reply_err(req, ENOSYS); }

void op_release(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
    if (!fi->fh) return (void)fuse_reply_err(req, 0);
    std::unique_ptr<OpenState> state(open_of(fi));
    fs_of(req).release(state->node, *state->file);
    state.reset();
    fuse_reply_err(req, 0);
}

void op_fsync(fuse_req_t req, fuse_ino_t, int datasync, fuse_file_info* fi) {
    reply_void(req, open_of(fi)->file->fsync(datasync != 0));
}

void op_opendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    MountContext& m = mount_of(req);
    if (m.stateless_open) return (void)fuse_reply_err(req, ENOSYS);
    // The listing is taken at the first readdir: a kernel that cached the directory's
    // listing (a pack) opens it and reads nothing, and must not pay for a listing.
    auto state = std::make_unique<DirState>();
    state->node = ino;
    auto held = m.fs->opendir(ino);
    if (!held) return reply_error(req, held.error());
    state->held = std::move(*held);
    fi->fh = reinterpret_cast<uint64_t>(state.get());
    if (m.policy.cache_directories) {
        fi->cache_readdir = 1;
        fi->keep_cache = 1;
    }
    if (fuse_reply_open(req, fi) == 0) {
        state.release();
    } else if (state->held) {
        m.fs->release(ino, *state->held);
    }
}

// Offsets: 1 after ".", 2 after "..", 2 + i + 1 after item i.
template <bool Plus>
void readdir_impl(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
    MountContext& m = mount_of(req);
    // The kernel serialises readdir on one open directory: no lock needed for the listing.
    // Without an open (zero-message opendir) every call lists again: list() is cheap then.
    DirState unopened;
    auto& state = fi->fh ? *reinterpret_cast<DirState*>(fi->fh) : unopened;
    if (!state.items) {
        auto items = m.fs->list(ino);
        if (!items) return reply_error(req, items.error());
        state.items = std::move(*items);
    }
    const auto& items = *state.items;
    std::string buf(size, '\0');
    size_t used = 0;
    auto add = [&](const char* name, const fuse_entry_param& e, off_t next) {
        const size_t room = size - used;
        const size_t need =
            Plus ? fuse_add_direntry_plus(req, buf.data() + used, room, name, &e, next)
                 : fuse_add_direntry(req, buf.data() + used, room, name, &e.attr, next);
        if (need > room) return false;
        used += need;
        return true;
    };
    for (off_t at = off; at < static_cast<off_t>(items.size()) + 2; ++at) {
        fuse_entry_param e{};
        if (at < 2) {
            // "." and "..": no attributes, no lookup counted (libfuse and the kernel skip them).
            e.attr.st_ino = ino;
            e.attr.st_mode = S_IFDIR;
            if (!add(at == 0 ? "." : "..", e, at + 1)) break;
            continue;
        }
        const ListedEntry& item = items[static_cast<size_t>(at - 2)];
        if (!Plus) {
            e.attr.st_ino = item.stat.ino;
            e.attr.st_mode = file_type_to_mode_bits(item.stat.type);
            if (!add(item.name.c_str(), e, at + 1)) break;
            continue;
        }
        Result<Entry> entry = m.fs->entry(ino, item);
        if (!entry) {
            if (entry.error().code() == ENOENT) continue;  // gone since opendir
            if (used == 0) return reply_error(req, entry.error());
            break;
        }
        e = to_entry(m, *entry);
        if (!add(item.name.c_str(), e, at + 1)) break;
        m.fs->remember(ino, item.name, *entry);
    }
    fuse_reply_buf(req, buf.data(), used);
}

void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
    readdir_impl<false>(req, ino, size, off, fi);
}

void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    fuse_file_info* fi) {
    readdir_impl<true>(req, ino, size, off, fi);
}

void op_releasedir(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {  // fh 0: not opened
    std::unique_ptr<DirState> state(reinterpret_cast<DirState*>(fi->fh));
    if (state && state->held) fs_of(req).release(state->node, *state->held);
    fuse_reply_err(req, 0);
}

void op_fsyncdir(fuse_req_t req, fuse_ino_t, int, fuse_file_info*) {
    reply_void(req, fs_of(req).sync());
}

void op_statfs(fuse_req_t req, fuse_ino_t) {
    auto s = fs_of(req).statfs();
    if (!s) return reply_error(req, s.error());
    struct statvfs out {};
    out.f_bsize = out.f_frsize = s->block_size;
    out.f_blocks = s->blocks;
    out.f_bfree = out.f_bavail = s->blocks_free;
    out.f_files = s->files;
    out.f_ffree = out.f_favail = s->files_free;
    out.f_namemax = s->name_max;
    fuse_reply_statfs(req, &out);
}

// getxattr/listxattr: size 0 asks for the length; a value longer than `size` is ERANGE.
void reply_xattr_bytes(fuse_req_t req, std::string_view bytes, size_t size) {
    if (size == 0) return (void)fuse_reply_xattr(req, bytes.size());
    if (bytes.size() > size) return (void)fuse_reply_err(req, ERANGE);
    fuse_reply_buf(req, bytes.data(), bytes.size());
}

void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) {
    MountContext& m = mount_of(req);
    // No xattrs anywhere: ENOSYS once, and the kernel answers every later getxattr itself.
    if (!m.xattrs) return (void)fuse_reply_err(req, ENOSYS);
    auto value = m.fs->getxattr(ino, name);
    if (!value) return reply_error(req, value.error());
    reply_xattr_bytes(req, *value, size);
}

void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
    MountContext& m = mount_of(req);
    // No xattrs anywhere: an empty list (getfattr -d prints nothing, as on any filesystem).
    if (!m.xattrs) return reply_xattr_bytes(req, {}, size);
    auto names = m.fs->listxattr(ino);
    if (!names) return reply_error(req, names.error());
    std::string joined;
    for (const auto& n : *names) {
        joined += n;
        joined += '\0';
    }
    reply_xattr_bytes(req, joined, size);
}

// POSIX ACLs are not supported (no FUSE_CAP_POSIX_ACL), so the kernel passes their xattrs
// through as plain ones. Storing them would be a lie: cp -a sets the mode through
// system.posix_acl_access and falls back to chmod only when that is refused.
bool is_posix_acl(std::string_view name) {
    return name == "system.posix_acl_access" || name == "system.posix_acl_default";
}

void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char* name, const char* value,
                 size_t size, int flags) {
    if (is_posix_acl(name)) return (void)fuse_reply_err(req, EOPNOTSUPP);
    XattrMode mode = XattrMode::any;
    if (flags == XATTR_CREATE) mode = XattrMode::create;
    else if (flags == XATTR_REPLACE) mode = XattrMode::replace;
    else if (flags != 0) return (void)fuse_reply_err(req, EINVAL);
    reply_void(req, fs_of(req).setxattr(ino, name, std::string_view(value, size), mode));
}

void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char* name) {
    reply_void(req, fs_of(req).removexattr(ino, name));
}

void op_ioctl(fuse_req_t req, fuse_ino_t, unsigned int cmd, void*, fuse_file_info*,
              unsigned flags, const void*, size_t, size_t out_size) {
    if (cmd != kIoctlCompact || (flags & FUSE_IOCTL_COMPAT) || out_size < sizeof(CompactReply))
        return (void)fuse_reply_err(req, ENOTTY);
    const fuse_ctx* ctx = fuse_req_ctx(req);
    if (ctx->uid != 0 && ctx->uid != ::geteuid()) return (void)fuse_reply_err(req, EPERM);
    auto reply = fs_of(req).compact();
    if (!reply) return reply_error(req, reply.error());
    fuse_reply_ioctl(req, 0, &*reply, sizeof(CompactReply));
}

// Only without default_permissions, where the only caller is root (serve.cpp): root may do
// everything but execute a file no one may execute.
void op_access(fuse_req_t req, fuse_ino_t ino, int mask) {
    if (!(mask & X_OK)) return (void)fuse_reply_err(req, 0);
    auto st = fs_of(req).getattr(ino, nullptr);
    if (!st) return reply_error(req, st.error());
    const bool runnable = st->type == FileType::directory || (st->mode & 0111) != 0;
    fuse_reply_err(req, runnable ? 0 : EACCES);
}

fuse_lowlevel_ops make_operations() {
    fuse_lowlevel_ops ops{};
    ops.init = op_init;
    ops.lookup = op_lookup;
    ops.forget = op_forget;
    ops.forget_multi = op_forget_multi;
    ops.getattr = op_getattr;
    ops.setattr = op_setattr;
    ops.readlink = op_readlink;
    ops.mknod = op_mknod;
    ops.mkdir = op_mkdir;
    ops.symlink = op_symlink;
    ops.link = op_link;
    ops.unlink = op_unlink;
    ops.rmdir = op_rmdir;
    ops.rename = op_rename;
    ops.open = op_open;
    ops.create = op_create;
    ops.read = op_read;
    ops.write = op_write;
    ops.flush = op_flush;
    ops.release = op_release;
    ops.fsync = op_fsync;
    ops.opendir = op_opendir;
    ops.readdir = op_readdir;
    ops.readdirplus = op_readdirplus;
    ops.releasedir = op_releasedir;
    ops.fsyncdir = op_fsyncdir;
    ops.statfs = op_statfs;
    ops.getxattr = op_getxattr;
    ops.listxattr = op_listxattr;
    ops.setxattr = op_setxattr;
    ops.removexattr = op_removexattr;
    ops.ioctl = op_ioctl;
    ops.access = op_access;
    return ops;
}

}  // namespace

const fuse_lowlevel_ops& operations() {
    static const fuse_lowlevel_ops ops = make_operations();
    return ops;
}

}  // namespace packfs::fuse
