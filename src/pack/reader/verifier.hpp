// PackBackend::verify: proves every byte of a pack, or lists what is wrong with it. Nothing here
// stops at the first problem. One method per phase, run in this order:
//
// 0. with compressed metadata, every block inflated (inflate_metadata);
// 1. each section against its checksum (check_sections);
// 2. each metadata block against its sum, recording the result in the reader's checked-block
//    bitmaps (check_metadata_blocks);
// 3. each content against its SHA-256, reading the stream in offset order so each compressed
//    block is decompressed once (check_contents);
// 4. each stream block that no content touched (check_untouched_blocks); each block's stored
//    bytes against its digest (check_block_digests); every byte that belongs to nothing is zero
//    (check_padding);
// 5. the tree, walked from the root, so every record is checked and each bad content is
//    reported under the virtual path of every file that holds it (walk_tree);
// 6. the inode numbers, when the pack keeps them: all non-zero, the order a permutation sorted
//    strictly ascending (check_numbering);
// 7. the image digest (check_image_digest).
//
// Before phase 1, the contents' records are gathered (gather_contents), so the progress total is
// known. A Verifier is used once, on one thread; the reader it checks may be in use meanwhile.
// It reads the metadata raw (a record in a failed block is still worth checking against what it
// describes) and sets the checked-block bitmaps, so MetaReader and DataReader call it a friend.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "pack/format/digest.hpp"
#include "pack/reader/reader.hpp"
#include "packfs/pack.hpp"

namespace packfs::pack {

class Verifier {
public:
    Verifier(const PackReader& reader, const std::function<void(uint64_t, uint64_t)>& progress);
    VerifyReport run();

private:
    // Progress reporting, at most every 8 MiB of work.
    class Progress {
    public:
        explicit Progress(const std::function<void(uint64_t, uint64_t)>& callback)
            : callback_(callback) {}
        void set_total(uint64_t total) noexcept { total_ = total; }
        void add(uint64_t bytes);
        void finish();
        uint64_t done() const noexcept { return done_; }

    private:
        const std::function<void(uint64_t, uint64_t)>& callback_;
        uint64_t total_ = 0;
        uint64_t done_ = 0;
        uint64_t reported_ = 0;
    };

    // A content to hash: where it is (the bytes section when inline, else the stream) and the
    // SHA-256 it must have.
    struct Item {
        uint64_t index, offset, size;  // made of extents: offset is its first extent's index
        bool is_inline;
        Sha256Digest sha;
        bool extents = false;
    };
    // A content made of extents: read through the data reader (its bases too), each extent's
    // SHA-256 checked against its bytes and the whole against the content's.
    void check_extents(const Item& item);
    // This pack's stream ranges that extents hold (check_padding counts them as contents).
    std::vector<std::pair<uint64_t, uint64_t>> extent_ranges_;
    // A directory the tree walk has still to list.
    struct Dir {
        std::string path;
        InodeView node;
    };

    // The phases.
    void inflate_metadata();
    void gather_contents();
    void check_sections();
    void check_metadata_blocks();
    void check_contents();
    void check_untouched_blocks();
    void check_block_digests();
    void check_padding();
    void walk_tree();
    void check_numbering();
    void check_image_digest();

    // Phase 0 and the gathering.
    void locate_v2_contents();
    // A content whole in a base (kBaseLocator): its inode's locator and digest index are the
    // base's, so it is checked apart, once per (base, digest index), against the base's digest.
    bool in_base(uint64_t ref, uint64_t size) const noexcept;
    void gather_base_contents();
    void check_base_contents();
    // Phase 3: one content, hashed slice by slice; a slice of it (nullopt and `why` when it
    // cannot be read); block `index` of the stream into block_ (false when it is bad).
    void check_content(const Item& item);
    std::optional<std::span<const std::byte>> content_slice(const Item& item, uint64_t done,
                                                            std::string& why);
    bool load_block(uint64_t index);
    // Phase 4: file bytes [offset, offset + length) are zero; stream bytes where stored raw.
    void check_zero(uint64_t offset, uint64_t length, std::string_view what);
    void check_stream_zero(uint64_t offset, uint64_t length);
    // Phase 5: one directory's entries (their keys, order and buckets); one entry's inode;
    // an inode's xattr records; then every bad content under each path that holds it.
    void check_directory(const Dir& dir);
    void check_entry_key(const std::string& path, const std::vector<DirEntry>& entries,
                         std::size_t i, const std::byte* dirent);
    void check_entry(std::string path, const DirEntry& entry, uint64_t record);
    void check_file(std::string path, const InodeView& node);
    void check_xattrs(const std::string& path, const InodeView& node);
    void check_buckets(const std::string& path, const InodeView& dir,
                       const std::vector<DirEntry>& entries);
    void report_bad_contents();

    void problem(std::string where, std::string what);

    const PackReader& r_;  // its listings (noted by a remote pack's walk-ahead) and its image
    const MetaReader& m_;
    const DataReader& d_;
    const Ctx ctx_{"verify", {}};
    const bool v2_;
    VerifyReport report_;
    Progress meter_;

    std::vector<Item> items_;
    std::vector<std::string> bad_content_;  // why content i is bad ("" if fine)
    std::vector<Content> located_;          // v2: each content's locator and SHA-256
    struct BaseItem {
        uint64_t offset, size;
        std::string bad;  // why it is bad ("" if fine)
    };
    std::map<std::pair<uint32_t, uint32_t>, BaseItem> base_items_;  // by (base, digest index)
    uint64_t content_bytes_ = 0;

    std::vector<uint8_t> block_state_;  // per stream block: 0 unseen, 1 fine, 2 bad
    std::vector<std::byte> block_;      // the stream block load_block() loaded last
    uint64_t block_index_ = UINT64_MAX;
    std::vector<std::byte> chunk_;  // pread access: a slice of a raw stream
    std::vector<std::byte> zeros_;  // pread access: a slice checked for zeros
    Sha256 sha_;

    std::vector<std::vector<std::string>> bad_paths_;  // the paths holding bad content i
    std::vector<bool> seen_dir_;
    std::vector<Dir> dirs_;
};

}  // namespace packfs::pack
