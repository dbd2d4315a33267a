// The C API's calls by node (include/packfs/packfs.h): what a kernel or FUSE calls, for trees
// of any depth.
#include "capi/handles.hpp"

using namespace packfs;
using capi::guarded;

namespace {

// An entry's node into `node` (one reference, handed over) and its attributes into `attr`,
// either may be NULL: a node not asked for is given back at once.
int give_entry(Backend& fs, const Entry& entry, packfs_node* node, packfs_attr* attr) {
    if (attr != nullptr) *attr = capi::to_c(entry.stat);
    if (node != nullptr)
        *node = entry.node.id;
    else if (entry.node != kRootNode)
        fs.forget(entry.node, 1);
    return 0;
}

}  // namespace

extern "C" {

int packfs_lookup(packfs_fs* fs, packfs_node dir, const char* name, packfs_node* out,
                  packfs_attr* attr) {
    return guarded("lookup", [&]() -> int {
        PACKFS_C_TRY(entry, fs->fs->lookup(Node{dir}, name));
        return give_entry(*fs->fs, *entry, out, attr);
    });
}

int packfs_lookup_path(packfs_fs* fs, const char* path, int follow, packfs_node* out,
                       packfs_attr* attr) {
    return guarded("lookup", [&]() -> int {
        PACKFS_C_TRY(entry, lookup_path(*fs->fs, path, follow ? Follow::yes : Follow::no));
        return give_entry(*fs->fs, *entry, out, attr);
    });
}

void packfs_forget(packfs_fs* fs, packfs_node node, uint64_t count) {
    fs->fs->forget(Node{node}, count);
}

int packfs_getattr(packfs_fs* fs, packfs_node node, packfs_attr* out) {
    return guarded("getattr", [&]() -> int {
        PACKFS_C_TRY(st, fs->fs->getattr(Node{node}));
        *out = capi::to_c(*st);
        return 0;
    });
}

int64_t packfs_readlink_node(packfs_fs* fs, packfs_node node, char* buf, size_t size) {
    return guarded("readlink", [&]() -> int64_t {
        PACKFS_C_TRY(target, fs->fs->readlink(Node{node}));
        return capi::copy_out(*target, buf, size, true);
    });
}

int packfs_opendir_node(packfs_fs* fs, packfs_node dir, packfs_dir** out) {
    return guarded("readdir", [&]() -> int {
        PACKFS_C_TRY(entries, fs->fs->list(Node{dir}));
        auto listing = std::make_unique<packfs_dir>();
        listing->owner = fs->fs;
        listing->entries = std::move(*entries);
        *out = listing.release();  // the caller's, until packfs_closedir
        return 0;
    });
}

int packfs_open_node(packfs_fs* fs, packfs_node node, int flags, packfs_file** out) {
    return guarded("open", [&]() -> int {
        PACKFS_C_TRY(file, fs->fs->open(Node{node}, flags));
        return capi::give_file(fs->fs, std::move(*file), out);
    });
}

int packfs_create_at(packfs_fs* fs, packfs_node dir, const char* name, int flags, uint32_t mode,
                     packfs_node* node, packfs_file** out) {
    return guarded("create", [&]() -> int {
        PACKFS_C_TRY(made, fs->fs->create(Node{dir}, name, flags, mode));
        give_entry(*fs->fs, made->entry, node, nullptr);
        return capi::give_file(fs->fs, std::move(made->file), out);
    });
}

int packfs_mkdir_at(packfs_fs* fs, packfs_node dir, const char* name, uint32_t mode,
                    packfs_node* out) {
    return guarded("mkdir", [&]() -> int {
        PACKFS_C_TRY(entry, fs->fs->mkdir(Node{dir}, name, mode));
        return give_entry(*fs->fs, *entry, out, nullptr);
    });
}

int packfs_symlink_at(packfs_fs* fs, packfs_node dir, const char* name, const char* target,
                      packfs_node* out) {
    return guarded("symlink", [&]() -> int {
        PACKFS_C_TRY(entry, fs->fs->symlink(Node{dir}, name, target));
        return give_entry(*fs->fs, *entry, out, nullptr);
    });
}

int packfs_unlink_at(packfs_fs* fs, packfs_node dir, const char* name) {
    return guarded("unlink", [&]() -> int {
        PACKFS_C_TRY(done, fs->fs->unlink(Node{dir}, name));
        return 0;
    });
}

int packfs_rmdir_at(packfs_fs* fs, packfs_node dir, const char* name) {
    return guarded("rmdir", [&]() -> int {
        PACKFS_C_TRY(done, fs->fs->rmdir(Node{dir}, name));
        return 0;
    });
}

int packfs_rename_at(packfs_fs* fs, packfs_node dir, const char* name, packfs_node to_dir,
                     const char* to_name, unsigned flags) {
    return guarded("rename", [&]() -> int {
        if (flags > PACKFS_RENAME_EXCHANGE) return capi::failed(EINVAL, "rename", name);
        PACKFS_C_TRY(done, fs->fs->rename(Node{dir}, name, Node{to_dir}, to_name,
                                          static_cast<RenameFlags>(flags)));
        return 0;
    });
}
}
