// The conformance suite's read-only topic on packs: the fixture tree built in a mem backend,
// written with write_pack to a temporary file, and opened with open_pack (raw through a
// mapping, raw through pread, zstd with small blocks).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "conformance/conformance_suite.hpp"
#include "packfs/mem.hpp"
#include "packfs/pack.hpp"

namespace {

using packfs::conformance::BackendFactory;
using packfs::conformance::Capabilities;

Capabilities pack_caps() {
    Capabilities caps;
    caps.read_only = true;
    caps.snapshots = true;
    return caps;
}

// A pack of the fixture tree; the file is unlinked once open (the backend keeps its mapping or
// descriptor), so nothing is left behind.
std::shared_ptr<packfs::Backend> make_pack(packfs::PackWriteOptions write,
                                           packfs::PackOpenOptions open) {
    auto mem = packfs::make_mem_backend();
    if (!packfs::conformance::build_fixture_tree(*mem, pack_caps())) return nullptr;
    write.times = packfs::PackTimes::all;  // the suite checks atimes are kept to the nanosecond
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/packfs-conf-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) return nullptr;
    const std::filesystem::path dir = tmpl;
    const std::string path = (dir / "fixture.pack").string();
    std::shared_ptr<packfs::Backend> out;
    if (packfs::write_pack(*mem, path, write)) {
        if (auto pack = packfs::open_pack(path, open)) out = *pack;
    }
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
    return out;
}

packfs::PackWriteOptions zstd_small_blocks() {
    packfs::PackWriteOptions o;
    o.compression = packfs::Compression::zstd;
    o.block_size = 16384;
    return o;
}

packfs::PackWriteOptions v2(packfs::PackWriteOptions o = {}) {
    o.format = 2;
    return o;
}

BackendFactory pack_factory(std::string name, packfs::PackWriteOptions write,
                            packfs::PackOpenOptions open) {
    return {std::move(name), [write, open] { return make_pack(write, open); }, pack_caps()};
}

}  // namespace

PACKFS_INSTANTIATE_CONFORMANCE(
    Pack, pack_factory("pack_mmap_raw", {}, {.access = packfs::PackAccess::mmap}),
    pack_factory("pack_pread_raw", {}, {.access = packfs::PackAccess::pread}),
    pack_factory("pack_mmap_zstd", zstd_small_blocks(),
                 {.access = packfs::PackAccess::mmap, .block_cache_bytes = 64 * 1024}),
    pack_factory("pack_v2_mmap_raw", v2(), {.access = packfs::PackAccess::mmap}),
    pack_factory("pack_v2_pread_raw", v2(), {.access = packfs::PackAccess::pread}),
    pack_factory("pack_v2_mmap_zstd", v2(zstd_small_blocks()),
                 {.access = packfs::PackAccess::mmap, .block_cache_bytes = 64 * 1024}));
