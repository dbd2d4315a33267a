// libFuzzer target: what a registry or a user hands the OCI code (src/remote/oci.hpp). The
// input's first line is a reference, the rest a manifest's bytes.
//
// Invariants checked on every input:
// - parse_oci_reference either fails with EINVAL or gives a reference whose text() parses again
//   to the same registry, repository, tag and digest;
// - parse_pack_manifest either fails with EINVAL or gives a pack layer with a well-formed blob
//   digest ("sha256:" and 64 hex digits), a 64-hex-digit image digest, and a blob URL under the
//   reference's repository, and base layers of the same forms, no two of one image digest;
//   never a crash or an exception, whatever the JSON.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "remote/oci.hpp"

namespace {

[[noreturn]] void die(const char* what) {
    std::fprintf(stderr, "fuzz_oci: invariant broken: %s\n", what);
    std::abort();
}

bool hex64(std::string_view s) {
    if (s.size() != 64) return false;
    for (char c : s)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace packfs::remote;
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const auto newline = input.find('\n');
    const std::string_view first = input.substr(0, newline);
    const std::string_view rest =
        newline == std::string_view::npos ? std::string_view() : input.substr(newline + 1);

    if (auto ref = parse_oci_reference(first)) {
        auto again = parse_oci_reference(ref->text());
        if (!again) die("a parsed reference's text does not parse");
        if (again->registry != ref->registry || again->repository != ref->repository ||
            again->tag != ref->tag || again->digest != ref->digest)
            die("a parsed reference's text parses to another reference");
    } else if (ref.error().code() != EINVAL) {
        die("a reference failed with something other than EINVAL");
    }

    OciReference fixed;
    fixed.registry = "127.0.0.1:5000";
    fixed.repository = "fuzz/pack";
    fixed.tag = "v1";
    if (auto pack = parse_pack_manifest(rest, fixed)) {
        if (!pack->blob_digest.starts_with("sha256:") || !hex64(pack->blob_digest.substr(7)))
            die("a manifest gave a malformed blob digest");
        if (!hex64(pack->image_digest)) die("a manifest gave a malformed image digest");
        if (pack->blob_url != "http://127.0.0.1:5000/v2/fuzz/pack/blobs/" + pack->blob_digest)
            die("a manifest gave a blob URL outside the repository");
        for (std::size_t k = 0; k < pack->bases.size(); ++k) {
            const OciBlob& base = pack->bases[k];
            if (!base.blob_digest.starts_with("sha256:") || !hex64(base.blob_digest.substr(7)))
                die("a manifest gave a base a malformed blob digest");
            if (!hex64(base.image_digest)) die("a manifest gave a base a malformed image digest");
            if (base.blob_url != "http://127.0.0.1:5000/v2/fuzz/pack/blobs/" + base.blob_digest)
                die("a manifest gave a base a blob URL outside the repository");
            if (pack->base(base.image_digest) != &base)
                die("a manifest gave two bases of one image digest");
        }
    } else if (pack.error().code() != EINVAL) {
        die("a manifest failed with something other than EINVAL");
    }
    return 0;
}
