// The path API derived from nodes (DESIGN §4): every path call of the Backend contract as a
// walk (walker.hpp) and node calls, with the errno order of Linux that the conformance and
// model suites pin. Written once; instantiated over the Backend's virtual node calls (the
// defaults every backend inherits, path_api.cpp) and, for speed, over a backend's own
// structures (mem inside one RCU read section or under its writer lock, a pack's reader).
//
// `Ops` is the walker's (NodeT, root, lookup, readlink, release) plus:
//     bool read_only();
//     Result<Stat> getattr(const NodeT&);
//     Result<std::vector<DirEntry>> list(const NodeT&);
//     Result<FileHandle> open(const NodeT&, int flags);
//     Result<std::string> getxattr(const NodeT&, std::string_view name);
//     Result<std::vector<std::string>> listxattr(const NodeT&);
//     Result<StatFs> statfs(const NodeT&);
//     bool same(const NodeT&, const NodeT&);                 one object?
//   and, for a writable tree, the node mutations (errors are relabelled with the path here):
//     Result<FileHandle> create(const NodeT& dir, std::string_view name, int flags, uint32_t mode);
//     Result<void> mkdir(dir, name, mode), mknod(dir, name, type, mode, rdev),
//                  symlink(dir, name, target), link(node, dir, name), unlink(dir, name),
//                  rmdir(dir, name), setattr(node, const SetAttr&),
//                  setxattr(node, name, value, mode), removexattr(node, name);
//     Result<void> rename(dir, name, to_dir, to_name, flags);  (the checks below made first)
//     bool has_entries(const NodeT& dir);
//   and optionally, for a tree that refuses some renames by where they go rather than by what
//   the names hold (the Vfs: across mounts, on a read-only mount), checked before the entries:
//     Result<void> may_rename(dir, name, to_dir, to_name);
#pragma once

#include <fcntl.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/checks.hpp"
#include "core/rename_check.hpp"
#include "core/walker.hpp"
#include "packfs/backend.hpp"
#include "packfs/path.hpp"

namespace packfs::paths {

// An error of a node call, told as the path call's: its code (and corruption detail) with the
// path call's operation and path.
inline std::unexpected<Error> as_path_error(const Error& e, std::string_view op,
                                            std::string_view path) {
    Error out = e.relabeled(op, path);
    return std::unexpected(std::move(out));
}

template <class Ops>
class PathApi {
public:
    using N = typename Ops::NodeT;
    using Step = walk::Step<N>;
    using Parent = walk::Parent<N>;

    PathApi(Ops& ops, walk::Links links = walk::Links::in_root) noexcept
        : ops_(ops), links_(links) {}

    // --- queries ---------------------------------------------------------------------------

    Result<Stat> stat(std::string_view path, bool follow, std::string_view op) {
        return on_node(path, follow, op, [&](const Step& s) { return ops_.getattr(s.node); });
    }

    Result<std::vector<DirEntry>> readdir(std::string_view path) {
        return on_node(path, true, "readdir", [&](const Step& s) -> Result<std::vector<DirEntry>> {
            if (s.type != FileType::directory) return fail(ENOTDIR, "readdir", path);
            return ops_.list(s.node);
        });
    }

    Result<std::string> readlink(std::string_view path) {
        return on_node(path, false, "readlink", [&](const Step& s) -> Result<std::string> {
            if (s.type != FileType::symlink) return fail(EINVAL, "readlink", path);
            auto target = ops_.readlink(s.node);
            if (!target) return std::unexpected(target.error());
            return std::string(*target);
        });
    }

    Result<StatFs> statfs(std::string_view path) {
        return on_node(path, true, "statfs", [&](const Step& s) { return ops_.statfs(s.node); });
    }

    Result<std::string> getxattr(std::string_view path, std::string_view name) {
        if (auto ok = check_xattr_name(name, "getxattr", path); !ok)
            return std::unexpected(ok.error());
        return on_node(path, false, "getxattr",
                       [&](const Step& s) { return ops_.getxattr(s.node, name); });
    }

    Result<std::vector<std::string>> listxattr(std::string_view path) {
        return on_node(path, false, "listxattr",
                       [&](const Step& s) { return ops_.listxattr(s.node); });
    }

    // --- files -----------------------------------------------------------------------------

    Result<FileHandle> open(std::string_view path, int flags, uint32_t mode) {
        if ((flags & O_ACCMODE) == O_ACCMODE) return fail(EINVAL, "open", path);
        if (!(flags & O_CREAT)) {
            walk::Walker<Ops> w(ops_, "open", path, links_);
            if (auto fast = w.try_fast(path, !(flags & O_NOFOLLOW)))
                return open_found(path, *fast, flags);
        }
        auto normal = NormalPath::make(path, "open");
        if (!normal) return std::unexpected(normal.error());
        if (ops_.read_only()) return open_read_only(path, *normal, flags);
        if (flags & O_CREAT) return open_create(path, *normal, flags, mode);
        walk::Walker<Ops> w(ops_, "open", path, links_);
        auto r = w.resolve(*normal, !(flags & O_NOFOLLOW));
        if (!r) return std::unexpected(r.error());
        return open_found(path, *r, flags);
    }

    Result<void> truncate(std::string_view path, uint64_t size) {
        return change_attributes("truncate", path, true, SetAttr::resize(size));
    }

    // --- namespace -------------------------------------------------------------------------

    Result<void> mkdir(std::string_view path, uint32_t mode) {
        return make_entry("mkdir", path, true, [&](const N& dir, std::string_view name) {
            return ops_.mkdir(dir, name, mode);
        });
    }

    Result<void> mknod(std::string_view path, FileType type, uint32_t mode, uint64_t rdev) {
        if (ops_.read_only()) return fail(EROFS, "mknod", path);
        if (type == FileType::directory || type == FileType::symlink)
            return fail(EINVAL, "mknod", path);
        return make_entry("mknod", path, false, [&](const N& dir, std::string_view name) {
            return ops_.mknod(dir, name, type, mode, rdev);
        });
    }

    Result<void> symlink(std::string_view target, std::string_view link_path) {
        if (auto ok = check_symlink_target(target, link_path); !ok) return ok;
        return make_entry("symlink", link_path, false, [&](const N& dir, std::string_view name) {
            return ops_.symlink(dir, name, target);
        });
    }

    Result<void> link(std::string_view existing, std::string_view new_path) {
        if (ops_.read_only()) return fail(EROFS, "link", new_path);
        auto from = NormalPath::make(existing, "link");
        if (!from) return std::unexpected(from.error());
        auto to = NormalPath::make(new_path, "link");
        if (!to) return std::unexpected(to.error());
        if (to->is_root()) return fail(EEXIST, "link", new_path);
        walk::Walker<Ops> w(ops_, "link", existing, links_);
        auto source = w.resolve(*from, false);
        if (!source) return std::unexpected(source.error());
        Held held_source(ops_, source->node);
        walk::Walker<Ops> wt(ops_, "link", new_path, links_);
        auto where = wt.resolve_parent(*to);
        if (!where) return std::unexpected(where.error());
        ParentGuard guard(wt, *where);
        if (auto ok = require_dir(*where, "link", new_path); !ok) return ok;
        if (to->wants_dir()) {
            if (auto exists = exists_in(where->dir().node, where->name(), "link", new_path);
                !exists)
                return std::unexpected(exists.error());
            else if (*exists)
                return fail(EEXIST, "link", new_path);
            return fail(ENOENT, "link", new_path);
        }
        auto ok = ops_.link(source->node, where->dir().node, where->name());
        if (!ok) {
            // EPERM (a directory) is about the existing name; the rest about the new one.
            if (ok.error().code() == EPERM) return as_path_error(ok.error(), "link", existing);
            return as_path_error(ok.error(), "link", new_path);
        }
        return {};
    }

    Result<void> unlink(std::string_view path) {
        if (ops_.read_only()) return fail(EROFS, "unlink", path);
        auto normal = NormalPath::make(path, "unlink");
        if (!normal) return std::unexpected(normal.error());
        if (normal->is_root()) return fail(EISDIR, "unlink", path);
        return in_parent("unlink", path, *normal, [&](Parent& where) -> Result<void> {
            if (normal->wants_dir()) {
                auto entry = find(where.dir().node, where.name(), "unlink", path);
                if (!entry) return std::unexpected(entry.error());
                if (!*entry) return fail(ENOENT, "unlink", path);
                const FileType type = (*entry)->type;
                ops_.release((*entry)->node);
                return fail(type == FileType::directory ? EISDIR : ENOTDIR, "unlink", path);
            }
            auto ok = ops_.unlink(where.dir().node, where.name());
            if (!ok) return as_path_error(ok.error(), "unlink", path);
            return {};
        });
    }

    Result<void> rmdir(std::string_view path) {
        if (ops_.read_only()) return fail(EROFS, "rmdir", path);
        auto normal = NormalPath::make(path, "rmdir");
        if (!normal) return std::unexpected(normal.error());
        if (normal->is_root()) return fail(EBUSY, "rmdir", path);
        return in_parent("rmdir", path, *normal, [&](Parent& where) -> Result<void> {
            auto ok = ops_.rmdir(where.dir().node, where.name());
            if (!ok) return as_path_error(ok.error(), "rmdir", path);
            return {};
        });
    }

    Result<void> rename(std::string_view from, std::string_view to, RenameFlags flags) {
        if (ops_.read_only()) return fail(EROFS, "rename", from);
        if (!valid_rename_flags(flags)) return fail(EINVAL, "rename", from);
        auto src_path = NormalPath::make(from, "rename");
        if (!src_path) return std::unexpected(src_path.error());
        auto dst_path = NormalPath::make(to, "rename");
        if (!dst_path) return std::unexpected(dst_path.error());
        if (src_path->is_root() || dst_path->is_root()) return fail(EBUSY, "rename", from);
        walk::Walker<Ops> ws(ops_, "rename", from, links_);
        auto src = ws.resolve_parent(*src_path);
        if (!src) return std::unexpected(src.error());
        ParentGuard src_guard(ws, *src);
        walk::Walker<Ops> wd(ops_, "rename", to, links_);
        auto dst = wd.resolve_parent(*dst_path);
        if (!dst) return std::unexpected(dst.error());
        ParentGuard dst_guard(wd, *dst);
        if (auto ok = require_dir(*src, "rename", from); !ok) return ok;
        if (auto ok = require_dir(*dst, "rename", to); !ok) return ok;
        if constexpr (kChecksRenames) {
            // A rename the tree refuses between these two places whatever the names hold (the
            // Vfs: a mount point EBUSY, across mounts EXDEV, on a read-only mount EROFS) is
            // refused first, as Linux judges the mounts before the entries.
            auto ok = ops_.may_rename(src->dir().node, src->name(), dst->dir().node, dst->name());
            if (!ok) return as_path_error(ok.error(), "rename", from);
        }

        auto moved = find(src->dir().node, src->name(), "rename", from);
        if (!moved) return std::unexpected(moved.error());
        std::optional<Held> held_moved;
        if (*moved) held_moved.emplace(ops_, (*moved)->node);
        auto victim = find(dst->dir().node, dst->name(), "rename", to);
        if (!victim) return std::unexpected(victim.error());
        std::optional<Held> held_victim;
        if (*victim) held_victim.emplace(ops_, (*victim)->node);

        RenameCase c;
        c.flags = flags;
        if (*moved) c.moved = (*moved)->type;
        if (*victim) c.victim = (*victim)->type;
        c.same_object = *moved && *victim && ops_.same((*moved)->node, (*victim)->node);
        c.from_wants_dir = src_path->wants_dir();
        c.to_wants_dir = dst_path->wants_dir();
        // The walks' stacks are the ancestors of each directory, root first.
        if (*moved)
            c.moved_contains_to_dir =
                dst->stack.any([&](const N& n) { return ops_.same(n, (*moved)->node); });
        if (*victim)
            c.victim_contains_from_dir =
                src->stack.any([&](const N& n) { return ops_.same(n, (*victim)->node); });
        const RenameVerdict v = check_rename(c, [&] { return ops_.has_entries((*victim)->node); });
        if (v.code) return fail(v.code, "rename", v.names_to ? to : from);
        if (v.noop) return {};
        auto ok = ops_.rename(src->dir().node, src->name(), dst->dir().node, dst->name(), flags);
        if (!ok) return as_path_error(ok.error(), "rename", from);
        return {};
    }

    // --- attributes ------------------------------------------------------------------------

    Result<void> chmod(std::string_view path, uint32_t mode) {
        return change_attributes("chmod", path, true, SetAttr::chmod(mode));
    }
    Result<void> chown(std::string_view path, uint32_t uid, uint32_t gid, Follow follow) {
        return change_attributes("chown", path, follow == Follow::yes, SetAttr::chown(uid, gid));
    }
    Result<void> utimens(std::string_view path, TimeUpdate atime, TimeUpdate mtime, Follow follow) {
        if (ops_.read_only()) return fail(EROFS, "utimens", path);
        if (auto ok = check_time(atime, path); !ok) return ok;
        if (auto ok = check_time(mtime, path); !ok) return ok;
        return change_attributes("utimens", path, follow == Follow::yes,
                                 SetAttr::times(atime, mtime));
    }

    Result<void> setxattr(std::string_view path, std::string_view name, std::string_view value,
                          XattrMode mode) {
        if (ops_.read_only()) return fail(EROFS, "setxattr", path);
        if (auto ok = check_xattr_name(name, "setxattr", path); !ok) return ok;
        if (auto ok = check_xattr_value(value, path); !ok) return ok;
        return on_node(path, false, "setxattr", [&](const Step& s) -> Result<void> {
            auto ok = ops_.setxattr(s.node, name, value, mode);
            if (!ok) return as_path_error(ok.error(), "setxattr", path);
            return {};
        });
    }

    Result<void> removexattr(std::string_view path, std::string_view name) {
        if (ops_.read_only()) return fail(EROFS, "removexattr", path);
        if (auto ok = check_xattr_name(name, "removexattr", path); !ok) return ok;
        return on_node(path, false, "removexattr", [&](const Step& s) -> Result<void> {
            auto ok = ops_.removexattr(s.node, name);
            if (!ok) return as_path_error(ok.error(), "removexattr", path);
            return {};
        });
    }

private:
    static constexpr bool kChecksRenames =
        requires(Ops & o, const N& n, std::string_view name) {
            { o.may_rename(n, name, n, name) } -> std::same_as<Result<void>>;
        };

    // One reference to a node, given back at the end of the scope.
    class Held {
    public:
        Held(Ops& ops, const N& node) : ops_(&ops), node_(node) {}
        Held(Held&& o) noexcept : ops_(o.ops_), node_(o.node_) { o.ops_ = nullptr; }
        Held(const Held&) = delete;
        ~Held() {
            if (ops_) ops_->release(node_);
        }

    private:
        Ops* ops_;
        N node_;
    };
    // The stack of a resolved parent, released at the end of the scope.
    class ParentGuard {
    public:
        ParentGuard(walk::Walker<Ops>& w, Parent& p) : w_(w), p_(p) {}
        ~ParentGuard() { w_.release(p_); }

    private:
        walk::Walker<Ops>& w_;
        Parent& p_;
    };

    // Resolves `path` and runs `body(step)` on what it names; errors of the node call are
    // the path call's.
    template <class Body>
    auto on_node(std::string_view path, bool follow, std::string_view op, Body&& body)
        -> decltype(body(std::declval<const Step&>())) {
        walk::Walker<Ops> w(ops_, op, path, links_);
        if (auto fast = w.try_fast(path, follow)) {  // a plain path to an entry that is there
            Held held(ops_, fast->node);
            auto out = body(*fast);
            if (!out) return as_path_error(out.error(), op, path);
            return out;
        }
        auto normal = NormalPath::make(path, op);
        if (!normal) return std::unexpected(normal.error());
        auto r = w.resolve(*normal, follow);
        if (!r) return std::unexpected(r.error());
        Held held(ops_, r->node);
        auto out = body(*r);
        if (!out) return as_path_error(out.error(), op, path);
        return out;
    }

    // The parent of a path that is not the root, then `body(parent)`.
    template <class Body>
    Result<void> in_parent(std::string_view op, std::string_view path, const NormalPath& normal,
                           Body&& body) {
        walk::Walker<Ops> w(ops_, op, path, links_);
        auto where = w.resolve_parent(normal);
        if (!where) return std::unexpected(where.error());
        ParentGuard guard(w, *where);
        if (auto ok = require_dir(*where, op, path); !ok) return ok;
        return body(*where);
    }

    static Result<void> require_dir(const Parent& p, std::string_view op, std::string_view path) {
        if (p.dir().type != FileType::directory) return fail(ENOTDIR, op, path);
        return {};
    }

    // The entry `name` of `dir`, nullopt when there is none (the caller releases it).
    Result<std::optional<Step>> find(const N& dir, std::string_view name, std::string_view op,
                                     std::string_view path) {
        auto r = ops_.lookup(dir, name);
        if (!r) return as_path_error(r.error(), op, path);
        return *r;
    }
    Result<bool> exists_in(const N& dir, std::string_view name, std::string_view op,
                           std::string_view path) {
        auto r = find(dir, name, op, path);
        if (!r) return std::unexpected(r.error());
        if (!*r) return false;
        ops_.release((*r)->node);
        return true;
    }

    // mkdir, mknod, symlink: the name must be free; a trailing '/' on anything but a
    // directory is ENOENT once the name is known to be free.
    template <class Make>
    Result<void> make_entry(std::string_view op, std::string_view path, bool is_directory,
                            Make&& make) {
        if (ops_.read_only()) return fail(EROFS, op, path);
        auto normal = NormalPath::make(path, op);
        if (!normal) return std::unexpected(normal.error());
        if (normal->is_root()) return fail(EEXIST, op, path);
        return in_parent(op, path, *normal, [&](Parent& where) -> Result<void> {
            if (normal->wants_dir() && !is_directory) {
                auto exists = exists_in(where.dir().node, where.name(), op, path);
                if (!exists) return std::unexpected(exists.error());
                return fail(*exists ? EEXIST : ENOENT, op, path);
            }
            auto ok = make(where.dir().node, where.name());
            if (!ok) return as_path_error(ok.error(), op, path);
            return {};
        });
    }

    Result<void> change_attributes(std::string_view op, std::string_view path, bool follow,
                                   const SetAttr& change) {
        if (ops_.read_only()) return fail(EROFS, op, path);
        return on_node(path, follow, op, [&](const Step& s) -> Result<void> {
            auto ok = ops_.setattr(s.node, change);
            if (!ok) return std::unexpected(ok.error());
            return {};
        });
    }

    // open() on a read-only tree: what exists answers first (EEXIST, EISDIR, ...), then EROFS,
    // as on a read-only mount.
    Result<FileHandle> open_read_only(std::string_view path, const NormalPath& normal, int flags) {
        walk::Walker<Ops> w(ops_, "open", path, links_);
        auto r = w.resolve(normal, !(flags & O_NOFOLLOW));
        if (!r) {
            if (r.error().code() == ENOENT && (flags & O_CREAT)) return fail(EROFS, "open", path);
            return std::unexpected(r.error());
        }
        if ((flags & O_CREAT) && (flags & O_EXCL)) {
            ops_.release(r->node);
            return fail(EEXIST, "open", path);
        }
        return open_found(path, *r, flags);
    }

    // Opens what a walk found (taking over its reference): a special file, a directory for
    // writing or a symlink answer first, then EROFS on a read-only tree, then the node's open.
    Result<FileHandle> open_found(std::string_view path, const Step& found, int flags) {
        Held held(ops_, found.node);
        if (auto ok = check_open_target(found.type, flags, path); !ok)
            return std::unexpected(ok.error());
        if (ops_.read_only() && ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC)))
            return fail(EROFS, "open", path);
        auto file = ops_.open(found.node, flags);
        if (!file) return as_path_error(file.error(), "open", path);
        return file;
    }

    // open() with O_CREAT: a final symlink is followed to where it points (unless O_NOFOLLOW
    // or O_EXCL), and the file is made there when missing.
    Result<FileHandle> open_create(std::string_view path, const NormalPath& normal, int flags,
                                   uint32_t mode) {
        if (normal.is_root()) return fail(EISDIR, "open", path);
        walk::Walker<Ops> w(ops_, "open", path, links_);
        auto where = w.resolve_parent(normal);
        if (!where) {
            if (where.error().code() == EEXIST) return fail(EISDIR, "open", path);
            return std::unexpected(where.error());
        }
        if (auto ok = require_dir(*where, "open", path); !ok) {
            w.release(*where);
            return std::unexpected(ok.error());
        }
        if (normal.wants_dir()) {
            w.release(*where);
            return fail(EISDIR, "open", path);
        }
        for (int follows = 0;; ++follows) {
            auto entry = find(where->dir().node, where->name(), "open", path);
            if (!entry) {
                w.release(*where);
                return std::unexpected(entry.error());
            }
            if (!*entry) {
                auto file = ops_.create(where->dir().node, where->name(), flags, mode);
                w.release(*where);
                if (!file) return as_path_error(file.error(), "open", path);
                return file;
            }
            const Step found = **entry;
            if (flags & O_EXCL) {
                ops_.release(found.node);
                w.release(*where);
                return fail(EEXIST, "open", path);
            }
            if (found.type == FileType::symlink && !(flags & O_NOFOLLOW)) {
                if (follows >= walk::kMaxSymlinkFollows) {
                    ops_.release(found.node);
                    w.release(*where);
                    return fail(ELOOP, "open", path);
                }
                auto target = ops_.readlink(found.node);
                ops_.release(found.node);
                if (!target) {
                    w.release(*where);
                    return as_path_error(target.error(), "open", path);
                }
                const std::string text(*target);
                auto next = w.resolve_target_parent(text, std::move(*where));
                if (!next) {
                    if (next.error().code() == EEXIST)
                        return fail(EISDIR, "open", path);  // "/" or "."
                    return std::unexpected(next.error());
                }
                *where = std::move(*next);
                if (auto ok = require_dir(*where, "open", path); !ok) {
                    w.release(*where);
                    return std::unexpected(ok.error());
                }
                continue;
            }
            w.release(*where);
            Held held(ops_, found.node);
            if (found.type == FileType::directory) return fail(EISDIR, "open", path);
            if (auto ok = check_open_target(found.type, flags, path); !ok)
                return std::unexpected(ok.error());
            auto file = ops_.open(found.node, flags);
            if (!file) return as_path_error(file.error(), "open", path);
            return file;
        }
    }

    Ops& ops_;
    walk::Links links_;
};

}  // namespace packfs::paths
