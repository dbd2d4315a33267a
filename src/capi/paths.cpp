// The C API's calls by path: attributes, changes, listings (include/packfs/packfs.h).
#include "capi/handles.hpp"

using namespace packfs;
using capi::guarded;

namespace {

int stat_into(Result<Stat> st, packfs_attr* out) {
    if (!st) return capi::failed(std::move(st).error());
    *out = capi::to_c(*st);
    return 0;
}

int done(Result<void> r) {
    return r ? 0 : capi::failed(std::move(r).error());
}

}  // namespace

extern "C" {

int packfs_stat(packfs_fs* fs, const char* path, packfs_attr* out) {
    return guarded("stat", [&] { return stat_into(fs->fs->stat(path), out); });
}

int packfs_lstat(packfs_fs* fs, const char* path, packfs_attr* out) {
    return guarded("lstat", [&] { return stat_into(fs->fs->lstat(path), out); });
}

int64_t packfs_readlink(packfs_fs* fs, const char* path, char* buf, size_t size) {
    return guarded("readlink", [&]() -> int64_t {
        PACKFS_C_TRY(target, fs->fs->readlink(std::string_view(path)));
        return capi::copy_out(*target, buf, size, true);
    });
}

int64_t packfs_getxattr(packfs_fs* fs, const char* path, const char* name, void* buf, size_t size) {
    return guarded("getxattr", [&]() -> int64_t {
        PACKFS_C_TRY(value, fs->fs->getxattr(std::string_view(path), name));
        return capi::copy_out(*value, buf, size, false);
    });
}

int64_t packfs_listxattr(packfs_fs* fs, const char* path, char* buf, size_t size) {
    return guarded("listxattr", [&]() -> int64_t {
        PACKFS_C_TRY(names, fs->fs->listxattr(std::string_view(path)));
        std::string joined;
        for (const std::string& n : *names) joined.append(n).push_back('\0');
        return capi::copy_out(joined, buf, size, false);
    });
}

int packfs_mkdir(packfs_fs* fs, const char* path, uint32_t mode) {
    return guarded("mkdir", [&] { return done(fs->fs->mkdir(path, mode)); });
}

int packfs_rmdir(packfs_fs* fs, const char* path) {
    return guarded("rmdir", [&] { return done(fs->fs->rmdir(path)); });
}

int packfs_unlink(packfs_fs* fs, const char* path) {
    return guarded("unlink", [&] { return done(fs->fs->unlink(path)); });
}

int packfs_rename(packfs_fs* fs, const char* from, const char* to, unsigned flags) {
    return guarded("rename", [&]() -> int {
        if (flags > PACKFS_RENAME_EXCHANGE) return capi::failed(EINVAL, "rename", from);
        return done(fs->fs->rename(from, to, static_cast<RenameFlags>(flags)));
    });
}

int packfs_symlink(packfs_fs* fs, const char* target, const char* link_path) {
    return guarded("symlink", [&] { return done(fs->fs->symlink(target, link_path)); });
}

int packfs_link(packfs_fs* fs, const char* existing, const char* new_path) {
    return guarded("link", [&] { return done(fs->fs->link(existing, new_path)); });
}

int packfs_chmod(packfs_fs* fs, const char* path, uint32_t mode) {
    return guarded("chmod", [&] { return done(fs->fs->chmod(path, mode)); });
}

int packfs_truncate(packfs_fs* fs, const char* path, uint64_t size) {
    return guarded("truncate", [&] { return done(fs->fs->truncate(path, size)); });
}

int packfs_setxattr(packfs_fs* fs, const char* path, const char* name, const void* value,
                    size_t size, int flags) {
    return guarded("setxattr", [&]() -> int {
        if (flags < 0 || flags > 2) return capi::failed(EINVAL, "setxattr", path);
        const std::string_view bytes(static_cast<const char*>(value), value ? size : 0);
        return done(
            fs->fs->setxattr(std::string_view(path), name, bytes, static_cast<XattrMode>(flags)));
    });
}

int packfs_removexattr(packfs_fs* fs, const char* path, const char* name) {
    return guarded("removexattr",
                   [&] { return done(fs->fs->removexattr(std::string_view(path), name)); });
}

int packfs_opendir(packfs_fs* fs, const char* path, packfs_dir** out) {
    return guarded("readdir", [&]() -> int {
        PACKFS_C_TRY(entries, fs->fs->readdir(path));
        auto dir = std::make_unique<packfs_dir>();
        dir->owner = fs->fs;
        dir->entries = std::move(*entries);
        *out = dir.release();  // the caller's, until packfs_closedir
        return 0;
    });
}

int packfs_readdir(packfs_dir* dir, packfs_dirent* out) {
    std::lock_guard lock(dir->mutex);
    if (dir->next >= dir->entries.size()) return 0;
    const DirEntry& e = dir->entries[dir->next++];
    *out = {e.name.c_str(), e.ino, file_type_to_mode_bits(e.type)};
    return 1;
}

size_t packfs_dir_count(const packfs_dir* dir) {
    return dir->entries.size();
}

void packfs_closedir(packfs_dir* dir) {
    delete dir;
}
}
