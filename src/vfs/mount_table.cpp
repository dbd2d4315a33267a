#include "vfs/mount_table.hpp"

#include <algorithm>
#include <unordered_set>

#include "packfs/path.hpp"

namespace packfs::vfs {

namespace {
// The number of components of a normal path ("/": 0).
std::size_t depth_of(std::string_view normal_path) noexcept {
    if (normal_path == "/") return 0;
    return static_cast<std::size_t>(std::count(normal_path.begin(), normal_path.end(), '/'));
}
}  // namespace

void Table::put(std::string_view path, UnionPtr members) {
    if (!mounts.insert_or_assign(std::string(path), std::move(members))) return;
    const std::size_t depth = depth_of(path);
    if (paths_at_depth.size() <= depth) paths_at_depth.resize(depth + 1);
    ++paths_at_depth[depth];
}

void Table::remove(std::string_view path) {
    if (!mounts.erase(path)) return;
    --paths_at_depth[depth_of(path)];
    while (!paths_at_depth.empty() && paths_at_depth.back() == 0) paths_at_depth.pop_back();
}

TablePtr seal(Table table) {
    NodeDesc root;
    root.path = "/";
    if (const UnionPtr* members = table.mounts.find(std::string_view("/"))) {
        for (const Member& m : **members) root.parts.push_back(m.root_part());
    }
    table.root = std::make_shared<const NodeDesc>(std::move(root));
    table.deepest = table.paths_at_depth.empty() ? 0 : table.paths_at_depth.size() - 1;
    return std::make_shared<const Table>(std::move(table));
}

namespace {
// Mount paths strictly below `dir` start with this.
std::string child_prefix(std::string_view dir) {
    std::string p(dir);
    if (p.back() != '/') p += '/';
    return p;
}
}  // namespace

bool has_mount_below(const Table& table, std::string_view normal_path) {
    // A mount strictly below has more components than the path: none deeper than `deepest`.
    const auto depth =
        normal_path == "/" ? 0 : std::count(normal_path.begin(), normal_path.end(), '/');
    if (static_cast<std::size_t>(depth) >= table.deepest) return false;
    const std::string prefix = child_prefix(normal_path);
    auto it = table.mounts.lower_bound(prefix);
    if (it != table.mounts.end() && it.key() == prefix) ++it;  // "/" itself is not below "/"
    return it != table.mounts.end() && std::string_view(it.key()).starts_with(prefix);
}

std::vector<std::string> mount_children(const Table& table, std::string_view normal_path) {
    const std::string prefix = child_prefix(normal_path);
    std::vector<std::string> names;
    std::unordered_set<std::string> seen;  // "c", "c-x", "c/y" sort as c, c-x, c again
    auto it = table.mounts.lower_bound(prefix);
    if (it != table.mounts.end() && it.key() == prefix) ++it;  // "/" itself is not below "/"
    while (it != table.mounts.end() && std::string_view(it.key()).starts_with(prefix)) {
        std::string_view rest = std::string_view(it.key()).substr(prefix.size());
        std::string_view child = rest.substr(0, rest.find('/'));
        if (seen.emplace(child).second) names.emplace_back(child);
        if (child.size() < rest.size()) {
            // Skip the rest of this child's subtree: its keys are prefix/child/..., which sort
            // before prefix/child0 ('0' follows '/').
            it = table.mounts.lower_bound(prefix + std::string(child) + '0');
        } else {
            ++it;
        }
    }
    return names;
}

}  // namespace packfs::vfs
