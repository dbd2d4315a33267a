// A pack's figures as `packfs build` reports what it wrote and `packfs info` what it finds:
// counts, sizes, dedup savings and compression ratio, as text or JSON. A pack does not store
// these figures, so tally_pack() recomputes them from the tree and the header.
#pragma once

#include <functional>
#include <string>

#include "packfs/pack.hpp"
#include "report.hpp"

namespace packfs::cli {

const char* compression_name(Compression compression) noexcept;

// Share of file bytes that dedup did not have to store, in percent (0 for no files).
double dedup_savings_percent(const PackStats& stats) noexcept;
// Uncompressed stream bytes per stored data byte (1 when nothing was compressed or stored).
double compression_ratio(const PackStats& stats) noexcept;

// Indented "label  figures" lines, one per aspect (entries, content, storage, digest).
std::string pack_stats_text(const PackStats& stats);
Json pack_stats_json(const PackStats& stats);

// The figures of an existing pack: counts and content sizes from a walk of its tree (each
// inode once; unique bytes by comparing same-size files), region sizes and digest from the
// header. `progress`, if set, is called with the entries seen and the bytes compared so far.
using TallyProgress = std::function<void(uint64_t entries, uint64_t bytes_read)>;
Result<PackStats> tally_pack(PackBackend& pack, const TallyProgress& progress = {});

}  // namespace packfs::cli
