// Text for people: sizes, modes, times and virtual paths the way ls(1) and stat(1) show them,
// and the size syntax options accept ("128K", "1M").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "packfs/types.hpp"

namespace packfs::cli {

// "0 B", "512 B", "1.5 KiB", "12.3 MiB" (binary units, one decimal from KiB up).
std::string human_size(uint64_t bytes);

// "4096", "128K", "128k", "1M", "1MiB", "2G" (binary multiples); nullopt on anything else or
// on overflow.
std::optional<uint64_t> parse_size(std::string_view text);

// ls -l's ten characters, e.g. "drwxr-xr-x", "-rwsr-x---", "lrwxrwxrwx", "crw-rw----".
std::string mode_string(FileType type, uint32_t mode);

// stat(1)'s words for a type: "regular file", "directory", "symbolic link", ...
const char* type_description(FileType type, uint64_t size);

// "2024-01-02 03:04:05.123456789 +0100" in local time, as stat(1) prints.
std::string full_time(Time t);
// "2024-01-02 03:04" in local time, for ls -l.
std::string short_time(Time t);

// "/" + name under the root, dir + "/" + name elsewhere.
std::string child_path(std::string_view dir, std::string_view name);

// "1 file", "2 files".
std::string counted(uint64_t n, std::string_view one, std::string_view many);

// The major and minor numbers of a device number, as ls shows them ("8, 1").
std::string device_numbers(uint64_t rdev);

}  // namespace packfs::cli
