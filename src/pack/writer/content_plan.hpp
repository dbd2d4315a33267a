// The second step of a build: every regular file's content hashed by workers ahead of the
// caller, exact duplicates found in inode order, and each distinct content laid out in the data
// stream and handed to the writer as soon as it is decided: reading, hashing and writing
// overlap, and a file up to 1 MiB is read once (its bytes held, within a 64 MiB budget).
//
// Dedup: XXH3-128 and the size pick candidates; a byte comparison of the two sources decides,
// so a hash collision can only cost a comparison, never merge different contents.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/huge_pages.hpp"
#include "pack/format/digest.hpp"
#include "pack/test_hooks.hpp"
#include "pack/writer/tree_scan.hpp"
#include "pack/writer/tree_source.hpp"
#include "packfs/pack.hpp"

namespace packfs::pack {

// A content whole in one base's stream, as a kBaseLocator names it: the base (the new pack's
// number of it), where in its stream, and the index of the content's digest there.
struct BaseLocation {
    uint32_t pack = 0;
    uint64_t offset = 0;
    uint32_t digest_index = 0;
};

struct PlannedContent {
    uint32_t source_ino = 0;  // the first inode holding it (read from that inode's path)
    uint64_t size = 0;
    uint64_t offset = 0;      // in the stream, or (inline) in the bytes section, set later
    bool is_inline = false;
    std::array<uint64_t, 2> dedup_hash{};
    Sha256Digest sha256{};
    std::string kept;  // its bytes: an inline content's (for the bytes section), or a
                       // small one's kept for comparing later duplicates in memory
    bool has_kept = false;
    bool known = false;  // taken from the files cache by its SHA-256, never read
    // Made of extents (PackWriteOptions::chunk_size, bases): its run, `count` set on the first;
    // empty for a content stored whole at `offset` or in a base.
    std::vector<Extent> extents;
    // Whole in a base (its inode then has a kBaseLocator, and this pack no digest of it).
    std::optional<BaseLocation> in_base;
};

struct ContentPlan {
    std::vector<PlannedContent, HugePageAllocator<PlannedContent>> contents;  // content i; inodes
                                                                              // refer to i + 1
    uint64_t file_bytes = 0;               // every regular inode once
    uint64_t unique_bytes = 0;
    uint64_t stream_size = 0;              // stream contents, alignment included
};

// Writes one new stream content, in stream order, at its offset or after it (alignment the
// plan chose): from `bytes` when the hashing held them, else (nullptr) read again from the
// source. Returns the stream bytes it took from its offset on: its size when stored whole, less
// when it is made of extents some of which lie elsewhere (it then sets `extents`).
using ContentSink =
    std::function<Result<uint64_t>(PlannedContent& content, const std::string* bytes)>;

// Contents known without reading them (files_cache.hpp): by inode index, the SHA-256 of a file
// a base holds unchanged, or nullptr to read it. Empty: every file is read.
using KnownContents = std::span<const Sha256Digest* const>;

// Hashes, dedups, lays out and writes (through `write`); sets ScannedInode::content. A known
// content is one with that SHA-256 (a file read with the same bytes is the same content, so the
// pack is the one reading every file gives), and is never read: `write` must take it from a base.
// `progress(done, total)` runs on the calling thread.
Result<ContentPlan> plan_contents(TreeSource& source, ScannedTree& tree,
                                  const PackWriteOptions& options, const WriteHooks& hooks,
                                  KnownContents known, unsigned jobs,
                                  const std::function<void(uint64_t, uint64_t)>& progress,
                                  const ContentSink& write);

// Reads one content of `size` bytes from the source path in slices, giving each to `sink`
// with whether it is a hole (zeros not read: asked of the source only when its allocated
// blocks in `stat` fall short of the size, as cp does); fails when the file no longer has
// `size` bytes.
Result<void> read_content(TreeSource& source, SourceRef file, const Stat& stat, uint64_t size,
                          const std::function<void(std::span<const std::byte>, bool hole)>& sink);

}  // namespace packfs::pack
