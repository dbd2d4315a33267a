// What the FUSE driver serves: a tree addressed by node ids, as the kernel addresses it (a
// lookup names an entry of a parent node; every later call names the node). Two kinds stand
// behind it: a pack, walked directly by its record numbers (pack_nodes.cpp: no table, no
// paths, no locks), and any writable Backend (backend_nodes.cpp: a table of the nodes the
// kernel knows, each remembering where it is linked, so a call can name its path).
//
// Node ids: FUSE_ROOT_ID (1) is the root. Every other id is stable for the life of the mount
// and is never reused by another file while the mount lives, so generation numbers are 0.
#pragma once

#include <sys/types.h>

#include <cerrno>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "control.hpp"
#include "packfs/backend.hpp"
#include "packfs/error.hpp"
#include "packfs/types.hpp"

namespace packfs::fuse {

inline constexpr uint64_t kRootNode = 1;

// A directory entry resolved to its node.
struct Entry {
    uint64_t node = 0;
    Stat stat;
};

// One entry of a listing. `stat` is whole when the listing could give it for free (a pack);
// otherwise only ino and type are set, and entry() looks the rest up.
struct ListedEntry {
    std::string name;
    uint64_t node = 0;
    Stat stat;
};

// The changes of one setattr. Unset fields are left alone.
struct AttrChange {
    bool mode = false, uid = false, gid = false, size = false;
    Stat to;  // mode, uid, gid, size
    TimeUpdate atime = TimeUpdate::omit(), mtime = TimeUpdate::omit();
};

// An open file of the mount.
class OpenFile {
public:
    virtual ~OpenFile() = default;
    // Bytes [offset, offset + size) clipped to the end: a span into the pack's mapping where
    // the bytes lie there raw (no copy), else copied into `scratch`.
    virtual Result<std::span<const std::byte>> read(uint64_t offset, std::size_t size,
                                                    std::string& scratch) = 0;
    // Where bytes [offset, offset + size) lie raw in a host file (a pack's stream, stored
    // uncompressed), so the driver can splice them from that file into the kernel: no copy
    // through the daemon and no page of the mapping touched (the daemon's RSS stays its own).
    // nullopt: use read().
    struct FileBytes {
        int fd;
        uint64_t offset;
        std::size_t length;
    };
    virtual std::optional<FileBytes> file_bytes(uint64_t, std::size_t) { return std::nullopt; }
    virtual Result<std::size_t> write(std::span<const std::byte> data, uint64_t offset) = 0;
    virtual Result<void> truncate(uint64_t size) = 0;
    virtual Result<void> fsync(bool data_only) = 0;
    virtual Result<Stat> fstat() = 0;
};

// How long the kernel may keep what it was told, and what it may cache.
struct CachePolicy {
    double entry_seconds = 1;     // names (and, for a pack, negative lookups too)
    double attr_seconds = 1;      // attributes
    bool cache_negative = false;  // a missing name may be remembered as missing
    bool keep_page_cache = false; // file contents stay cached across opens
    bool cache_directories = false;  // listings stay cached (FOPEN_CACHE_DIR)
    // Opens need no state (a pack): the kernel may skip OPEN/OPENDIR and RELEASE entirely
    // (zero-message opens); reads then come without a handle and list() is asked per readdir,
    // so it must be cheap to repeat.
    bool stateless_open = false;
};

class NodeFs {
public:
    virtual ~NodeFs() = default;

    virtual bool read_only() const noexcept = 0;
    virtual CachePolicy cache_policy() const noexcept = 0;
    // False when no file of the tree has an xattr or ever can (a pack without any): the
    // driver then answers getxattr/listxattr with ENOSYS once and the kernel stops asking.
    virtual bool has_xattrs() const noexcept = 0;

    // The entry `name` of directory `parent`. Does not count as a kernel reference:
    // remember() does, once the entry has reached the kernel.
    virtual Result<Entry> lookup(uint64_t parent, std::string_view name) = 0;
    // The kernel now holds one more reference to `entry` under (parent, name).
    virtual void remember(uint64_t parent, std::string_view name, const Entry& entry) = 0;
    // The kernel dropped `count` references to `node`.
    virtual void forget(uint64_t node, uint64_t count) = 0;

    // `file` is the open file the call came through (fstat), or null.
    virtual Result<Stat> getattr(uint64_t node, OpenFile* file) = 0;
    // `file` is the open file the change came through (ftruncate, futimens), or null.
    virtual Result<Stat> setattr(uint64_t node, const AttrChange& change, OpenFile* file) = 0;
    virtual Result<std::string> readlink(uint64_t node) = 0;
    using Listing = std::shared_ptr<const std::vector<ListedEntry>>;
    virtual Result<Listing> list(uint64_t node) = 0;
    // The whole Entry of a listed one, for readdirplus (uncounted, as lookup()).
    virtual Result<Entry> entry(uint64_t parent, const ListedEntry& listed) = 0;

    // O_ACCMODE, O_APPEND and O_TRUNC of `flags` apply.
    virtual Result<std::unique_ptr<OpenFile>> open(uint64_t node, int flags) = 0;
    // Makes and opens a new regular file (O_EXCL is implied unless `flags` lacks it and the
    // name exists: then the existing file is opened, as open(2) does).
    virtual Result<std::pair<Entry, std::unique_ptr<OpenFile>>> create(uint64_t parent,
                                                                       std::string_view name,
                                                                       int flags,
                                                                       uint32_t mode) = 0;
    // The open file is closed (its handle is gone).
    virtual void release(uint64_t node, OpenFile& file) = 0;
    // What an open directory holds for as long as it is open, released with release(): a
    // directory removed while open stays alive (its inode number is not reused, fstat works),
    // as on a kernel filesystem. Null when nothing needs holding (a pack).
    virtual Result<std::unique_ptr<OpenFile>> opendir(uint64_t) { return nullptr; }

    virtual Result<Entry> mkdir(uint64_t parent, std::string_view name, uint32_t mode) = 0;
    virtual Result<Entry> mknod(uint64_t parent, std::string_view name, FileType type,
                                uint32_t mode, uint64_t rdev) = 0;
    virtual Result<Entry> symlink(uint64_t parent, std::string_view name,
                                  std::string_view target) = 0;
    virtual Result<Entry> link(uint64_t node, uint64_t new_parent, std::string_view new_name) = 0;
    virtual Result<void> unlink(uint64_t parent, std::string_view name) = 0;
    virtual Result<void> rmdir(uint64_t parent, std::string_view name) = 0;
    virtual Result<void> rename(uint64_t parent, std::string_view name, uint64_t new_parent,
                                std::string_view new_name, RenameFlags flags) = 0;

    virtual Result<std::string> getxattr(uint64_t node, std::string_view name) = 0;
    virtual Result<std::vector<std::string>> listxattr(uint64_t node) = 0;
    virtual Result<void> setxattr(uint64_t node, std::string_view name, std::string_view value,
                                  XattrMode mode) = 0;
    virtual Result<void> removexattr(uint64_t node, std::string_view name) = 0;

    virtual Result<StatFs> statfs() = 0;
    // Everything acknowledged so far made durable (fsyncdir, unmount).
    virtual Result<void> sync() = 0;
    // Compacts the volume served (control.hpp); ENOTTY for anything else.
    virtual Result<CompactReply> compact() { return fail(ENOTTY, "compact"); }
};

// A pack (read-only; every mutation EROFS), walked by record number.
Result<std::unique_ptr<NodeFs>> pack_nodes(std::shared_ptr<Backend> pack);

// Any Backend, through a table of the nodes the kernel holds. `exclusive` says the mount is
// the only writer of the tree (a volume): the kernel may then cache names and attributes for
// long. A host directory is not exclusive (anyone may change it): short timeouts. `sync` is
// what sync() runs (the volume's; empty for none).
struct BackendNodesOptions {
    bool exclusive = false;
    std::function<Result<void>()> sync;
    std::function<Result<CompactReply>()> compact;  // empty: ENOTTY
};
Result<std::unique_ptr<NodeFs>> backend_nodes(std::shared_ptr<Backend> backend,
                                              BackendNodesOptions options);

}  // namespace packfs::fuse
