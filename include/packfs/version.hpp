// The library's version: the one place it is written (CMakeLists.txt reads it from here). The
// macros are the headers' version, version() the library's that is loaded, for a program that
// wants to check the two agree.
#pragma once

#include "packfs/export.hpp"

#define PACKFS_VERSION_MAJOR 0
#define PACKFS_VERSION_MINOR 1
#define PACKFS_VERSION_PATCH 0
#define PACKFS_VERSION_STRING "0.1.0"

namespace packfs {

// "MAJOR.MINOR.PATCH" of the library in use.
PACKFS_API const char* version() noexcept;

}  // namespace packfs
