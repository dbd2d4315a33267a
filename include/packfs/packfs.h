/* The C API of PackFS (C11; DESIGN §12): trees (a pack, a remote pack, a volume, a host
 * directory, an in-memory tree), their path and node calls, open files, snapshots.
 *
 * Conventions, for every call below:
 * - Handles are opaque pointers, made by a packfs_open_* call and given back by the matching
 *   close. No C++ type crosses this header; it is part of libpackfs (link -lpackfs, or
 *   PackFS::packfs).
 * - A call that can fail returns 0 (or a count or length >= 0) on success and a negative errno
 *   on failure (-ENOENT, -EROFS, -EUCLEAN for a damaged pack, ...). packfs_errmsg() then says
 *   what failed, in the calling thread ("open /a/b: No such file or directory").
 * - Paths are absolute within the tree ("/dir/file"), UTF-8 or any bytes but NUL and '/'
 *   per component; a symlink is followed unless the call says otherwise.
 * - Every handle may be used from many threads at once. A file or directory listing keeps its
 *   tree alive: the tree may be closed before them.
 * - Nothing here blocks on anything but I/O, and nothing calls back into the caller. */
#ifndef PACKFS_PACKFS_H
#define PACKFS_PACKFS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PACKFS_C_API __attribute__((visibility("default")))

/* A tree (a Backend in the C++ API). */
typedef struct packfs_fs packfs_fs;
/* An open file of a tree. */
typedef struct packfs_file packfs_file;
/* A directory's listing, taken whole when opened. */
typedef struct packfs_dir packfs_dir;

/* A node: one object of a tree named by identity (as a kernel names inodes). The root is
 * PACKFS_ROOT_NODE and needs no reference; every other node a call returns carries one
 * reference, given back with packfs_forget(). 0 is no node. */
typedef uint64_t packfs_node;
#define PACKFS_ROOT_NODE ((packfs_node)1)

/* ---- errors and version ------------------------------------------------------------------ */

/* What the calling thread's last failed call failed on, with the reason; "" before any
 * failure. Valid until that thread's next failing call. */
PACKFS_C_API const char* packfs_errmsg(void);
/* The library's version, "MAJOR.MINOR.PATCH". */
PACKFS_C_API const char* packfs_version(void);

/* ---- trees -------------------------------------------------------------------------------- */

/* Flags of packfs_open() and packfs_open_dir(). */
#define PACKFS_WRITABLE 1 /* a host directory or a volume opened for changes */

/* Opens SOURCE as the `packfs` program names one: an http(s):// URL or an oci:// reference (a
 * remote pack, fetched by checked block into the default cache), a volume directory, a host
 * directory, or else a pack file. Read-only unless `flags` has PACKFS_WRITABLE (a volume or a
 * host directory; for a pack it is -EROFS). */
PACKFS_C_API int packfs_open(const char* source, int flags, packfs_fs** out);
/* How packfs_open_remote() reaches a remote pack (docs/REMOTE.md). Zero (or NULL) in a field
 * is its default. `size` is sizeof(packfs_remote_options) as the caller was compiled: fields
 * added later lie past it and take their defaults, so the struct can grow without breaking
 * the ABI. */
typedef struct packfs_remote_options {
    size_t size;
    const char* digest;         /* the pack's image digest (64 hex digits): it must be that pack */
    const char* cache_dir;      /* the block cache's directory; "none": private to this tree */
    uint64_t cache_bytes;       /* the cache's bound (default a quarter of its free space) */
    uint32_t timeout_ms;        /* how long a read waits for the server (default 30,000) */
    uint32_t connections;       /* requests in flight at once, 1 to 64 (default 8) */
    const char* const* headers; /* "Name: value" strings, NULL-terminated, sent with every
                                 * request of an http(s) URL (a private server's token) */
} packfs_remote_options;

/* A remote pack (an http(s):// URL or an oci:// reference) with OPTIONS (NULL: the defaults, as
 * packfs_open gives). -EINVAL for a bad option (a header without a colon, connections over
 * 64, a `size` smaller than the struct's first version), -EACCES when the server refuses,
 * -EUCLEAN when the pack is not the pinned one. */
PACKFS_C_API int packfs_open_remote(const char* url, const packfs_remote_options* options,
                                    packfs_fs** out);
/* A pack file, mapped; opening checks the header and metadata sums only (O(1) in files). */
PACKFS_C_API int packfs_open_pack(const char* path, packfs_fs** out);
/* A volume (a pack and its journal), replayed, writable and locked against other writers. */
PACKFS_C_API int packfs_open_volume(const char* dir, packfs_fs** out);
/* A host directory that no path or symlink escapes; read-only unless PACKFS_WRITABLE. */
PACKFS_C_API int packfs_open_dir(const char* host_dir, int flags, packfs_fs** out);
/* An empty in-memory tree (writable; O(1) snapshots). */
PACKFS_C_API int packfs_open_mem(packfs_fs** out);
/* A read-only tree frozen at this instant, contents included (O(1) for a mem tree or a
 * volume; a pack is its own snapshot; -ENOTSUP for a host directory). */
PACKFS_C_API int packfs_snapshot(packfs_fs* fs, packfs_fs** out);
/* Makes every change so far durable (a volume's journal synced; nothing to do elsewhere). */
PACKFS_C_API int packfs_sync(packfs_fs* fs);
/* 1 when every change answers -EROFS, else 0. */
PACKFS_C_API int packfs_read_only(const packfs_fs* fs);
/* Writes a pack of the whole tree FS to OUT_PATH (through a temporary file renamed into
 * place), compressed with COMPRESSION: NULL or "none", "zstd" or "lz4". */
PACKFS_C_API int packfs_write_pack(packfs_fs* fs, const char* out_path, const char* compression);
/* Makes a new volume in DIR (created if missing, else it must be empty), its tree copied from
 * the pack FROM_PACK, or empty when FROM_PACK is NULL. Open it with packfs_open_volume(). */
PACKFS_C_API int packfs_create_volume(const char* dir, const char* from_pack);
/* Gives the handle back (NULL is ignored). Open files and listings keep the tree alive. */
PACKFS_C_API void packfs_close(packfs_fs* fs);

/* ---- attributes --------------------------------------------------------------------------- */

/* What stat(2) answers. */
typedef struct packfs_attr {
    uint64_t ino;
    uint32_t mode; /* st_mode: the type bits (S_IFREG, S_IFDIR, ...) and the permissions */
    uint32_t uid;
    uint32_t gid;
    uint32_t reserved; /* zero */
    uint64_t nlink;
    uint64_t size;   /* bytes; a symlink's is its target's length */
    uint64_t rdev;   /* a device's number */
    uint64_t blocks; /* 512-byte blocks allocated */
    int64_t atime_sec, atime_nsec;
    int64_t mtime_sec, mtime_nsec;
    int64_t ctime_sec, ctime_nsec;
} packfs_attr;

/* The attributes of what PATH names, following a final symlink (packfs_stat) or not
 * (packfs_lstat). */
PACKFS_C_API int packfs_stat(packfs_fs* fs, const char* path, packfs_attr* out);
PACKFS_C_API int packfs_lstat(packfs_fs* fs, const char* path, packfs_attr* out);
/* A symlink's target into BUF (SIZE bytes, NUL-terminated when it fits); returns the target's
 * length, which may exceed SIZE - 1 (call again with a larger buffer). -EINVAL if PATH is not
 * a symlink. */
PACKFS_C_API int64_t packfs_readlink(packfs_fs* fs, const char* path, char* buf, size_t size);
/* An extended attribute's value into BUF (as packfs_readlink: returns its full length, BUF
 * may be NULL to ask it; not NUL-terminated). -ENODATA when there is none. Never follows a
 * final symlink. */
PACKFS_C_API int64_t packfs_getxattr(packfs_fs* fs, const char* path, const char* name, void* buf,
                                     size_t size);
/* The names of a node's extended attributes, each NUL-terminated, back to back, into BUF;
 * returns the bytes needed (BUF may be NULL to ask). */
PACKFS_C_API int64_t packfs_listxattr(packfs_fs* fs, const char* path, char* buf, size_t size);

/* ---- changes by path (-EROFS on a read-only tree) ---------------------------------------- */

PACKFS_C_API int packfs_mkdir(packfs_fs* fs, const char* path, uint32_t mode);
PACKFS_C_API int packfs_rmdir(packfs_fs* fs, const char* path);
PACKFS_C_API int packfs_unlink(packfs_fs* fs, const char* path);
/* Flags as renameat2's: 0, PACKFS_RENAME_NOREPLACE (-EEXIST if TO exists), or
 * PACKFS_RENAME_EXCHANGE (swap the two; both must exist). */
#define PACKFS_RENAME_NOREPLACE 1
#define PACKFS_RENAME_EXCHANGE 2
PACKFS_C_API int packfs_rename(packfs_fs* fs, const char* from, const char* to, unsigned flags);
PACKFS_C_API int packfs_symlink(packfs_fs* fs, const char* target, const char* link_path);
PACKFS_C_API int packfs_link(packfs_fs* fs, const char* existing, const char* new_path);
PACKFS_C_API int packfs_chmod(packfs_fs* fs, const char* path, uint32_t mode);
PACKFS_C_API int packfs_truncate(packfs_fs* fs, const char* path, uint64_t size);
/* Sets a value (flags 0: create or replace; 1: only create, -EEXIST; 2: only replace,
 * -ENODATA), or removes it. */
PACKFS_C_API int packfs_setxattr(packfs_fs* fs, const char* path, const char* name,
                                 const void* value, size_t size, int flags);
PACKFS_C_API int packfs_removexattr(packfs_fs* fs, const char* path, const char* name);

/* ---- directory listings ------------------------------------------------------------------- */

typedef struct packfs_dirent {
    const char* name; /* valid until packfs_closedir() */
    uint64_t ino;
    uint32_t mode; /* the type bits only (S_IFREG, S_IFDIR, S_IFLNK, ...) */
} packfs_dirent;

/* The entries of a directory, without "." and "..", in the tree's own order. */
PACKFS_C_API int packfs_opendir(packfs_fs* fs, const char* path, packfs_dir** out);
/* The next entry into OUT: returns 1, or 0 at the end. */
PACKFS_C_API int packfs_readdir(packfs_dir* dir, packfs_dirent* out);
/* How many entries the listing holds. */
PACKFS_C_API size_t packfs_dir_count(const packfs_dir* dir);
PACKFS_C_API void packfs_closedir(packfs_dir* dir);

/* ---- files -------------------------------------------------------------------------------- */

/* Opens PATH with open(2)'s flags: O_RDONLY, O_WRONLY or O_RDWR, with O_CREAT (MODE then
 * applies), O_EXCL, O_TRUNC, O_APPEND, O_NOFOLLOW, O_DIRECTORY. A file has no position: reads
 * and writes name their offsets. */
PACKFS_C_API int packfs_file_open(packfs_fs* fs, const char* path, int flags, uint32_t mode,
                                  packfs_file** out);
/* Up to SIZE bytes at OFFSET into BUF; returns the count (0 at or past the end). */
PACKFS_C_API int64_t packfs_pread(packfs_file* file, void* buf, size_t size, uint64_t offset);
/* All SIZE bytes at OFFSET (at the end with O_APPEND); returns SIZE. -EBADF when the file was
 * opened read-only. */
PACKFS_C_API int64_t packfs_pwrite(packfs_file* file, const void* buf, size_t size,
                                   uint64_t offset);
/* Bytes [OFFSET, OFFSET + SIZE) of the file, clipped to its end, as a pointer and a length,
 * without copying where the tree holds them in memory as they are (an uncompressed pack's data
 * in its mapping), else copied into memory the file keeps. Either way *DATA stays valid until
 * packfs_file_close(FILE), and every view taken stays valid (memory use grows with the copies
 * made: close the file to give them back). *DATA is NULL when *LENGTH is 0. */
PACKFS_C_API int packfs_read_view(packfs_file* file, uint64_t offset, size_t size,
                                  const void** data, size_t* length);
PACKFS_C_API int packfs_fstat(packfs_file* file, packfs_attr* out);
PACKFS_C_API int packfs_ftruncate(packfs_file* file, uint64_t size);
/* Makes what was written durable (DATASYNC 1: the data and what is needed to read it). */
PACKFS_C_API int packfs_fsync(packfs_file* file, int datasync);
/* Gives the handle back, and with it the copies its views made (NULL is ignored). */
PACKFS_C_API void packfs_file_close(packfs_file* file);

/* ---- nodes: the calls a kernel or FUSE makes, for trees of any depth --------------------- */

/* The entry NAME of directory DIR (one component), with one reference; its attributes into
 * ATTR when not NULL. */
PACKFS_C_API int packfs_lookup(packfs_fs* fs, packfs_node dir, const char* name, packfs_node* out,
                               packfs_attr* attr);
/* The node PATH names (a final symlink followed when FOLLOW is 1), with one reference. */
PACKFS_C_API int packfs_lookup_path(packfs_fs* fs, const char* path, int follow, packfs_node* out,
                                    packfs_attr* attr);
/* Gives back COUNT references to NODE. */
PACKFS_C_API void packfs_forget(packfs_fs* fs, packfs_node node, uint64_t count);
PACKFS_C_API int packfs_getattr(packfs_fs* fs, packfs_node node, packfs_attr* out);
/* As packfs_readlink, by node. */
PACKFS_C_API int64_t packfs_readlink_node(packfs_fs* fs, packfs_node node, char* buf, size_t size);
/* As packfs_opendir and packfs_file_open (O_CREAT is packfs_create_at's), by node. */
PACKFS_C_API int packfs_opendir_node(packfs_fs* fs, packfs_node dir, packfs_dir** out);
PACKFS_C_API int packfs_open_node(packfs_fs* fs, packfs_node node, int flags, packfs_file** out);
/* Makes (or, without O_EXCL, finds) the regular file NAME in DIR and opens it with FLAGS;
 * its node (one reference) into NODE when not NULL. */
PACKFS_C_API int packfs_create_at(packfs_fs* fs, packfs_node dir, const char* name, int flags,
                                  uint32_t mode, packfs_node* node, packfs_file** out);
/* Makes a directory or a symlink NAME in DIR; its node (one reference) into OUT when not NULL. */
PACKFS_C_API int packfs_mkdir_at(packfs_fs* fs, packfs_node dir, const char* name, uint32_t mode,
                                 packfs_node* out);
PACKFS_C_API int packfs_symlink_at(packfs_fs* fs, packfs_node dir, const char* name,
                                   const char* target, packfs_node* out);
PACKFS_C_API int packfs_unlink_at(packfs_fs* fs, packfs_node dir, const char* name);
PACKFS_C_API int packfs_rmdir_at(packfs_fs* fs, packfs_node dir, const char* name);
PACKFS_C_API int packfs_rename_at(packfs_fs* fs, packfs_node dir, const char* name,
                                  packfs_node to_dir, const char* to_name, unsigned flags);

#ifdef __cplusplus
}
#endif

#endif /* PACKFS_PACKFS_H */
