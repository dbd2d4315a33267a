// libfuse's low-level operations, each a thin translation onto NodeFs (node_fs.hpp).
#pragma once

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include "node_fs.hpp"

namespace packfs::fuse {

// What every request's userdata points at.
struct MountContext {
    NodeFs* fs = nullptr;
    CachePolicy policy;
    bool xattrs = true;
    bool read_only = false;
    bool stateless_open = false;  // the kernel does zero-message opens (set at init)
};

const fuse_lowlevel_ops& operations();

}  // namespace packfs::fuse
