// What the C API's opaque handles hold (include/packfs/packfs.h), and the helpers every call
// uses: the thread's error message, Stat to packfs_attr, and a guard so that no C++ exception
// crosses into C.
#pragma once

#include <deque>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "packfs/backend.hpp"
#include "packfs/packfs.h"
#include "packfs/volume.hpp"

struct packfs_fs {
    std::shared_ptr<packfs::Backend> fs;
    std::shared_ptr<packfs::Volume> volume;  // set when it is one: packfs_sync
};

struct packfs_file {
    std::shared_ptr<packfs::Backend> owner;  // keeps the tree alive
    packfs::FileHandle file;
    // The copies packfs_read_view made, kept until the file is closed (a deque: adding one
    // never moves the others).
    std::mutex copies_mutex;
    std::deque<std::string> copies;
};

struct packfs_dir {
    std::shared_ptr<packfs::Backend> owner;
    std::vector<packfs::DirEntry> entries;
    std::size_t next = 0;
    std::mutex mutex;  // packfs_readdir from several threads takes entries one by one
};

namespace packfs::capi {

// Records `error` as the thread's last (packfs_errmsg) and returns -errno.
int failed(Error&& error) noexcept;
int failed(int code, std::string_view op, std::string_view path) noexcept;

packfs_attr to_c(const Stat& st) noexcept;

// A new packfs_file for `file`, into `out`; returns 0 (files.cpp).
int give_file(std::shared_ptr<Backend> owner, FileHandle file, packfs_file** out);

// Runs `body` (returning int or int64_t), turning an exception into a negative errno: the
// only one the library lets out is std::bad_alloc.
template <class Body>
auto guarded(std::string_view op, Body&& body) noexcept -> decltype(body()) {
    try {
        return body();
    } catch (const std::bad_alloc&) {
        return failed(ENOMEM, op, {});
    } catch (...) {
        return failed(EIO, op, {});
    }
}

// A result's value, or the error recorded and -errno returned from the enclosing call.
#define PACKFS_C_TRY(var, expr) \
    auto var = (expr);          \
    if (!var) return ::packfs::capi::failed(std::move(var).error())

// Copies `bytes` into buf[0, size) as getxattr(2) and readlink do, returning the full length
// (so a caller with too small a buffer, or none, learns what to allocate). `terminate`: add a
// NUL when it fits.
int64_t copy_out(std::string_view bytes, void* buf, std::size_t size, bool terminate) noexcept;

}  // namespace packfs::capi
