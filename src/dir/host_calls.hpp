// Small helpers over host syscalls shared by the dir backend's path calls
// (dir_attributes.cpp) and node calls (dir_node_calls.cpp). Errors are bare errno values.
#pragma once

#include <sys/stat.h>
#include <sys/xattr.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "packfs/types.hpp"

namespace packfs::dir {

// The errno of an int- (or long-) returning syscall: 0 on success.
inline int result_of(long rc) noexcept { return rc == 0 ? 0 : errno; }

// chmod of an fd (O_PATH ones too): fchmodat2 with AT_EMPTY_PATH, or through /proc before
// Linux 6.6.
int chmod_fd(int fd, uint32_t mode) noexcept;

inline timespec to_timespec(const TimeUpdate& u) noexcept {
    switch (u.kind) {
        case TimeUpdate::Kind::omit: return timespec{0, UTIME_OMIT};
        case TimeUpdate::Kind::now: return timespec{0, UTIME_NOW};
        case TimeUpdate::Kind::set: break;
    }
    return timespec{static_cast<time_t>(u.time.sec), static_cast<long>(u.time.nsec)};
}

// A variable-size answer (an xattr value, a name list): one call into 4 KiB, which holds
// nearly every value; only a longer one costs the call that asks its size, and a value that
// grew in between is asked again.
template <class Call>
int read_sized(std::string& out, Call&& call) {
    out.resize(4096);
    ssize_t n = call(out.data(), out.size());
    while (n < 0 && errno == ERANGE) {
        ssize_t size = call(nullptr, 0);
        if (size < 0) return errno;
        out.resize(static_cast<std::size_t>(size));
        n = call(out.data(), out.size());
    }
    if (n < 0) return errno;
    out.resize(static_cast<std::size_t>(n));
    return 0;
}

inline int xattr_flags(XattrMode mode) noexcept {
    switch (mode) {
        case XattrMode::create: return XATTR_CREATE;
        case XattrMode::replace: return XATTR_REPLACE;
        case XattrMode::any: break;
    }
    return 0;
}

// The names of a listxattr buffer (NUL-separated).
inline std::vector<std::string> split_xattr_names(const std::string& buf) {
    std::vector<std::string> names;
    for (std::size_t start = 0; start < buf.size();) {
        std::size_t end = buf.find('\0', start);
        if (end == std::string::npos) end = buf.size();
        names.emplace_back(buf.substr(start, end - start));
        start = end + 1;
    }
    return names;
}

}  // namespace packfs::dir
