// Packs in OCI registries (the distribution API, docs/REMOTE.md "Registries"): a pack is pushed
// as an artifact, a manifest whose one layer is the pack file and which names the pack's image
// digest, and read back by resolving a reference to that layer's blob URL, which is then read
// with range requests like any HTTP pack.
//
// References: oci://REGISTRY/REPOSITORY:TAG or oci://REGISTRY/REPOSITORY@sha256:<manifest
// digest>. A registry on localhost (or 127.0.0.1, [::1]) is spoken to over HTTP, any other over
// HTTPS. Auth: anonymous, or what the registry asks for in its 401 (Bearer: a token from its
// realm; Basic), with credentials from $PACKFS_REGISTRY_AUTH ("user:password") when set.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "packfs/error.hpp"
#include "remote/http_client.hpp"

namespace packfs::remote {

inline constexpr std::string_view kPackMediaType = "application/vnd.packfs.pack.v2";
inline constexpr std::string_view kImageDigestAnnotation = "org.packfs.image-digest";

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

// What a reference resolves to.
struct OciPack {
    std::string blob_url;     // GET it with Range
    std::string blob_digest;  // "sha256:<hex>" of the whole pack file
    uint64_t size = 0;
    std::string image_digest;     // the pack's, from the manifest (64 hex digits)
    std::string manifest_digest;  // "sha256:<hex>"
};

// The pack layer of a manifest's bytes (hostile: any JSON, or none): EINVAL naming what is
// missing or malformed. `ref` gives the blob's URL and the name in errors; the manifest's
// digest is computed, not checked (the caller compares it with the reference's).
Result<OciPack> parse_pack_manifest(std::string_view body, const OciReference& ref);

class Registry {
public:
    Registry(OciReference ref, std::chrono::milliseconds timeout,
             std::function<void(std::string_view)> log);

    // The manifest the reference names (checked against the digest when it names one), and
    // its pack layer. ENOENT: no such manifest; EINVAL: a manifest with no pack layer.
    // `within` (when given and shorter than the timeout): how long to wait for the registry,
    // for an open that has a cached copy to fall back on.
    Result<OciPack> resolve(std::chrono::milliseconds within = {});
    // Uploads `pack_path` (its blob unless the registry has it, the empty config, then the
    // manifest under the reference's tag, or "latest") and returns the manifest's digest.
    // `progress`: the blob's bytes sent, as HttpRequest's.
    Result<std::string> push(const std::string& pack_path, const std::string& image_digest,
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
    // `progress`: as HttpRequest's, for the upload.
    Result<void> upload_blob(const std::string& digest, uint64_t size, int fd, std::string body,
                             std::function<void(uint64_t, uint64_t)> progress = {});

    OciReference ref_;
    std::chrono::milliseconds timeout_;
    std::function<void(std::string_view)> log_;
    HttpClient http_;
    std::vector<std::string> auth_;
};

}  // namespace packfs::remote
