#include "pack/golden_describe.hpp"

#include <algorithm>
#include <map>
#include <sstream>

#include "pack/format/digest.hpp"
#include "packfs/path.hpp"

namespace packfs::golden {

std::string hex_sha256(std::string_view bytes) {
    return pack::to_hex(pack::sha256(std::as_bytes(std::span(bytes.data(), bytes.size()))));
}

namespace {

// Every entry, one line each: type, mode, ids, nlink, size (not for directories, whose size
// backends report differently), rdev, times with ns, content SHA-256 or target, xattrs.
Result<void> describe(Backend& fs, const std::string& path, std::map<std::string, std::string>& out) {
    auto st = fs.lstat(path);
    if (!st) return std::unexpected(st.error());
    std::ostringstream line;
    line << file_type_name(st->type) << " mode=" << std::oct << st->mode << std::dec
         << " uid=" << st->uid << " gid=" << st->gid << " nlink=" << st->nlink;
    if (st->type != FileType::directory) line << " size=" << st->size;
    line << " rdev=" << st->rdev << " atime=" << st->atime.sec << "." << st->atime.nsec
         << " mtime=" << st->mtime.sec << "." << st->mtime.nsec << " ctime=" << st->ctime.sec
         << "." << st->ctime.nsec;
    if (st->type == FileType::regular) {
        auto content = read_file(fs, path);
        if (!content) return std::unexpected(content.error());
        line << " sha256=" << hex_sha256(*content);
    } else if (st->type == FileType::symlink) {
        auto target = fs.readlink(path);
        if (!target) return std::unexpected(target.error());
        line << " -> " << hex_sha256(*target);
    }
    if (st->type != FileType::symlink) {
        auto names = fs.listxattr(path);
        if (!names) return std::unexpected(names.error());
        std::sort(names->begin(), names->end());
        for (const auto& n : *names) {
            auto v = fs.getxattr(path, n);
            if (!v) return std::unexpected(v.error());
            line << " " << n << "=" << hex_sha256(*v);
        }
    }
    out[hex_sha256(path)] = line.str();  // names may be any bytes: key by their hash
    if (st->type == FileType::directory) {
        auto entries = fs.readdir(path);
        if (!entries) return std::unexpected(entries.error());
        for (const auto& e : *entries) {
            if (auto r = describe(fs, path_join(path, e.name), out); !r) return r;
        }
    }
    return {};
}

}  // namespace

std::string describe_all(Backend& fs) {
    std::map<std::string, std::string> lines;
    if (auto r = describe(fs, "/", lines); !r) return "error: " + r.error().message();
    std::string text;
    for (const auto& [key, line] : lines) text += key + " " + line + "\n";
    return text;
}

}  // namespace packfs::golden
