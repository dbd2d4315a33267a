// Remote packs (DESIGN §15, docs/REMOTE.md): a pack read from an HTTP server that honours Range
// requests or from an OCI registry, fetching only the blocks that are read, each checked against
// its SHA-256 before it is used or cached, and kept in a local block cache shared by every process
// on the machine.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "packfs/error.hpp"
#include "packfs/export.hpp"
#include "packfs/pack.hpp"

namespace packfs {

struct RemoteOptions {
    // The pack's image digest (64 hex digits, as `packfs info` prints it; "sha256:" may lead):
    // the header and the metadata must match it, or the open fails. Without it the pack is
    // trusted as its own header names it (which still catches damage, not a dishonest server).
    std::string digest;
    // Where fetched blocks are kept: a directory (created if missing), "" for the default
    // ($XDG_CACHE_HOME/packfs, else ~/.cache/packfs), or "none" for a private file that goes
    // when the pack is closed.
    std::string cache_dir;
    // The cache's bound, 0: a quarter of the free space of its filesystem. When a pack is
    // opened, and each time it has fetched a sixteenth of the bound more, the least recently
    // opened packs no process has open are removed; if the packs in use alone are still over,
    // the pack evicts its least recently read blocks down to three quarters of the bound.
    uint64_t cache_bytes = 0;
    // How long a read may wait for the server, retries included, before it fails with EIO.
    std::chrono::milliseconds timeout{30'000};
    // Connections kept open to the server (requests in flight at once).
    unsigned connections = 8;
    // Request headers ("Name: value") sent with every request of an http(s) URL: a token for
    // a private server, CDN or bucket ("Authorization: Bearer ..."). Never logged. An oci://
    // reference authenticates as the registry asks (anonymous or token): with headers it is
    // EINVAL.
    std::vector<std::string> headers;
    // The most a sequential reader makes one request fetch ahead of what it asked for; and
    // how far ahead of a walk (find, tar, a data loader opening the files of the directories
    // it lists, in order) the files it will open next are fetched in the background, 0: no
    // walk prefetch (docs/REMOTE.md, "Prefetch").
    uint64_t readahead_bytes = 8 << 20;
    // Where the reasons for failed fetches go (one line each); empty: standard error.
    std::function<void(std::string_view)> log;
    // push_pack and pull_pack: the pack's bytes sent or received so far and its size (0 while
    // unknown), called on the calling thread as they move; for a progress display.
    std::function<void(uint64_t done, uint64_t total)> progress;
    // Decompressed blocks kept in memory (compressed packs), as PackOpenOptions.
    std::size_t block_cache_bytes = 64 << 20;
    // Metadata stored in at most this many bytes is fetched whole when the pack is opened, in
    // one request. Larger metadata (compressed, with metadata digests: what `packfs build
    // --compress` writes) is fetched by block as it is used, so opening a pack of millions of
    // files fetches its header and 48 bytes per 16 KiB of metadata. 0: always by block.
    uint64_t metadata_whole_bytes = 8 << 20;
};

// What is wrong with `options`, "" when nothing: connections outside 1 to 64, a timeout not
// above 0, a header that is not one line of "Name: value". open_remote_pack and pull_pack
// refuse such options (EINVAL); a front end can ask first to name its own option.
PACKFS_API std::string remote_option_problem(const RemoteOptions& options);

// Whether `source` names a remote pack (http://, https:// or oci://) rather than a host path.
PACKFS_API bool is_remote_url(std::string_view source) noexcept;

// Opens the pack at `url` (a fragment "#sha256:<digest>" pins the digest, as options.digest
// does): fetches its header and metadata (two requests, or none when the cache holds them and
// `digest` is given; metadata over options.metadata_whole_bytes is then fetched by block as it
// is used), checks them against the digest, and returns a read-only backend that fetches data
// blocks on demand. Errors: EINVAL for a bad URL or digest;
// ENOENT for a 404; ENOTSUP for a pack without block digests (rebuild it with `packfs convert`)
// or a server that ignores Range; EUCLEAN when the pack does not match its digest; EIO or
// ETIMEDOUT when the server cannot be reached in time.
PACKFS_API Result<std::shared_ptr<PackBackend>> open_remote_pack(std::string_view url,
                                                                 const RemoteOptions& options = {});

// --- whole packs: registries and full copies (docs/REMOTE.md, "Registries") -------------------
// What a push is told beyond the remote options.
struct PushOptions {
    // The packs a pack built over bases (`packfs build --base`) names, where they are not beside
    // it under the file names it records (`packfs push --base`). Each is used where its image
    // digest is one the pack names; the others are not pushed.
    std::vector<std::string> bases = {};
    // Repositories of the same registry to mount a blob the target lacks from, in this order,
    // before uploading it (`POST .../blobs/uploads/?mount=<digest>&from=<repository>`): a blob
    // the registry mounts is not sent. One that declines is uploaded as usual.
    std::vector<std::string> mount_from = {};
};

// One blob of a push, and what became of it.
struct PushedBlob {
    enum class Role : uint8_t { pack, base, config };
    enum class Outcome : uint8_t { sent, present, mounted };
    Role role = Role::pack;
    std::string name;    // the pack's or base's file name ("" for the config)
    std::string digest;  // "sha256:<hex>" of the blob
    uint64_t size = 0;
    Outcome outcome = Outcome::sent;
    std::string mounted_from;  // the repository, when mounted
};

struct PushReport {
    // oci://REGISTRY/REPOSITORY@sha256:<manifest digest>
    std::string reference;
    // The blobs' bytes sent (the manifest, a few hundred bytes, is not counted).
    uint64_t bytes_uploaded = 0;
    unsigned blobs_sent = 0, blobs_present = 0, blobs_mounted = 0;
    // The pack, its bases in the order it names them, then the config (the manifest's order).
    std::vector<PushedBlob> blobs;
};

// Uploads the pack at `pack_path` to `reference` (oci://REGISTRY/REPOSITORY[:TAG], tag "latest"
// when none) as an artifact: a manifest whose first layer is the pack and which names its image
// digest, then, for a pack built over bases, one layer per base it names (media type
// application/vnd.packfs.pack.base.v2, with its image digest and file name), so that the
// reference reads as a whole. Each blob (the pack, each base, the config) is asked for first
// and sent only when the registry lacks it (or mounted from push.mount_from). The bases are
// found as open_pack finds them: in push.bases, else beside the pack under the names it records;
// one found nowhere is ENOENT naming it (digest and name). ENOTSUP for a pack or base without
// block digests (it could not be read remotely).
PACKFS_API Result<PushReport> push_pack_report(std::string_view pack_path,
                                               std::string_view reference,
                                               const RemoteOptions& options = {},
                                               const PushOptions& push = {});
// The same, bases beside the pack and nothing mounted, answering the reference by digest.
PACKFS_API Result<std::string> push_pack(std::string_view pack_path, std::string_view reference,
                                         const RemoteOptions& options = {});

// A pack a pull wrote, or found already there.
struct PulledPack {
    std::string path;
    std::string digest;  // its image digest, hex
    uint64_t size = 0;
    bool fetched = false;  // false: a base beside OUT that already was that pack
};

struct PullReport {
    PulledPack pack;
    std::vector<PulledPack> bases;  // in the order the pack names them
    uint64_t bytes_fetched = 0;     // the pack's and the bases' fetched
};

// Copies the whole pack at `source` (an http(s) URL or an oci:// reference) to `out_path`
// (through a temporary file, renamed into place once checked: the blob's digest for a
// registry, the image digest against the pin or the manifest, the header and metadata as
// open_pack checks them). A pack built over bases has each base written beside `out_path`
// under the file name the pack records (from beside the URL, or the base layer of the
// manifest naming its image digest), checked the same way against that digest; a file of that
// name that already is that pack is kept and nothing is fetched for it. A file of that name
// that is another pack, or not a pack, fails the pull (EEXIST, naming it) before anything is
// renamed into place: nothing is overwritten.
PACKFS_API Result<PullReport> pull_pack_report(std::string_view source, std::string_view out_path,
                                               const RemoteOptions& options = {});
// The same, answering the pack's size.
PACKFS_API Result<uint64_t> pull_pack(std::string_view source, std::string_view out_path,
                                      const RemoteOptions& options = {});

// --- the block cache (docs/REMOTE.md, "The cache") ---------------------------------------------
// The default directory: $XDG_CACHE_HOME/packfs, else $HOME/.cache/packfs.
PACKFS_API std::string remote_cache_dir();

// One pack in a cache directory, for `packfs cache ls`.
struct CachedPack {
    std::string digest;  // the pack's image digest (the file's name)
    std::string path;
    uint64_t size = 0;      // the pack's size
    uint64_t on_disk = 0;   // bytes its fetched blocks take
    int64_t last_used = 0;  // when a process last opened it (seconds since the epoch)
    bool in_use = false;    // some process has it open now
};
// The packs in `dir`, least recently used first (none when `dir` does not exist).
PACKFS_API Result<std::vector<CachedPack>> list_remote_cache(const std::string& dir);
// Removes packs no process has open, least recently used first, until the rest take at most
// `bound` bytes (0: all of them). Returns the bytes freed. A pack in use is never removed.
PACKFS_API Result<uint64_t> prune_remote_cache(const std::string& dir, uint64_t bound);

}  // namespace packfs
