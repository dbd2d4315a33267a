// What a build over bases (PackWriteOptions::bases, `packfs build --base`) can reference instead
// of storing: every content of the bases by its SHA-256, and every chunk of their large
// contents by its SHA-256 (the extents a pack with extents names them by), each as extents of
// the new pack's numbering of packs.
//
// The new pack names every pack its extents read from directly (docs/FORMAT.md "Extents"): for
// each base given, the bases it names (in its order) then itself, each once. So a chain v1 <- v2
// <- v3 keeps each version readable with its bases, no read goes through more than one pack,
// and v3 numbers v1 as v2 does.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "pack/format/digest.hpp"
#include "pack/format/format.hpp"
#include "pack/reader/reader.hpp"
#include "pack/writer/content_plan.hpp"
#include "packfs/error.hpp"

namespace packfs::pack {

struct BaseSpec {  // a base record of the new pack
    Sha256Digest image_digest{};
    std::string name;  // its file name (a hint where to find it beside the new pack)
};

// A content some base holds whole: its extents in the new pack's numbering of packs (`at` from
// 0), and, when it lies in one run of one pack's stream, where, as a kBaseLocator says it.
struct BaseContent {
    std::vector<Extent> extents;
    std::optional<BaseLocation> location;
};

class BaseIndex {
public:
    // Opens `paths` (each with its own bases, found as a reader finds them) and indexes them.
    // ENOENT naming a base that is missing, EINVAL for a base of format 1 (no digests index
    // its contents).
    static Result<BaseIndex> open(const std::vector<std::string>& paths);

    // The bases the new pack names, in its numbering (extent pack k is bases()[k - 1]): each
    // base given after the bases it names.
    const std::vector<BaseSpec>& bases() const noexcept { return specs_; }
    // The first base given: the version the new pack follows (its files cache is the one a
    // build takes unchanged files from).
    const BaseSpec& first() const noexcept { return specs_[first_ - 1]; }
    // A content some base holds whole, or nullptr.
    const BaseContent* whole(const Sha256Digest& sha256) const noexcept;
    // A chunk of some base's large content, `length` bytes named `sha256`, or nullptr.
    const Extent* chunk(const Sha256Digest& sha256, uint64_t length) const noexcept;
    // The chunk size the first base given was cut with (0: none): a build over it cuts at the
    // same size unless told otherwise, or no chunk would match.
    uint32_t chunk_size() const noexcept { return chunk_size_; }
    uint64_t contents() const noexcept { return whole_.size(); }
    uint64_t chunks() const noexcept { return chunks_.size(); }

private:
    // Indexes one opened base, whose packs (itself, then its bases) are `numbering` in ours.
    Result<void> index(const PackReader& base, const std::vector<uint32_t>& numbering,
                       std::string_view path);

    std::vector<BaseSpec> specs_;
    uint32_t chunk_size_ = 0;
    uint32_t first_ = 0;  // the first base given, in our numbering
    std::unordered_map<Sha256Digest, BaseContent, Sha256DigestHash> whole_;
    std::unordered_map<Sha256Digest, Extent, Sha256DigestHash> chunks_;
};

}  // namespace packfs::pack
