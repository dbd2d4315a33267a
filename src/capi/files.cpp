// The C API's open files (include/packfs/packfs.h).
#include "capi/handles.hpp"

using namespace packfs;
using capi::guarded;

namespace packfs::capi {

int give_file(std::shared_ptr<Backend> owner, FileHandle file, packfs_file** out) {
    auto handle = std::make_unique<packfs_file>();
    handle->owner = std::move(owner);
    handle->file = std::move(file);
    *out = handle.release();  // the caller's, until packfs_file_close
    return 0;
}

}  // namespace packfs::capi

extern "C" {

int packfs_file_open(packfs_fs* fs, const char* path, int flags, uint32_t mode, packfs_file** out) {
    return guarded("open", [&]() -> int {
        PACKFS_C_TRY(file, fs->fs->open(std::string_view(path), flags, mode));
        return capi::give_file(fs->fs, std::move(*file), out);
    });
}

int64_t packfs_pread(packfs_file* file, void* buf, size_t size, uint64_t offset) {
    return guarded("read", [&]() -> int64_t {
        PACKFS_C_TRY(n, file->file->pread(std::span(static_cast<std::byte*>(buf), size), offset));
        return static_cast<int64_t>(*n);
    });
}

int64_t packfs_pwrite(packfs_file* file, const void* buf, size_t size, uint64_t offset) {
    return guarded("write", [&]() -> int64_t {
        PACKFS_C_TRY(
            n, file->file->pwrite(std::span(static_cast<const std::byte*>(buf), size), offset));
        return static_cast<int64_t>(*n);
    });
}

int packfs_read_view(packfs_file* file, uint64_t offset, size_t size, const void** data,
                     size_t* length) {
    return guarded("read", [&]() -> int {
        // A scratch of its own per call, kept until close: a copy made for one view is never
        // overwritten by the next. A view into the mapping leaves it unused (and it is dropped).
        std::string scratch;
        PACKFS_C_TRY(view, file->file->read_view(offset, size, scratch));
        const auto* bytes = reinterpret_cast<const char*>(view->data());
        const bool copied =
            !view->empty() && bytes >= scratch.data() && bytes < scratch.data() + scratch.size();
        if (copied) {
            const std::size_t at = static_cast<std::size_t>(bytes - scratch.data());
            std::lock_guard lock(file->copies_mutex);
            // Found again in the kept string: a short one moves its bytes (kept inline).
            const std::string& kept = file->copies.emplace_back(std::move(scratch));
            *data = kept.data() + at;
        } else {
            *data = view->empty() ? nullptr : view->data();
        }
        *length = view->size();
        return 0;
    });
}

int packfs_fstat(packfs_file* file, packfs_attr* out) {
    return guarded("fstat", [&]() -> int {
        PACKFS_C_TRY(st, file->file->fstat());
        *out = capi::to_c(*st);
        return 0;
    });
}

int packfs_ftruncate(packfs_file* file, uint64_t size) {
    return guarded("ftruncate", [&]() -> int {
        PACKFS_C_TRY(done, file->file->truncate(size));
        return 0;
    });
}

int packfs_fsync(packfs_file* file, int datasync) {
    return guarded("fsync", [&]() -> int {
        PACKFS_C_TRY(done, file->file->fsync(datasync != 0));
        return 0;
    });
}

void packfs_file_close(packfs_file* file) {
    delete file;
}
}
