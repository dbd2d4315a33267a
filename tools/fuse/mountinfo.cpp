#include "mountinfo.hpp"

#include <fstream>
#include <functional>
#include <sstream>
#include <vector>

namespace packfs::fuse {

namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape(std::string_view field) {
    const auto octal = [&](std::size_t at) { return field[at] >= '0' && field[at] <= '7'; };
    std::string out;
    for (std::size_t i = 0; i < field.size(); ++i) {
        if (field[i] == '\\' && i + 3 < field.size() && octal(i + 1) && octal(i + 2) &&
            octal(i + 3)) {
            out += static_cast<char>((field[i + 1] - '0') * 64 + (field[i + 2] - '0') * 8 +
                                     (field[i + 3] - '0'));
            i += 3;
            continue;
        }
        out += field[i];
    }
    return out;
}

// "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue": the
// mountpoint is field 4; after the "-" come the type and the source.
std::optional<MountRecord> parse(const std::string& line) {
    std::istringstream in(line);
    std::vector<std::string> fields;
    for (std::string f; in >> f;) fields.push_back(f);
    for (std::size_t i = 6; i + 2 < fields.size(); ++i) {
        if (fields[i] == "-")
            return MountRecord{unescape(fields[4]), unescape(fields[i + 1]),
                               unescape(fields[i + 2])};
    }
    return std::nullopt;
}

std::optional<MountRecord> newest(const std::function<bool(const MountRecord&)>& match) {
    std::ifstream in("/proc/self/mountinfo");
    std::optional<MountRecord> found;
    for (std::string line; std::getline(in, line);) {
        auto record = parse(line);
        if (record && match(*record)) found = std::move(record);
    }
    return found;
}

}  // namespace

std::optional<MountRecord> mount_at(const std::string& mountpoint) {
    return newest([&](const MountRecord& r) { return r.mountpoint == mountpoint; });
}

std::optional<MountRecord> mount_of_source(const std::string& source) {
    return newest([&](const MountRecord& r) { return r.fstype == kFsType && r.source == source; });
}

}  // namespace packfs::fuse
