// The one request a mount answers beyond POSIX: compact the volume it serves, now. Sent as an
// ioctl on any directory of the mount (`packfs volume compact DIR` does it when DIR is
// mounted and so locked by the daemon). Only root and the daemon's own user may ask.
#pragma once

#include <sys/ioctl.h>

#include <cstdint>

namespace packfs::fuse {

struct CompactReply {
    uint64_t generation;       // the new one
    uint64_t records_carried;  // records made meanwhile, moved to the new journal
    uint64_t pack_bytes;
    uint64_t micros;           // how long it took
};

inline constexpr unsigned kIoctlCompact = _IOR('P', 1, CompactReply);

}  // namespace packfs::fuse
