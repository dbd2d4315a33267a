// Host metadata in the contract's terms: one conversion from stat(2) and statx(2) records, for
// every part of PackFS that reads a host filesystem (the dir backend, the pack writer's host
// source, the CLI's extractor).
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "packfs/types.hpp"

namespace packfs {

Stat stat_from_host(const struct stat& st) noexcept;
Stat stat_from_statx(const struct statx& st) noexcept;
StatFs statfs_from_host(const struct statvfs& sv) noexcept;
// The DT_* type of a dirent; false for DT_UNKNOWN (the caller must stat).
bool file_type_from_dirent(unsigned char d_type, FileType& out) noexcept;

}  // namespace packfs
