#include "volume/powercut/tree_dump.hpp"

#include <xxhash.h>

#include <algorithm>
#include <set>
#include <vector>

#include <fmt/format.h>

namespace packfs::powercut {
namespace {

uint64_t hash_of(std::string_view bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

Result<void> dump_into(Backend& fs, const std::string& path, std::vector<std::string>& lines) {
    auto st = fs.lstat(path);
    if (!st) return std::unexpected(st.error());
    std::string line = fmt::format("{} {} {:04o} {}:{}", path, file_type_name(st->type), st->mode,
                                   st->uid, st->gid);
    if (st->type != FileType::directory) line += fmt::format(" nlink={} size={}", st->nlink, st->size);
    if (st->type == FileType::regular) {
        auto data = read_file(fs, path);
        if (!data) return std::unexpected(data.error());
        line += fmt::format(" data={:016x}", hash_of(*data));
    } else if (st->type == FileType::symlink) {
        auto target = fs.readlink(path);
        if (!target) return std::unexpected(target.error());
        line += fmt::format(" -> {}", *target);
    }
    auto names = fs.listxattr(path);
    if (!names) return std::unexpected(names.error());
    std::sort(names->begin(), names->end());
    for (const auto& name : *names) {
        auto value = fs.getxattr(path, name);
        if (!value) return std::unexpected(value.error());
        line += fmt::format(" {}={:016x}", name, hash_of(*value));
    }
    lines.push_back(std::move(line));
    if (st->type != FileType::directory) return {};
    auto entries = fs.readdir(path);
    if (!entries) return std::unexpected(entries.error());
    std::vector<std::string> children;
    for (const auto& e : *entries) children.push_back(e.name);
    std::sort(children.begin(), children.end());
    for (const auto& name : children) {
        if (auto ok = dump_into(fs, path == "/" ? "/" + name : path + "/" + name, lines); !ok)
            return ok;
    }
    return {};
}

std::vector<std::string_view> lines_of(std::string_view text) {
    std::vector<std::string_view> out;
    while (!text.empty()) {
        const auto nl = text.find('\n');
        out.push_back(text.substr(0, nl));
        if (nl == std::string_view::npos) break;
        text.remove_prefix(nl + 1);
    }
    return out;
}

}  // namespace

Result<std::string> dump_tree(Backend& fs) {
    std::vector<std::string> lines;
    if (auto ok = dump_into(fs, "/", lines); !ok) return std::unexpected(ok.error());
    std::string out;
    for (const auto& line : lines) out += line + "\n";
    return out;
}

std::string diff_dumps(std::string_view expected, std::string_view actual, int limit) {
    const auto want = lines_of(expected), got = lines_of(actual);
    const std::multiset<std::string_view> want_set(want.begin(), want.end()),
        got_set(got.begin(), got.end());
    std::string out;
    int shown = 0;
    for (auto line : want)
        if (!got_set.contains(line) && shown++ < limit) out += fmt::format("    - {}\n", line);
    for (auto line : got)
        if (!want_set.contains(line) && shown++ < limit) out += fmt::format("    + {}\n", line);
    if (shown > limit) out += fmt::format("    ... {} lines differ in all\n", shown);
    return out;
}

}  // namespace packfs::powercut
