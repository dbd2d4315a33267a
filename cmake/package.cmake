# `make deb`: one Debian package with everything `cmake --install` puts under /usr (the program,
# its man pages and completion, the libraries, headers and the CMake and pkg-config files).
# Its dependencies are worked out by dpkg-shlibdeps from what the binaries link.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME packfs)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "packs, overlays, volumes and remote packs: a userspace filesystem library, CLI and FUSE driver")
set(CPACK_PACKAGE_DESCRIPTION
  "PackFS keeps a whole directory tree in one immutable, memory-mapped pack, with a writable
overlay, a journal that makes changes durable and compaction into a fresh pack. This package
holds the packfs program (build, read, verify, mount with FUSE, push and pull packs to OCI
registries), its man pages and bash completion, and the libraries with their headers, CMake
package and pkg-config files.")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "PackFS developers")
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # packfs_VERSION_ARCH.deb
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# libcurl is loaded when a URL is opened (src/remote/curl_api.cpp), so dpkg-shlibdeps cannot see it.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libcurl4")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "fuse3")  # fusermount3: mounts by users other than root
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_COMPRESSION_TYPE zstd)
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/package)
include(CPack)
