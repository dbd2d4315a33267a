// What the shared libraries export: the public API only. The libraries are built with hidden
// visibility by default (src/CMakeLists.txt), so everything not marked here stays private to
// them and can change without an ABI break.
#pragma once

#define PACKFS_API __attribute__((visibility("default")))
