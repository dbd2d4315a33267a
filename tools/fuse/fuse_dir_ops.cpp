// The FUSE callbacks for directory listings (taken at the first readdir and kept in fi->fh, so
// offsets stay valid across the many readdir calls of a large directory), statfs, xattrs, ioctl
// and access; the others are fuse_ops.cpp.
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "fuse_ops_shared.hpp"

namespace packfs::fuse::ops {

namespace {

struct DirState {
    Listing items;  // null until the first readdir
};

}  // namespace

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

}  // namespace packfs::fuse::ops
