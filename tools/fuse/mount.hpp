// What a mount serves: any Backend, walked by node as the kernel addresses it (DESIGN §12): a
// FUSE node id is the Backend's Node id (the root is 1 in both), a kernel reference is a node
// reference (LOOKUP takes one, FORGET gives them back), and no request ever names a path, so
// trees of any depth work. What the kernel may cache depends on who else can change the tree.
#pragma once

#include <functional>
#include <memory>

#include "control.hpp"
#include "packfs/backend.hpp"

namespace packfs::fuse {

// How long the kernel may keep what it was told, and what it may cache.
struct CachePolicy {
    double entry_seconds = 1;        // names (and, with cache_negative, missing names)
    double attr_seconds = 1;         // attributes
    bool cache_negative = false;     // a missing name may be remembered as missing
    bool keep_page_cache = false;    // file contents stay cached across opens
    bool cache_directories = false;  // listings stay cached (FOPEN_CACHE_DIR)
    // Opening a file needs no state (every file is reachable by node): the kernel may skip OPEN
    // and RELEASE entirely (zero-message opens), and a read, write, fsync or fallocate that comes
    // without a handle opens the node for itself. A writable tree's O_TRUNC is then a SETATTR
    // (no atomic O_TRUNC), and fsync without a handle is the mount's sync.
    bool stateless_open = false;
    // The same for directories (an immutable tree only): each readdir without a handle lists
    // again, so listings are kept briefly by the driver, which would go stale if names changed.
    bool stateless_opendir = false;

    // Nothing can change (a pack): everything cached for good.
    static CachePolicy immutable();
    // The mount is the only writer (a volume, locked): the kernel's caches stay true until the
    // kernel itself changes the tree, which updates them; files open without a message.
    static CachePolicy exclusive();
    // Anyone may change it behind the mount (a host directory): short timeouts.
    static CachePolicy shared() { return {}; }
};

struct Mount {
    std::shared_ptr<Backend> fs;
    CachePolicy policy;
    // False when no file of the tree has an xattr or ever can (a pack without any): getxattr
    // answers ENOSYS once and the kernel stops asking.
    bool xattrs = true;
    // fsyncdir and the end of the mount (the volume's sync; empty: nothing to do).
    std::function<Result<void>()> sync;
    // The compaction ioctl (control.hpp); empty: ENOTTY.
    std::function<Result<CompactReply>()> compact;
};

}  // namespace packfs::fuse
