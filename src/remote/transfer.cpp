// Whole packs: push_pack to a registry, pull_pack of a URL or reference (packfs/remote.hpp).
// A pull is the baseline a lazy open is measured against, and a way to keep a local copy: it
// writes beside the target and renames only what checked out.
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <random>

#include "pack/format/digest.hpp"
#include "packfs/remote.hpp"
#include "remote/oci.hpp"
#include "remote/options.hpp"
#include "remote/remote_bytes.hpp"

namespace packfs {

Result<std::string> push_pack(std::string_view pack_path, std::string_view reference,
                              const RemoteOptions& options) {
    auto ref = remote::parse_oci_reference(reference);
    if (!ref) return std::unexpected(ref.error());
    if (!ref->digest.empty())
        return fail(
            EINVAL, "push",
            fmt::format("{} (push to a tag; the digest is what the push answers)", reference));
    auto pack = open_pack(pack_path);
    if (!pack) return std::unexpected(pack.error());
    const PackInfo info = (*pack)->info();
    if (!info.has_block_digests && info.stream_size > 0)
        return fail(
            ENOTSUP, "push",
            fmt::format("{} (no block digests, so it could not be read remotely: rebuild it "
                        "with `packfs convert`)",
                        pack_path));
    remote::Registry registry(*ref, options.timeout, remote::remote_log(options.log));
    auto digest = registry.push(std::string(pack_path), info.digest, options.progress);
    if (!digest) return std::unexpected(digest.error());
    remote::OciReference by_digest = *ref;
    by_digest.tag.clear();
    by_digest.digest = *digest;
    return by_digest.text();
}

Result<uint64_t> pull_pack(std::string_view source, std::string_view out_path,
                           const RemoteOptions& options) {
    std::string url(source);
    std::string blob_digest;
    auto taken = remote::take_digest_pin(url, options.digest, "pull");
    if (!taken) return std::unexpected(taken.error());
    std::string pin = std::move(*taken);
    auto log = remote::remote_log(options.log);
    remote::HttpRequest get;
    std::optional<remote::Registry> registry;
    if (auto ok = remote::check_options(url, options, "pull"); !ok)
        return std::unexpected(ok.error());
    if (remote::is_oci_url(url)) {
        auto ref = remote::parse_oci_reference(url);
        if (!ref) return std::unexpected(ref.error());
        registry.emplace(*ref, options.timeout, log);
        auto found = registry->resolve();
        if (!found) return std::unexpected(found.error());
        if (!pin.empty() && pin != found->image_digest)
            return fail(kErrCorrupt, "pull",
                        fmt::format("{} (image digest: given {}, the manifest names {})", url, pin,
                                    found->image_digest));
        pin = found->image_digest;
        blob_digest = found->blob_digest;
        url = found->blob_url;
    } else if (!is_remote_url(url)) {
        return fail(EINVAL, "pull",
                    fmt::format("{} (not an http(s) URL or oci:// reference)", url));
    }
    const std::string target(out_path);
    const std::string temp =
        fmt::format("{}.pull-{}-{:08x}", target, ::getpid(), std::random_device{}());
    const int fd = ::open(temp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return fail(errno, "pull", target);
    struct Temp {
        int fd;
        const std::string& path;
        bool keep = false;
        ~Temp() {
            ::close(fd);
            if (!keep) ::unlink(path.c_str());
        }
    } guard{fd, temp};

    get.url = url;
    get.out_fd = fd;
    get.progress = options.progress;
    get.stall_seconds = std::max<long>(1, static_cast<long>(options.timeout.count() / 1000));
    remote::HttpResponse response;
    remote::HttpFailure why;
    remote::HttpClient own(1);
    own.set_headers(options.headers);
    remote::HttpClient& http = registry ? registry->http() : own;
    // No deadline for the whole body (a big pack on a slow link takes what it takes): the
    // timeout bounds connecting and each stall (libcurl's low-speed limit below 1 byte/s).
    if (!http.send(get, remote::Clock::now() + std::chrono::hours(24 * 7), response, why))
        return fail(why.code, "pull", fmt::format("{} ({})", url, why.detail));
    if (response.status != 200)
        return fail(response.status == 404                             ? ENOENT
                    : response.status == 401 || response.status == 403 ? EACCES
                                                                       : EIO,
                    "pull", fmt::format("{} (HTTP {})", url, response.status));
    if (!blob_digest.empty()) {
        auto sum = pack::sha256_file(fd, target);
        if (!sum) return std::unexpected(sum.error().relabeled("pull", target));
        const std::string got = "sha256:" + pack::to_hex(*sum);
        if (got != blob_digest)
            return fail(
                kErrCorrupt, "pull",
                fmt::format("{} (blob digest: expected {}, found {})", url, blob_digest, got));
    }
    if (::fsync(fd) != 0) return fail(errno, "pull", target);
    auto pack = open_pack(temp);
    if (!pack) return std::unexpected(pack.error().relabeled("pull", url));
    const PackInfo info = (*pack)->info();
    if (!pin.empty() && info.digest != pin)
        return fail(kErrCorrupt, "pull",
                    fmt::format("{} (image digest: expected {}, found {})", url, pin, info.digest));
    if (::rename(temp.c_str(), target.c_str()) != 0) return fail(errno, "pull", target);
    guard.keep = true;
    return info.file_size;
}

}  // namespace packfs
