// What the FUSE callbacks share (fuse_ops.cpp: entries, attributes and files;
// fuse_dir_ops.cpp: directory listings, statfs, xattrs, ioctl and access): the request's mount
// and backend, the replies, and the callbacks fuse_dir_ops.cpp defines for make_operations().
#pragma once

#include <sys/stat.h>

#include <cerrno>

#include "fuse_ops.hpp"

namespace packfs::fuse::ops {

inline MountContext& mount_of(fuse_req_t req) {
    return *static_cast<MountContext*>(fuse_req_userdata(req));
}
inline Backend& fs_of(fuse_req_t req) { return *mount_of(req).mount->fs; }

inline const CachePolicy& policy_of(fuse_req_t req) { return mount_of(req).mount->policy; }

inline File* file_of(fuse_file_info* fi) { return fi && fi->fh ? reinterpret_cast<File*>(fi->fh) : nullptr; }
inline Node node_of(fuse_ino_t ino) { return Node{ino}; }

inline void reply_error(fuse_req_t req, const Error& e) {
    const int code = e.code();
    fuse_reply_err(req, code > 0 ? code : EIO);
}

// The request's handle or, after a zero-message open (no handle), one this request opens for
// itself into `opened`, with `flags` (the kernel checked the caller's open already). nullptr
// after replying the error.
inline File* file_or_open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi, FileHandle& opened,
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

inline void reply_void(fuse_req_t req, const Result<void>& r) {
    if (!r) return reply_error(req, r.error());
    fuse_reply_err(req, 0);
}

inline struct stat to_host(const Stat& s) {
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

inline fuse_entry_param to_entry(const CachePolicy& policy, const Entry& e) {
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
inline void reply_new_entry(fuse_req_t req, Result<Entry> entry) {
    if (!entry) return reply_error(req, entry.error());
    const fuse_entry_param e = to_entry(policy_of(req), *entry);
    if (fuse_reply_entry(req, &e) != 0) fs_of(req).forget(entry->node, 1);
}

// New entries belong to the caller, as on a kernel filesystem (the backend applies the
// set-group-ID rule of the directory).
inline Owner caller(fuse_req_t req) {
    const fuse_ctx* ctx = fuse_req_ctx(req);
    return Owner{ctx->uid, ctx->gid};
}

// --- fuse_dir_ops.cpp ---
void op_opendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi);
void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi);
void op_releasedir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, fuse_file_info* fi);
void op_statfs(fuse_req_t req, fuse_ino_t ino);
void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size);
void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char* name, const char* value,
                 size_t size, int flags);
void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char* name);
void op_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void* arg, fuse_file_info* fi,
              unsigned flags, const void* in_buf, size_t in_bufsz, size_t out_bufsz);
void op_access(fuse_req_t req, fuse_ino_t ino, int mask);

}  // namespace packfs::fuse::ops
