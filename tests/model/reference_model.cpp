// TEST ONLY. See reference_model.hpp for what the model promises and why it is this plain.
#include "model/reference_model.hpp"

#include <fcntl.h>

#include <deque>

#include "packfs/path.hpp"

namespace packfs::model {

namespace {

std::vector<std::string> split(std::string_view path) {
    std::vector<std::string> out;
    std::size_t i = 0;
    while (i < path.size()) {
        while (i < path.size() && path[i] == '/') ++i;
        std::size_t end = path.find('/', i);
        if (end == std::string_view::npos) end = path.size();
        if (end > i) out.emplace_back(path.substr(i, end - i));
        i = end;
    }
    return out;
}

constexpr bool is_special(FileType t) {
    return t != FileType::regular && t != FileType::directory && t != FileType::symlink;
}

}  // namespace

ReferenceModel::ReferenceModel(const ModelOptions& options) : options_(options) {
    Node root;
    root.type = FileType::directory;
    root.mode = options.root_mode & 07777;
    root.uid = options.uid;
    root.gid = options.gid;
    root.links = 1;
    root.parent = kRootIno;
    nodes_.emplace(kRootIno, std::move(root));
}

// --- resolution ---------------------------------------------------------------------------

Result<ReferenceModel::Lookup> ReferenceModel::resolve(std::string_view path, bool follow_final,
                                                       std::string_view op) {
    auto normal = normalize_path(path, op);
    if (!normal) return std::unexpected(normal.error());
    int links = 0;
    auto lk = walk(kRootIno, split(*normal), follow_final, links, op);
    if (lk) lk->trailing_slash = has_trailing_slash(path);
    return lk;
}

Result<ReferenceModel::Lookup> ReferenceModel::walk(uint64_t start,
                                                    std::vector<std::string> components,
                                                    bool follow_final, int& links,
                                                    std::string_view op) {
    std::deque<std::string> queue(components.begin(), components.end());
    uint64_t cur = start;
    while (!queue.empty()) {
        std::string comp = std::move(queue.front());
        queue.pop_front();
        const bool last = queue.empty();
        const Node& dir = node(cur);
        if (dir.type != FileType::directory) return fail(ENOTDIR, op);
        if (comp == ".") continue;
        if (comp == "..") {
            cur = dir.parent == 0 ? cur : dir.parent;
            continue;
        }
        auto it = dir.children.find(comp);
        if (it == dir.children.end()) {
            if (last) return Lookup{cur, comp, std::nullopt, false};
            return fail(ENOENT, op);
        }
        uint64_t child = it->second;
        Node& c = node(child);
        if (c.type == FileType::symlink && (!last || follow_final)) {
            if (++links > kMaxSymlinkFollows) return fail(ELOOP, op);
            c.atime.reset();  // following a link reads it (Linux updates its atime)
            if (c.data.empty()) return fail(ENOENT, op);
            if (c.data.front() == '/') cur = kRootIno;
            auto target = split(c.data);
            queue.insert(queue.begin(), target.begin(), target.end());
            continue;
        }
        if (last) return Lookup{cur, comp, child, false};
        cur = child;
    }
    // The path ended on the root, on "." / "..", or on a followed symlink to such a place.
    const Node& n = node(cur);
    if (n.type != FileType::directory) {
        // Only reachable through a symlink whose target ends in "." or ".." under a file.
        return fail(ENOTDIR, op);
    }
    return Lookup{cur == kRootIno ? kRootIno : n.parent, "", cur, false};
}

Result<uint64_t> ReferenceModel::resolve_existing(std::string_view path, bool follow_final,
                                                  std::string_view op) {
    const bool slash = has_trailing_slash(path);
    auto lk = resolve(path, follow_final || slash, op);
    if (!lk) return std::unexpected(lk.error());
    if (!lk->ino) return fail(ENOENT, op, path);
    if (slash && node(*lk->ino).type != FileType::directory) return fail(ENOTDIR, op, path);
    return *lk->ino;
}

int ReferenceModel::xattr_refusal(uint64_t ino, bool write) const {
    FileType t = node(ino).type;
    if (!options_.linux_user_xattrs || t == FileType::regular || t == FileType::directory) {
        return 0;
    }
    return write ? EPERM : ENODATA;
}

Result<void> ReferenceModel::check_writable(std::string_view op) {
    if (read_only_) return fail(EROFS, op);
    return {};
}

// --- helpers ------------------------------------------------------------------------------

ModelStat ReferenceModel::make_stat(uint64_t ino) const {
    const Node& n = node(ino);
    ModelStat s;
    s.ino = ino;
    s.type = n.type;
    s.mode = n.mode;
    s.uid = n.uid;
    s.gid = n.gid;
    if (n.type == FileType::directory) {
        uint64_t subdirs = 0;
        for (const auto& [name, child] : n.children) {
            if (node(child).type == FileType::directory) ++subdirs;
        }
        s.nlink = n.links == 0 ? 0 : 2 + subdirs;
        s.has_size = false;
    } else {
        s.nlink = n.links;
        s.size = (n.type == FileType::regular || n.type == FileType::symlink) ? n.data.size() : 0;
    }
    if (n.type == FileType::char_device || n.type == FileType::block_device) s.rdev = n.rdev;
    s.atime = n.atime;
    s.mtime = n.mtime;
    return s;
}

uint64_t ReferenceModel::new_node(FileType type, uint32_t mode) {
    uint64_t ino = next_ino_++;
    Node n;
    n.type = type;
    n.mode = mode & 07777;
    n.uid = options_.uid;
    n.gid = options_.gid;
    nodes_.emplace(ino, std::move(n));
    return ino;
}

void ReferenceModel::add_entry(uint64_t dir, const std::string& name, uint64_t ino) {
    node(dir).children[name] = ino;
    Node& n = node(ino);
    ++n.links;
    if (n.type == FileType::directory) n.parent = dir;
    touch_dir(dir);
}

void ReferenceModel::remove_entry(uint64_t dir, const std::string& name) {
    Node& d = node(dir);
    uint64_t ino = d.children.at(name);
    d.children.erase(name);
    Node& n = node(ino);
    --n.links;
    if (n.type == FileType::directory) n.parent = 0;
    touch_dir(dir);
}

void ReferenceModel::maybe_free(uint64_t ino) {
    if (ino == kRootIno) return;
    auto it = nodes_.find(ino);
    if (it != nodes_.end() && it->second.links == 0 && it->second.open_count == 0) {
        nodes_.erase(it);
    }
}

bool ReferenceModel::is_ancestor_or_self(uint64_t ancestor, uint64_t dir) const {
    for (;;) {
        if (dir == ancestor) return true;
        if (dir == kRootIno || dir == 0) return false;
        dir = node(dir).parent;
    }
}

void ReferenceModel::touch_dir(uint64_t dir) { node(dir).mtime.reset(); }

void ReferenceModel::set_size(Node& n, uint64_t size) {
    n.data.resize(size, '\0');
    n.mtime.reset();
}

// --- metadata and names -------------------------------------------------------------------

Result<ModelStat> ReferenceModel::stat(std::string_view path) {
    alt_errno_ = 0;
    auto ino = resolve_existing(path, true, "stat");
    if (!ino) return std::unexpected(ino.error());
    return make_stat(*ino);
}

Result<ModelStat> ReferenceModel::lstat(std::string_view path) {
    alt_errno_ = 0;
    auto ino = resolve_existing(path, false, "lstat");
    if (!ino) return std::unexpected(ino.error());
    return make_stat(*ino);
}

Result<std::vector<std::pair<std::string, FileType>>> ReferenceModel::readdir(
    std::string_view path) {
    alt_errno_ = 0;
    auto ino = resolve_existing(path, true, "readdir");
    if (!ino) return std::unexpected(ino.error());
    Node& n = node(*ino);
    if (n.type != FileType::directory) return fail(ENOTDIR, "readdir", path);
    n.atime.reset();
    std::vector<std::pair<std::string, FileType>> out;
    for (const auto& [name, child] : n.children) out.emplace_back(name, node(child).type);
    return out;
}

Result<std::string> ReferenceModel::readlink(std::string_view path) {
    alt_errno_ = 0;
    auto ino = resolve_existing(path, false, "readlink");
    if (!ino) return std::unexpected(ino.error());
    Node& n = node(*ino);
    if (n.type != FileType::symlink) return fail(EINVAL, "readlink", path);
    n.atime.reset();
    return n.data;
}

// --- files --------------------------------------------------------------------------------

Result<int> ReferenceModel::open(std::string_view path, int flags, uint32_t mode) {
    alt_errno_ = 0;
    const int acc = flags & O_ACCMODE;
    const bool readable = acc == O_RDONLY || acc == O_RDWR;
    const bool writable = acc == O_WRONLY || acc == O_RDWR;
    const bool creat = flags & O_CREAT;
    const bool excl = flags & O_EXCL;
    const bool trunc = flags & O_TRUNC;
    const bool nofollow = flags & O_NOFOLLOW;
    const bool directory = flags & O_DIRECTORY;
    const bool slash = has_trailing_slash(path);
    if (read_only_ && (writable || creat || trunc)) return fail(EROFS, "open", path);

    uint64_t ino = 0;
    if (creat) {
        auto lk = resolve(path, false, "open");
        if (!lk) return std::unexpected(lk.error());
        if (slash) return fail(EISDIR, "open", path);
        if (lk->ino && excl) return fail(EEXIST, "open", path);
        if (lk->ino && node(*lk->ino).type == FileType::symlink) {
            if (nofollow) return fail(ELOOP, "open", path);
            lk = resolve(path, true, "open");  // a dangling link creates its target
            if (!lk) return std::unexpected(lk.error());
        }
        if (!lk->ino) {
            ino = new_node(FileType::regular, mode);
            add_entry(lk->parent, lk->name, ino);
        } else {
            ino = *lk->ino;
            FileType t = node(ino).type;
            if (t == FileType::directory) return fail(EISDIR, "open", path);
            if (is_special(t)) return fail(ENOTSUP, "open", path);
            if (trunc) set_size(node(ino), 0);
        }
    } else {
        auto lk = resolve(path, !nofollow || slash, "open");
        if (!lk) return std::unexpected(lk.error());
        if (!lk->ino) return fail(ENOENT, "open", path);
        ino = *lk->ino;
        FileType t = node(ino).type;
        if ((directory || slash) && t != FileType::directory) return fail(ENOTDIR, "open", path);
        if (t == FileType::symlink) return fail(ELOOP, "open", path);
        if (t == FileType::directory && (writable || trunc)) return fail(EISDIR, "open", path);
        if (is_special(t)) return fail(ENOTSUP, "open", path);
        if (t == FileType::regular && trunc && writable) set_size(node(ino), 0);
    }
    int id = next_handle_++;
    handles_.emplace(id, Handle{ino, readable, writable, (flags & O_APPEND) != 0});
    ++node(ino).open_count;
    return id;
}

Result<void> ReferenceModel::close(int handle) {
    alt_errno_ = 0;
    auto it = handles_.find(handle);
    if (it == handles_.end()) return fail(EBADF, "close");
    uint64_t ino = it->second.ino;
    handles_.erase(it);
    --node(ino).open_count;
    maybe_free(ino);
    return {};
}

Result<std::string> ReferenceModel::pread(int handle, uint64_t offset, uint64_t length) {
    alt_errno_ = 0;
    auto it = handles_.find(handle);
    if (it == handles_.end() || !it->second.readable) return fail(EBADF, "pread");
    Node& n = node(it->second.ino);
    if (n.type == FileType::directory) return fail(EISDIR, "pread");
    n.atime.reset();
    if (offset >= n.data.size()) return std::string();
    return n.data.substr(offset, length);
}

Result<std::size_t> ReferenceModel::pwrite(int handle, uint64_t offset, std::string_view data) {
    alt_errno_ = 0;
    auto it = handles_.find(handle);
    if (it == handles_.end() || !it->second.writable) return fail(EBADF, "pwrite");
    Node& n = node(it->second.ino);
    if (data.empty()) return 0;
    if (it->second.append) offset = n.data.size();
    if (offset + data.size() > n.data.size()) n.data.resize(offset + data.size(), '\0');
    n.data.replace(offset, data.size(), data);
    n.mtime.reset();
    return data.size();
}

Result<uint64_t> ReferenceModel::copy_range(int from, uint64_t offset, int to, uint64_t to_offset,
                                            uint64_t length) {
    alt_errno_ = 0;
    auto a = handles_.find(from);
    auto b = handles_.find(to);
    if (a == handles_.end() || b == handles_.end()) return fail(EBADF, "copy_file_range");
    // Linux checks the types first, then the modes; a backend may check the modes first.
    const bool bad_modes = !a->second.readable || !b->second.writable || b->second.append;
    const FileType in = node(a->second.ino).type, out = node(b->second.ino).type;
    if (in == FileType::directory || out == FileType::directory) {
        if (bad_modes) alt_errno_ = EBADF;
        return fail(EISDIR, "copy_file_range");
    }
    if (in != FileType::regular || out != FileType::regular) {
        if (bad_modes) alt_errno_ = EBADF;
        return fail(EINVAL, "copy_file_range");
    }
    if (bad_modes) return fail(EBADF, "copy_file_range");
    Node& source = node(a->second.ino);
    source.atime.reset();  // read, as by pread
    if (offset >= source.data.size()) return 0;
    const std::string bytes = source.data.substr(offset, length);
    if (bytes.empty()) return 0;
    Node& dest = node(b->second.ino);
    if (to_offset + bytes.size() > dest.data.size())
        dest.data.resize(to_offset + bytes.size(), '\0');
    dest.data.replace(to_offset, bytes.size(), bytes);
    dest.mtime.reset();
    return bytes.size();
}

Result<void> ReferenceModel::ftruncate(int handle, uint64_t size) {
    alt_errno_ = 0;
    auto it = handles_.find(handle);
    if (it == handles_.end()) return fail(EBADF, "ftruncate");
    Node& n = node(it->second.ino);
    if (!it->second.writable || n.type != FileType::regular) {
        alt_errno_ = n.type == FileType::directory ? EISDIR : EBADF;
        return fail(EINVAL, "ftruncate");  // Linux; EBADF is what POSIX also allows
    }
    set_size(n, size);
    return {};
}

Result<ModelStat> ReferenceModel::fstat(int handle) {
    alt_errno_ = 0;
    auto it = handles_.find(handle);
    if (it == handles_.end()) return fail(EBADF, "fstat");
    return make_stat(it->second.ino);
}

Result<void> ReferenceModel::truncate(std::string_view path, uint64_t size) {
    alt_errno_ = 0;
    if (auto w = check_writable("truncate"); !w) return w;
    auto ino = resolve_existing(path, true, "truncate");
    if (!ino) return std::unexpected(ino.error());
    Node& n = node(*ino);
    if (n.type == FileType::directory) return fail(EISDIR, "truncate", path);
    if (n.type != FileType::regular) {
        alt_errno_ = ENOTSUP;
        return fail(EINVAL, "truncate", path);
    }
    set_size(n, size);
    return {};
}

// --- namespace ----------------------------------------------------------------------------

Result<void> ReferenceModel::mkdir(std::string_view path, uint32_t mode) {
    alt_errno_ = 0;
    if (auto w = check_writable("mkdir"); !w) return w;
    auto lk = resolve(path, false, "mkdir");
    if (!lk) return std::unexpected(lk.error());
    if (lk->ino) return fail(EEXIST, "mkdir", path);
    uint64_t ino = new_node(FileType::directory, mode);
    add_entry(lk->parent, lk->name, ino);
    return {};
}

Result<void> ReferenceModel::rmdir(std::string_view path) {
    alt_errno_ = 0;
    if (auto w = check_writable("rmdir"); !w) return w;
    auto lk = resolve(path, false, "rmdir");
    if (!lk) return std::unexpected(lk.error());
    if (lk->name.empty()) return fail(EBUSY, "rmdir", path);
    if (!lk->ino) return fail(ENOENT, "rmdir", path);
    Node& n = node(*lk->ino);
    if (n.type != FileType::directory) return fail(ENOTDIR, "rmdir", path);
    if (!n.children.empty()) return fail(ENOTEMPTY, "rmdir", path);
    uint64_t ino = *lk->ino;
    remove_entry(lk->parent, lk->name);
    maybe_free(ino);
    return {};
}

Result<void> ReferenceModel::unlink(std::string_view path) {
    alt_errno_ = 0;
    if (auto w = check_writable("unlink"); !w) return w;
    auto lk = resolve(path, false, "unlink");
    if (!lk) return std::unexpected(lk.error());
    if (lk->name.empty()) return fail(EISDIR, "unlink", path);
    if (!lk->ino) return fail(ENOENT, "unlink", path);
    if (node(*lk->ino).type == FileType::directory) {
        alt_errno_ = EPERM;  // POSIX's answer; Linux says EISDIR
        return fail(EISDIR, "unlink", path);
    }
    if (lk->trailing_slash) return fail(ENOTDIR, "unlink", path);
    uint64_t ino = *lk->ino;
    remove_entry(lk->parent, lk->name);
    maybe_free(ino);
    return {};
}

Result<void> ReferenceModel::rename(std::string_view from, std::string_view to,
                                    RenameFlags flags) {
    alt_errno_ = 0;
    if (auto w = check_writable("rename"); !w) return w;
    // Both paths are validated at the API edge, before either is looked up.
    if (auto n = normalize_path(from, "rename"); !n) return std::unexpected(n.error());
    if (auto n = normalize_path(to, "rename"); !n) return std::unexpected(n.error());
    const bool noreplace = flags == RenameFlags::noreplace;
    const bool exchange = flags == RenameFlags::exchange;
    auto lf = resolve(from, false, "rename");
    if (!lf) return std::unexpected(lf.error());
    auto lt = resolve(to, false, "rename");
    if (!lt) return std::unexpected(lt.error());
    if (lf->name.empty() || lt->name.empty()) return fail(EBUSY, "rename", from);
    if (!lf->ino) return fail(ENOENT, "rename", from);
    if (noreplace && lt->ino) return fail(EEXIST, "rename", to);
    const uint64_t src = *lf->ino;
    const bool src_dir = node(src).type == FileType::directory;
    if (exchange) {
        if (!lt->ino) return fail(ENOENT, "rename", to);
        if (node(*lt->ino).type != FileType::directory && lt->trailing_slash) {
            return fail(ENOTDIR, "rename", to);
        }
    }
    if (!src_dir) {
        if (lf->trailing_slash) return fail(ENOTDIR, "rename", from);
        if (!exchange && lt->trailing_slash) return fail(ENOTDIR, "rename", to);
    }
    if (lf->parent != lt->parent) {
        if (src_dir && is_ancestor_or_self(src, lt->parent)) return fail(EINVAL, "rename", to);
        if (lt->ino && node(*lt->ino).type == FileType::directory &&
            is_ancestor_or_self(*lt->ino, lf->parent)) {
            return fail(exchange ? EINVAL : ENOTEMPTY, "rename", to);
        }
    }
    if (lt->ino && *lt->ino == src) return {};  // the same file: POSIX says do nothing

    if (exchange) {
        const uint64_t dst = *lt->ino;
        node(lf->parent).children[lf->name] = dst;
        node(lt->parent).children[lt->name] = src;
        if (node(dst).type == FileType::directory) node(dst).parent = lf->parent;
        if (src_dir) node(src).parent = lt->parent;
        touch_dir(lf->parent);
        touch_dir(lt->parent);
        node(src).mtime.reset();
        node(dst).mtime.reset();
        return {};
    }
    if (lt->ino) {
        const uint64_t dst = *lt->ino;
        const Node& d = node(dst);
        const bool dst_dir = d.type == FileType::directory;
        if (src_dir && !dst_dir) return fail(ENOTDIR, "rename", to);
        if (!src_dir && dst_dir) return fail(EISDIR, "rename", to);
        if (dst_dir && !d.children.empty()) return fail(ENOTEMPTY, "rename", to);
        remove_entry(lt->parent, lt->name);
        maybe_free(dst);
    }
    remove_entry(lf->parent, lf->name);
    add_entry(lt->parent, lt->name, src);
    if (src_dir) node(src).mtime.reset();
    return {};
}

Result<void> ReferenceModel::symlink(std::string_view target, std::string_view link_path) {
    alt_errno_ = 0;
    if (auto w = check_writable("symlink"); !w) return w;
    if (target.empty()) return fail(ENOENT, "symlink", link_path);
    auto lk = resolve(link_path, false, "symlink");
    if (!lk) return std::unexpected(lk.error());
    if (lk->ino) return fail(EEXIST, "symlink", link_path);
    if (lk->trailing_slash) return fail(ENOENT, "symlink", link_path);
    uint64_t ino = new_node(FileType::symlink, 0777);
    node(ino).data = std::string(target);
    add_entry(lk->parent, lk->name, ino);
    return {};
}

Result<void> ReferenceModel::link(std::string_view existing, std::string_view new_path) {
    alt_errno_ = 0;
    if (auto w = check_writable("link"); !w) return w;
    if (auto n = normalize_path(existing, "link"); !n) return std::unexpected(n.error());
    if (auto n = normalize_path(new_path, "link"); !n) return std::unexpected(n.error());
    auto src = resolve_existing(existing, false, "link");
    if (!src) return std::unexpected(src.error());
    auto lk = resolve(new_path, false, "link");
    if (!lk) return std::unexpected(lk.error());
    if (lk->ino) return fail(EEXIST, "link", new_path);
    if (lk->trailing_slash) return fail(ENOENT, "link", new_path);
    if (node(*src).type == FileType::directory) return fail(EPERM, "link", existing);
    add_entry(lk->parent, lk->name, *src);
    return {};
}

Result<void> ReferenceModel::mknod(std::string_view path, FileType type, uint32_t mode,
                                   uint64_t rdev) {
    alt_errno_ = 0;
    if (auto w = check_writable("mknod"); !w) return w;
    if (type == FileType::directory || type == FileType::symlink) {
        return fail(EINVAL, "mknod", path);
    }
    auto lk = resolve(path, false, "mknod");
    if (!lk) return std::unexpected(lk.error());
    if (lk->ino) return fail(EEXIST, "mknod", path);
    if (lk->trailing_slash) return fail(ENOENT, "mknod", path);
    uint64_t ino = new_node(type, mode);
    if (type == FileType::char_device || type == FileType::block_device) node(ino).rdev = rdev;
    add_entry(lk->parent, lk->name, ino);
    return {};
}

// --- attributes ---------------------------------------------------------------------------

Result<void> ReferenceModel::chmod(std::string_view path, uint32_t mode) {
    alt_errno_ = 0;
    if (auto w = check_writable("chmod"); !w) return w;
    auto ino = resolve_existing(path, true, "chmod");
    if (!ino) return std::unexpected(ino.error());
    node(*ino).mode = mode & 07777;
    return {};
}

Result<void> ReferenceModel::chown(std::string_view path, uint32_t uid, uint32_t gid,
                                   Follow follow) {
    alt_errno_ = 0;
    if (auto w = check_writable("chown"); !w) return w;
    auto ino = resolve_existing(path, follow == Follow::yes, "chown");
    if (!ino) return std::unexpected(ino.error());
    Node& n = node(*ino);
    if (uid != static_cast<uint32_t>(-1)) n.uid = uid;
    if (gid != static_cast<uint32_t>(-1)) n.gid = gid;
    return {};
}

Result<void> ReferenceModel::utimens(std::string_view path, TimeUpdate atime, TimeUpdate mtime,
                                     Follow follow) {
    alt_errno_ = 0;
    if (auto w = check_writable("utimens"); !w) return w;
    auto ino = resolve_existing(path, follow == Follow::yes, "utimens");
    if (!ino) return std::unexpected(ino.error());
    Node& n = node(*ino);
    auto apply = [](std::optional<Time>& t, const TimeUpdate& u) {
        if (u.kind == TimeUpdate::Kind::set) t = u.time;
        if (u.kind == TimeUpdate::Kind::now) t.reset();
    };
    apply(n.atime, atime);
    apply(n.mtime, mtime);
    return {};
}

// --- extended attributes ------------------------------------------------------------------

Result<std::string> ReferenceModel::getxattr(std::string_view path, std::string_view name) {
    alt_errno_ = 0;
    auto ino = resolve_existing(path, false, "getxattr");
    if (!ino) return std::unexpected(ino.error());
    if (int e = xattr_refusal(*ino, false); e != 0) return fail(e, "getxattr", path);
    const Node& n = node(*ino);
    auto it = n.xattrs.find(std::string(name));
    if (it == n.xattrs.end()) return fail(ENODATA, "getxattr", path);
    return it->second;
}

Result<void> ReferenceModel::setxattr(std::string_view path, std::string_view name,
                                      std::string_view value, XattrMode mode) {
    alt_errno_ = 0;
    if (auto w = check_writable("setxattr"); !w) return w;
    auto ino = resolve_existing(path, false, "setxattr");
    if (!ino) return std::unexpected(ino.error());
    if (int e = xattr_refusal(*ino, true); e != 0) return fail(e, "setxattr", path);
    Node& n = node(*ino);
    const bool exists = n.xattrs.contains(std::string(name));
    if (mode == XattrMode::create && exists) return fail(EEXIST, "setxattr", path);
    if (mode == XattrMode::replace && !exists) return fail(ENODATA, "setxattr", path);
    n.xattrs[std::string(name)] = std::string(value);
    return {};
}

Result<std::vector<std::string>> ReferenceModel::listxattr(std::string_view path) {
    alt_errno_ = 0;
    auto ino = resolve_existing(path, false, "listxattr");
    if (!ino) return std::unexpected(ino.error());
    if (xattr_refusal(*ino, false) != 0) return std::vector<std::string>{};
    std::vector<std::string> out;
    for (const auto& [name, value] : node(*ino).xattrs) out.push_back(name);
    return out;
}

Result<void> ReferenceModel::removexattr(std::string_view path, std::string_view name) {
    alt_errno_ = 0;
    if (auto w = check_writable("removexattr"); !w) return w;
    auto ino = resolve_existing(path, false, "removexattr");
    if (!ino) return std::unexpected(ino.error());
    if (int e = xattr_refusal(*ino, true); e != 0) return fail(e, "removexattr", path);
    Node& n = node(*ino);
    if (n.xattrs.erase(std::string(name)) == 0) return fail(ENODATA, "removexattr", path);
    return {};
}

// --- state --------------------------------------------------------------------------------

ReferenceModel ReferenceModel::frozen_copy() const {
    ReferenceModel copy = *this;
    copy.read_only_ = true;
    copy.handles_.clear();
    for (auto it = copy.nodes_.begin(); it != copy.nodes_.end();) {
        it->second.open_count = 0;
        if (it->first != kRootIno && it->second.links == 0) {
            it = copy.nodes_.erase(it);
        } else {
            ++it;
        }
    }
    return copy;
}

std::vector<ReferenceModel::Entry> ReferenceModel::entries() const {
    std::vector<Entry> out;
    struct Frame {
        std::string path;
        uint64_t ino;
    };
    std::vector<Frame> stack{{"/", kRootIno}};
    while (!stack.empty()) {
        Frame f = std::move(stack.back());
        stack.pop_back();
        const Node& n = node(f.ino);
        out.push_back({f.path, n.type, f.ino});
        if (n.type != FileType::directory) continue;
        for (auto it = n.children.rbegin(); it != n.children.rend(); ++it) {
            stack.push_back({path_join(f.path, it->first), it->second});
        }
    }
    return out;
}

ReferenceModel::NodeView ReferenceModel::view(uint64_t ino) const {
    const Node& n = node(ino);
    return NodeView{make_stat(ino), n.data, n.xattrs};
}

std::vector<ReferenceModel::HandleInfo> ReferenceModel::handles() const {
    std::vector<HandleInfo> out;
    for (const auto& [id, h] : handles_) {
        const Node& n = node(h.ino);
        out.push_back({id, h.ino, h.readable, h.writable, h.append, n.links == 0, n.type});
    }
    return out;
}

}  // namespace packfs::model
