// The conformance suite's read-only topic on remote packs: the fixture tree packed into the
// directory a real nginx serves (tests/support/nginx_server.hpp) and opened by URL with
// open_remote_pack, raw and zstd, with a private cache and with a shared cache directory, and
// with its metadata fetched by block as it is used (MetaFrames, fetching on demand); and
// pushed to a real OCI registry (tests/support/registry_server.hpp) and opened by reference.
#include <cstdlib>
#include <filesystem>

#include "conformance/conformance_suite.hpp"
#include "packfs/mem.hpp"
#include "packfs/pack.hpp"
#include "packfs/remote.hpp"
#include "support/nginx_server.hpp"
#include "support/registry_server.hpp"

namespace {

using packfs::conformance::BackendFactory;
using packfs::conformance::Capabilities;
using packfs::test_support::NginxServer;

Capabilities remote_caps() {
    Capabilities caps;
    caps.read_only = true;
    caps.snapshots = true;
    return caps;
}

// The fixture tree packed under a name of its own in the served directory (it stays there; the
// server's directory goes when the process ends). Returns the name, or "" on failure.
std::string fixture_pack(packfs::PackWriteOptions write) {
    static int serial = 0;
    const std::string name = "fixture-" + std::to_string(++serial) + ".pack";
    auto mem = packfs::make_mem_backend();
    if (!packfs::conformance::build_fixture_tree(*mem, remote_caps())) return {};
    write.times = packfs::PackTimes::all;  // the suite checks atimes to the nanosecond
    const std::string path = (NginxServer::shared().root() / name).string();
    return packfs::write_pack(*mem, path, write) ? name : std::string();
}

// The fixture opened by URL (its metadata fetched whole at open when it is stored in at most
// `metadata_whole` bytes, else by block as it is used).
std::shared_ptr<packfs::Backend> make_remote(packfs::PackWriteOptions write, std::string cache,
                                             uint64_t metadata_whole) {
    NginxServer& server = NginxServer::shared();
    if (server.url("x").empty()) {
        std::fprintf(stderr, "%s\n", server.start_error().c_str());
        return nullptr;
    }
    const std::string name = fixture_pack(write);
    if (name.empty()) return nullptr;
    packfs::RemoteOptions options;
    options.cache_dir = cache.empty() ? (server.root().parent_path() / "cache").string() : cache;
    options.timeout = std::chrono::seconds(10);
    options.metadata_whole_bytes = metadata_whole;
    auto pack = packfs::open_remote_pack(server.url(name), options);
    if (!pack) {
        std::fprintf(stderr, "%s\n", pack.error().message().c_str());
        return nullptr;
    }
    return *pack;
}

// The fixture pushed to a real registry, then opened by its reference (by digest).
std::shared_ptr<packfs::Backend> make_oci(packfs::PackWriteOptions write) {
    auto& registry = packfs::test_support::RegistryServer::shared();
    if (registry.registry().empty()) {
        std::fprintf(stderr, "%s\n", registry.start_error().c_str());
        return nullptr;
    }
    const std::string name = fixture_pack(write);  // built where nginx would serve it
    if (name.empty()) return nullptr;
    const std::string path = (NginxServer::shared().root() / name).string();
    auto ref = packfs::push_pack(path, "oci://" + registry.registry() + "/conformance/" +
                                           name.substr(0, name.size() - 5) + ":v1");
    if (!ref) {
        std::fprintf(stderr, "%s\n", ref.error().message().c_str());
        return nullptr;
    }
    packfs::RemoteOptions options;
    options.cache_dir = "none";
    auto pack = packfs::open_remote_pack(*ref, options);
    if (!pack) {
        std::fprintf(stderr, "%s\n", pack.error().message().c_str());
        return nullptr;
    }
    return *pack;
}

packfs::PackWriteOptions zstd_small_blocks() {
    packfs::PackWriteOptions o;
    o.compression = packfs::Compression::zstd;
    o.block_size = 16384;
    return o;
}

BackendFactory remote_factory(
    std::string name, packfs::PackWriteOptions write, std::string cache,
    uint64_t metadata_whole = packfs::RemoteOptions{}.metadata_whole_bytes) {
    return {std::move(name),
            [write, cache, metadata_whole] { return make_remote(write, cache, metadata_whole); },
            remote_caps()};
}

}  // namespace

PACKFS_INSTANTIATE_CONFORMANCE(
    Remote, remote_factory("remote_raw_private_cache", {}, "none"),
    remote_factory("remote_zstd_shared_cache", zstd_small_blocks(), ""),
    remote_factory("remote_zstd_metadata_by_block", zstd_small_blocks(), "", 0),
    BackendFactory{"oci_zstd", [] { return make_oci(zstd_small_blocks()); }, remote_caps()});
