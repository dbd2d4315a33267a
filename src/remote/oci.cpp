#include "remote/oci.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <utility>
#include <cctype>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "pack/format/digest.hpp"

namespace packfs::remote {

namespace {

using Json = nlohmann::json;
constexpr std::string_view kOciScheme = "oci://";
constexpr std::string_view kManifestType = "application/vnd.oci.image.manifest.v1+json";
constexpr std::string_view kEmptyType = "application/vnd.oci.empty.v1+json";
constexpr std::string_view kEmptyBody = "{}";

bool is_hex(std::string_view s) {
    return std::all_of(s.begin(), s.end(),
                       [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool valid_digest(std::string_view d) {
    return d.starts_with("sha256:") && d.size() == 7 + 64 && is_hex(d.substr(7));
}

// The repository grammar of the distribution spec: lower-case components of [a-z0-9] joined
// by '.', '_', '__', '-' runs, separated by '/'. Checked loosely: the characters and no empty
// component.
bool valid_repository(std::string_view r) {
    if (r.empty() || r.front() == '/' || r.back() == '/' || r.find("//") != std::string_view::npos)
        return false;
    return std::all_of(r.begin(), r.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
               c == '-' || c == '/';
    });
}

bool valid_tag(std::string_view t) {
    if (t.empty() || t.size() > 128 || t.front() == '.' || t.front() == '-') return false;
    return std::all_of(t.begin(), t.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
    });
}

std::string sha256_text(std::span<const std::byte> bytes) {
    return "sha256:" + pack::to_hex(pack::sha256(bytes));
}

// key="value" pairs of a WWW-Authenticate challenge after its scheme.
std::string challenge_param(std::string_view header, std::string_view key) {
    const std::string needle = std::string(key) + "=\"";
    const auto at = header.find(needle);
    if (at == std::string_view::npos) return {};
    const auto start = at + needle.size();
    const auto end = header.find('"', start);
    return std::string(header.substr(start, end == std::string_view::npos ? end : end - start));
}

std::string url_escape(std::string_view text) {
    std::string out;
    for (char c : text) {
        if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
            c == '~')
            out += c;
        else
            out += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    }
    return out;
}

std::string base64(std::string_view in) {
    static constexpr char kTable[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    std::size_t i = 0;
    for (; i + 2 < in.size(); i += 3) {
        const uint32_t v = (static_cast<uint8_t>(in[i]) << 16) |
                           (static_cast<uint8_t>(in[i + 1]) << 8) | static_cast<uint8_t>(in[i + 2]);
        for (int k = 18; k >= 0; k -= 6) out += kTable[(v >> k) & 63];
    }
    if (i < in.size()) {
        uint32_t v = static_cast<uint8_t>(in[i]) << 16;
        if (i + 1 < in.size()) v |= static_cast<uint8_t>(in[i + 1]) << 8;
        out += kTable[(v >> 18) & 63];
        out += kTable[(v >> 12) & 63];
        out += i + 1 < in.size() ? kTable[(v >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

}  // namespace

std::string OciReference::base() const {
    const std::string host =
        registry.substr(0, registry.rfind(':') == std::string::npos || registry.front() == '['
                               ? registry.size()
                               : registry.rfind(':'));
    const bool local = host == "localhost" || host == "127.0.0.1" || registry.starts_with("[::1]");
    return (local ? "http://" : "https://") + registry;
}

std::string OciReference::reference() const {
    return digest.empty() ? tag : digest;
}

std::string OciReference::text() const {
    return fmt::format("oci://{}/{}{}{}", registry, repository, digest.empty() ? ":" : "@",
                       reference());
}

std::optional<std::string> parse_digest_hex(std::string_view text) {
    if (text.starts_with("sha256:")) text.remove_prefix(7);
    if (text.empty()) return std::string();
    if (text.size() != 64) return std::nullopt;
    std::string out(text);
    for (char& c : out) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return std::nullopt;
    }
    return out;
}

Result<std::string> take_digest_pin(std::string& url, std::string_view option,
                                    std::string_view op) {
    std::string text(option);
    if (const auto hash = url.find('#'); hash != std::string::npos) {
        const std::string fragment = url.substr(hash + 1);
        url.resize(hash);
        if (!fragment.starts_with("sha256:"))
            return fail(EINVAL, op,
                        fmt::format("{} (the URL's fragment must be sha256:<digest>)", url));
        if (!text.empty() && parse_digest_hex(text) != parse_digest_hex(fragment))
            return fail(EINVAL, op, fmt::format("{} (two different digests given)", url));
        text = fragment;
    }
    auto pin = parse_digest_hex(text);
    if (!pin)
        return fail(EINVAL, op, fmt::format("{} (digest '{}' is not 64 hex digits)", url, text));
    return *pin;
}

bool is_oci_url(std::string_view text) noexcept {
    return text.starts_with(kOciScheme);
}

Result<OciReference> parse_oci_reference(std::string_view text) {
    auto bad = [&](std::string_view why) {
        return fail(EINVAL, "oci", fmt::format("{} ({})", text, why));
    };
    if (!is_oci_url(text)) return bad("not an oci:// reference");
    std::string_view rest = text.substr(kOciScheme.size());
    const auto slash = rest.find('/');
    if (slash == std::string_view::npos || slash == 0) return bad("no registry/repository");
    OciReference ref;
    ref.registry = std::string(rest.substr(0, slash));
    rest.remove_prefix(slash + 1);
    if (const auto at = rest.find('@'); at != std::string_view::npos) {
        ref.digest = std::string(rest.substr(at + 1));
        rest = rest.substr(0, at);
        if (!valid_digest(ref.digest)) return bad("the digest must be sha256:<64 hex digits>");
    } else if (const auto colon = rest.rfind(':');
               colon != std::string_view::npos && rest.find('/', colon) == std::string_view::npos) {
        ref.tag = std::string(rest.substr(colon + 1));
        rest = rest.substr(0, colon);
        if (!valid_tag(ref.tag))
            return bad("a tag is 1-128 of [A-Za-z0-9_.-], not starting . or -");
    }
    ref.repository = std::string(rest);
    if (!valid_repository(ref.repository))
        return bad("a repository is lower-case [a-z0-9._-] components separated by /");
    if (ref.tag.empty() && ref.digest.empty()) ref.tag = "latest";
    return ref;
}

Registry::Registry(OciReference ref, std::chrono::milliseconds timeout,
                   std::function<void(std::string_view)> log)
    : ref_(std::move(ref)), timeout_(timeout), log_(std::move(log)), http_(4) {}

bool Registry::authenticate(const HttpResponse& challenge) {
    const std::string header = challenge.header("www-authenticate");
    const char* creds = std::getenv("PACKFS_REGISTRY_AUTH");
    if (header.starts_with("Basic")) {
        if (creds == nullptr) return false;
        auth_ = {"Authorization: Basic " + base64(creds)};
        http_.set_headers(auth_);
        return true;
    }
    if (!header.starts_with("Bearer")) return false;
    const std::string realm = challenge_param(header, "realm");
    if (realm.empty()) return false;
    std::string url = realm + (realm.find('?') == std::string::npos ? "?" : "&");
    url += "service=" + url_escape(challenge_param(header, "service"));
    if (const std::string scope = challenge_param(header, "scope"); !scope.empty())
        url += "&scope=" + url_escape(scope);
    HttpRequest token_request;
    token_request.url = url;
    if (creds != nullptr) token_request.headers.push_back("Authorization: Basic " + base64(creds));
    HttpResponse token;
    HttpFailure why;
    HttpClient once(1);  // without the auth headers the registry's client carries
    if (!once.send(token_request, Clock::now() + timeout_, token, why) || token.status != 200) {
        log_(fmt::format("{}: the token service {} answered {}", ref_.text(), realm,
                         why.detail.empty() ? fmt::format("HTTP {}", token.status) : why.detail));
        return false;
    }
    const Json body = Json::parse(token.body, nullptr, false);
    std::string value;
    if (body.is_object()) {
        if (body.contains("token") && body["token"].is_string())
            value = body["token"];
        else if (body.contains("access_token") && body["access_token"].is_string())
            value = body["access_token"];
    }
    if (value.empty()) return false;
    auth_ = {"Authorization: Bearer " + value};
    http_.set_headers(auth_);
    return true;
}

Result<std::vector<std::string>> Registry::refresh_auth(const std::string& blob_url) {
    HttpRequest head;
    head.method = "HEAD";
    head.url = blob_url;
    auto answer = request(std::move(head), "the pack's blob, authenticating again");
    if (!answer) return std::unexpected(answer.error());
    if (answer->status != 200)
        return fail(EACCES, "oci",
                    fmt::format("{} (the pack's blob: HTTP {})", ref_.text(), answer->status));
    return auth_;
}

Result<HttpResponse> Registry::request(HttpRequest request, std::string_view what,
                                      std::chrono::milliseconds within) {
    HttpResponse response;
    HttpFailure why;
    const auto wait = within.count() > 0 ? std::min(within, timeout_) : timeout_;
    for (int attempt = 0; attempt < 2; ++attempt) {
        if (!http_.send(request, Clock::now() + wait, response, why)) {
            log_(fmt::format("{}: {}: {}", ref_.text(), what, why.detail));
            return fail(why.code, "oci", fmt::format("{} ({}: {})", ref_.text(), what, why.detail));
        }
        if (response.status != 401 || attempt == 1 || !authenticate(response)) break;
    }
    if (response.status == 401 || response.status == 403)
        return fail(EACCES, "oci",
                    fmt::format("{} ({}: HTTP {}; set PACKFS_REGISTRY_AUTH=user:password)",
                                ref_.text(), what, response.status));
    return response;
}

Result<OciPack> Registry::resolve(std::chrono::milliseconds within) {
    HttpRequest get;
    get.url = fmt::format("{}/v2/{}/manifests/{}", ref_.base(), ref_.repository, ref_.reference());
    get.headers = {fmt::format("Accept: {}", kManifestType)};
    auto response = request(get, "manifest", within);
    if (!response) return std::unexpected(response.error());
    if (response->status == 404)
        return fail(ENOENT, "oci", fmt::format("{} (no such manifest)", ref_.text()));
    if (response->status != 200)
        return fail(EIO, "oci",
                    fmt::format("{} (manifest: HTTP {})", ref_.text(), response->status));
    auto pack = parse_pack_manifest(response->body, ref_);
    if (!pack) return std::unexpected(pack.error());
    if (!ref_.digest.empty() && pack->manifest_digest != ref_.digest)
        return std::unexpected(Error(kErrCorrupt, "oci",
                                     fmt::format("{} (manifest digest: expected {}, found {})",
                                                 ref_.text(), ref_.digest, pack->manifest_digest)));
    return pack;
}

namespace {

// obj[key] when `obj` is an object holding it, else nullptr (operator[] of a const json on a
// missing key is undefined).
const Json* member(const Json& obj, std::string_view key) {
    if (!obj.is_object()) return nullptr;
    const auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
}

// A layer's string member, "" when absent or not a string.
std::string string_member(const Json& obj, std::string_view key) {
    const Json* value = member(obj, key);
    return value != nullptr && value->is_string() ? value->get<std::string>() : std::string();
}

// A pack layer's blob and annotations into `out`: "" when it is well formed, else what is wrong.
std::string read_pack_layer(const Json& layer, const OciReference& ref, OciBlob& out) {
    out.blob_digest = string_member(layer, "digest");
    if (!valid_digest(out.blob_digest)) return "its blob digest is missing or malformed";
    const Json* size = member(layer, "size");
    if (size == nullptr || !size->is_number_unsigned()) return "it has no size";
    out.size = size->get<uint64_t>();
    const Json* annotations = member(layer, "annotations");
    if (annotations != nullptr && !annotations->is_object()) return "its annotations are no object";
    const Json none = Json::object();
    const Json& notes = annotations != nullptr ? *annotations : none;
    out.image_digest = string_member(notes, kImageDigestAnnotation);
    if (out.image_digest.size() != 64 || !is_hex(out.image_digest))
        return "it does not name the pack's image digest";
    const Json* title = member(notes, kTitleAnnotation);
    if (title != nullptr && !title->is_string()) return "its title is not a string";
    out.title = title != nullptr ? title->get<std::string>() : std::string();
    out.blob_url = fmt::format("{}/v2/{}/blobs/{}", ref.base(), ref.repository, out.blob_digest);
    return {};
}

}  // namespace

const OciBlob* OciPack::base(std::string_view hex) const noexcept {
    const auto it = std::find_if(bases.begin(), bases.end(),
                                 [&](const OciBlob& b) { return b.image_digest == hex; });
    return it == bases.end() ? nullptr : &*it;
}

Result<OciPack> parse_pack_manifest(std::string_view body, const OciReference& ref) {
    OciPack out;
    out.manifest_digest = sha256_text(std::as_bytes(std::span(body)));
    const Json manifest = Json::parse(body, nullptr, false);
    auto no_pack = [&](std::string_view why) {
        return fail(EINVAL, "oci", fmt::format("{} (not a PackFS pack: {})", ref.text(), why));
    };
    const Json* layers = member(manifest, "layers");
    if (layers == nullptr || !layers->is_array()) return no_pack("the manifest has no layers");
    bool found = false;
    for (std::size_t i = 0; i < layers->size(); ++i) {
        const Json& layer = (*layers)[i];
        const std::string type = string_member(layer, "mediaType");
        if (type == kPackMediaType && !found) {
            if (auto why = read_pack_layer(layer, ref, out); !why.empty())
                return no_pack("its pack layer: " + why);
            found = true;
        } else if (type == kBaseMediaType) {
            OciBlob base;
            if (auto why = read_pack_layer(layer, ref, base); !why.empty())
                return no_pack(fmt::format("its layer {}, a base: {}", i, why));
            if (out.base(base.image_digest) != nullptr)
                return no_pack(fmt::format("its layers name the base sha256:{} twice",
                                           base.image_digest));
            out.bases.push_back(std::move(base));
        }
    }
    if (!found) return no_pack(fmt::format("no layer of media type {}", kPackMediaType));
    return out;
}

Result<bool> Registry::has_blob(const std::string& digest) {
    HttpRequest head;
    head.method = "HEAD";
    head.url = fmt::format("{}/v2/{}/blobs/{}", ref_.base(), ref_.repository, digest);
    auto exists = request(head, "blob check");
    if (!exists) return std::unexpected(exists.error());
    if (exists->status == 200) return true;
    if (exists->status == 404) return false;
    return fail(EIO, "oci",
                fmt::format("{} (blob check of {}: HTTP {})", ref_.text(), digest, exists->status));
}

namespace {

// An upload session's URL, absolute.
std::string session_url(const HttpResponse& answer, const OciReference& ref) {
    std::string location = answer.header("location");
    if (location.starts_with("/")) location = ref.base() + location;
    return location;
}

}  // namespace

Result<bool> Registry::mount_blob(const std::string& digest, const std::string& from,
                                  std::string& session) {
    HttpRequest post;
    post.method = "POST";
    post.url = fmt::format("{}/v2/{}/blobs/uploads/?mount={}&from={}", ref_.base(),
                           ref_.repository, url_escape(digest), url_escape(from));
    auto answer = request(post, "blob mount");
    if (!answer) return std::unexpected(answer.error());
    if (answer->status == 201) return true;
    session = session_url(*answer, ref_);
    if (answer->status != 202 || session.empty())
        return fail(EIO, "oci",
                    fmt::format("{} (mount of {} from {}: HTTP {})", ref_.text(), digest, from,
                                answer->status));
    return false;
}

Result<void> Registry::upload_blob(const std::string& digest, uint64_t size, int fd,
                                   std::string body, std::string session,
                                   std::function<void(uint64_t, uint64_t)> progress) {
    if (session.empty()) {
        HttpRequest start;
        start.method = "POST";
        start.url = fmt::format("{}/v2/{}/blobs/uploads/", ref_.base(), ref_.repository);
        auto started = request(start, "upload start");
        if (!started) return std::unexpected(started.error());
        session = session_url(*started, ref_);
        if (started->status != 202 || session.empty())
            return fail(EIO, "oci",
                        fmt::format("{} (upload start: HTTP {})", ref_.text(), started->status));
    }
    HttpRequest put;
    put.method = "PUT";
    put.url = session + (session.find('?') == std::string::npos ? "?" : "&") +
              "digest=" + url_escape(digest);
    put.headers = {"Content-Type: application/octet-stream"};
    put.in_fd = fd;
    put.in_size = size;
    put.body = std::move(body);
    put.progress = std::move(progress);
    auto done = request(put, "upload");
    if (!done) return std::unexpected(done.error());
    if (done->status != 201)
        return fail(EIO, "oci",
                    fmt::format("{} (upload of {}: HTTP {} {})", ref_.text(), digest, done->status,
                                done->body.substr(0, 200)));
    return {};
}

namespace {

// A blob to push: a pack file (held open) or the config's bytes.
struct PushBlob {
    PushedBlob report;
    std::string image_digest;  // a pack's
    int fd = -1;
    std::string body;
    std::string session;  // an upload session a declined mount opened
    PushBlob() = default;
    PushBlob(PushBlob&& other) noexcept
        : report(std::move(other.report)), image_digest(std::move(other.image_digest)),
          fd(std::exchange(other.fd, -1)), body(std::move(other.body)),
          session(std::move(other.session)) {}
    PushBlob& operator=(PushBlob&&) = delete;
    ~PushBlob() {
        if (fd >= 0) ::close(fd);
    }
};

Result<PushBlob> pack_blob(const OciPushPack& pack, PushedBlob::Role role) {
    PushBlob blob;
    blob.report.role = role;
    blob.report.name = pack.name;
    blob.image_digest = pack.image_digest;
    blob.fd = ::open(pack.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (blob.fd < 0) return fail(errno, "push", pack.path);
    struct stat st {};
    if (::fstat(blob.fd, &st) != 0) return fail(errno, "push", pack.path);
    blob.report.size = static_cast<uint64_t>(st.st_size);
    auto sum = pack::sha256_file(blob.fd, pack.path);
    if (!sum) return std::unexpected(sum.error().relabeled("push", pack.path));
    blob.report.digest = "sha256:" + pack::to_hex(*sum);
    return blob;
}

Json layer_json(const PushBlob& blob, std::string_view media_type) {
    return {{"mediaType", media_type},
            {"digest", blob.report.digest},
            {"size", blob.report.size},
            {"annotations",
             {{std::string(kImageDigestAnnotation), blob.image_digest},
              {std::string(kTitleAnnotation), blob.report.name}}}};
}

}  // namespace

Result<PushReport> Registry::push(const OciPushPack& pack, std::span<const OciPushPack> bases,
                                  std::span<const std::string> mount_from,
                                  std::function<void(uint64_t, uint64_t)> progress) {
    for (const std::string& from : mount_from)
        if (!valid_repository(from))
            return fail(EINVAL, "push",
                        fmt::format("{} (--mount-from '{}': a repository is lower-case "
                                    "[a-z0-9._-] components separated by /)",
                                    ref_.text(), from));
    std::vector<PushBlob> blobs;
    auto add_pack = [&](const OciPushPack& p, PushedBlob::Role role) -> Result<void> {
        auto blob = pack_blob(p, role);
        if (!blob) return std::unexpected(blob.error());
        blobs.push_back(std::move(*blob));
        return {};
    };
    if (auto ok = add_pack(pack, PushedBlob::Role::pack); !ok) return std::unexpected(ok.error());
    for (const OciPushPack& base : bases)
        if (auto ok = add_pack(base, PushedBlob::Role::base); !ok)
            return std::unexpected(ok.error());
    PushBlob& config = blobs.emplace_back();
    config.report.role = PushedBlob::Role::config;
    config.body = std::string(kEmptyBody);
    config.report.size = kEmptyBody.size();
    config.report.digest = sha256_text(std::as_bytes(std::span(kEmptyBody)));

    // What the registry has, then what it mounts: the rest is sent, its total known for the
    // progress display before the first byte moves.
    PushReport report;
    uint64_t to_send = 0;
    for (PushBlob& blob : blobs) {
        auto has = has_blob(blob.report.digest);
        if (!has) return std::unexpected(has.error());
        blob.report.outcome = *has ? PushedBlob::Outcome::present : PushedBlob::Outcome::sent;
        for (std::size_t k = 0; !*has && k < mount_from.size(); ++k) {
            // Each declined mount opens a session: only the last one's is kept for the upload
            // (the others the registry purges in time).
            auto mounted = mount_blob(blob.report.digest, mount_from[k], blob.session);
            if (!mounted) return std::unexpected(mounted.error());
            if (*mounted) {
                blob.report.outcome = PushedBlob::Outcome::mounted;
                blob.report.mounted_from = mount_from[k];
                blob.session.clear();
                break;
            }
        }
        if (blob.report.outcome == PushedBlob::Outcome::sent) to_send += blob.report.size;
    }
    for (PushBlob& blob : blobs) {
        if (blob.report.outcome != PushedBlob::Outcome::sent) continue;
        const uint64_t before = report.bytes_uploaded;
        std::function<void(uint64_t, uint64_t)> moved;
        if (progress)
            moved = [&, before](uint64_t done, uint64_t) { progress(before + done, to_send); };
        if (auto ok = upload_blob(blob.report.digest, blob.report.size, blob.fd,
                                  std::move(blob.body), std::move(blob.session), moved);
            !ok)
            return std::unexpected(ok.error());
        report.bytes_uploaded += blob.report.size;
    }

    Json layers = Json::array({layer_json(blobs.front(), kPackMediaType)});
    for (std::size_t k = 1; k + 1 < blobs.size(); ++k)
        layers.push_back(layer_json(blobs[k], kBaseMediaType));
    const Json manifest = {
        {"schemaVersion", 2},
        {"mediaType", kManifestType},
        {"artifactType", kPackMediaType},
        {"config",
         {{"mediaType", kEmptyType}, {"digest", config.report.digest}, {"size", kEmptyBody.size()}}},
        {"layers", std::move(layers)},
        {"annotations", {{std::string(kImageDigestAnnotation), pack.image_digest}}}};
    HttpRequest put;
    put.method = "PUT";
    put.url = fmt::format("{}/v2/{}/manifests/{}", ref_.base(), ref_.repository,
                          ref_.tag.empty() ? std::string("latest") : ref_.tag);
    put.headers = {fmt::format("Content-Type: {}", kManifestType)};
    put.body = manifest.dump();
    const std::string digest = sha256_text(std::as_bytes(std::span(put.body)));
    auto done = request(put, "manifest upload");
    if (!done) return std::unexpected(done.error());
    if (done->status != 201)
        return fail(EIO, "oci",
                    fmt::format("{} (manifest upload: HTTP {} {})", ref_.text(), done->status,
                                done->body.substr(0, 300)));
    if (const std::string said = done->header("docker-content-digest");
        !said.empty() && said != digest)
        return fail(EIO, "oci",
                    fmt::format("{} (the registry stored the manifest as {}, not {})", ref_.text(),
                                said, digest));
    OciReference by_digest = ref_;
    by_digest.tag.clear();
    by_digest.digest = digest;
    report.reference = by_digest.text();
    for (PushBlob& blob : blobs) {
        report.blobs_sent += blob.report.outcome == PushedBlob::Outcome::sent;
        report.blobs_present += blob.report.outcome == PushedBlob::Outcome::present;
        report.blobs_mounted += blob.report.outcome == PushedBlob::Outcome::mounted;
        report.blobs.push_back(std::move(blob.report));
    }
    return report;
}

}  // namespace packfs::remote
