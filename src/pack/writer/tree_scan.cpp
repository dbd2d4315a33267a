#include "pack/writer/tree_scan.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <utility>

#include "packfs/path.hpp"

namespace packfs::pack {

namespace {

// Xattr limits of Linux, which every pack reader may rely on.
constexpr std::size_t kMaxXattrName = 255;
constexpr std::size_t kMaxXattrValue = 65536;

Result<void> check_name(std::string_view name, const std::string& dir) {
    if (name.empty() || name == "." || name == ".." ||
        name.find_first_of(std::string_view("/\0", 2)) != std::string_view::npos)
        return fail(EINVAL, "build: invalid name", path_join(dir, name.empty() ? "?" : name));
    if (name.size() > kMaxNameLength) return fail(ENAMETOOLONG, "build", path_join(dir, name));
    return {};
}

// The symlink target and xattrs of `inode`, from `node` when the source listed them.
Result<void> read_extras(TreeSource& source, ScannedInode& inode, SourceNode* node,
                         uint64_t& xattr_count) {
    if (inode.stat.type == FileType::symlink) {
        if (node && node->has_extras) {
            inode.target = std::move(node->target);
        } else {
            auto target = source.readlink({inode.path, inode.handle});
            if (!target) return std::unexpected(target.error());
            inode.target = std::move(*target);
        }
        if (inode.target.empty() || inode.target.size() > kMaxPathLength)
            return fail(EINVAL, "build: invalid symlink target", inode.path);
    }
    Xattrs xattrs;
    if (node && node->has_extras) {
        xattrs = std::move(node->xattrs);
    } else {
        auto listed = source.xattrs({inode.path, inode.handle});
        if (!listed) return std::unexpected(listed.error());
        xattrs = std::move(*listed);
    }
    std::sort(xattrs.begin(), xattrs.end());
    for (const auto& [name, value] : xattrs) {
        if (name.empty() || name.size() > kMaxXattrName || value.size() > kMaxXattrValue)
            return fail(E2BIG, "build: xattr over the Linux limits", inode.path);
    }
    xattr_count += xattrs.size();
    inode.xattrs = std::move(xattrs);
    return {};
}

}  // namespace

Result<ScannedTree> scan_tree(TreeSource& source, const ExcludePatterns& exclude,
                              const std::function<void(uint64_t)>& on_entry) {
    ScannedTree tree;
    if (const uint64_t hint = source.inode_count_hint(); hint > 0) {
        tree.inodes.reserve(hint);
        tree.dirents.reserve(hint);
    }
    auto root = source.root();
    if (!root) return std::unexpected(root.error());
    ScannedInode root_inode;
    root_inode.stat = root->stat;
    root_inode.path = "/";
    root_inode.handle = root->handle;
    root_inode.names = 1;
    tree.inodes.push_back(std::move(root_inode));
    if (auto r = read_extras(source, tree.inodes[0], nullptr, tree.xattr_count); !r)
        return std::unexpected(r.error());

    std::map<std::pair<uint64_t, uint64_t>, uint32_t> linked;  // identity -> inode number
    std::vector<uint32_t> directories{1};
    for (std::size_t next = 0; next < directories.size(); ++next) {
        uint32_t dir_ino = directories[next];
        std::string dir_path = tree.inodes[dir_ino - 1].path;
        auto listed = source.list({dir_path, tree.inodes[dir_ino - 1].handle});
        if (!listed) return std::unexpected(listed.error());
        // Sorted by name through small keys: a name's first 8 bytes (big-endian, so integer
        // order is byte order) decide most comparisons without touching the big nodes.
        struct Key {
            uint64_t prefix;
            SourceNode* node;
        };
        std::vector<Key> keys(listed->size());
        for (std::size_t i = 0; i < keys.size(); ++i) {
            SourceNode& n = (*listed)[i];
            uint64_t prefix = 0;
            std::memcpy(&prefix, n.name.data(), std::min<std::size_t>(8, n.name.size()));
            keys[i] = Key{__builtin_bswap64(prefix), &n};
        }
        std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
            if (a.prefix != b.prefix) return a.prefix < b.prefix;
            return a.node->name < b.node->name;
        });
        std::vector<SourceNode*> order(keys.size());
        for (std::size_t i = 0; i < keys.size(); ++i) order[i] = keys[i].node;
        const uint64_t first_dirent = tree.dirents.size();
        for (std::size_t i = 0; i < order.size(); ++i) {
            SourceNode& node = *order[i];
            if (auto r = check_name(node.name, dir_path); !r) return std::unexpected(r.error());
            if (i > 0 && node.name == order[i - 1]->name)
                return fail(EINVAL, "build: duplicate name", path_join(dir_path, node.name));
            bool is_dir = node.stat.type == FileType::directory;
            std::string path = path_join(dir_path, node.name);
            if (!exclude.empty() && exclude.excludes(path, is_dir)) {
                ++tree.excluded;
                continue;
            }
            if (!is_dir && node.stat.nlink > 1) {
                auto found = linked.find(node.identity);
                if (found != linked.end()) {
                    ++tree.inodes[found->second - 1].names;
                    ++tree.hard_links;
                    tree.dirents.push_back({found->second, std::move(node.name)});
                    continue;
                }
            }
            if (tree.inodes.size() >= std::numeric_limits<uint32_t>::max())
                return fail(EFBIG, "build: more than 2^32 - 2 inodes", dir_path);
            auto ino = static_cast<uint32_t>(tree.inodes.size() + 1);
            if (!is_dir && node.stat.nlink > 1) linked.emplace(node.identity, ino);
            ScannedInode inode;
            inode.stat = node.stat;
            inode.path = std::move(path);
            inode.handle = node.handle;
            inode.names = 1;
            if (auto r = read_extras(source, inode, &node, tree.xattr_count); !r)
                return std::unexpected(r.error());
            tree.inodes.push_back(std::move(inode));
            if (is_dir) {
                ++tree.inodes[dir_ino - 1].subdirectories;
                directories.push_back(ino);
            }
            tree.dirents.push_back({ino, std::move(node.name)});
        }
        tree.inodes[dir_ino - 1].first_dirent = first_dirent;
        tree.inodes[dir_ino - 1].entry_count = tree.dirents.size() - first_dirent;
        if (on_entry) on_entry(tree.inodes.size());
    }
    return tree;
}

Result<InodeNumbering> number_inodes(const ScannedTree& tree) {
    InodeNumbering out;
    out.numbers.reserve(tree.inodes.size());
    out.order.resize(tree.inodes.size());
    for (std::size_t i = 0; i < tree.inodes.size(); ++i) {
        if (tree.inodes[i].stat.ino == 0)
            return fail(EINVAL, "build: inode number 0 (cannot keep it)", tree.inodes[i].path);
        out.numbers.push_back(tree.inodes[i].stat.ino);
        out.order[i] = static_cast<uint32_t>(i);  // scan_tree keeps the count below 2^32
    }
    // Ties broken by index, so the first name to report a duplicate is the same every build.
    std::sort(out.order.begin(), out.order.end(), [&](uint32_t a, uint32_t b) {
        return out.numbers[a] != out.numbers[b] ? out.numbers[a] < out.numbers[b] : a < b;
    });
    for (std::size_t i = 1; i < out.order.size(); ++i) {
        if (out.numbers[out.order[i]] == out.numbers[out.order[i - 1]])
            return fail(EINVAL, "build: two inodes report the same inode number",
                        tree.inodes[out.order[i]].path);
    }
    return out;
}

void record_times(ScannedTree& tree, PackTimes times, const std::optional<Time>& clamp) {
    for (ScannedInode& inode : tree.inodes) {
        Stat& st = inode.stat;
        if (times == PackTimes::mtime) st.atime = st.ctime = st.mtime;
        if (clamp) {
            st.atime = std::min(st.atime, *clamp);
            st.mtime = std::min(st.mtime, *clamp);
            st.ctime = std::min(st.ctime, *clamp);
        }
    }
}

}  // namespace packfs::pack
