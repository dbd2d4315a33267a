// The kernel's requests, translated onto the Backend's node calls (mount.hpp). Each callback
// replies exactly once. A FUSE node id is the Backend's Node id; every reply that hands the
// kernel a node (lookup, create, mkdir, mknod, symlink, link, readdirplus) hands it the
// reference the node call took, and FORGET gives them back. Errors are the Backend's errno
// (EUCLEAN for a damaged pack). Open files and directory listings live in fi->fh: a file keeps
// its File; a directory keeps the listing taken at its first readdir, so offsets stay valid
// across the many readdir calls of a large directory. Here: entries, attributes and files;
// fuse_dir_ops.cpp: directory listings, statfs, xattrs, ioctl and access.
#include "fuse_ops.hpp"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "fuse_ops_shared.hpp"

namespace packfs::fuse::ops {

namespace {


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

// The replies of reads that are copied (not spliced) are made in pooled buffers rather than one
// per worker thread, so that 64 workers do not each keep one as large as the largest read they
// served (docs/FUSE.md, "Memory"). A read takes an idle buffer or a new one and gives it back;
// at most 8 stay idle, so the buffers alive are the reads running now plus 8. (The pack
// reader pools its buffers alike: src/core/buffer_pool.hpp, out of this driver's reach.)
class ReadBuffers {
public:
    using Buffer = std::vector<std::byte>;
    std::unique_ptr<Buffer> take() {
        {
            std::lock_guard lock(mutex_);
            if (count_ > 0) return std::move(idle_[--count_]);
        }
        return std::make_unique<Buffer>();
    }
    void give(std::unique_ptr<Buffer> buffer) {
        std::lock_guard lock(mutex_);
        if (count_ < idle_.size()) idle_[count_++] = std::move(buffer);
    }

private:
    std::mutex mutex_;
    std::array<std::unique_ptr<Buffer>, 8> idle_;
    std::size_t count_ = 0;
};

ReadBuffers& read_buffers() {
    static ReadBuffers* pool = new ReadBuffers();  // never destroyed: workers may outlive it
    return *pool;
}

struct ReadBuffer {
    std::unique_ptr<ReadBuffers::Buffer> buffer = read_buffers().take();
    ReadBuffer() = default;
    ReadBuffer(const ReadBuffer&) = delete;
    ReadBuffer& operator=(const ReadBuffer&) = delete;
    ~ReadBuffer() { read_buffers().give(std::move(buffer)); }
};

void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
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
    ReadBuffer scratch;
    if (scratch.buffer->size() < size) scratch.buffer->resize(size);
    std::byte* bytes = scratch.buffer->data();
    auto n = file->pread(std::span(bytes, size), static_cast<uint64_t>(off));
    if (!n) return reply_error(req, n.error());
    fuse_reply_buf(req, reinterpret_cast<const char*>(bytes), *n);
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

}  // namespace packfs::fuse::ops

namespace packfs::fuse {

const fuse_lowlevel_ops& operations() {
    static const fuse_lowlevel_ops ops = ops::make_operations();
    return ops;
}

}  // namespace packfs::fuse
