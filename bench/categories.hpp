// The categories of the benchmark (the earlier PackFS's categories 1-7, 9 and 10, plus the
// snapshot cost), each turned into a Group of interleaved arms, one per backend; then the
// extra sections: the scaling check of every category (N, 4N, 16N) and the million-entry
// directory.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "bench/adapters.hpp"
#include "bench/harness.hpp"

namespace packfs::bench {

struct Sizes {
    std::size_t files = 20'000;       // 1-5: small files in one directory
    std::size_t file_bytes = 128;
    std::size_t dirs = 4'000;         // 6: mkdir / rmdir
    std::vector<std::size_t> large_mib{1, 16, 64};  // 7: written in 1 MiB pwrite calls
    std::size_t threads = 8;          // 9: each thread create+read+unlink of its own files
    std::size_t iterations = 4'000;
    std::size_t snapshot_small = 1'000;       // entries in the trees snapshot() is timed on
    std::size_t snapshot_large = 1'000'000;
    std::size_t snapshot_calls = 10'000;      // snapshot() calls per run
    // 10: the Vfs's mount table. Mount, resolve (a stat of one file in each mounted
    // backend) and unmount of mounts[i] mem backends at distinct paths; then `resolves`
    // stats through a table of mounts.front() mounts against one of mounts_many.
    std::vector<std::size_t> mounts{500, 2'000, 8'000};
    std::size_t mounts_many = 100'000;
    std::size_t resolves = 100'000;
    // Scaling section: the categories above at N (their size), 4N and, where cheap, 16N;
    // the large-file categories from scaling_mib MiB.
    std::size_t scaling_mib = 16;
    // The backends on host storage (dir) in the scaling section too: their 4N and 16N setups
    // are minutes of disk work, so only the full run has them.
    bool scaling_on_disk = true;
    // Million-entry directory: create, list, stat and remove big_dir entries of one
    // directory, and big_dir / 4 for the scaling check; at most big_dir_runs runs.
    std::size_t big_dir = 1'000'000;
    int big_dir_runs = 3;
    bool big_dir_default = false;  // part of the default run (else only when a filter names it)
    // Packs (issue 4, pack_categories.hpp). Compaction of pack_files (N) and 4N files of
    // file_bytes, random reads of N; a walk of the host tree pack_tree (skipped when it is
    // not a directory); a build of dedup_files files of dedup_mib MiB plus dedup_copies
    // copies of some of them. Opt-in ("large pack"): open and walk of a pack of pack_big
    // entries, and the dedup build at dedup_large_files + dedup_large_copies files.
    std::size_t pack_files = 20'000;
    std::size_t pack_opens = 200;  // open_pack calls per run
    std::string pack_tree = "/usr/include";
    std::size_t dedup_files = 16;
    std::size_t dedup_copies = 4;
    std::size_t dedup_mib = 16;
    std::size_t pack_big = 1'000'000;
    std::size_t dedup_large_files = 64;
    std::size_t dedup_large_copies = 16;
    int pack_big_runs = 5;  // at most, in the opt-in section
    // Volumes and overlays (volume_categories.hpp): volume_files creates (volume_fsync_files
    // where each file costs an fsync) with 1 and volume_threads threads; an overlay over a pack
    // of volume_pack_files files (listed volume_readdirs times) and copy-up from a
    // volume_copy_up_mib MiB lower file; volume_writes creates into a volume of volume_entries
    // entries (volume_journal_changes of them changed since its last compaction) while it
    // compacts back to back.
    std::size_t volume_files = 20'000;
    std::size_t volume_fsync_files = 1'000;
    std::size_t volume_threads = 8;
    std::size_t volume_pack_files = 20'000;
    std::size_t volume_readdirs = 20;
    std::size_t volume_copy_up_mib = 64;
    std::size_t volume_entries = 20'000;
    std::size_t volume_journal_changes = 300;
    std::size_t volume_writes = 400'000;  // long enough for compactions to complete meanwhile
    std::size_t volume_replay_records = 1'000'000;  // the journal a volume open replays
    // Seconds of timed work after which a run of a disk-bound arm (the raw fs, raw+fsync, the
    // dir backend; the durable volume creates) stops short of n (budget.hpp); 0: no limit.
    double disk_budget_s = 0;
};

// The names of the extra sections, as --filter and the report use them.
inline constexpr const char* kScalingSection = "scaling";
inline constexpr const char* kBigDirSection = "million-entry directory";

// Every category's group, in report order: the main table (with category 10 when "vfs" is
// selected), then the scaling section, then the million-entry directory (opt-in unless
// sizes.big_dir_default); `scratch` is the host directory raw targets are made under. The
// adapters are those selected; a category takes the ones it applies to.
std::vector<Group> make_groups(const Sizes& sizes, std::span<const BackendAdapter* const> adapters,
                               const std::string& scratch);

// "1k", "16k", "1M": a count as the category names print it.
std::string short_count(std::size_t n);

}  // namespace packfs::bench
