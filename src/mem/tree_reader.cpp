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
    st.blocks = inode.content.allocated() / 512;
    st.atime = inode.atime;
    st.mtime = inode.mtime;
    st.ctime = inode.ctime;
    return st;
}

Result<Resolved> TreeReader::walk(std::string_view path, bool follow_last, std::string_view op,
                                  std::string_view user_path, ParentAndName* parent_out,
                                  uint64_t start) const {
    uint64_t cur = !path.empty() && path.front() == '/' ? kRootIno : start;
    std::string_view rest = path;
    std::string spliced;  // the path after a symlink was substituted, when one was
    int follows = 0;
    for (;;) {
        while (!rest.empty() && rest.front() == '/') rest.remove_prefix(1);
        if (rest.empty()) {
            if (parent_out) return fail(EEXIST, op, user_path);  // the final name was "." or root
            return Resolved{cur, tree_.inode(cur)};
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
            cur = tree_.inode(cur)->parent;
            continue;
        }
        if (name.size() > kMaxNameLength) return fail(ENAMETOOLONG, op, user_path);
        if (last && parent_out) {
            parent_out->parent = cur;
            if (spliced.empty()) {
                parent_out->borrowed = name;
            } else {
                parent_out->owned = std::string(name);
            }
            return Resolved{cur, tree_.inode(cur)};
        }
        const DirValue* entry = tree_.entry(cur, name);
        if (!entry) return fail(ENOENT, op, user_path);
        if (entry->type == FileType::symlink && (!last || follow_last)) {
            if (++follows > kMaxSymlinkFollows) return fail(ELOOP, op, user_path);
            const std::string& target = tree_.inode(entry->ino)->target;
            std::string next;
            next.reserve(target.size() + 1 + rest.size());
            next += target;
            next += '/';
            next += rest;
            if (!target.empty() && target.front() == '/') cur = kRootIno;
            spliced = std::move(next);
            rest = spliced;
            continue;
        }
        if (!last) {
            if (entry->type != FileType::directory) return fail(ENOTDIR, op, user_path);
            cur = entry->ino;
            continue;
        }
        return Resolved{entry->ino, tree_.inode(entry->ino)};
    }
}

Result<Resolved> TreeReader::resolve(std::string_view path, bool follow_last, std::string_view op,
                                     std::string_view user_path) const {
    return walk(path, follow_last, op, user_path, nullptr);
}

Result<Resolved> TreeReader::resolve(const NormalPath& path, bool follow_last,
                                     std::string_view op, std::string_view user_path) const {
    auto r = walk(path.view(), follow_last || path.wants_dir(), op, user_path, nullptr);
    if (r && path.wants_dir() && r->inode->type != FileType::directory)
        return fail(ENOTDIR, op, user_path);
    return r;
}

Result<ParentAndName> TreeReader::resolve_parent(const NormalPath& path, std::string_view op,
                                                 std::string_view user_path) const {
    if (path.is_root()) return fail(EBUSY, op, user_path);
    ParentAndName out;
    auto r = walk(path.view(), false, op, user_path, &out);
    if (!r) return std::unexpected(r.error());
    if (r->inode->type != FileType::directory) return fail(ENOTDIR, op, user_path);
    return out;
}

Result<ParentAndName> TreeReader::resolve_target_parent(std::string_view target,
                                                        uint64_t link_dir, std::string_view op,
                                                        std::string_view user_path) const {
    ParentAndName out;
    auto r = walk(target, false, op, user_path, &out, link_dir);
    if (!r) return std::unexpected(r.error());
    if (r->inode->type != FileType::directory) return fail(ENOTDIR, op, user_path);
    if (out.owned.empty()) out.owned = std::string(out.borrowed);  // `target` may not live on
    return out;
}

Result<Stat> TreeReader::stat(std::string_view path, bool follow, std::string_view op) const {
    auto normal = NormalPath::make(path, op);
    if (!normal) return std::unexpected(normal.error());
    auto r = resolve(*normal, follow, op, path);
    if (!r) return std::unexpected(r.error());
    return stat_of(*r->inode);
}

Result<std::vector<DirEntry>> TreeReader::readdir(std::string_view path) const {
    auto normal = NormalPath::make(path, "readdir");
    if (!normal) return std::unexpected(normal.error());
    auto r = resolve(*normal, true, "readdir", path);
    if (!r) return std::unexpected(r.error());
    if (r->inode->type != FileType::directory) return fail(ENOTDIR, "readdir", path);
    std::vector<DirEntry> out;
    for (auto it = tree_.entries.lower_bound(DirKeyView::first_of(r->ino));
         it != tree_.entries.end() && it.key().parent == r->ino; ++it) {
        out.push_back(DirEntry{it.key().name, it.value().ino, it.value().type});
    }
    return out;
}

Result<std::string> TreeReader::readlink(std::string_view path) const {
    auto normal = NormalPath::make(path, "readlink");
    if (!normal) return std::unexpected(normal.error());
    auto r = resolve(*normal, false, "readlink", path);
    if (!r) return std::unexpected(r.error());
    if (r->inode->type != FileType::symlink) return fail(EINVAL, "readlink", path);
    return r->inode->target;
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
    const std::string* value = r->inode->xattrs.find(name);
    if (!value) return fail(ENODATA, "getxattr", path);
    return *value;
}

Result<std::vector<std::string>> TreeReader::listxattr(std::string_view path) const {
    auto normal = NormalPath::make(path, "listxattr");
    if (!normal) return std::unexpected(normal.error());
    auto r = resolve(*normal, false, "listxattr", path);
    if (!r) return std::unexpected(r.error());
    std::vector<std::string> names;
    for (auto it = r->inode->xattrs.begin(); it != r->inode->xattrs.end(); ++it)
        names.push_back(it.key());
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
    fs.blocks_free = fs.blocks > used ? fs.blocks - used : 0;
    fs.files = tree_.inodes.size() + (1ull << 32);
    fs.files_free = fs.files - tree_.inodes.size();
    fs.name_max = kMaxNameLength;
    return fs;
}

}  // namespace packfs::mem
