// The kernel's requests, translated onto the Backend's node calls (mount.hpp). Each callback
// replies exactly once. A FUSE node id is the Backend's Node id; every reply that hands the
// kernel a node (lookup, create, mkdir, mknod, symlink, link, readdirplus) hands it the
// reference the node call took, and FORGET gives them back. Errors are the Backend's errno
// (EUCLEAN for a damaged pack). Open files and directory listings live in fi->fh: a file keeps
// its File; a directory keeps the listing taken at its first readdir, so offsets stay valid
// across the many readdir calls of a large directory.
#include "fuse_ops.hpp"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace packfs::fuse {

namespace {

struct DirState {
    Listing items;  // null until the first readdir
};

MountContext& mount_of(fuse_req_t req) {
    return *static_cast<MountContext*>(fuse_req_userdata(req));
}
Backend& fs_of(fuse_req_t req) { return *mount_of(req).mount->fs; }

const CachePolicy& policy_of(fuse_req_t req) { return mount_of(req).mount->policy; }

File* file_of(fuse_file_info* fi) { return fi && fi->fh ? reinterpret_cast<File*>(fi->fh) : nullptr; }
Node node_of(fuse_ino_t ino) { return Node{ino}; }

void reply_error(fuse_req_t req, const Error& e) {
    const int code = e.code();
    fuse_reply_err(req, code > 0 ? code : EIO);
}

// The request's handle or, after a zero-message open (no handle), one this request opens for
// itself into `opened`, with `flags` (the kernel checked the caller's open already). nullptr
// after replying the error.
File* file_or_open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi, FileHandle& opened,
                   int flags = O_RDONLY) {
    if (File* file = file_of(fi)) return file;
    auto made = fs_of(req).open(node_of(ino), flags);
    if (!made) {
        reply_error(req, made.error());
        return nullptr;
    }
    opened = std::move(*made);
    return opened.get();
}

void reply_void(fuse_req_t req, const Result<void>& r) {
    if (!r) return reply_error(req, r.error());
    fuse_reply_err(req, 0);
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

fuse_entry_param to_entry(const CachePolicy& policy, const Entry& e) {
    fuse_entry_param out{};
    out.ino = e.node.id;
    out.generation = 0;  // node ids are never reused while held (backend.hpp)
    out.attr = to_host(e.stat);
    out.attr_timeout = policy.attr_seconds;
    out.entry_timeout = policy.entry_seconds;
    return out;
}

// Replies with a node the kernel now references (the reference the node call took); gives the
// reference back when the reply does not reach the kernel.
void reply_new_entry(fuse_req_t req, Result<Entry> entry) {
    if (!entry) return reply_error(req, entry.error());
    const fuse_entry_param e = to_entry(policy_of(req), *entry);
    if (fuse_reply_entry(req, &e) != 0) fs_of(req).forget(entry->node, 1);
}

// New entries belong to the caller, as on a kernel filesystem (the backend applies the
// set-group-ID rule of the directory).
Owner caller(fuse_req_t req) {
    const fuse_ctx* ctx = fuse_req_ctx(req);
    return Owner{ctx->uid, ctx->gid};
}

void op_init(void* userdata, fuse_conn_info* conn) {
    auto& m = *static_cast<MountContext*>(userdata);
    // An immutable tree needs no open state: ENOSYS from open (opendir) tells the kernel to stop
    // sending OPEN (OPENDIR) and RELEASE at all, and it then keeps pages (listings) cached.
    const CachePolicy& policy = m.mount->policy;
    m.stateless_open = policy.stateless_open && (conn->capable & FUSE_CAP_NO_OPEN_SUPPORT);
    m.stateless_opendir =
        policy.stateless_opendir && (conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT);
    // O_TRUNC done by OPEN, saving the kernel's SETATTR, only where OPEN is sent: after a
    // zero-message open of a writable tree the kernel must truncate by SETATTR itself.
    const bool opens_truncate = m.read_only || !m.stateless_open;
    if (opens_truncate && (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC))
        conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
    else
        conn->want &= ~FUSE_CAP_ATOMIC_O_TRUNC;
    if (m.read_only && (conn->capable & FUSE_CAP_CACHE_SYMLINKS))
        conn->want |= FUSE_CAP_CACHE_SYMLINKS;
    // Large requests: fewer round trips for big reads and writes.
    conn->max_write = 1u << 20;
    conn->max_readahead = 1u << 20;
    conn->want &= ~FUSE_CAP_SPLICE_READ;
    if (conn->capable & FUSE_CAP_SPLICE_WRITE) conn->want |= FUSE_CAP_SPLICE_WRITE;
    if (conn->capable & FUSE_CAP_SPLICE_MOVE) conn->want |= FUSE_CAP_SPLICE_MOVE;
    // READDIRPLUS for every call, not just a directory's first (the "auto" heuristic switches
    // to plain READDIR when no LOOKUP follows the first reply, and then rm -rf, find, cp -a and
    // ls -l pay a LOOKUP per entry: 20,000 of them for an rm -rf of 20,000 files).
    if (conn->capable & FUSE_CAP_READDIRPLUS) {
        conn->want |= FUSE_CAP_READDIRPLUS;
        conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
    }
}

void op_lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
    auto entry = fs_of(req).lookup(node_of(parent), name);
    if (!entry && entry.error().code() == ENOENT && policy_of(req).cache_negative) {
        // Remembered as missing for as long as names are (only this mount changes the tree).
        fuse_entry_param e{};
        e.ino = 0;
        e.entry_timeout = policy_of(req).entry_seconds;
        fuse_reply_entry(req, &e);
        return;
    }
    reply_new_entry(req, std::move(entry));
}

void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
    fs_of(req).forget(node_of(ino), nlookup);
    fuse_reply_none(req);
}

void op_forget_multi(fuse_req_t req, size_t count, fuse_forget_data* forgets) {
    Backend& fs = fs_of(req);
    for (size_t i = 0; i < count; ++i) fs.forget(node_of(forgets[i].ino), forgets[i].nlookup);
    fuse_reply_none(req);
}

void op_getattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    File* file = file_of(fi);
    auto st = file ? file->fstat() : fs_of(req).getattr(node_of(ino));
    if (!st) return reply_error(req, st.error());
    const struct stat out = to_host(*st);
    fuse_reply_attr(req, &out, policy_of(req).attr_seconds);
}

TimeUpdate time_update(int to_set, int set_bit, int now_bit, const timespec& t) {
    if (to_set & now_bit) return TimeUpdate::now();
    if (to_set & set_bit) return TimeUpdate::at(Time{t.tv_sec, t.tv_nsec});
    return TimeUpdate::omit();
}

void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set,
                fuse_file_info* fi) {
    SetAttr change;
    if (to_set & FUSE_SET_ATTR_MODE) change.mode = attr->st_mode & 07777;
    if (to_set & FUSE_SET_ATTR_UID) change.uid = attr->st_uid;
    if (to_set & FUSE_SET_ATTR_GID) change.gid = attr->st_gid;
    change.atime = time_update(to_set, FUSE_SET_ATTR_ATIME, FUSE_SET_ATTR_ATIME_NOW, attr->st_atim);
    change.mtime = time_update(to_set, FUSE_SET_ATTR_MTIME, FUSE_SET_ATTR_MTIME_NOW, attr->st_mtim);
    const bool resize = (to_set & FUSE_SET_ATTR_SIZE) != 0;
    File* file = file_of(fi);
    Result<Stat> st;
    if (resize && file && to_set == FUSE_SET_ATTR_SIZE) {
        // ftruncate: through the handle it came through (a read-only one is EINVAL there).
        if (auto ok = file->truncate(static_cast<uint64_t>(attr->st_size)); !ok)
            return reply_error(req, ok.error());
        st = file->fstat();
    } else {
        if (resize) {
            change.truncate = true;
            change.size = static_cast<uint64_t>(attr->st_size);
        }
        // The node itself: this works on an open unlinked file too (fchmod, futimens).
        st = fs_of(req).setattr(node_of(ino), change);
    }
    if (!st) return reply_error(req, st.error());
    const struct stat out = to_host(*st);
    fuse_reply_attr(req, &out, policy_of(req).attr_seconds);
}

void op_readlink(fuse_req_t req, fuse_ino_t ino) {
    auto target = fs_of(req).readlink(node_of(ino));
    if (!target) return reply_error(req, target.error());
    fuse_reply_readlink(req, target->c_str());
}

void op_mknod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, dev_t rdev) {
    FileType type;
    if (!file_type_from_mode_bits(mode & S_IFMT, type) || type == FileType::directory ||
        type == FileType::symlink)
        return (void)fuse_reply_err(req, EINVAL);
    reply_new_entry(req, fs_of(req).mknod(node_of(parent), name, type, mode & 07777, rdev,
                                          caller(req)));
}

void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) {
    reply_new_entry(req, fs_of(req).mkdir(node_of(parent), name, mode & 07777, caller(req)));
}

void op_symlink(fuse_req_t req, const char* target, fuse_ino_t parent, const char* name) {
    reply_new_entry(req, fs_of(req).symlink(node_of(parent), name, target, caller(req)));
}

void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t new_parent, const char* new_name) {
    reply_new_entry(req, fs_of(req).link(node_of(ino), node_of(new_parent), new_name));
}

void op_unlink(fuse_req_t req, fuse_ino_t parent, const char* name) {
    reply_void(req, fs_of(req).unlink(node_of(parent), name));
}

void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char* name) {
    reply_void(req, fs_of(req).rmdir(node_of(parent), name));
}

void op_rename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t new_parent,
               const char* new_name, unsigned int flags) {
    RenameFlags how = RenameFlags::none;
    if (flags == RENAME_NOREPLACE) how = RenameFlags::noreplace;
    else if (flags == RENAME_EXCHANGE) how = RenameFlags::exchange;
    else if (flags != 0) return (void)fuse_reply_err(req, EINVAL);  // RENAME_WHITEOUT, or both
    reply_void(req, fs_of(req).rename(node_of(parent), name, node_of(new_parent), new_name, how));
}

void set_open_flags(fuse_req_t req, fuse_file_info* fi) {
    fi->keep_cache = policy_of(req).keep_page_cache;
    fi->noflush = 1;  // close() is no durability point: no FLUSH round trip per close
}

// Hands an open file to the kernel in fi->fh; drops it if the reply does not arrive.
template <class Reply>
void reply_with_file(fuse_req_t req, fuse_file_info* fi, FileHandle file, Reply&& reply) {
    File* raw = file.release();
    fi->fh = reinterpret_cast<uint64_t>(raw);
    set_open_flags(req, fi);
    if (reply() != 0) delete raw;
}

void op_open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    MountContext& m = mount_of(req);
    // Zero-message opens from now on (the kernel has checked the caller's access; a writable
    // tree's O_TRUNC comes as a SETATTR). A read-only tree still refuses a write open once.
    const bool writes = (fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC);
    if (m.stateless_open && !(writes && m.read_only)) return (void)fuse_reply_err(req, ENOSYS);
    auto file = fs_of(req).open(node_of(ino), fi->flags & ~(O_CREAT | O_EXCL | O_NOFOLLOW));
    if (!file) return reply_error(req, file.error());
    reply_with_file(req, fi, std::move(*file), [&] { return fuse_reply_open(req, fi); });
}

void op_create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode,
               fuse_file_info* fi) {
    auto made = fs_of(req).create(node_of(parent), name, fi->flags, mode & 07777, caller(req));
    if (!made) return reply_error(req, made.error());
    const fuse_entry_param e = to_entry(policy_of(req), made->entry);
    const Node node = made->entry.node;
    // Zero-message opens: no handle either (once the kernel stops sending RELEASE, one given
    // here would never come back); the writes that follow open the node for themselves.
    if (mount_of(req).stateless_open) made->file.reset();
    File* raw = made->file.release();
    fi->fh = reinterpret_cast<uint64_t>(raw);
    set_open_flags(req, fi);
    if (fuse_reply_create(req, &e, fi) != 0) {
        delete raw;
        fs_of(req).forget(node, 1);
    }
}

void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
    thread_local std::vector<std::byte> scratch;
    FileHandle opened;
    File* file = file_or_open(req, ino, fi, opened);
    if (!file) return;
    if (auto raw = file->host_bytes(static_cast<uint64_t>(off), size)) {
        // Kernel to kernel: libfuse splices the range from the host file into the reply.
        fuse_bufvec buf = FUSE_BUFVEC_INIT(raw->length);
        buf.buf[0].flags = static_cast<fuse_buf_flags>(FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK);
        buf.buf[0].fd = raw->fd;
        buf.buf[0].pos = static_cast<off_t>(raw->offset);
        fuse_reply_data(req, &buf, FUSE_BUF_SPLICE_MOVE);
        return;
    }
    if (scratch.size() < size) scratch.resize(size);
    auto n = file->pread(std::span(scratch.data(), size), static_cast<uint64_t>(off));
    if (!n) return reply_error(req, n.error());
    fuse_reply_buf(req, reinterpret_cast<const char*>(scratch.data()), *n);
}

void op_write(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size, off_t off,
              fuse_file_info* fi) {
    FileHandle opened;  // after a zero-message open (the kernel places appends itself)
    File* file = file_or_open(req, ino, fi, opened, O_RDWR);
    if (!file) return;
    auto n = file->pwrite(std::as_bytes(std::span(buf, size)), static_cast<uint64_t>(off));
    if (!n) return reply_error(req, n.error());
    fuse_reply_write(req, *n);
}

// close() is no durability point (fsync is): ENOSYS tells the kernel never to send FLUSH
// again, which zero-message opens (no open reply to carry noflush) would otherwise send.
void op_flush(fuse_req_t req, fuse_ino_t, fuse_file_info*) { fuse_reply_err(req, ENOSYS); }

void op_release(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
    delete file_of(fi);
    fuse_reply_err(req, 0);
}

void op_fsync(fuse_req_t req, fuse_ino_t, int datasync, fuse_file_info* fi) {
    File* file = file_of(fi);
    if (file) return reply_void(req, file->fsync(datasync != 0));
    // No handle: a zero-message open. A writable tree makes everything durable (what a
    // volume's fsync of any file does); an immutable one has nothing to, and ENOSYS makes the
    // kernel answer every later fsync of the mount with 0 by itself.
    const MountContext& m = mount_of(req);
    if (m.read_only || !m.mount->sync) return (void)fuse_reply_err(req, ENOSYS);
    reply_void(req, m.mount->sync());
}

// SEEK_DATA / SEEK_HOLE (the kernel answers the other whences itself): the backend's holes.
void op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, fuse_file_info* fi) {
    if (whence != SEEK_DATA && whence != SEEK_HOLE) return (void)fuse_reply_err(req, EINVAL);
    if (off < 0) return (void)fuse_reply_err(req, ENXIO);
    FileHandle opened;  // a pack's file (which may have holes) opened without a message
    File* file = file_or_open(req, ino, fi, opened);
    if (!file) return;
    auto at = file->seek_data(static_cast<uint64_t>(off), whence == SEEK_DATA);
    if (!at) return reply_error(req, at.error());
    fuse_reply_lseek(req, static_cast<off_t>(*at));
}

void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
                  fuse_file_info* fi) {
    if (offset < 0 || length <= 0) return (void)fuse_reply_err(req, EINVAL);
    if (!file_of(fi) && mount_of(req).read_only) return (void)fuse_reply_err(req, EBADF);
    FileHandle opened;  // after a zero-message open
    File* file = file_or_open(req, ino, fi, opened, O_RDWR);
    if (!file) return;
    reply_void(req,
               file->allocate(mode, static_cast<uint64_t>(offset), static_cast<uint64_t>(length)));
}

// copy_file_range(2) (cp's copy loop), by node as the kernel hands it over once it has checked
// the descriptors: the backend shares chunks where it can (a mem tree's or a volume's reflink),
// else copies.
void op_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in, fuse_file_info*,
                        fuse_ino_t ino_out, off_t off_out, fuse_file_info* fi_out, size_t len,
                        int flags) {
    if (flags != 0) return (void)fuse_reply_err(req, EINVAL);
    if (off_in < 0 || off_out < 0) return (void)fuse_reply_err(req, EINVAL);
    // No handle on a read-only source: no write was ever opened (a writable tree's zero-message
    // opens carry none either; the kernel checked the descriptors).
    if (!file_of(fi_out) && mount_of(req).read_only) return (void)fuse_reply_err(req, EBADF);
    auto n = fs_of(req).copy_range(node_of(ino_in), static_cast<uint64_t>(off_in), node_of(ino_out),
                                   static_cast<uint64_t>(off_out), len);
    if (!n) return reply_error(req, n.error());
    fuse_reply_write(req, static_cast<size_t>(*n));
}

void op_opendir(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
    MountContext& m = mount_of(req);
    if (m.stateless_opendir) return (void)fuse_reply_err(req, ENOSYS);
    // The listing is taken at the first readdir: a kernel that cached the directory's
    // listing opens it and reads nothing, and must not pay for a listing. (The kernel's
    // reference on the node keeps a removed directory alive meanwhile.)
    auto state = std::make_unique<DirState>();
    fi->fh = reinterpret_cast<uint64_t>(state.get());
    if (policy_of(req).cache_directories) {
        fi->cache_readdir = 1;
        fi->keep_cache = 1;
    }
    if (fuse_reply_open(req, fi) == 0) state.release();
}

Result<Listing> listing(fuse_req_t req, fuse_ino_t ino) {
    auto items = fs_of(req).list(node_of(ino));
    if (!items) return std::unexpected(items.error());
    return std::make_shared<const std::vector<DirEntry>>(std::move(*items));
}

// Offsets: 1 after ".", 2 after "..", 2 + i + 1 after item i.
template <bool Plus>
void readdir_impl(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
    MountContext& m = mount_of(req);
    // The kernel serialises readdir on one open directory: no lock needed for the listing.
    // Without an open (zero-message opendir) the listing lately taken is asked for again.
    DirState unopened;
    auto& state = fi->fh ? *reinterpret_cast<DirState*>(fi->fh) : unopened;
    if (!state.items && !fi->fh) state.items = m.listings.find(ino);
    if (!state.items) {
        auto items = listing(req, ino);
        if (!items) return reply_error(req, items.error());
        state.items = std::move(*items);
        if (!fi->fh) m.listings.add(ino, state.items);
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
            // "." and "..": no attributes, no reference (libfuse and the kernel skip them).
            e.attr.st_ino = ino;
            e.attr.st_mode = S_IFDIR;
            if (!add(at == 0 ? "." : "..", e, at + 1)) break;
            continue;
        }
        const DirEntry& item = items[static_cast<size_t>(at - 2)];
        if (!Plus) {
            e.attr.st_ino = item.ino;
            e.attr.st_mode = file_type_to_mode_bits(item.type);
            if (!add(item.name.c_str(), e, at + 1)) break;
            continue;
        }
        // readdirplus hands the kernel a node per entry: a lookup takes its reference.
        Result<Entry> entry = fs_of(req).lookup(node_of(ino), item.name);
        if (!entry) {
            if (entry.error().code() == ENOENT) continue;  // gone since the listing
            if (used == 0) return reply_error(req, entry.error());
            break;
        }
        e = to_entry(policy_of(req), *entry);
        if (!add(item.name.c_str(), e, at + 1)) {
            fs_of(req).forget(entry->node, 1);  // did not fit: the kernel never saw it
            break;
        }
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
    delete reinterpret_cast<DirState*>(fi->fh);
    fuse_reply_err(req, 0);
}

void op_fsyncdir(fuse_req_t req, fuse_ino_t, int, fuse_file_info*) {
    const Mount& m = *mount_of(req).mount;
    reply_void(req, m.sync ? m.sync() : Result<void>{});
}

void op_statfs(fuse_req_t req, fuse_ino_t ino) {
    auto s = fs_of(req).statfs(node_of(ino ? ino : kRootNode.id));
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
    // No xattrs anywhere: ENOSYS once, and the kernel answers every later getxattr itself.
    if (!mount_of(req).mount->xattrs) return (void)fuse_reply_err(req, ENOSYS);
    auto value = fs_of(req).getxattr(node_of(ino), name);
    if (!value) return reply_error(req, value.error());
    reply_xattr_bytes(req, *value, size);
}

void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
    // No xattrs anywhere: an empty list (getfattr -d prints nothing, as on any filesystem).
    if (!mount_of(req).mount->xattrs) return reply_xattr_bytes(req, {}, size);
    auto names = fs_of(req).listxattr(node_of(ino));
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
    reply_void(req, fs_of(req).setxattr(node_of(ino), name, std::string_view(value, size), mode));
}

void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char* name) {
    reply_void(req, fs_of(req).removexattr(node_of(ino), name));
}

void op_ioctl(fuse_req_t req, fuse_ino_t, unsigned int cmd, void*, fuse_file_info*,
              unsigned flags, const void*, size_t, size_t out_size) {
    if (flags & FUSE_IOCTL_COMPAT) return (void)fuse_reply_err(req, ENOTTY);
    if (cmd == kIoctlSync) {
        const Mount& m = *mount_of(req).mount;
        auto synced = m.sync ? m.sync() : Result<void>{};
        if (!synced) return reply_error(req, synced.error());
        return (void)fuse_reply_ioctl(req, 0, nullptr, 0);
    }
    if (cmd != kIoctlCompact || out_size < sizeof(CompactReply))
        return (void)fuse_reply_err(req, ENOTTY);
    const fuse_ctx* ctx = fuse_req_ctx(req);
    if (ctx->uid != 0 && ctx->uid != ::geteuid()) return (void)fuse_reply_err(req, EPERM);
    const Mount& m = *mount_of(req).mount;
    if (!m.compact) return (void)fuse_reply_err(req, ENOTTY);
    auto reply = m.compact();
    if (!reply) return reply_error(req, reply.error());
    fuse_reply_ioctl(req, 0, &*reply, sizeof(CompactReply));
}

// Only without default_permissions, where the only caller is root (serve.cpp): root may do
// everything but execute a file no one may execute.
void op_access(fuse_req_t req, fuse_ino_t ino, int mask) {
    if (!(mask & X_OK)) return (void)fuse_reply_err(req, 0);
    auto st = fs_of(req).getattr(node_of(ino));
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
    ops.lseek = op_lseek;
    ops.fallocate = op_fallocate;
    ops.copy_file_range = op_copy_file_range;
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
