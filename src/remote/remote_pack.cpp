// open_remote_pack (packfs/remote.hpp): the header and metadata fetched and checked against the
// image digest, then a pack backend whose data reads go through HttpPackBytes (the reader's
// pack::ByteSource) and whose listings and opens go to a WalkPrefetch (its AccessObserver).
//
// Opening, cold: GET the first 512 bytes (the header, and the pack's size from Content-Range),
// then GET [meta_offset, end) (the metadata region and its sums: the format puts them last so
// that this is one request). Metadata larger than RemoteOptions::metadata_whole_bytes (stored
// as frames, with metadata digests) is not fetched whole: the second GET starts after the
// frames (their index, the sums, the digests), and each frame is fetched when the reader first
// uses its block, checked against its digest (MetaFrames). Warm, with the digest given and the
// cache holding the pack: no request at all; what is read from the cache file is checked like
// fetched metadata, and a cache copy that fails the checks is dropped for a fetch. Either way the
// image digest is recomputed over the header and the whole metadata (or the table of its
// blocks' digests) and must equal the header's and the pinned one, so every block digest the
// metadata holds is vouched for.
//
// Unpinned, the URL's pack is whatever its header names, and the cache remembers it
// (url_record.hpp). When the server cannot be reached at open (refused, or no answer within
// kRevalidateTimeout) and the cache holds the pack remembered, that copy is opened as if pinned,
// with a one-line notice (docs/REMOTE.md "Offline"). An oci:// reference is resolved to its
// pack's blob URL and image digest first (and the cache remembers those, and its bases' blobs).
//
// A pack built over bases has each base opened pinned to the image digest it records: from
// beside its URL under the recorded name, or for a reference from the base layer of its
// manifest that names the digest; a base the cache holds is read with no request.
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <utility>

#include "pack/format/digest.hpp"
#include "pack/reader/reader.hpp"
#include "packfs/remote.hpp"
#include "remote/bases.hpp"
#include "remote/cache_file.hpp"
#include "remote/oci.hpp"
#include "remote/options.hpp"
#include "remote/remote_bytes.hpp"
#include "remote/url_record.hpp"
#include "remote/walk_prefetch.hpp"

namespace packfs {

namespace {

using remote::CacheFile;
using remote::HttpPackBytes;
using remote::UrlRecord;

constexpr std::string_view kOp = "open_pack";

std::string hex_of(const uint8_t (&digest)[32]) {
    return pack::to_hex(std::span<const uint8_t>(digest, 32));
}

std::unexpected<Error> mismatch(std::string_view url, std::string_view what,
                                std::string_view expected, std::string_view found) {
    return std::unexpected(
        Error(kErrCorrupt, kOp,
              fmt::format("{} ({}: expected {}, found {})", url, what, expected, found)));
}

struct Opened {
    std::shared_ptr<HttpPackBytes> bytes;
    std::unique_ptr<pack::PackReader> reader;
    std::string digest;  // the image digest, hex
    bool from_server = false;  // the header came from the server (not a warm open)
};

// How long an open without a pin waits for the server when the cache holds the pack the URL
// held when it was last reached: past this (or at once when the connection is refused), the
// cached copy is read.
constexpr std::chrono::milliseconds kRevalidateTimeout{3'000};

// Whether the cache holds (a header of) the pack `digest`: enough for a warm open to try.
bool cache_holds(const std::string& cache_dir, const std::string& digest) {
    return !digest.empty() &&
           remote::cached_pack_size(fmt::format("{}/{}.pack", cache_dir, digest)) >=
               pack::kHeaderSize;
}

// A failure that says the server could not be reached (rather than that it answered).
bool unreachable(const Error& e) {
    const int code = e.code();
    return code == ECONNREFUSED || code == EHOSTUNREACH || code == ENETUNREACH ||
           code == ETIMEDOUT;
}

// One attempt. `warm`: the header and metadata from the cache file named by `pin`. Else the
// header from the server, and the metadata from the cache file when it has one and
// `trust_cache` (the reader checks it either way).
Result<Opened> open_once(const std::string& url, const RemoteOptions& options,
                         const remote::FetchOptions& fetch, const std::string& cache_dir,
                         const std::string& pin, bool warm, bool trust_cache) {
    auto bytes = std::make_shared<HttpPackBytes>(url, fetch);
    if (warm) {
        const std::string path = fmt::format("{}/{}.pack", cache_dir, pin);
        // The pack's size, from the file's trailer (a file without one is of an older layout,
        // or not a cache file: a cold open starts it over).
        const uint64_t size = remote::cached_pack_size(path);
        if (size < pack::kHeaderSize) return fail(ENOENT, kOp, path);
        auto cache = CacheFile::open(cache_dir, pin, size);
        if (!cache) return std::unexpected(cache.error());
        bytes->assume_size(size);
        bytes->set_cache(std::move(*cache), /*prefer_cache=*/true);
    }
    auto image = pack::PackImage::open(bytes);
    if (!image) return std::unexpected(image.error());
    pack::Header header;
    std::memcpy(&header, (*image)->header_bytes().data(), sizeof header);
    // The header names the pack; the rest is checked against it below (a header whose checksum
    // fails is refused by the reader before any of it is used).
    const std::string named = hex_of(header.image_digest);
    if (!pin.empty() && named != pin) return mismatch(url, "image digest", pin, named);
    if (!warm) {
        auto cache = CacheFile::open(cache_dir, named, bytes->size());
        if (!cache) return std::unexpected(cache.error());
        const bool existed = cache->existed();
        // The header, so that a warm open needs no request (checked again when read back).
        cache->write(0, (*image)->header_bytes());
        bytes->set_cache(std::move(*cache), existed && trust_cache);
    }
    const bool on_demand = (header.incompat_features & pack::kIncompatCompressedMeta) != 0 &&
                           (header.incompat_features & pack::kIncompatMetaDigests) != 0 &&
                           header.meta_frames_length > options.metadata_whole_bytes;
    if (on_demand) (*image)->fetch_frames_on_demand();
    PackOpenOptions open_options;
    open_options.access = PackAccess::pread;
    open_options.block_cache_bytes = options.block_cache_bytes;
    auto reader = pack::PackReader::open(std::move(*image), url, open_options);
    if (!reader) return std::unexpected(reader.error());
    const pack::Ctx ctx{kOp, url};
    auto digest = (*reader)->image_digest(ctx);
    if (!digest) return std::unexpected(digest.error());
    if (pack::to_hex(*digest) != named)
        return mismatch(url, "image digest of the header and metadata", named,
                        pack::to_hex(*digest));
    // Fetched whole, with metadata digests: every block against the table the digest covers
    // (on demand, each block is checked as it is fetched).
    if (!on_demand) {
        if (auto ok = (*reader)->check_metadata_digests(ctx); !ok)
            return std::unexpected(ok.error());
    }
    return Opened{std::move(bytes), std::move(*reader), named, !warm};
}

}  // namespace

std::string remote_cache_dir() {
    return remote::default_cache_dir();
}

Result<std::vector<CachedPack>> list_remote_cache(const std::string& dir) {
    return remote::list_cache(dir);
}

Result<uint64_t> prune_remote_cache(const std::string& dir, uint64_t bound) {
    return remote::prune_cache(dir, bound);
}

bool is_remote_url(std::string_view source) noexcept {
    return source.starts_with("http://") || source.starts_with("https://") ||
           remote::is_oci_url(source);
}

namespace {

// Where a pack's bytes are read from, and how.
struct Located {
    std::string url;  // http(s)
    std::string pin;  // the image digest, hex; "" for none
    std::vector<std::string> headers;
    std::function<Result<std::vector<std::string>>()> reauthorize;
    // Whether the cache remembers the pack the URL held (not for a registry's blob URL: its
    // reference's record does).
    bool remember = true;
};

struct CacheSettings {
    std::string dir;     // "none": private
    uint64_t bound = 0;  // 0: none
};

// Opens the pack at `where`: warm from the cache when pinned and held, else from the server;
// unpinned, with the copy the cache holds of what the URL held when last reached to fall back
// on ("Offline"). Its bases are left to the caller.
Result<Opened> open_located(const Located& where, const RemoteOptions& options,
                            const CacheSettings& cache) {
    const std::string& url = where.url;
    const std::string& pin = where.pin;
    const std::string& cache_dir = cache.dir;
    const remote::FetchOptions fetch{.timeout = options.timeout,
                                     .connections = options.connections,
                                     .readahead_bytes = options.readahead_bytes,
                                     .log = remote::remote_log(options.log),
                                     .headers = where.headers,
                                     .reauthorize = where.reauthorize,
                                     .cache_bound = cache.bound,
                                     .cache_dir = cache_dir};

    // Without a pin, the server says which pack the URL holds now (one request). When the cache
    // holds the one it held when last reached, that request waits at most kRevalidateTimeout,
    // and a server that cannot be reached is no failure: the cached copy is read, with a notice.
    std::string remembered;
    remote::FetchOptions first_fetch = fetch;
    if (pin.empty() && cache_dir != "none") {
        remembered = remote::read_url_record(cache_dir, url).digest;
        if (cache_holds(cache_dir, remembered))
            first_fetch.open_timeout = kRevalidateTimeout;
        else
            remembered.clear();
    }

    Result<Opened> opened = fail(ENOENT, kOp);
    if (!pin.empty() && cache_dir != "none") {
        opened = open_once(url, options, fetch, cache_dir, pin, /*warm=*/true, true);
        if (!opened && opened.error().code() != ENOENT)
            fetch.log(fmt::format("{}: the cached copy is unusable ({}); fetching it again", url,
                                  opened.error().message()));
    }
    if (!opened) {
        opened = open_once(url, options, first_fetch, cache_dir, pin, /*warm=*/false, true);
        if (!opened && !remembered.empty() && unreachable(opened.error())) {
            auto cached =
                open_once(url, options, fetch, cache_dir, remembered, /*warm=*/true, true);
            if (cached) {
                fetch.log(fmt::format(
                    "{}: the server cannot be reached ({}); reading the cached copy of the "
                    "pack it held when last reached (sha256:{})",
                    url, std::strerror(opened.error().code()), remembered));
                opened = std::move(cached);
            }
        }
    }
    if (!opened && opened.error().code() == kErrCorrupt) {
        // Perhaps a metadata copy in the cache that does not check out: once more, all of it
        // from the server (which, if it is the server's copy that is bad, fails the same way).
        opened = open_once(url, options, fetch, cache_dir, pin, /*warm=*/false, false);
    }
    if (!opened) return std::unexpected(opened.error());
    if (cache_dir != "none" && where.remember && opened->from_server)
        remote::write_url_record(cache_dir, url, {opened->digest, {}, {}});

    pack::PackReader& reader = *opened->reader;
    const pack::Ctx ctx{kOp, url};
    if (reader.stream_block_count() > 0 && !reader.has_block_digests())
        return fail(ENOTSUP, kOp,
                    fmt::format("{} (the pack has no block digests, so its blocks cannot be "
                                "checked one by one: rebuild it with `packfs convert`)",
                                url));
    auto blocks = reader.stored_blocks(ctx);
    if (!blocks) return std::unexpected(blocks.error());
    opened->bytes->set_blocks(std::move(*blocks));
    // A walk's files fetched ahead of it (walk_prefetch.hpp), unless readahead is off or the
    // cache holds every block (then following listings and opens would only cost time).
    if (options.readahead_bytes != 0 && !opened->bytes->all_held())
        reader.set_observer(
            std::make_shared<remote::WalkPrefetch>(opened->bytes, options.readahead_bytes));
    return opened;
}

// A reference resolved: where its pack is, and what the cache is to remember of it (the pack,
// and the blob URL of each base layer).
struct Resolved {
    Located where;
    UrlRecord record;
    std::shared_ptr<remote::Registry> registry;  // kept while the pack is read: tokens expire
};

// The manifest (checked against the reference's digest, when it has one) names the blob and
// the pack's image digest, which then pins the pack like a fragment would, and its bases'
// blobs. As for an unpinned URL ("Offline"): when the cache holds the pack the reference named
// when the registry was last reached, the registry is waited for at most kRevalidateTimeout,
// and one that cannot be reached is no failure: what it named then is read.
Result<Resolved> resolve_reference(const std::string& reference, const std::string& pin,
                                   const RemoteOptions& options, const std::string& cache_dir) {
    auto ref = remote::parse_oci_reference(reference);
    if (!ref) return std::unexpected(ref.error());
    auto log = remote::remote_log(options.log);
    Resolved out;
    out.registry = std::make_shared<remote::Registry>(*ref, options.timeout, log);
    const UrlRecord remembered =
        cache_dir == "none" ? UrlRecord{} : remote::read_url_record(cache_dir, reference);
    const bool fallback = !remembered.blob_url.empty() &&
                          (pin.empty() || pin == remembered.digest) &&
                          cache_holds(cache_dir, remembered.digest);
    auto found =
        out.registry->resolve(fallback ? kRevalidateTimeout : std::chrono::milliseconds{0});
    if (found) {
        out.record = {found->image_digest, found->blob_url, {}};
        for (const remote::OciBlob& base : found->bases)
            out.record.bases.emplace_back(base.image_digest, base.blob_url);
        out.where.headers = out.registry->auth_headers();
    } else if (fallback && unreachable(found.error())) {
        log(fmt::format("{}: the registry cannot be reached ({}); reading the cached copy of "
                        "the pack it named when last reached (sha256:{})",
                        reference, std::strerror(found.error().code()), remembered.digest));
        out.record = remembered;
    } else {
        return std::unexpected(found.error());
    }
    out.where.url = out.record.blob_url;
    out.where.remember = false;
    out.where.reauthorize = [registry = out.registry, blob = out.where.url] {
        return registry->refresh_auth(blob);
    };
    const auto named = remote::parse_digest_hex(out.record.digest);
    if (!named)
        return fail(EINVAL, kOp,
                    fmt::format("{} (digest '{}' is not 64 hex digits)", out.where.url,
                                out.record.digest));
    if (!pin.empty() && pin != *named)
        return mismatch(out.where.url, "image digest (given, and named by the manifest)", pin,
                        out.record.digest);
    out.where.pin = *named;
    return out;
}

// The bases of a pack built over them (docs/FORMAT.md "Extents"), each pinned to the digest the
// pack records, so that a base read before is read from the cache with no request and a new
// version fetches about what its bases lack: from beside `url` under the name the pack
// records, or for a reference, from the blob of the base layer that names that digest.
Result<void> attach_remote_bases(pack::PackReader& reader, const std::string& url,
                                 const Resolved* resolved, const RemoteOptions& options,
                                 const CacheSettings& cache) {
    const pack::Ctx ctx{kOp, url};
    std::vector<std::unique_ptr<pack::PackReader>> bases;
    for (uint64_t k = 0; k < reader.metadata().base_count(); ++k) {
        auto base = reader.metadata().base(k, ctx);
        if (!base) return std::unexpected(base.error());
        const std::string digest = pack::to_hex(base->image_digest);
        Located where{.url = {}, .pin = digest, .headers = options.headers, .reauthorize = {}};
        if (resolved != nullptr) {
            const auto& layers = resolved->record.bases;
            const auto layer = std::find_if(layers.begin(), layers.end(),
                                            [&](const auto& l) { return l.first == digest; });
            if (layer == layers.end())
                return fail(ENOENT, kOp,
                            fmt::format("{} (its base sha256:{} ('{}') is not among the "
                                        "manifest's layers: push the pack with its bases)",
                                        url, digest, base->name));
            where.url = layer->second;
            where.headers = resolved->where.headers;
            where.remember = false;
            where.reauthorize = [registry = resolved->registry, blob = where.url] {
                return registry->refresh_auth(blob);
            };
        } else if (!remote::plain_file_name(base->name)) {
            return fail(EINVAL, kOp,
                        fmt::format("{} (base sha256:{} has the name '{}', not a file name)", url,
                                    digest, base->name));
        } else {
            where.url = remote::beside_url(url, base->name);
        }
        RemoteOptions shared = options;
        // The decompressed-block cache's bound is the pack's whole: its bases share it.
        shared.block_cache_bytes = options.block_cache_bytes / reader.metadata().base_count();
        auto opened = open_located(where, shared, cache);
        if (!opened)
            return std::unexpected(
                Error(opened.error().code(), kOp,
                      fmt::format("{} (its base sha256:{} ('{}') at {}: {})", url, digest,
                                  base->name, where.url, opened.error().message())));
        bases.push_back(std::move(opened->reader));
    }
    return reader.attach_bases(std::move(bases), ctx);
}

}  // namespace

Result<std::shared_ptr<PackBackend>> open_remote_pack(std::string_view url_view,
                                                      const RemoteOptions& options) {
    std::string url(url_view);
    if (!is_remote_url(url))
        return fail(EINVAL, kOp, fmt::format("{} (not an http(s) URL or oci:// reference)", url));
    if (auto ok = remote::check_options(url, options, kOp); !ok) return std::unexpected(ok.error());
    // A fragment "#sha256:<hex>" or --digest pins the pack.
    auto taken = remote::take_digest_pin(url, options.digest, kOp);
    if (!taken) return std::unexpected(taken.error());
    CacheSettings cache;
    cache.dir = options.cache_dir.empty() ? remote::default_cache_dir() : options.cache_dir;
    cache.bound = cache.dir == "none"          ? 0
                  : options.cache_bytes != 0 ? options.cache_bytes
                                             : remote::default_cache_bound(cache.dir);
    std::optional<Resolved> resolved;
    Located where{.url = url, .pin = *taken, .headers = options.headers, .reauthorize = {}};
    if (remote::is_oci_url(url)) {
        auto found = resolve_reference(url, *taken, options, cache.dir);
        if (!found) return std::unexpected(found.error());
        resolved = std::move(*found);
        where = resolved->where;
    }
    auto opened = open_located(where, options, cache);
    if (!opened) return std::unexpected(opened.error());
    if (resolved && cache.dir != "none")
        remote::write_url_record(cache.dir, url, resolved->record);
    pack::PackReader& reader = *opened->reader;
    if (reader.metadata().base_count() > 0) {
        if (auto ok = attach_remote_bases(reader, url, resolved ? &*resolved : nullptr, options,
                                          cache);
            !ok)
            return std::unexpected(ok.error());
    }
    // This pack is held open: it stays, and keeps to the bound by evicting blocks as it fills.
    if (cache.bound != 0) (void)remote::prune_cache(cache.dir, cache.bound);
    return pack::backend_over(std::move(opened->reader));
}

}  // namespace packfs
