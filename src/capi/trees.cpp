// The C API's trees: opening each kind, snapshots, sync, close (include/packfs/packfs.h).
#include <cstddef>

#include "capi/handles.hpp"
#include "packfs/dir.hpp"
#include "packfs/mem.hpp"
#include "packfs/pack.hpp"
#include "packfs/remote.hpp"
#include "packfs/source.hpp"

namespace packfs::capi {
namespace {

int give(std::shared_ptr<Backend> fs, std::shared_ptr<Volume> volume, packfs_fs** out) {
    *out = std::make_unique<packfs_fs>(std::move(fs), std::move(volume)).release();  // C owns it
    return 0;
}

int open_volume(const char* dir, bool writable, packfs_fs** out) {
    VolumeOptions options;
    // Read-only: the pack and the journal's valid records, nothing changed on disk and no lock
    // taken, so it works beside a process that has the volume open for changes.
    options.read_only = !writable;
    PACKFS_C_TRY(volume, Volume::open(dir, options));
    std::shared_ptr<Volume> v = std::move(*volume);
    return give(v, v, out);
}

int open_dir(const char* host_dir, bool writable, packfs_fs** out) {
    DirOptions options;
    options.read_only = !writable;
    PACKFS_C_TRY(fs, open_dir_backend(host_dir, options));
    return give(std::move(*fs), nullptr, out);
}

int open_pack_path(const char* path, packfs_fs** out) {
    PACKFS_C_TRY(pack, open_pack(path));
    return give(std::move(*pack), nullptr, out);
}

}  // namespace
}  // namespace packfs::capi

using namespace packfs;
using capi::guarded;

extern "C" {

int packfs_open(const char* source, int flags, packfs_fs** out) {
    return guarded("open", [&]() -> int {
        if (source == nullptr || out == nullptr) return capi::failed(EINVAL, "open", {});
        PACKFS_C_TRY(opened,
                     open_source(source, {.writable = (flags & PACKFS_WRITABLE) != 0, .remote = {}}));
        return capi::give(std::move(opened->backend), std::move(opened->volume), out);
    });
}

int packfs_open_remote(const char* url, const packfs_remote_options* options, packfs_fs** out) {
    return guarded("open", [&]() -> int {
        if (url == nullptr || out == nullptr) return capi::failed(EINVAL, "open", {});
        if (!is_remote_url(url))
            return capi::failed(EINVAL, "open", std::string(url) + " (not a remote URL)");
        RemoteOptions o;
        if (options != nullptr) {
            // The first version of the struct ends after `headers`: anything shorter is not one.
            constexpr std::size_t kFirst =
                offsetof(packfs_remote_options, headers) + sizeof(packfs_remote_options::headers);
            if (options->size < kFirst)
                return capi::failed(EINVAL, "open", "packfs_remote_options.size");
            if (options->digest != nullptr) o.digest = options->digest;
            if (options->cache_dir != nullptr) o.cache_dir = options->cache_dir;
            o.cache_bytes = options->cache_bytes;
            if (options->timeout_ms != 0)
                o.timeout = std::chrono::milliseconds(options->timeout_ms);
            if (options->connections != 0) o.connections = options->connections;
            // Checked by open_remote_pack (EINVAL, naming what is wrong), as for every caller.
            for (const char* const* h = options->headers; h != nullptr && *h != nullptr; ++h)
                o.headers.emplace_back(*h);
        }
        PACKFS_C_TRY(pack, open_remote_pack(url, o));
        return capi::give(std::move(*pack), nullptr, out);
    });
}

int packfs_open_pack(const char* path, packfs_fs** out) {
    return guarded("open", [&] { return capi::open_pack_path(path, out); });
}

int packfs_open_volume(const char* dir, packfs_fs** out) {
    return guarded("open volume", [&] { return capi::open_volume(dir, true, out); });
}

int packfs_open_dir(const char* host_dir, int flags, packfs_fs** out) {
    return guarded("open",
                   [&] { return capi::open_dir(host_dir, (flags & PACKFS_WRITABLE) != 0, out); });
}

int packfs_open_mem(packfs_fs** out) {
    return guarded("open", [&] { return capi::give(make_mem_backend(), nullptr, out); });
}

int packfs_snapshot(packfs_fs* fs, packfs_fs** out) {
    return guarded("snapshot", [&]() -> int {
        PACKFS_C_TRY(snap, fs->fs->snapshot());
        return capi::give(std::move(*snap), nullptr, out);
    });
}

int packfs_sync(packfs_fs* fs) {
    return guarded("sync", [&]() -> int {
        if (!fs->volume) return 0;
        PACKFS_C_TRY(synced, fs->volume->sync());
        return 0;
    });
}

int packfs_read_only(const packfs_fs* fs) {
    return fs->fs->read_only() ? 1 : 0;
}

int packfs_write_pack(packfs_fs* fs, const char* out_path, const char* compression) {
    return guarded("write pack", [&]() -> int {
        PackWriteOptions options;
        const std::string_view codec = compression ? compression : "none";
        if (codec == "zstd")
            options.compression = Compression::zstd;
        else if (codec == "lz4")
            options.compression = Compression::lz4;
        else if (codec != "none")
            return capi::failed(EINVAL, "write pack", codec);
        PACKFS_C_TRY(written, write_pack(*fs->fs, out_path, options));
        return 0;
    });
}

int packfs_create_volume(const char* dir, const char* from_pack) {
    return guarded("create volume", [&]() -> int {
        VolumeInit init;
        if (from_pack != nullptr) init.from_pack = from_pack;
        PACKFS_C_TRY(made, Volume::create(dir, init));
        return 0;
    });
}

void packfs_close(packfs_fs* fs) {
    delete fs;
}
}
