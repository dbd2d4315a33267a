// Whole packs: push_pack to a registry, pull_pack of a URL or reference (packfs/remote.hpp).
// A pull is the baseline a lazy open is measured against, and a way to keep a local copy: it
// writes beside the target and renames only what checked out. A pack built over bases travels
// with them: a push sends each base the registry lacks as a layer of the pack's manifest, a pull
// writes each beside the pack unless the file there already is that base.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <random>
#include <set>
#include <utility>

#include "pack/format/digest.hpp"
#include "packfs/remote.hpp"
#include "remote/bases.hpp"
#include "remote/oci.hpp"
#include "remote/options.hpp"
#include "remote/remote_bytes.hpp"

namespace packfs {

namespace {

constexpr std::string_view kPush = "push";
constexpr std::string_view kPull = "pull";

// A pack file's facts, its bases not opened (a push or a pull finds them itself).
Result<PackInfo> pack_info(const std::string& path) {
    PackOpenOptions options;
    options.without_bases = true;
    auto pack = open_pack(path, options);
    if (!pack) return std::unexpected(pack.error());
    return (*pack)->info();
}

// ENOTSUP for a pack that could not be read remotely.
Result<void> readable_remotely(const PackInfo& info, std::string_view path) {
    if (info.has_block_digests || info.stream_size == 0) return {};
    return fail(ENOTSUP, kPush,
                fmt::format("{} (no block digests, so it could not be read remotely: rebuild it "
                            "with `packfs convert`)",
                            path));
}

// The file of each base the pack names, found as open_pack finds it: among `given` (each opened
// once, used where its digest is one the pack names), else beside the pack under the name it
// records. ENOENT naming a base found nowhere.
Result<std::vector<remote::OciPushPack>> find_bases(const std::string& pack_path,
                                                    const PackInfo& info,
                                                    std::span<const std::string> given) {
    std::vector<std::string> given_digests;
    for (const std::string& path : given) {
        auto base = pack_info(path);
        if (!base) return std::unexpected(base.error().relabeled(kPush, path));
        given_digests.push_back(base->digest);
    }
    std::vector<remote::OciPushPack> out;
    for (const auto& [digest, name] : info.bases) {
        std::string found, why;
        for (std::size_t g = 0; g < given.size() && found.empty(); ++g)
            if (given_digests[g] == digest) found = given[g];
        if (found.empty() && remote::plain_file_name(name)) {
            const std::string beside = remote::dir_of(pack_path) + name;
            struct stat st {};
            // A regular file only, as the reader looks: a hostile name may be a device or a FIFO.
            if (::stat(beside.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
                auto base = pack_info(beside);
                if (!base) return std::unexpected(base.error().relabeled(kPush, beside));
                if (base->digest == digest)
                    found = beside;
                else
                    why = fmt::format("; {} is another pack (sha256:{})", beside, base->digest);
            }
        }
        if (found.empty())
            return fail(ENOENT, kPush,
                        fmt::format("{} (its base sha256:{} ('{}') is not found{}: give it with "
                                    "--base)",
                                    pack_path, digest, name, why));
        auto base = pack_info(found);
        if (!base) return std::unexpected(base.error().relabeled(kPush, found));
        if (auto ok = readable_remotely(*base, found); !ok) return std::unexpected(ok.error());
        out.push_back({found, digest, name});
    }
    return out;
}

}  // namespace

Result<PushReport> push_pack_report(std::string_view pack_path, std::string_view reference,
                                    const RemoteOptions& options, const PushOptions& push) {
    auto ref = remote::parse_oci_reference(reference);
    if (!ref) return std::unexpected(ref.error());
    if (!ref->digest.empty())
        return fail(
            EINVAL, kPush,
            fmt::format("{} (push to a tag; the digest is what the push answers)", reference));
    const std::string path(pack_path);
    auto info = pack_info(path);
    if (!info) return std::unexpected(info.error());
    if (auto ok = readable_remotely(*info, path); !ok) return std::unexpected(ok.error());
    auto bases = find_bases(path, *info, push.bases);
    if (!bases) return std::unexpected(bases.error());
    remote::Registry registry(*ref, options.timeout, remote::remote_log(options.log));
    const remote::OciPushPack pack{path, info->digest, path.substr(path.rfind('/') + 1)};
    return registry.push(pack, *bases, push.mount_from, options.progress);
}

Result<std::string> push_pack(std::string_view pack_path, std::string_view reference,
                              const RemoteOptions& options) {
    auto report = push_pack_report(pack_path, reference, options);
    if (!report) return std::unexpected(report.error());
    return std::move(report->reference);
}

namespace {

// A pack fetched whole into a temporary file beside its target and checked, not yet in place:
// the temporary goes with the object unless place() renamed it.
class Staged {
public:
    Staged(std::string temp, std::string target)
        : temp_(std::move(temp)), target_(std::move(target)) {}
    Staged(Staged&& other) noexcept
        : info(std::move(other.info)), temp_(std::exchange(other.temp_, {})),
          target_(std::move(other.target_)) {}
    Staged& operator=(Staged&&) = delete;
    ~Staged() {
        if (!temp_.empty()) ::unlink(temp_.c_str());
    }
    const std::string& temp() const noexcept { return temp_; }
    // Into place; `replace`: over whatever is there (the pack's OUT), else only where nothing is
    // (a base: a file that appeared meanwhile is not overwritten).
    Result<void> place(bool replace) {
        const int rc = replace ? ::rename(temp_.c_str(), target_.c_str())
                               : ::renameat2(AT_FDCWD, temp_.c_str(), AT_FDCWD, target_.c_str(),
                                             RENAME_NOREPLACE);
        if (rc != 0) return fail(errno, kPull, target_);
        temp_.clear();
        return {};
    }

    PackInfo info;

private:
    std::string temp_, target_;
};

// GETs `url` whole into a temporary beside `target`, then checks it: the blob's digest when
// `blob_digest` is given, the header and metadata as open_pack does, and the image digest
// against `pin` when given.
Result<Staged> fetch_whole(remote::HttpClient& http, const std::string& url,
                           const std::string& target, const std::string& blob_digest,
                           const std::string& pin, const RemoteOptions& options) {
    Staged staged(fmt::format("{}.pull-{}-{:08x}", target, ::getpid(), std::random_device{}()),
                  target);
    const int fd = ::open(staged.temp().c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return fail(errno, kPull, target);
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{fd};
    remote::HttpRequest get;
    get.url = url;
    get.out_fd = fd;
    get.progress = options.progress;
    get.stall_seconds = std::max<long>(1, static_cast<long>(options.timeout.count() / 1000));
    remote::HttpResponse response;
    remote::HttpFailure why;
    // No deadline for the whole body (a big pack on a slow link takes what it takes): the
    // timeout bounds connecting and each stall (libcurl's low-speed limit below 1 byte/s).
    if (!http.send(get, remote::Clock::now() + std::chrono::hours(24 * 7), response, why))
        return fail(why.code, kPull, fmt::format("{} ({})", url, why.detail));
    if (response.status != 200)
        return fail(response.status == 404                             ? ENOENT
                    : response.status == 401 || response.status == 403 ? EACCES
                                                                       : EIO,
                    kPull, fmt::format("{} (HTTP {})", url, response.status));
    if (!blob_digest.empty()) {
        auto sum = pack::sha256_file(fd, target);
        if (!sum) return std::unexpected(sum.error().relabeled(kPull, target));
        const std::string got = "sha256:" + pack::to_hex(*sum);
        if (got != blob_digest)
            return fail(
                kErrCorrupt, kPull,
                fmt::format("{} (blob digest: expected {}, found {})", url, blob_digest, got));
    }
    if (::fsync(fd) != 0) return fail(errno, kPull, target);
    auto info = pack_info(staged.temp());
    if (!info) return std::unexpected(info.error().relabeled(kPull, url));
    if (!pin.empty() && info->digest != pin)
        return fail(kErrCorrupt, kPull,
                    fmt::format("{} (image digest: expected {}, found {})", url, pin, info->digest));
    staged.info = std::move(*info);
    return staged;
}

// Whether the file the base `digest` recorded as `name` goes to, beside `target`, already is that
// base: its size when it is, nullopt when there is no such file. EINVAL for a name that is no file
// name or is the target's; EEXIST naming the file when it is another pack or no pack.
Result<std::optional<uint64_t>> base_in_place(std::string_view source, const std::string& target,
                                              const std::string& digest, std::string_view name) {
    const std::string path = remote::dir_of(target) + std::string(name);
    auto refused = [&](int code, std::string_view why) {
        return fail(code, kPull,
                    fmt::format("{} (its base sha256:{} ('{}') {}; nothing was written)", source,
                                digest, name, why));
    };
    if (!remote::plain_file_name(name)) return refused(EINVAL, "has no file name to write it as");
    if (path == target)
        return refused(EINVAL, fmt::format("goes where the pack is to go, {}: pull the pack to "
                                           "another name",
                                           target));
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        if (errno == ENOENT) return std::nullopt;
        return fail(errno, kPull, path);
    }
    if (!S_ISREG(st.st_mode))
        return refused(EEXIST, fmt::format("goes to {}, which is not a regular file", path));
    auto there = pack_info(path);
    if (!there)
        return refused(EEXIST, fmt::format("goes to {}, which is not a pack ({})", path,
                                           there.error().message()));
    if (there->digest != digest)
        return refused(EEXIST, fmt::format("goes to {}, which is another pack (sha256:{})", path,
                                           there->digest));
    return there->file_size;
}

}  // namespace

Result<PullReport> pull_pack_report(std::string_view source, std::string_view out_path,
                                    const RemoteOptions& options) {
    std::string url(source);
    auto taken = remote::take_digest_pin(url, options.digest, kPull);
    if (!taken) return std::unexpected(taken.error());
    std::string pin = std::move(*taken);
    if (auto ok = remote::check_options(url, options, kPull); !ok)
        return std::unexpected(ok.error());
    const std::string target(out_path);
    const std::string dir = remote::dir_of(target);
    std::optional<remote::Registry> registry;
    std::optional<remote::OciPack> manifest;
    if (remote::is_oci_url(url)) {
        auto ref = remote::parse_oci_reference(url);
        if (!ref) return std::unexpected(ref.error());
        registry.emplace(*ref, options.timeout, remote::remote_log(options.log));
        auto found = registry->resolve();
        if (!found) return std::unexpected(found.error());
        if (!pin.empty() && pin != found->image_digest)
            return fail(kErrCorrupt, kPull,
                        fmt::format("{} (image digest: given {}, the manifest names {})", url, pin,
                                    found->image_digest));
        pin = found->image_digest;
        manifest = std::move(*found);
        // A base file in the way fails the pull before anything is fetched (the pack's own
        // record, checked below, decides; the layers' titles only tell early).
        for (const remote::OciBlob& base : manifest->bases)
            if (remote::plain_file_name(base.title))
                if (auto ok = base_in_place(source, target, base.image_digest, base.title); !ok)
                    return std::unexpected(ok.error());
    } else if (!is_remote_url(url)) {
        return fail(EINVAL, kPull,
                    fmt::format("{} (not an http(s) URL or oci:// reference)", url));
    }
    remote::HttpClient own(1);
    own.set_headers(options.headers);
    remote::HttpClient& http = registry ? registry->http() : own;

    auto pack = fetch_whole(http, manifest ? manifest->blob_url : url, target,
                            manifest ? manifest->blob_digest : std::string(), pin, options);
    if (!pack) return std::unexpected(pack.error());
    PullReport report;
    report.pack = {target, pack->info.digest, pack->info.file_size, true};
    report.bytes_fetched = pack->info.file_size;
    std::vector<Staged> bases;
    std::set<std::string> names;
    for (const auto& [digest, name] : pack->info.bases) {
        if (!names.insert(name).second)
            return fail(EINVAL, kPull,
                        fmt::format("{} (two of its bases have the name '{}')", source, name));
        const std::string path = dir + name;
        auto present = base_in_place(source, target, digest, name);
        if (!present) return std::unexpected(present.error());
        if (*present) {
            report.bases.push_back({path, digest, **present, false});
            continue;
        }
        std::string base_url = remote::beside_url(url, name), blob_digest;
        if (manifest) {
            const remote::OciBlob* layer = manifest->base(digest);
            if (layer == nullptr)
                return fail(ENOENT, kPull,
                            fmt::format("{} (its base sha256:{} ('{}') is not among the "
                                        "manifest's layers)",
                                        source, digest, name));
            base_url = layer->blob_url;
            blob_digest = layer->blob_digest;
        }
        auto fetched = fetch_whole(http, base_url, path, blob_digest, digest, options);
        if (!fetched)
            return std::unexpected(Error(fetched.error().code(), kPull,
                                         fmt::format("{} (its base sha256:{} ('{}'): {})", source,
                                                     digest, name, fetched.error().message())));
        report.bases.push_back({path, digest, fetched->info.file_size, true});
        report.bytes_fetched += fetched->info.file_size;
        bases.push_back(std::move(*fetched));
    }
    // The bases first: a pack is never in place without them.
    for (Staged& base : bases)
        if (auto ok = base.place(/*replace=*/false); !ok) return std::unexpected(ok.error());
    if (auto ok = pack->place(/*replace=*/true); !ok) return std::unexpected(ok.error());
    return report;
}

Result<uint64_t> pull_pack(std::string_view source, std::string_view out_path,
                           const RemoteOptions& options) {
    auto report = pull_pack_report(source, out_path, options);
    if (!report) return std::unexpected(report.error());
    return report->pack.size;
}

}  // namespace packfs
