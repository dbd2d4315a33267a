// The Backend contract (DESIGN §4): one abstract, POSIX-shaped interface that every backend
// implements (mem, dir, pack, overlay, volume, the Vfs itself) and every frontend uses (the
// C++ API, the CLI, the FUSE driver). A frontend never knows which backend serves it.
//
// Semantics follow POSIX where POSIX speaks:
// - Paths are virtual and absolute; each call normalises its path (see path.hpp). A trailing
//   '/' requires the final component to be a directory.
// - rename over an existing entry is atomic; RenameFlags::noreplace and ::exchange behave as
//   renameat2's; renaming a directory into its own subtree is EINVAL.
// - An unlinked file stays readable and writable through the File handles open on it.
// - A write is visible to every reader as soon as it returns.
// - Every backend is safe for concurrent use from many threads.
// - A read-only backend answers every mutation with EROFS; an operation a backend does not
//   support at all answers ENOTSUP.
// - Backends do not check permissions; that is the frontend's job (FUSE default_permissions).
// - Special files (fifo, devices, sockets) are created, stored and listed, but open() on
//   one answers ENOTSUP.
#pragma once

#include <fcntl.h>

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "packfs/error.hpp"
#include "packfs/types.hpp"

namespace packfs {

// An open file. Reads and writes take explicit offsets; the handle has no file position.
class File {
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
};

using FileHandle = std::unique_ptr<File>;

class Backend {
public:
    virtual ~Backend() = default;

    // --- metadata and names -------------------------------------------------------------
    virtual Result<Stat> stat(std::string_view path) = 0;   // follows a final symlink
    virtual Result<Stat> lstat(std::string_view path) = 0;  // does not
    // Entries of a directory, without "." and "..", in the backend's own order.
    virtual Result<std::vector<DirEntry>> readdir(std::string_view path) = 0;
    virtual Result<std::string> readlink(std::string_view path) = 0;
    virtual Result<StatFs> statfs(std::string_view path) = 0;

    // --- files --------------------------------------------------------------------------
    // `flags` is the O_* subset O_RDONLY/O_WRONLY/O_RDWR, O_CREAT, O_EXCL, O_TRUNC, O_APPEND,
    // O_NOFOLLOW, O_DIRECTORY; `mode` applies when O_CREAT creates the file. Opening a
    // directory for writing is EISDIR; O_NOFOLLOW on a symlink is ELOOP.
    virtual Result<FileHandle> open(std::string_view path, int flags, uint32_t mode = 0644) = 0;
    virtual Result<void> truncate(std::string_view path, uint64_t size) = 0;

    // --- namespace ----------------------------------------------------------------------
    virtual Result<void> mkdir(std::string_view path, uint32_t mode = 0755) = 0;
    virtual Result<void> rmdir(std::string_view path) = 0;
    virtual Result<void> unlink(std::string_view path) = 0;
    virtual Result<void> rename(std::string_view from, std::string_view to,
                                RenameFlags flags = RenameFlags::none) = 0;
    virtual Result<void> symlink(std::string_view target, std::string_view link_path) = 0;
    virtual Result<void> link(std::string_view existing, std::string_view new_path) = 0;
    // Creates a fifo, socket, char or block device (`rdev` for devices) or an empty regular
    // file; a directory or symlink type is EINVAL.
    virtual Result<void> mknod(std::string_view path, FileType type, uint32_t mode,
                               uint64_t rdev = 0) = 0;

    // --- attributes ---------------------------------------------------------------------
    virtual Result<void> chmod(std::string_view path, uint32_t mode) = 0;
    virtual Result<void> chown(std::string_view path, uint32_t uid, uint32_t gid,
                               Follow follow = Follow::yes) = 0;
    virtual Result<void> utimens(std::string_view path, TimeUpdate atime, TimeUpdate mtime,
                                 Follow follow = Follow::yes) = 0;

    // --- extended attributes (never follow a final symlink's target: l*xattr semantics) ---
    virtual Result<std::string> getxattr(std::string_view path, std::string_view name) = 0;
    virtual Result<void> setxattr(std::string_view path, std::string_view name,
                                  std::string_view value, XattrMode mode = XattrMode::any) = 0;
    virtual Result<std::vector<std::string>> listxattr(std::string_view path) = 0;
    virtual Result<void> removexattr(std::string_view path, std::string_view name) = 0;

    // --- versions -----------------------------------------------------------------------
    // A read-only backend frozen at this instant, contents included. O(1) where the backend
    // keeps versions (mem, overlay, volume); ENOTSUP where it cannot (a host directory).
    virtual Result<std::shared_ptr<Backend>> snapshot() = 0;

    virtual bool read_only() const noexcept = 0;
};

// Convenience over the contract, for callers and tests: whole-file read and write.
Result<std::string> read_file(Backend& fs, std::string_view path);
Result<void> write_file(Backend& fs, std::string_view path, std::string_view data,
                        uint32_t mode = 0644);

}  // namespace packfs
