// The volume and overlay figures (DESIGN §9, §10): what the journal costs a create in each
// durability mode against the host fs with and without fsync; what an overlay over a pack
// costs reads against the pack alone, and what a one-byte write into a large lower file
// copies; and how much a compaction running back to back slows a writer.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "bench/categories.hpp"
#include "bench/harness.hpp"

namespace packfs::bench {

// The section the volume groups belong to, as --filter and the report use it; and the name
// --backends selects it by.
inline constexpr const char* kVolumeSection = "volume";
inline constexpr std::string_view kVolumeBackend = "volume";

// What the runs saw besides times (a Figure holds times only): filled by the runs, read by
// print_volume_targets.
struct VolumeFacts {
    std::vector<uint64_t> copy_up_bytes;       // the overlay's upper growth, per run
    std::vector<uint64_t> compactions_per_run;  // completed while the writer ran
};

// The volume groups, in report order, all in section "volume" (in the default run):
// - journaled create: sizes.volume_files (sizes.volume_fsync_files where every file costs an
//   fsync) create + 128-byte write + close into a fresh volume in each durability mode, with 1
//   and sizes.volume_threads threads, beside mem and the raw fs with and without fsync.
// - overlay over a pack: stat, open + pread + close and readdir of a pack of
//   sizes.volume_pack_files files, alone and under an overlay (empty upper; 1% written and 1%
//   deleted); and copy-up of one byte of a sizes.volume_copy_up_mib MiB lower file against
//   copying the file as overlayfs does.
// - compaction while writing: sizes.volume_writes creates into a volume of
//   sizes.volume_entries entries, alone and while compact() runs back to back.
// The raw fs arms run only `with_raw`; `scratch` is where volumes, packs and raw files go.
std::vector<Group> volume_groups(const Sizes& sizes, bool with_raw, const std::string& scratch,
                                 std::shared_ptr<VolumeFacts> facts);

// The volume targets the figures allow to check, with the measured value and verdict.
void print_volume_targets(std::FILE* out, std::span<const Figure> figures,
                          const VolumeFacts& facts);

}  // namespace packfs::bench
