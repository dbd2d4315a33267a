// Test helpers for overlays: lowers made from a tree built through the Backend API, and a
// recursive remove through the API.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "packfs/backend.hpp"
#include "packfs/mem.hpp"
#include "packfs/pack.hpp"

namespace packfs::overlay_test {

// Write options recording every time: the suites check a lower's atimes are kept.
inline PackWriteOptions all_times() {
    PackWriteOptions options;
    options.times = PackTimes::all;
    return options;
}

// A pack of whatever `build` makes in a fresh mem backend. The file is unlinked once open (the
// backend keeps its mapping), so nothing is left behind.
inline std::shared_ptr<PackBackend> pack_of(const std::function<bool(Backend&)>& build,
                                            const PackWriteOptions& options = all_times()) {
    auto mem = make_mem_backend();
    if (!build(*mem)) return nullptr;
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/packfs-ovl-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) return nullptr;
    const std::filesystem::path dir = tmpl;
    const std::string path = (dir / "lower.pack").string();
    std::shared_ptr<PackBackend> out;
    if (write_pack(*mem, path, options)) {
        if (auto pack = open_pack(path)) out = *pack;
    }
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
    return out;
}

// Removes everything under `dir` (not `dir` itself) through the API.
inline bool remove_tree(Backend& fs, const std::string& dir) {
    auto entries = fs.readdir(dir);
    if (!entries) return false;
    for (const DirEntry& e : *entries) {
        const std::string path = dir == "/" ? "/" + e.name : dir + "/" + e.name;
        if (e.type == FileType::directory) {
            if (!remove_tree(fs, path) || !fs.rmdir(path)) return false;
        } else if (!fs.unlink(path)) {
            return false;
        }
    }
    return true;
}

// Copies every object under `dir` up into the overlay's upper by a metadata change that changes
// no value (a chown to its own owner, not following symlinks): every later read is the upper's.
inline bool copy_up_tree(Backend& fs, const std::string& dir) {
    auto entries = fs.readdir(dir);
    if (!entries) return false;
    for (const DirEntry& e : *entries) {
        const std::string path = dir == "/" ? "/" + e.name : dir + "/" + e.name;
        auto st = fs.lstat(path);
        if (!st || !fs.chown(path, st->uid, st->gid, Follow::no)) return false;
        if (e.type == FileType::directory && !copy_up_tree(fs, path)) return false;
    }
    return true;
}

}  // namespace packfs::overlay_test
