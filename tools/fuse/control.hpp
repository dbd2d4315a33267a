// The requests a mount answers beyond POSIX, sent as ioctls on any file or directory of it:
// compact the volume it serves, now (`packfs volume compact DIR` does it when DIR is mounted
// and so locked by the daemon; only root and the daemon's own user may ask), and make
// everything written so far durable (`packfs sync PATH`: anyone who can open a file there,
// as fsync; the kernel never sends syncfs to this kind of FUSE filesystem).
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
inline constexpr unsigned kIoctlSync = _IO('P', 2);

}  // namespace packfs::fuse
