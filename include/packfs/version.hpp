// The library's version: the one place it is written (CMakeLists.txt reads it from here). The
// macros are the headers' version, version() the library's that is loaded, for a program that
// wants to check the two agree.
#pragma once

#include <cstdint>

#include "packfs/export.hpp"

#define PACKFS_VERSION_MAJOR 0
#define PACKFS_VERSION_MINOR 1
#define PACKFS_VERSION_PATCH 0
#define PACKFS_VERSION_STRING "0.1.0"

namespace packfs {

// "MAJOR.MINOR.PATCH" of the library in use.
PACKFS_API const char* version() noexcept;

// The on-disk formats the library in use reads and writes (docs/FORMAT.md, docs/JOURNAL.md).
struct FormatVersions {
    uint32_t pack_oldest = 0;   // the oldest pack format read and written
    uint32_t pack_newest = 0;   // the newest, and what a build writes by default
    uint32_t journal = 0;       // the volume journal's format
};
PACKFS_API FormatVersions format_versions() noexcept;

}  // namespace packfs
