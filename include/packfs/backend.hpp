// The Backend contract (DESIGN §4): one abstract, POSIX-shaped interface that every backend
// implements (mem, dir, pack, overlay, volume, the Vfs itself) and every frontend uses (the
// C++ API, the CLI, the FUSE driver). A frontend never knows which backend serves it.
//
// Two ways in, one semantics:
// - By node (the kernel's and FUSE's way): lookup(dir, name), getattr(node), list(dir),
//   open(node), readlink(node), and every mutation by (directory node, name). This is what a
//   backend implements; trees of any depth work through it.
// - By path (what most callers use): stat("/a/b"), open("/a/b", O_RDONLY), ... Every path call
//   has a default that walks the path with the one generic walker (src/core/walker.hpp:
//   symlinks, 40 follows, trailing slashes, the errno order the conformance suite pins) and then
//   makes the node call; a backend overrides a path call only to do the same faster.
// So a read-only backend is root + lookup + getattr + list + readlink + open (see
// examples/index_backend.hpp), and a writable one adds the node mutations.
//
// Semantics follow POSIX where POSIX speaks:
// - Paths are virtual and absolute; each call normalises its path (see path.hpp). A trailing
//   '/' requires the final component to be a directory.
// - rename over an existing entry is atomic; RenameFlags::noreplace and ::exchange behave as
//   renameat2's; renaming a directory into its own subtree is EINVAL.
// - An unlinked file stays readable and writable through the File handles open on it, and
//   through the nodes held on it (getattr, setattr and the xattr calls work, as fstat, fchmod
//   and fsetxattr do on an open unlinked file of a kernel filesystem).
// - A write is visible to every reader as soon as it returns.
// - Every backend is safe for concurrent use from many threads.
// - A read-only backend answers every mutation with EROFS; an operation a backend does not
//   support at all answers ENOTSUP.
// - Backends do not check permissions; that is the frontend's job (FUSE default_permissions).
// - Special files (fifo, devices, sockets) are created, stored and listed, but open() on
//   one answers ENOTSUP.
//
// Nodes. Every call that returns a node (lookup, create, mkdir, mknod, symlink, link) hands the
// caller one reference to it, and forget(node, n) gives n back, as FUSE's lookup count and
// FORGET do. While a reference is held the node stays valid, even after its last name is
// removed (an unlinked object then lives on, unreachable by name, until its last reference and
// its last open File are gone). Once every reference is forgotten the backend may let the node
// go: a later call on it answers ESTALE, or works if the object still exists. Backends whose
// nodes cost nothing to hold (a pack) ignore forget; a node of a snapshot stays valid as long as
// the snapshot. kRootNode needs no reference.
#pragma once

#include <fcntl.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "packfs/error.hpp"
#include "packfs/export.hpp"
#include "packfs/types.hpp"

namespace packfs {

// An open file. Reads and writes take explicit offsets; the handle has no file position.
class PACKFS_API File {
public:
    virtual ~File() = default;
    // Reads up to buf.size() bytes at `offset`; returns the count (0 at or past end of file).
    virtual Result<std::size_t> pread(std::span<std::byte> buf, uint64_t offset) = 0;
    // Writes all of `data` at `offset` (at the end of file when opened with O_APPEND), growing
    // the file and zero-filling any gap. EBADF on a handle opened read-only.
    virtual Result<std::size_t> pwrite(std::span<const std::byte> data, uint64_t offset) = 0;
    virtual Result<void> truncate(uint64_t size) = 0;
    // Makes what was written durable, as far as the backend is durable at all.
    virtual Result<void> fsync(bool data_only = false) = 0;
    virtual Result<Stat> fstat() = 0;

    // lseek(2)'s SEEK_DATA (`data`) or SEEK_HOLE from `offset`: where the next data, or the
    // next hole, starts at or after it (the end of file counts as a hole). ENXIO when `offset`
    // is at or past the end of file. A backend that keeps no holes answers as Linux does for
    // such filesystems: data everywhere, the one hole at the end (this default).
    virtual Result<uint64_t> seek_data(uint64_t offset, bool data);

    // fallocate(2) on [offset, offset + length): `mode` 0 (the size grows to cover the range),
    // FALLOC_FL_KEEP_SIZE (nothing visible changes), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE
    // (the range reads as zeros and keeps no storage) and FALLOC_FL_ZERO_RANGE, with or without
    // KEEP_SIZE (reads as zeros; grows the file without it). EINVAL for a zero length,
    // EOPNOTSUPP for other modes and where the backend stores no files (this default), EBADF on
    // a handle opened read-only.
    virtual Result<void> allocate(int mode, uint64_t offset, uint64_t length);

    // Bytes [offset, offset + length) of the file (clipped to its end; empty at or past it)
    // without copying where the backend holds them as they are in memory (a pack's raw data in
    // its mapping): the span then stays valid as long as this File. Otherwise they are read
    // into `scratch` (resized to fit) and the span points there (this default, through pread).
    virtual Result<std::span<const std::byte>> read_view(uint64_t offset, std::size_t length,
                                                         std::string& scratch);

    // Where bytes [offset, offset + length) of the file lie, unchanged, in a host file (a
    // pack's uncompressed data), so a server can splice them from there without copying them
    // through memory. nullopt when they do not (read them with pread).
    struct HostBytes {
        int fd;            // valid while this File is open
        uint64_t offset;   // in that file
        std::size_t length;  // clipped to the end of this file; 0 past it
    };
    virtual std::optional<HostBytes> host_bytes(uint64_t offset, std::size_t length) {
        (void)offset;
        (void)length;
        return std::nullopt;
    }
};

using FileHandle = std::unique_ptr<File>;

// A node with its attributes (a symlink's own, never its target's): what lookup and the calls
// that make an entry answer.
struct Entry {
    Node node;
    Stat stat;
};

// One entry of a directory with its node and attributes (list_entries).
struct NamedEntry {
    std::string name;
    Entry entry;
    // True when the backend knows, from what it read anyway, that the entry has no xattrs (so
    // a caller copying the tree need not ask); false says nothing.
    bool no_xattrs = false;
};

// A file made (or, without O_EXCL, found) by create(), and the handle opened on it.
struct Created {
    Entry entry;
    FileHandle file;
};

class PACKFS_API Backend {
public:
    virtual ~Backend() = default;

    // === nodes ===============================================================================

    // The entry `name` of directory `dir`. `name` is one component: "", ".", ".." and names
    // with '/' are EINVAL, over 255 bytes ENAMETOOLONG. ENOENT when there is none, ENOTDIR
    // when `dir` is not a directory, ESTALE when `dir` is gone.
    virtual Result<Entry> lookup(Node dir, std::string_view name) = 0;
    // Gives back `count` references to `node` (see "Nodes" above).
    virtual void forget(Node node, uint64_t count = 1) noexcept {
        (void)node;
        (void)count;
    }
    virtual Result<Stat> getattr(Node node) = 0;
    // The entries of directory `dir` (name, st_ino, type, without loading each child), without
    // "." and "..", in the backend's own order.
    virtual Result<std::vector<DirEntry>> list(Node dir) = 0;
    // The same with each entry looked up (readdirplus): its node, holding one reference as a
    // lookup() does, and its attributes. An entry removed while the directory is read is left
    // out. The default lists and looks each name up; a backend that holds its tree in memory
    // answers from one pass over the directory.
    virtual Result<std::vector<NamedEntry>> list_entries(Node dir);
    // A symlink's target; EINVAL for anything else.
    virtual Result<std::string> readlink(Node node) = 0;
    // The node whose st_ino is `ino`, as an NFS file handle finds one (a volume's compaction
    // moves the overlay's nodes onto the new pack this way). ESTALE when no object has that
    // number; ENOTSUP where a backend cannot find objects by number (a host directory).
    virtual Result<Entry> lookup_ino(uint64_t ino);
    // How this backend numbers its inodes, for a layer stacked on it (an overlay keeps a lower's
    // numbers when it can, and numbers its own inodes above them). `unique`: no two objects
    // share an st_ino, lookup_ino() finds each, holding a node costs nothing (forget may be
    // skipped), and every st_ino is below `limit`.
    struct InodeNumbering {
        bool unique = false;
        uint64_t limit = 0;
    };
    virtual InodeNumbering inode_numbering() const { return {}; }
    // The capacity and use of the filesystem `node` is on (default: nothing known).
    virtual Result<StatFs> statfs(Node node);
    // Opens `node` with the O_ACCMODE, O_APPEND, O_TRUNC and O_DIRECTORY bits of `flags`
    // (O_CREAT is create's): EISDIR for a directory opened for writing, ELOOP for a symlink,
    // ENOTSUP for a special file.
    virtual Result<FileHandle> open(Node node, int flags) = 0;

    // Makes the regular file `name` in `dir` (mode & 07777; the owner: `owner`, else the
    // backend's default) and opens it with `flags`. When the name exists: EEXIST with O_EXCL,
    // else the existing object is opened as open(node, flags) would (a symlink is not followed).
    virtual Result<Created> create(Node dir, std::string_view name, int flags, uint32_t mode,
                                   std::optional<Owner> owner = std::nullopt);
    virtual Result<Entry> mkdir(Node dir, std::string_view name, uint32_t mode,
                                std::optional<Owner> owner = std::nullopt);
    // A fifo, socket, char or block device (`rdev` for devices) or an empty regular file; a
    // directory or symlink type is EINVAL.
    virtual Result<Entry> mknod(Node dir, std::string_view name, FileType type, uint32_t mode,
                                uint64_t rdev, std::optional<Owner> owner = std::nullopt);
    virtual Result<Entry> symlink(Node dir, std::string_view name, std::string_view target,
                                  std::optional<Owner> owner = std::nullopt);
    // A new name `name` in `dir` for `node` (EPERM for a directory).
    virtual Result<Entry> link(Node node, Node dir, std::string_view name);
    virtual Result<void> unlink(Node dir, std::string_view name);
    virtual Result<void> rmdir(Node dir, std::string_view name);
    virtual Result<void> rename(Node dir, std::string_view name, Node to_dir,
                                std::string_view to_name, RenameFlags flags = RenameFlags::none);
    // Changes what `change` sets and answers the attributes after it. A size on a directory is
    // EISDIR, on anything else but a regular file EINVAL.
    virtual Result<Stat> setattr(Node node, const SetAttr& change);
    // copy_file_range(2) / FICLONERANGE by node, as the kernel hands it to a filesystem once it
    // has checked the descriptors: regular file `from`'s bytes [offset, offset + length) into
    // regular file `to` at `to_offset`. Returns how many were copied: `length`, fewer at the
    // source's end (as it is when the call starts), 0 at or past it. Overlapping ranges of one
    // file are EINVAL, a directory EISDIR, another type EINVAL, EROFS on a read-only backend.
    // Where both are one mem tree's or one volume's files and the offsets are equal modulo
    // 64 KiB, whole chunks are shared copy-on-write (a reflink: O(chunks) metadata, no data); a
    // dir backend uses the host's copy_file_range; anything else is copied through pread and
    // pwrite of handles it opens (this default).
    virtual Result<uint64_t> copy_range(Node from, uint64_t offset, Node to, uint64_t to_offset,
                                        uint64_t length);

    // Extended attributes of a node (the symlink itself, for a symlink).
    virtual Result<std::string> getxattr(Node node, std::string_view name);
    virtual Result<std::vector<std::string>> listxattr(Node node);
    virtual Result<void> setxattr(Node node, std::string_view name, std::string_view value,
                                  XattrMode mode = XattrMode::any);
    virtual Result<void> removexattr(Node node, std::string_view name);

    // === paths (each defaults to a walk and the node call; see the top of this file) =========

    // --- metadata and names -------------------------------------------------------------
    virtual Result<Stat> stat(std::string_view path);   // follows a final symlink
    virtual Result<Stat> lstat(std::string_view path);  // does not
    // Entries of a directory, without "." and "..", in the backend's own order.
    virtual Result<std::vector<DirEntry>> readdir(std::string_view path);
    virtual Result<std::string> readlink(std::string_view path);
    virtual Result<StatFs> statfs(std::string_view path);

    // --- files --------------------------------------------------------------------------
    // `flags` is the O_* subset O_RDONLY/O_WRONLY/O_RDWR, O_CREAT, O_EXCL, O_TRUNC, O_APPEND,
    // O_NOFOLLOW, O_DIRECTORY; `mode` applies when O_CREAT creates the file. Opening a
    // directory for writing is EISDIR; O_NOFOLLOW on a symlink is ELOOP.
    virtual Result<FileHandle> open(std::string_view path, int flags, uint32_t mode = 0644);
    virtual Result<void> truncate(std::string_view path, uint64_t size);

    // --- namespace ----------------------------------------------------------------------
    virtual Result<void> mkdir(std::string_view path, uint32_t mode = 0755);
    virtual Result<void> rmdir(std::string_view path);
    virtual Result<void> unlink(std::string_view path);
    virtual Result<void> rename(std::string_view from, std::string_view to,
                                RenameFlags flags = RenameFlags::none);
    virtual Result<void> symlink(std::string_view target, std::string_view link_path);
    virtual Result<void> link(std::string_view existing, std::string_view new_path);
    // Creates a fifo, socket, char or block device (`rdev` for devices) or an empty regular
    // file; a directory or symlink type is EINVAL.
    virtual Result<void> mknod(std::string_view path, FileType type, uint32_t mode,
                               uint64_t rdev = 0);

    // --- attributes ---------------------------------------------------------------------
    virtual Result<void> chmod(std::string_view path, uint32_t mode);
    virtual Result<void> chown(std::string_view path, uint32_t uid, uint32_t gid,
                               Follow follow = Follow::yes);
    virtual Result<void> utimens(std::string_view path, TimeUpdate atime, TimeUpdate mtime,
                                 Follow follow = Follow::yes);

    // --- extended attributes (never follow a final symlink's target: l*xattr semantics) ---
    virtual Result<std::string> getxattr(std::string_view path, std::string_view name);
    virtual Result<void> setxattr(std::string_view path, std::string_view name,
                                  std::string_view value, XattrMode mode = XattrMode::any);
    virtual Result<std::vector<std::string>> listxattr(std::string_view path);
    virtual Result<void> removexattr(std::string_view path, std::string_view name);

    // === the backend =========================================================================

    // A read-only backend frozen at this instant, contents included. O(1) where the backend
    // keeps versions (mem, overlay, volume); ENOTSUP where it cannot (a host directory).
    virtual Result<std::shared_ptr<Backend>> snapshot() = 0;

    virtual bool read_only() const noexcept = 0;
};

// A node held for the lifetime of this object: forget() on destruction (move-only).
class PACKFS_API HeldNode {
public:
    HeldNode() = default;
    HeldNode(Backend& fs, Node node) noexcept : fs_(&fs), node_(node) {}
    HeldNode(HeldNode&& o) noexcept : fs_(o.fs_), node_(o.node_) { o.node_ = {}; }
    HeldNode& operator=(HeldNode&& o) noexcept {
        if (this != &o) {
            reset();
            fs_ = o.fs_;
            node_ = o.node_;
            o.node_ = {};
        }
        return *this;
    }
    ~HeldNode() { reset(); }
    Node get() const noexcept { return node_; }
    Node release() noexcept { return std::exchange(node_, Node{}); }
    void reset() noexcept {
        if (node_ && node_ != kRootNode) fs_->forget(node_, 1);
        node_ = {};
    }

private:
    Backend* fs_ = nullptr;
    Node node_;
};

// The node a path names (walked with the generic walker through the node calls; a final symlink
// followed when `follow`), with one reference the caller gives back with forget().
PACKFS_API Result<Entry> lookup_path(Backend& fs, std::string_view path,
                                     Follow follow = Follow::yes);

// Bytes [offset, offset + length) of the file open as `from` into the one open as `to` at
// `to_offset`, through pread and pwrite, for a caller that holds handles and no nodes; returns
// what Backend::copy_range would (EBADF unless `from` reads and `to` writes; handles with one
// st_ino are taken for one file, whose overlapping ranges are EINVAL). It never shares chunks:
// that takes the node call.
PACKFS_API Result<uint64_t> copy_bytes(File& from, uint64_t offset, File& to, uint64_t to_offset,
                                       uint64_t length);

// Convenience over the contract, for callers and tests: whole-file read and write.
PACKFS_API Result<std::string> read_file(Backend& fs, std::string_view path);
PACKFS_API Result<void> write_file(Backend& fs, std::string_view path, std::string_view data,
                                   uint32_t mode = 0644);

}  // namespace packfs
