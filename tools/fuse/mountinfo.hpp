// The kernel's table of mounts (/proc/self/mountinfo), for `packfs umount` and for finding
// the mount that serves a volume.
#pragma once

#include <optional>
#include <string>

namespace packfs::fuse {

inline constexpr std::string_view kFsType = "fuse.packfs";

struct MountRecord {
    std::string mountpoint;
    std::string fstype;  // "fuse.packfs" for ours
    std::string source;  // what packfs mount was given (absolute)
};

// The mount whose mountpoint is `mountpoint` (absolute, as realpath gives it); the newest if
// several are stacked there.
std::optional<MountRecord> mount_at(const std::string& mountpoint);
// Our mount serving `source` (absolute), if any.
std::optional<MountRecord> mount_of_source(const std::string& source);

}  // namespace packfs::fuse
