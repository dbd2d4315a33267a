// What the cache remembers of a URL or an oci:// reference (docs/REMOTE.md "Offline"): the pack
// it held when the server was last reached, so that an open while the server is away can read
// the cached copy. <cache>/urls/<SHA-256 of the URL>: only the hash names the URL, so a token in
// a presigned URL is not written down.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace packfs::remote {

// What a URL held when last reached: the pack's image digest, and for an oci:// reference the
// blob URL its manifest named and, for a pack built over bases, each base layer's image digest
// and blob URL. The file: the digest, then a line of the blob URL, then a line "<digest> <blob
// URL>" per base.
struct UrlRecord {
    std::string digest;  // hex; "" when there is no (readable) record
    std::string blob_url;
    std::vector<std::pair<std::string, std::string>> bases;
    bool operator==(const UrlRecord&) const = default;
};

UrlRecord read_url_record(const std::string& cache_dir, const std::string& url);
// Best effort: without the record, an open while the server is away fails as it did before.
void write_url_record(const std::string& cache_dir, const std::string& url,
                      const UrlRecord& record);

}  // namespace packfs::remote
