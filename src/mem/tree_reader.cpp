#include "mem/tree_reader.hpp"

#include <unistd.h>

#include "packfs/path.hpp"

namespace packfs::mem {

Stat stat_of(const Inode& inode) {
    Stat st;
    st.ino = inode.ino;
    st.type = inode.type;
    st.mode = inode.mode;
    st.uid = inode.uid;
    st.gid = inode.gid;
    st.nlink = inode.nlink;
    st.size = inode.size;
    st.rdev = inode.rdev;
    st.blocks = (inode.content.allocated() + inode.content.backed_bytes()) / 512;
    st.atime = inode.atime;
    st.mtime = inode.mtime;
    st.ctime = inode.ctime;
    return st;
}

std::string TreeReader::target_of(const NodeRef& link) const {
    if (link.upper) return link.upper->target;
    return lower_value(tree_.lower->readlink(link.lower));
}

Result<NodeRef> TreeReader::walk(std::string_view path, bool follow_last, std::string_view op,
                                 std::string_view user_path, ParentAndName* parent_out,
                                 const DirStack* start) const {
    DirStack local;
    DirStack& stack = parent_out ? parent_out->stack : local;
    if (start && !(!path.empty() && path.front() == '/')) {
        stack = *start;
    } else {
        stack.reset(tree_.walk_root());
    }
    std::string_view rest = path;
    std::string spliced;  // the path after a symlink was substituted, when one was
    int follows = 0;
    for (;;) {
        while (!rest.empty() && rest.front() == '/') rest.remove_prefix(1);
        if (rest.empty()) {
            if (parent_out) return fail(EEXIST, op, user_path);  // the final name was "." or root
            return tree_.complete(stack.back());
        }
        std::size_t end = rest.find('/');
        std::string_view name = rest.substr(0, end);
        rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
        const bool last = rest.find_first_not_of('/') == std::string_view::npos;
        if (name == ".") {
            if (last && parent_out) return fail(EEXIST, op, user_path);
            continue;
        }
        if (name == "..") {  // only symlink targets contain "..": the API's paths are normal
            if (last && parent_out) return fail(EEXIST, op, user_path);
            if (stack.size() > 1) stack.pop();
            continue;
        }
        if (name.size() > kMaxNameLength) return fail(ENAMETOOLONG, op, user_path);
        if (last && parent_out) {
            parent_out->dir = tree_.complete(stack.back());
            parent_out->parent = parent_out->dir.ino;
            if (spliced.empty()) {
                parent_out->borrowed = name;
            } else {
                parent_out->owned = std::string(name);
            }
            return parent_out->dir;
        }
        const NodeRef child = tree_.child(stack.back(), name);
        if (!child) return fail(ENOENT, op, user_path);
        if (child.type == FileType::symlink && (!last || follow_last)) {
            if (++follows > kMaxSymlinkFollows) return fail(ELOOP, op, user_path);
            const std::string target = target_of(child);
            std::string next;
            next.reserve(target.size() + 1 + rest.size());
            next += target;
            next += '/';
            next += rest;
            if (!target.empty() && target.front() == '/') stack.reset(tree_.walk_root());
            spliced = std::move(next);
            rest = spliced;
            continue;
        }
        if (!last) {
            if (!child.is_dir()) return fail(ENOTDIR, op, user_path);
            stack.push(child);
            continue;
        }
        return child;
    }
}

Result<NodeRef> TreeReader::resolve(std::string_view path, bool follow_last, std::string_view op,
                                    std::string_view user_path) const {
    return guard_lower(user_path, [&] { return walk(path, follow_last, op, user_path, nullptr); });
}

Result<NodeRef> TreeReader::resolve(const NormalPath& path, bool follow_last, std::string_view op,
                                    std::string_view user_path) const {
    auto r = guard_lower(user_path, [&] {
        return walk(path.view(), follow_last || path.wants_dir(), op, user_path, nullptr);
    });
    if (r && path.wants_dir() && !r->is_dir()) return fail(ENOTDIR, op, user_path);
    return r;
}

Result<ParentAndName> TreeReader::resolve_parent(const NormalPath& path, std::string_view op,
                                                 std::string_view user_path) const {
    if (path.is_root()) return fail(EBUSY, op, user_path);
    ParentAndName out;
    auto r = guard_lower(user_path, [&] { return walk(path.view(), false, op, user_path, &out); });
    if (!r) return std::unexpected(r.error());
    if (!r->is_dir()) return fail(ENOTDIR, op, user_path);
    return out;
}

Result<ParentAndName> TreeReader::resolve_target_parent(std::string_view target,
                                                        const ParentAndName& link_dir,
                                                        std::string_view op,
                                                        std::string_view user_path) const {
    ParentAndName out;
    auto r = guard_lower(user_path, [&] {
        return walk(target, false, op, user_path, &out, &link_dir.stack);
    });
    if (!r) return std::unexpected(r.error());
    if (!r->is_dir()) return fail(ENOTDIR, op, user_path);
    if (out.owned.empty()) out.owned = std::string(out.borrowed);  // `target` may not live on
    return out;
}

Result<Stat> TreeReader::stat(std::string_view path, bool follow, std::string_view op) const {
    auto normal = NormalPath::make(path, op);
    if (!normal) return std::unexpected(normal.error());
    auto r = resolve(*normal, follow, op, path);
    if (!r) return std::unexpected(r.error());
    if (r->upper) return stat_of(*r->upper);
    return guard_lower(path, [&]() -> Result<Stat> { return stat_of(tree_, *r); });
}

Result<std::vector<DirEntry>> TreeReader::readdir(std::string_view path) const {
    auto normal = NormalPath::make(path, "readdir");
    if (!normal) return std::unexpected(normal.error());
    auto r = resolve(*normal, true, "readdir", path);
    if (!r) return std::unexpected(r.error());
    if (!r->is_dir()) return fail(ENOTDIR, "readdir", path);
    return guard_lower(path, [&]() -> Result<std::vector<DirEntry>> {
        return list_entries(tree_, *r);
    });
}

Result<std::string> TreeReader::readlink(std::string_view path) const {
    auto normal = NormalPath::make(path, "readlink");
    if (!normal) return std::unexpected(normal.error());
    auto r = resolve(*normal, false, "readlink", path);
    if (!r) return std::unexpected(r.error());
    if (r->type != FileType::symlink) return fail(EINVAL, "readlink", path);
    return guard_lower(path, [&]() -> Result<std::string> { return target_of(*r); });
}

Result<void> check_xattr_name(std::string_view name, std::string_view op, std::string_view path) {
    if (name.empty() || name.size() > 255) return fail(name.empty() ? EINVAL : ERANGE, op, path);
    for (std::string_view ns : {"user.", "trusted.", "security.", "system."}) {
        if (name.starts_with(ns) && name.size() > ns.size()) return {};
    }
    return fail(ENOTSUP, op, path);
}

Result<std::string> TreeReader::getxattr(std::string_view path, std::string_view name) const {
    if (auto ok = check_xattr_name(name, "getxattr", path); !ok) return std::unexpected(ok.error());
    auto normal = NormalPath::make(path, "getxattr");
    if (!normal) return std::unexpected(normal.error());
    auto r = resolve(*normal, false, "getxattr", path);
    if (!r) return std::unexpected(r.error());
    if (r->upper) {
        const std::string* value = r->upper->xattrs.find(name);
        if (!value) return fail(ENODATA, "getxattr", path);
        return *value;
    }
    auto value = tree_.lower->getxattr(r->lower, name);
    if (!value) return std::unexpected(value.error().with_path(path));
    if (!*value) return fail(ENODATA, "getxattr", path);
    return std::move(**value);
}

Result<std::vector<std::string>> TreeReader::listxattr(std::string_view path) const {
    auto normal = NormalPath::make(path, "listxattr");
    if (!normal) return std::unexpected(normal.error());
    auto r = resolve(*normal, false, "listxattr", path);
    if (!r) return std::unexpected(r.error());
    std::vector<std::string> names;
    if (r->upper) {
        for (auto it = r->upper->xattrs.begin(); it != r->upper->xattrs.end(); ++it)
            names.push_back(it.key());
        return names;
    }
    auto all = tree_.lower->xattrs(r->lower);
    if (!all) return std::unexpected(all.error().with_path(path));
    for (auto& [key, value] : *all) names.push_back(std::move(key));
    return names;
}

StatFs TreeReader::statfs(uint64_t capacity) const {
    if (capacity == 0) {
        long pages = sysconf(_SC_PHYS_PAGES);
        long page_size = sysconf(_SC_PAGESIZE);
        capacity = pages > 0 && page_size > 0 ? uint64_t(pages) * uint64_t(page_size) : 1ull << 32;
    }
    StatFs fs;
    fs.block_size = 4096;
    fs.blocks = capacity / fs.block_size;
    uint64_t used = (tree_.bytes_used + fs.block_size - 1) / fs.block_size;
    uint64_t files = tree_.inodes.size();
    if (tree_.lower) {
        // The lower's bytes and inodes count as used: an overlay holds both layers.
        const StatFs lower = tree_.lower->statfs();
        used += (lower.blocks - lower.blocks_free) * lower.block_size / fs.block_size;
        files += lower.files - lower.files_free;
        fs.blocks = std::max(fs.blocks, used);
    }
    fs.blocks_free = fs.blocks > used ? fs.blocks - used : 0;
    fs.files = files + (1ull << 32);
    fs.files_free = fs.files - files;
    fs.name_max = kMaxNameLength;
    return fs;
}

}  // namespace packfs::mem
