// Category 8 of the earlier PackFS's benchmark and the other pack figures of issue 4
// (DESIGN §8): building a pack (compaction), reading files out of one, opening one, walking
// one, and what dedup costs a build. docs/BENCH.md ("Packs (issue 4)") says what each figure
// times.
#pragma once

#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "bench/categories.hpp"
#include "bench/harness.hpp"

namespace packfs::bench {

// The sections the pack groups belong to, as --filter and the report use them.
inline constexpr const char* kPackSection = "packs";
inline constexpr const char* kBigPackSection = "large pack";

// The pack groups, in report order (every figure's backend is "pack", its peers "raw" or
// "mem"); `scratch` is the host directory the packs are written to (and the raw fs's files
// made under); the raw fs arms run only `with_raw`.
// Section "packs" (in the default run):
// - compact: write_pack of a mem backend holding sizes.pack_files (N) and 4N files of 128
//   bytes in one directory, every file identical and every file unique; each figure with its
//   phases (scan, hash + dedup, data, metadata + commit) as PackStats reports them.
// - random-read: one pack of N unique files opened once; open + pread + close of each in a
//   shuffled order, and read_view of each, against the raw fs doing open/pread/close.
// - walk: readdir + lstat of every entry of sizes.pack_tree (a host tree, packed once)
//   against the raw fs walking the same directory.
// - dedup: write_pack of sizes.dedup_files files of sizes.dedup_mib MiB of random bytes plus
//   sizes.dedup_copies exact copies of some, with dedup and without.
// Section "large pack" (only when a filter names it; "packs" does not): a pack of sizes.pack_big
// entries, built once; open + stat("/") (+ one lookup) against the same on a pack of N entries, and
// a walk of every entry against the mem backend it was built from; and the dedup build at
// sizes.dedup_large_files + sizes.dedup_large_copies files.
std::vector<Group> pack_groups(const Sizes& sizes, bool with_raw, const std::string& scratch);

// The targets of issue 4 the figures allow to check, with the measured value and verdict.
void print_pack_targets(std::FILE* out, std::span<const Figure> figures);

}  // namespace packfs::bench
