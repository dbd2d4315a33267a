// Builds the Index of index_backend.hpp from any Backend, through its path calls alone
// (readdir, lstat, readlink, read_file, listxattr, getxattr): the tree is walked from "/"
// without following symlinks. Hard links share one entry: a name whose source st_ino was
// already indexed (an object with st_nlink > 1) becomes a HardLink to that entry, so the index
// keeps one st_ino per object and the source's st_nlink stays true. Special files (fifos,
// sockets, devices) keep their type and rdev and have no bytes. To index a tree that changes,
// pass a snapshot of it.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "index_backend.hpp"
#include "packfs/path.hpp"

namespace packfs::example {

inline Result<Index> build_index(Backend& source) {
    Index ix;
    std::map<uint64_t, uint32_t> seen;                   // source st_ino -> entry (hard links)
    std::vector<std::pair<uint32_t, std::string>> dirs;  // directories still to list
    auto add = [&](uint32_t parent, std::string_view name, std::string path) -> Result<void> {
        auto st = source.lstat(path);
        if (!st) return std::unexpected(st.error());
        const auto number = uint32_t(ix.entries.size());
        if (st->type != FileType::directory && st->nlink > 1) {
            auto [it, first] = seen.try_emplace(st->ino, number);
            if (!first) {
                ix.links.push_back(
                    {.parent = parent, .name = std::string(name), .entry = it->second});
                return {};
            }
        }
        Result<std::string> bytes = std::string();
        if (st->type == FileType::regular) bytes = read_file(source, path);
        if (st->type == FileType::symlink) bytes = source.readlink(path);
        if (!bytes) return std::unexpected(bytes.error());
        std::vector<std::pair<std::string, std::string>> xattrs;
        auto names = source.listxattr(path);
        if (!names) return std::unexpected(names.error());
        for (std::string& x : *names) {
            auto value = source.getxattr(path, x);
            if (!value) return std::unexpected(value.error());
            xattrs.emplace_back(std::move(x), std::move(*value));
        }
        ix.entries.push_back(
            {parent, std::string(name), *st, ix.blob.size(), bytes->size(), std::move(xattrs)});
        ix.blob += *bytes;
        if (st->type == FileType::directory) dirs.emplace_back(number, std::move(path));
        return {};
    };
    if (auto ok = add(0, "", "/"); !ok) return std::unexpected(ok.error());
    while (!dirs.empty()) {
        auto [dir, path] = std::move(dirs.back());
        dirs.pop_back();
        auto listed = source.readdir(path);
        if (!listed) return std::unexpected(listed.error());
        for (const DirEntry& d : *listed) {
            if (auto ok = add(dir, d.name, path_join(path, d.name)); !ok)
                return std::unexpected(ok.error());
        }
    }
    return ix;
}

}  // namespace packfs::example
