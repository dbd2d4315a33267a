#include "source.hpp"

#include <syslog.h>

#include <cerrno>
#include <filesystem>
#include <fstream>

#include "format.hpp"
#include "packfs/remote.hpp"

namespace packfs::cli {

namespace {

constexpr std::string_view kOpen = "open";

RemoteOptions& remote_settings() {
    static RemoteOptions options;
    return options;
}

PackOpenOptions& pack_settings() {
    static PackOpenOptions options;
    return options;
}

// --header @FILE: a header a line (blank lines and trailing CRs ignored).
std::vector<std::string> read_header_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw CLI::ValidationError("--header", fmt::format("@{}: cannot be read", path));
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (!line.empty()) out.push_back(std::move(line));
    }
    return out;
}

}  // namespace

void add_remote_options(CLI::App& app) {
    struct Texts {
        std::string cache, cache_size, digest, metadata_whole, readahead;
        double timeout = 30;
        unsigned connections = RemoteOptions{}.connections;
        std::vector<std::string> headers;
        std::vector<std::string> bases;
    };
    auto texts = std::make_shared<Texts>();
    const char* group = "Remote SOURCEs (http(s):// URLs and oci:// references; docs/REMOTE.md)";
    app.add_option("--cache", texts->cache,
                   "Where fetched blocks are kept (default $XDG_CACHE_HOME/packfs, else "
                   "~/.cache/packfs; 'none' keeps them only while the pack is open)")
        ->group(group);
    app.add_option("--cache-size", texts->cache_size,
                   "The cache's bound (e.g. 10G; default a quarter of its filesystem's free "
                   "space): least recently used packs not in use go first, then blocks of the "
                   "packs in use, least recently read first")
        ->group(group);
    app.add_option(
           "--digest", texts->digest,
           "The pack's image digest (as `packfs info` prints it): the remote SOURCE must be "
           "that pack, or it is refused (the same as a URL's #sha256:DIGEST)")
        ->group(group);
    app.add_option("--timeout", texts->timeout,
                   "Seconds a read waits for the server, retries included, before it fails "
                   "with an I/O error")
        ->check(CLI::PositiveNumber)
        ->group(group);
    app.add_option("--connections", texts->connections,
                   "Connections kept open to the server: how many requests are in flight at "
                   "once (default 8)")
        ->check(CLI::Range(1, 64))
        ->group(group);
    app.add_option("--header", texts->headers,
                   "A request header sent to an http(s) server, e.g. 'Authorization: Bearer "
                   "TOKEN' (repeatable; never logged). @FILE reads them from FILE, one a line, "
                   "which keeps a secret off the command line")
        ->type_name("'NAME: VALUE'|@FILE")
        ->group(group);
    app.add_option("--metadata-whole", texts->metadata_whole,
                   "Metadata stored in at most this many bytes (default 8M) is fetched whole "
                   "when the pack is opened; larger metadata is fetched by 16 KiB block as it "
                   "is used (0: always by block)")
        ->group(group);
    app.add_option("--readahead", texts->readahead,
                   "How far ahead of a reader the server is asked for more (default 8M): a "
                   "file read sequentially, and the files a walk (find, tar, a data loader "
                   "reading the directories it lists, in order) will open next, fetched in the "
                   "background into the cache (0: neither)")
        ->group(group);
    app.add_option("--base", texts->bases,
                   "A pack a SOURCE pack was built over (`packfs build --base`), where it is "
                   "not beside the pack under the name it had then (repeatable)")
        ->type_name("PACK")
        ->allow_extra_args(false)
        ->group("Packs built over bases (docs/FORMAT.md, \"Extents\")");
    app.fallthrough();  // so `packfs ls --timeout 5 URL` works as well
    app.parse_complete_callback([texts] {
        // Absolute, as --cache below: a mount serves from / once it is a daemon.
        pack_settings().bases.clear();
        for (const std::string& base : texts->bases) {
            std::error_code ec;
            auto full = std::filesystem::absolute(base, ec);
            if (ec) throw CLI::ValidationError("--base", fmt::format("{}: {}", base, ec.message()));
            pack_settings().bases.push_back(full.lexically_normal().string());
        }
        RemoteOptions& o = remote_settings();
        // Named from here, now: `mount` serves from / once it has become a daemon, and a
        // relative DIR must still mean the one beside the caller.
        o.cache_dir = texts->cache;
        if (!o.cache_dir.empty() && o.cache_dir != "none" && o.cache_dir.front() != '/') {
            std::error_code ec;
            auto full = std::filesystem::absolute(o.cache_dir, ec);
            if (ec) throw CLI::ValidationError("--cache", fmt::format("{}: {}", o.cache_dir,
                                                                      ec.message()));
            o.cache_dir = full.lexically_normal().string();
        }
        o.digest = texts->digest;
        o.timeout = std::chrono::milliseconds(static_cast<int64_t>(texts->timeout * 1000));
        o.connections = texts->connections;
        o.headers.clear();
        for (const std::string& given : texts->headers) {
            auto headers = given.starts_with('@') ? read_header_file(given.substr(1))
                                                  : std::vector<std::string>{given};
            for (std::string& h : headers) o.headers.push_back(std::move(h));
        }
        // --connections and --timeout are checked as they are parsed: what is left is a header.
        if (auto why = remote_option_problem(o); !why.empty())
            throw CLI::ValidationError("--header", why);
        // A size option, when given, into `out`.
        auto size = [](const std::string& text, const char* flag, const char* example,
                       uint64_t& out) {
            if (text.empty()) return;
            auto bytes = parse_size(text);
            if (!bytes)
                throw CLI::ValidationError(flag, fmt::format("wants a size such as {}", example));
            out = *bytes;
        };
        size(texts->cache_size, "--cache-size", "10G", o.cache_bytes);
        size(texts->readahead, "--readahead", "8M", o.readahead_bytes);
        size(texts->metadata_whole, "--metadata-whole", "8M", o.metadata_whole_bytes);
    });
}

const RemoteOptions& remote_options() {
    return remote_settings();
}

const PackOpenOptions& pack_options() {
    return pack_settings();
}

void set_remote_log(std::function<void(std::string_view)> log) {
    remote_settings().log = std::move(log);
}

Result<std::shared_ptr<Backend>> open_source(std::string_view spec) {
    // Read-only: a volume is read beside whoever has it open, a directory served contained.
    auto source = packfs::open_source(
        spec, {.writable = false, .remote = remote_settings(), .pack = pack_settings()});
    if (!source) return std::unexpected(source.error());
    return std::move(source->backend);
}

Result<std::shared_ptr<PackBackend>> open_pack_file(std::string_view spec,
                                                     std::optional<std::size_t> block_cache_bytes) {
    auto kind = source_kind(spec);
    if (!kind) return std::unexpected(kind.error());
    if (*kind == SourceKind::remote) {
        if (!block_cache_bytes) return open_remote_pack(spec, remote_settings());
        RemoteOptions options = remote_settings();
        options.block_cache_bytes = *block_cache_bytes;
        return open_remote_pack(spec, options);
    }
    // A PACK argument: a directory is simply the wrong kind of file.
    if (*kind != SourceKind::pack) return fail(EISDIR, kOpen, spec);  // a directory or volume
    PackOpenOptions options = pack_settings();
    if (block_cache_bytes) options.block_cache_bytes = *block_cache_bytes;
    return open_pack(spec, options);
}

Failure source_failure(const Error& error) {
    Failure out = Failure::from(error);
    if (error.op() != kSourceKindOp) return out;
    if (error.code() == EINVAL) {
        out.message = "SOURCE is neither a pack file nor a directory";
    }
    return out;
}

}  // namespace packfs::cli
