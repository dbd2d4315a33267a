// Reading a tree through the Backend contract the way the commands present it: entries in
// byte order of their names (a backend's own readdir order is not a contract), and one
// entry's metadata with its link target and xattr names, as ls -l, stat and diff show it.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "packfs/backend.hpp"
#include "report.hpp"

namespace packfs::cli {

Result<std::vector<DirEntry>> sorted_entries(Backend& fs, std::string_view dir);

struct EntryDetails {
    Stat stat;
    std::string target;               // a symlink's target
    std::vector<std::string> xattrs;  // names, sorted
};

// lstat + readlink + listxattr of `path` (a backend without xattrs lists none).
Result<EntryDetails> entry_details(Backend& fs, std::string_view path);

// {"name", "type", "mode", "mode_string", "nlink", "uid", "gid", "size", "rdev", "ino",
//  "blocks", "atime"/"mtime"/"ctime": {"sec", "nsec"}, "target" (symlinks), "xattrs"}
Json entry_json(std::string_view name, const EntryDetails& details);

// Visits every entry under `root` (root first, then depth first, names in byte order) with
// its path and lstat. A directory that cannot be listed is reported to `on_error`, and the
// walk goes on with its siblings.
struct TreeVisitor {
    std::function<void(const std::string& path, const Stat& stat)> entry;
    std::function<void(const Error& error)> on_error;
};
void walk_tree(Backend& fs, std::string_view root, const TreeVisitor& visitor);

}  // namespace packfs::cli
