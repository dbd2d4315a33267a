#include "tree.hpp"

#include <algorithm>

#include "format.hpp"

namespace packfs::cli {

Result<std::vector<DirEntry>> sorted_entries(Backend& fs, std::string_view dir) {
    auto entries = fs.readdir(dir);
    if (!entries) return entries;
    std::ranges::sort(*entries, {}, &DirEntry::name);
    return entries;
}

Result<EntryDetails> entry_details(Backend& fs, std::string_view path) {
    auto st = fs.lstat(path);
    if (!st) return std::unexpected(st.error());
    EntryDetails out{*st, {}, {}};
    if (st->type == FileType::symlink) {
        auto target = fs.readlink(path);
        if (!target) return std::unexpected(target.error());
        out.target = std::move(*target);
    }
    auto names = fs.listxattr(path);
    if (names) {
        out.xattrs = std::move(*names);
        std::ranges::sort(out.xattrs);
    } else if (names.error().code() != ENOTSUP) {
        return std::unexpected(names.error());
    }
    return out;
}

namespace {

Json time_json(Time t) {
    return Json{{"sec", t.sec}, {"nsec", t.nsec}};
}

}  // namespace

Json entry_json(std::string_view name, const EntryDetails& details) {
    const Stat& st = details.stat;
    Json out{{"name", std::string(name)},
             {"type", file_type_name(st.type)},
             {"mode", st.mode},
             {"mode_string", mode_string(st.type, st.mode)},
             {"nlink", st.nlink},
             {"uid", st.uid},
             {"gid", st.gid},
             {"size", st.size},
             {"rdev", st.rdev},
             {"ino", st.ino},
             {"blocks", st.blocks},
             {"atime", time_json(st.atime)},
             {"mtime", time_json(st.mtime)},
             {"ctime", time_json(st.ctime)}};
    if (st.type == FileType::symlink) out["target"] = details.target;
    out["xattrs"] = details.xattrs;
    return out;
}

namespace {

void walk_below(Backend& fs, const std::string& dir, const TreeVisitor& visitor) {
    auto entries = sorted_entries(fs, dir);
    if (!entries) {
        visitor.on_error(entries.error());
        return;
    }
    for (const DirEntry& entry : *entries) {
        const std::string path = child_path(dir, entry.name);
        auto st = fs.lstat(path);
        if (!st) {
            visitor.on_error(st.error());
            continue;
        }
        visitor.entry(path, *st);
        if (st->type == FileType::directory) walk_below(fs, path, visitor);
    }
}

}  // namespace

void walk_tree(Backend& fs, std::string_view root, const TreeVisitor& visitor) {
    const std::string start(root);
    auto st = fs.lstat(start);
    if (!st) {
        visitor.on_error(st.error());
        return;
    }
    visitor.entry(start, *st);
    if (st->type == FileType::directory) walk_below(fs, start, visitor);
}

}  // namespace packfs::cli
