// Packs in OCI registries (the distribution API, docs/REMOTE.md "Registries"): a pack is pushed
// as an artifact, a manifest whose first layer is the pack file and which names the pack's image
// digest, and read back by resolving a reference to that layer's blob URL, which is then read
// with range requests like any HTTP pack. A pack built over bases has one more layer per base
// (kBaseMediaType, its image digest and file name annotated), each read from its own blob URL.
//
// References: oci://REGISTRY/REPOSITORY:TAG or oci://REGISTRY/REPOSITORY@sha256:<manifest
// digest>. A registry on localhost (or 127.0.0.1, [::1]) is spoken to over HTTP, any other over
// HTTPS. Auth: anonymous, or what the registry asks for in its 401 (Bearer: a token from its
// realm; Basic), with credentials from $PACKFS_REGISTRY_AUTH ("user:password") when set.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "packfs/error.hpp"
#include "packfs/remote.hpp"
#include "remote/http_client.hpp"

namespace packfs::remote {

inline constexpr std::string_view kPackMediaType = "application/vnd.packfs.pack.v2";
// A layer of a pack the manifest's pack is built over: a media type of its own, so that a
// reader that knows only kPackMediaType never takes a base for the pack.
inline constexpr std::string_view kBaseMediaType = "application/vnd.packfs.pack.base.v2";
inline constexpr std::string_view kImageDigestAnnotation = "org.packfs.image-digest";
inline constexpr std::string_view kTitleAnnotation = "org.opencontainers.image.title";

struct OciReference {
    std::string registry;           // host[:port]
    std::string repository;         // lower case, slashes allowed
    std::string tag;                // or empty
    std::string digest;             // "sha256:<hex>", or empty
    std::string base() const;       // http(s)://registry
    std::string reference() const;  // the tag or the digest
    std::string text() const;       // oci://registry/repository(:tag|@digest)
};

bool is_oci_url(std::string_view text) noexcept;
// A digest as given by a user: "sha256:<64 hex>" or "<64 hex>", answered as the 64 hex digits
// lowercased; "" when `text` is empty; nullopt when it is malformed.
std::optional<std::string> parse_digest_hex(std::string_view text);
// The image digest a SOURCE is pinned to, as parse_digest_hex answers it: a URL's
// "#sha256:<digest>" fragment (taken off `url`; it is never sent) and `option` (--digest), which
// must agree when both are given; "" when neither is. EINVAL naming `op` when one is malformed
// or they differ.
Result<std::string> take_digest_pin(std::string& url, std::string_view option, std::string_view op);
// EINVAL, naming what is wrong, for anything but the two forms above.
Result<OciReference> parse_oci_reference(std::string_view text);

// One pack layer of a manifest: the pack's, or a base's.
struct OciBlob {
    std::string blob_url;     // GET it with Range
    std::string blob_digest;  // "sha256:<hex>" of the whole pack file
    uint64_t size = 0;
    std::string image_digest;  // the pack's, from the layer's annotation (64 hex digits)
    std::string title;         // the layer's file name annotation, "" when none
};

// What a reference resolves to.
struct OciPack : OciBlob {
    std::string manifest_digest;  // "sha256:<hex>"
    std::vector<OciBlob> bases;   // the base layers, in the manifest's order
    // The base layer of image digest `hex`, nullptr when the manifest has none.
    const OciBlob* base(std::string_view hex) const noexcept;
};

// The pack layer (the first of kPackMediaType) and the base layers of a manifest's bytes
// (hostile: any JSON, or none): EINVAL naming what is missing or malformed (a base layer by its
// index: no blob digest or size, no image digest, two of one image digest). `ref` gives the
// blobs' URLs and the name in errors; the manifest's digest is computed, not checked (the
// caller compares it with the reference's).
Result<OciPack> parse_pack_manifest(std::string_view body, const OciReference& ref);

// A pack file to push as a layer.
struct OciPushPack {
    std::string path;
    std::string image_digest;  // hex
    std::string name;          // the layer's title: a pack's file name, a base's recorded name
};

class Registry {
public:
    Registry(OciReference ref, std::chrono::milliseconds timeout,
             std::function<void(std::string_view)> log);

    // The manifest the reference names (checked against the digest when it names one), and
    // its pack layer. ENOENT: no such manifest; EINVAL: a manifest with no pack layer.
    // `within` (when given and shorter than the timeout): how long to wait for the registry,
    // for an open that has a cached copy to fall back on.
    Result<OciPack> resolve(std::chrono::milliseconds within = {});
    // Uploads `pack`, its `bases` and the empty config, each only when the registry lacks it
    // (HEAD first; then, when `mount_from` names repositories, a cross-repository mount from
    // each in turn; then an upload), then the manifest under the reference's tag, or "latest".
    // Reports the reference by digest and what became of each blob. `progress`: the bytes sent
    // of all the blobs to send, as HttpRequest's.
    Result<PushReport> push(const OciPushPack& pack, std::span<const OciPushPack> bases,
                            std::span<const std::string> mount_from,
                            std::function<void(uint64_t, uint64_t)> progress = {});

    // The headers every request needs from now on (auth), for a client reading the blob.
    std::vector<std::string> auth_headers() const { return auth_; }
    // Asks for the blob at `blob_url` again (HEAD), authenticating anew when the registry
    // answers 401 (a token that expired or was revoked), and returns the headers that work
    // now. EACCES when the registry refuses even then.
    Result<std::vector<std::string>> refresh_auth(const std::string& blob_url);
    HttpClient& http() noexcept { return http_; }

private:
    // One request, with the auth the registry asks for on a 401 (then once more).
    // `within`: this request's timeout, when shorter than the registry's.
    Result<HttpResponse> request(HttpRequest request, std::string_view what,
                                 std::chrono::milliseconds within = {});
    bool authenticate(const HttpResponse& challenge);
    // Whether the repository holds the blob (HEAD).
    Result<bool> has_blob(const std::string& digest);
    // Asks for the blob to be mounted from `from`: true when it was (201); else the upload
    // session the registry opened instead (202) is left in `session`.
    Result<bool> mount_blob(const std::string& digest, const std::string& from,
                            std::string& session);
    // Sends the blob (`fd`'s `size` bytes, or `body`) into `session`, or a new one when that is
    // empty. `progress`: as HttpRequest's, for the upload.
    Result<void> upload_blob(const std::string& digest, uint64_t size, int fd, std::string body,
                             std::string session,
                             std::function<void(uint64_t, uint64_t)> progress = {});

    OciReference ref_;
    std::chrono::milliseconds timeout_;
    std::function<void(std::string_view)> log_;
    HttpClient http_;
    std::vector<std::string> auth_;
};

}  // namespace packfs::remote
