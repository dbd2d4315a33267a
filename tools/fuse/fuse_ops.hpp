// libfuse's low-level operations, each a thin translation onto the Backend's node calls.
#pragma once

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include "listing_cache.hpp"
#include "mount.hpp"

namespace packfs::fuse {

// What every request's userdata points at.
struct MountContext {
    Mount* mount = nullptr;
    bool read_only = false;
    bool stateless_open = false;     // the kernel does zero-message opens (set at init)
    bool stateless_opendir = false;  // ... and opendirs
    ListingCache listings;           // for zero-message opendir
};

const fuse_lowlevel_ops& operations();

}  // namespace packfs::fuse
