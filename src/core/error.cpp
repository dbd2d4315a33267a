#include "packfs/error.hpp"

#include <fmt/format.h>

#include <cstring>

namespace packfs {

std::string Error::message() const {
    std::string out = path_.empty() ? fmt::format("{}: {}", op_, std::strerror(code_))
                                    : fmt::format("{} {}: {}", op_, path_, std::strerror(code_));
    if (corruption_) {
        const Corruption& c = *corruption_;
        // A mismatch names both values; a fault with none to name (a text file's, a rule
        // broken) says where, or only what.
        if (c.expected != c.actual) {
            out += fmt::format(" ({} at offset {}: expected {:#x}, found {:#x})", c.what, c.offset,
                               c.expected, c.actual);
        } else if (c.offset != 0) {
            out += fmt::format(" ({} at offset {})", c.what, c.offset);
        } else {
            out += fmt::format(" ({})", c.what);
        }
    }
    if (!detail_.empty()) out += fmt::format(" ({})", detail_);
    return out;
}

std::string_view errno_name(int code) noexcept {
    switch (code) {
        case 0: return "OK";
        case ENOENT: return "ENOENT";
        case EEXIST: return "EEXIST";
        case ENOTDIR: return "ENOTDIR";
        case EISDIR: return "EISDIR";
        case ENOTEMPTY: return "ENOTEMPTY";
        case EROFS: return "EROFS";
        case EXDEV: return "EXDEV";
        case EINVAL: return "EINVAL";
        case ENAMETOOLONG: return "ENAMETOOLONG";
        case ELOOP: return "ELOOP";
        case EBADF: return "EBADF";
        case ENOSPC: return "ENOSPC";
        case EIO: return "EIO";
        case EACCES: return "EACCES";
        case EPERM: return "EPERM";
        case ENOTSUP: return "ENOTSUP";
        case ENODATA: return "ENODATA";
        case ERANGE: return "ERANGE";
        case EFBIG: return "EFBIG";
        case EMLINK: return "EMLINK";
        case EBUSY: return "EBUSY";
        case kErrCorrupt: return "EUCLEAN";
        default: return "E?";
    }
}

}  // namespace packfs
