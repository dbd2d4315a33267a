// The dir backend: creating, removing and renaming names. Each is one *at call in the cached
// parent; none follows a final symlink, so each hands the kernel the name as the caller wrote
// it (with a trailing '/') and lets the kernel judge it, as it does for any program.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "dir/dir_backend.hpp"
#include "packfs/path.hpp"

namespace packfs::dir {
namespace {

// The errno of an int-returning syscall.
int result_of(int rc) noexcept { return rc == 0 ? 0 : errno; }

}  // namespace

Result<void> DirBackend::mkdir(std::string_view path, uint32_t mode) {
    auto t = locate(path, "mkdir");
    if (!t) return std::unexpected(t.error());
    if (t->root) return fail(EEXIST, "mkdir", t->path);
    int e = in_parent(*t, [&](int dir) {
        return result_of(::mkdirat(dir, t->name.c_str(), mode & 07777));
    });
    if (e) return fail(e, "mkdir", t->path);
    return {};
}

Result<void> DirBackend::rmdir(std::string_view path) {
    auto t = locate(path, "rmdir");
    if (!t) return std::unexpected(t.error());
    if (t->root) return fail(EBUSY, "rmdir", t->path);  // as rmdir("/") answers
    const std::string name = t->name_as_written();
    int e = in_parent(*t, [&](int dir) {
        return result_of(::unlinkat(dir, name.c_str(), AT_REMOVEDIR));
    });
    if (e) return fail(e, "rmdir", t->path);
    cache_.forget(t->path);
    return {};
}

Result<void> DirBackend::unlink(std::string_view path) {
    auto t = locate(path, "unlink");
    if (!t) return std::unexpected(t.error());
    if (t->root) return fail(EISDIR, "unlink", t->path);
    const std::string name = t->name_as_written();
    int e = in_parent(*t, [&](int dir) { return result_of(::unlinkat(dir, name.c_str(), 0)); });
    if (e) return fail(e, "unlink", t->path);
    return {};
}

Result<void> DirBackend::rename(std::string_view from, std::string_view to, RenameFlags flags) {
    auto a = locate(from, "rename");
    if (!a) return std::unexpected(a.error());
    auto b = locate(to, "rename");
    if (!b) return std::unexpected(b.error());
    if (a->root || b->root) return fail(EBUSY, "rename", a->root ? a->path : b->path);
    unsigned kflags = 0;
    if (flags == RenameFlags::noreplace) kflags = RENAME_NOREPLACE;
    if (flags == RenameFlags::exchange) kflags = RENAME_EXCHANGE;
    const std::string from_name = a->name_as_written();
    const std::string to_name = b->name_as_written();
    auto e = in_parents(*a, *b, [&](int from_dir, int to_dir) {
        return result_of(::renameat2(from_dir, from_name.c_str(), to_dir, to_name.c_str(), kflags));
    });
    if (e.code) return fail(e.code, "rename", e.at->path);
    // A directory moved here was watched if cached, so its inotify event already marks every
    // entry stale; dropping its own entries now only saves the next lookup the sync.
    cache_.forget(a->path);
    cache_.forget(b->path);
    return {};
}

Result<void> DirBackend::symlink(std::string_view target, std::string_view link_path) {
    if (auto ok = check_symlink_target(target, link_path); !ok) return ok;
    auto t = locate(link_path, "symlink");
    if (!t) return std::unexpected(t.error());
    if (t->root) return fail(EEXIST, "symlink", t->path);
    const std::string text(target);
    const std::string name = t->name_as_written();
    int e = in_parent(*t, [&](int dir) {
        return result_of(::symlinkat(text.c_str(), dir, name.c_str()));
    });
    if (e) return fail(e, "symlink", t->path);
    return {};
}

Result<void> DirBackend::link(std::string_view existing, std::string_view new_path) {
    auto a = locate(existing, "link");
    if (!a) return std::unexpected(a.error());
    auto b = locate(new_path, "link");
    if (!b) return std::unexpected(b.error());
    // Linux's order: the existing path is looked up first (a trailing '/' follows it), then
    // the new name (its parent, then EEXIST), and only then is a directory refused (EPERM).
    if (a->root || a->trailing_slash) {
        if (!a->root) {
            auto object = open_object(*a, O_PATH);
            if (!object) return fail(object.error(), "link", a->path);
        }
        if (b->root) return fail(EEXIST, "link", b->path);
        auto dir = parent_of(*b);
        if (!dir) return fail(dir.error(), "link", b->path);
        Stat st;
        const int e = stat_at(dir->get(), b->name.c_str(), AT_SYMLINK_NOFOLLOW, st);
        if (e == 0) return fail(EEXIST, "link", b->path);
        // A new name that is missing, written "x/", can never be made by link: ENOENT.
        if (e != ENOENT || b->trailing_slash) return fail(e, "link", b->path);
        return fail(EPERM, "link", a->path);
    }
    if (b->root) return fail(EEXIST, "link", b->path);
    const std::string to_name = b->name_as_written();
    // No AT_SYMLINK_FOLLOW: a symlink is linked as itself, as link(2) on Linux does.
    auto e = in_parents(*a, *b, [&](int from_dir, int to_dir) {
        return result_of(::linkat(from_dir, a->name.c_str(), to_dir, to_name.c_str(), 0));
    });
    if (e.code && e.at == &*b) {
        // The new path's parent failed; a missing existing path is reported first.
        if (auto st = lstat(a->path); !st) return fail(st.error().code(), "link", a->path);
    }
    if (e.code) return fail(e.code, "link", e.at->path);
    return {};
}

Result<void> DirBackend::mknod(std::string_view path, FileType type, uint32_t mode,
                               uint64_t rdev) {
    if (type == FileType::directory || type == FileType::symlink) return fail(EINVAL, "mknod", path);
    auto t = locate(path, "mknod");
    if (!t) return std::unexpected(t.error());
    if (t->root) return fail(EEXIST, "mknod", t->path);
    const mode_t bits = file_type_to_mode_bits(type) | (mode & 07777);
    const dev_t dev = (type == FileType::char_device || type == FileType::block_device)
                          ? static_cast<dev_t>(rdev)
                          : 0;
    const std::string name = t->name_as_written();
    int e = in_parent(*t, [&](int dir) { return result_of(::mknodat(dir, name.c_str(), bits, dev)); });
    if (e) return fail(e, "mknod", t->path);
    return {};
}

}  // namespace packfs::dir
