#include "core/checks.hpp"

#include <fcntl.h>

#include <cstring>

#include "packfs/path.hpp"

namespace packfs {

Result<void> check_name(std::string_view name, std::string_view op) {
    if (name.empty() || name == "." || name == ".." || name.find('/') != std::string_view::npos ||
        std::memchr(name.data(), '\0', name.size()) != nullptr)
        return fail(EINVAL, op, name);
    if (name.size() > kMaxNameLength) return fail(ENAMETOOLONG, op, name.substr(0, 64));
    return {};
}

Result<void> check_open_target(FileType type, int flags, std::string_view path) {
    const int access = flags & O_ACCMODE;
    if ((flags & O_DIRECTORY) && type != FileType::directory) return fail(ENOTDIR, "open", path);
    if (type == FileType::directory && access != O_RDONLY) return fail(EISDIR, "open", path);
    if (type == FileType::symlink) return fail(ELOOP, "open", path);  // O_NOFOLLOW
    if (type != FileType::regular && type != FileType::directory)
        return fail(ENOTSUP, "open", path);
    return {};
}

Result<void> check_xattr_name(std::string_view name, std::string_view op, std::string_view path) {
    if (name.empty() || name.size() > 255) return fail(name.empty() ? EINVAL : ERANGE, op, path);
    for (std::string_view ns : {"user.", "trusted.", "security.", "system."}) {
        if (name.starts_with(ns) && name.size() > ns.size()) return {};
    }
    return fail(ENOTSUP, op, path);
}

Result<void> check_xattr_value(std::string_view value, std::string_view path) {
    if (value.size() > kMaxXattrValue) return fail(E2BIG, "setxattr", path);
    return {};
}

Result<void> check_time(const TimeUpdate& update, std::string_view path) {
    if (update.kind == TimeUpdate::Kind::set &&
        (update.time.nsec < 0 || update.time.nsec > 999'999'999))
        return fail(EINVAL, "utimens", path);
    return {};
}

void apply_time(Time& field, const TimeUpdate& update, Time now) noexcept {
    switch (update.kind) {
        case TimeUpdate::Kind::omit: break;
        case TimeUpdate::Kind::now: field = now; break;
        case TimeUpdate::Kind::set: field = update.time; break;
    }
}

}  // namespace packfs
