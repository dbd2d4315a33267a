#include "bench/adapters.hpp"

#include <array>

#include "bench/backend_target.hpp"
#include "bench/raw_target.hpp"
#include "packfs/dir.hpp"
#include "packfs/mem.hpp"
#include "packfs/vfs.hpp"

namespace packfs::bench {
namespace {

Result<std::unique_ptr<Target>> make_mem(const std::string&) {
    auto fs = make_mem_backend();
    if (!fs) return fail(ENOTSUP, "make_mem_backend");
    return make_backend_target(std::move(fs));
}

// The Vfs with a fresh mem backend mounted at "/": every operation goes through the mount
// table's dispatch first, so the difference to "mem" is what the Vfs costs.
Result<std::unique_ptr<Target>> make_vfs(const std::string&) {
    auto vfs = Vfs::create();
    if (!vfs) return fail(ENOTSUP, "Vfs::create");
    auto mem = make_mem_backend();
    if (!mem) return fail(ENOTSUP, "make_mem_backend");
    if (auto ok = vfs->mount("/", std::move(mem)); !ok) return std::unexpected(ok.error());
    return make_backend_target(std::move(vfs));
}

// The dir backend over a fresh host directory beside raw's, default options (containment
// beneath, openat2, directory cache on): the difference to "raw" is what containment costs.
Result<std::unique_ptr<Target>> make_dir(const std::string& scratch) {
    auto dir = TempDir::create(scratch, "dir-");
    if (!dir) return std::unexpected(dir.error());
    auto fs = open_dir_backend(dir->path());
    if (!fs) return std::unexpected(fs.error());
    return make_backend_target(std::move(*fs), std::move(*dir));
}

const std::array kAdapters{
    BackendAdapter{"mem", AdapterRole::subject, true, make_mem},
    BackendAdapter{"vfs", AdapterRole::subject, true, make_vfs},
    BackendAdapter{"dir", AdapterRole::subject, false, make_dir, true},
    BackendAdapter{"raw", AdapterRole::baseline, false,
                   [](const std::string& scratch) { return make_raw_target(scratch, false); },
                   true},
    BackendAdapter{"raw+fsync", AdapterRole::durable, false,
                   [](const std::string& scratch) { return make_raw_target(scratch, true); }, true},
};

}  // namespace

std::span<const BackendAdapter> backend_adapters() { return kAdapters; }

}  // namespace packfs::bench
