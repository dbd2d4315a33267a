// The second step of a build: every regular file's content hashed (in parallel), exact
// duplicates found, and the distinct contents laid out in the data stream.
//
// Dedup: XXH3-128 and the size pick candidates; a byte comparison of the two sources decides,
// so a hash collision can only cost a comparison, never merge different contents.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "pack/digest.hpp"
#include "pack/tree_scan.hpp"
#include "pack/tree_source.hpp"
#include "packfs/pack.hpp"

namespace packfs::pack {

struct PlannedContent {
    uint32_t source_ino = 0;  // the first inode holding it (read from that inode's path)
    uint64_t size = 0;
    uint64_t offset = 0;      // in the stream, or (inline) in the bytes section, set later
    bool is_inline = false;
    std::array<uint64_t, 2> dedup_hash{};
    Sha256Digest sha256{};
    std::string kept;         // the bytes, when small enough to keep between hash and write
    bool has_kept = false;
};

struct ContentPlan {
    std::vector<PlannedContent> contents;  // content i; inodes refer to i + 1
    uint64_t file_bytes = 0;               // every regular inode once
    uint64_t unique_bytes = 0;
    uint64_t stream_size = 0;              // stream contents, alignment included
};

// Hashes, dedups and lays out; sets ScannedInode::content. `progress(done, total)` runs on the
// calling thread.
Result<ContentPlan> plan_contents(TreeSource& source, ScannedTree& tree,
                                  const PackWriteOptions& options, unsigned jobs,
                                  const std::function<void(uint64_t, uint64_t)>& progress);

// Reads one content of `size` bytes from the source path in slices, giving each to `sink`;
// fails when the file no longer has `size` bytes.
Result<void> read_content(TreeSource& source, SourceRef file, uint64_t size,
                          const std::function<void(std::span<const std::byte>)>& sink);

}  // namespace packfs::pack
