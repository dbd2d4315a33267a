// Validated access to one pack (format.hpp): the header checked on open (header_check.hpp),
// then the metadata (MetaReader, meta_reader.hpp: records, names, xattrs, every byte checked
// before use) and the data (DataReader, data_reader.hpp: blocks, block cache, contents). A
// PackReader composes the two for its callers (the Backend in pack_backend.cpp, a remote pack's
// opener, the Verifier), and holds what needs both: a file's Stat (its holes counted out), and
// telling a pack's AccessObserver (byte_source.hpp: a remote pack's) of listings and opens.
//
// Opening is O(1) in the number of files: the header and the sums array, nothing per entry.
//
// Concurrency. A PackReader is immutable after open() except for the checked-block bitmaps
// (atomics), the block cache (sharded mutexes) and the allocated-blocks table (atomics); the
// observer, set before the reader is shared, keeps its own locks. It is safe to share between
// threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pack/format/digest.hpp"
#include "pack/format/format.hpp"
#include "pack/reader/data_reader.hpp"
#include "pack/reader/image.hpp"
#include "pack/reader/meta_reader.hpp"
#include "pack/test_hooks.hpp"
#include "packfs/error.hpp"
#include "packfs/pack.hpp"
#include "packfs/types.hpp"

namespace packfs::pack {

class PackReader {
public:
    static Result<std::unique_ptr<PackReader>> open(std::string_view host_path,
                                                    const PackOpenOptions& options,
                                                    const OpenHooks& hooks = {});
    // The same over an image already open (a remote pack's); `name` names it in errors.
    static Result<std::unique_ptr<PackReader>> open(std::unique_ptr<PackImage> image,
                                                    std::string_view name,
                                                    const PackOpenOptions& options,
                                                    const OpenHooks& hooks = {});
    PackReader(const PackReader&) = delete;
    PackReader& operator=(const PackReader&) = delete;

    const Header& header() const noexcept { return meta_.header(); }
    uint32_t version() const noexcept { return meta_.version(); }
    const PackImage& image() const noexcept { return *image_; }
    const MetaReader& metadata() const noexcept { return meta_; }
    const DataReader& data() const noexcept { return data_; }
    PackInfo info() const;

    // --- records (MetaReader) ------------------------------------------------------------
    Result<InodeView> inode(uint64_t ino, const Ctx& ctx) const { return meta_.inode(ino, ctx); }
    Result<InodeView> root(const Ctx& ctx) const { return meta_.root(ctx); }
    bool keeps_inode_numbers() const noexcept { return meta_.keeps_inode_numbers(); }
    // The number st_ino and readdir report for `node`.
    uint64_t inode_number(const InodeView& node) const noexcept { return node.number; }
    Result<std::optional<InodeView>> by_inode_number(uint64_t number, const Ctx& ctx) const {
        return meta_.by_inode_number(number, ctx);
    }
    Result<uint64_t> max_inode_number(const Ctx& ctx) const { return meta_.max_inode_number(ctx); }
    Result<ContentRef> content(const InodeView& file, const Ctx& ctx) const {
        return meta_.content(file, ctx);
    }
    Result<std::string_view> symlink_target(const InodeView& link, const Ctx& ctx) const {
        return meta_.symlink_target(link, ctx);
    }
    // Every field of the node's Stat; st_blocks of a file with holes counts its bytes outside
    // them (DataReader::allocated_blocks).
    Stat stat_of(const InodeView& node) const noexcept;

    // --- names and xattrs (MetaReader) ----------------------------------------------------
    Result<std::optional<InodeView>> lookup(const InodeView& dir, std::string_view name,
                                            const Ctx& ctx) const {
        return meta_.lookup(dir, name, ctx);
    }
    using Probe = MetaReader::Probe;
    Probe probe(const InodeView& dir, std::string_view name, InodeView& out) const noexcept {
        return meta_.probe(dir, name, out);
    }
    // MetaReader::list; the observer is told the regular files listed.
    Result<std::vector<DirEntry>> list(const InodeView& dir, const Ctx& ctx) const;
    Result<std::vector<std::pair<std::string, InodeView>>> list_nodes(const InodeView& dir,
                                                                      const Ctx& ctx) const {
        return meta_.list_nodes(dir, ctx);
    }
    Result<bool> find_xattr(const InodeView& node, std::string_view name, std::string& value,
                            const Ctx& ctx) const {
        return meta_.find_xattr(node, name, value, ctx);
    }
    Result<std::vector<std::string>> xattr_names(const InodeView& node, const Ctx& ctx) const {
        return meta_.xattr_names(node, ctx);
    }

    // --- contents (DataReader) -------------------------------------------------------------
    Result<std::size_t> read(const ContentRef& content, uint64_t offset, std::span<std::byte> out,
                             const Ctx& ctx) const {
        return data_.read(content, offset, out, ctx);
    }
    Result<std::span<const std::byte>> view(const ContentRef& content, uint64_t offset,
                                            std::size_t length, std::string& scratch,
                                            const Ctx& ctx) const {
        return data_.view(content, offset, length, scratch, ctx);
    }
    using FileExtent = DataReader::FileExtent;
    std::optional<FileExtent> file_extent(const ContentRef& content, uint64_t offset,
                                          std::size_t length) const {
        return data_.file_extent(content, offset, length);
    }
    Result<uint64_t> seek(const ContentRef& content, uint64_t offset, bool data,
                          const Ctx& ctx) const {
        return data_.seek(content, offset, data, ctx);
    }

    // File `file` is being opened: the observer is told, with where files' stored bytes lie
    // from metadata here already (it never waits on the server for another file's sake).
    void note_open(const InodeView& file) const noexcept;

    // --- a pack from elsewhere (src/remote/) ----------------------------------------------
    // Who is told of listings and opens (AccessObserver); before the reader is shared.
    void set_observer(std::shared_ptr<AccessObserver> observer) noexcept {
        observer_ = std::move(observer);
    }
    Result<Sha256Digest> image_digest(const Ctx& ctx) const { return meta_.image_digest(ctx); }
    Result<void> check_metadata_digests(const Ctx& ctx) const {
        return meta_.check_metadata_digests(ctx);
    }
    Result<std::vector<StoredBlockRef>> stored_blocks(const Ctx& ctx) const {
        return data_.stored_blocks(ctx);
    }
    bool has_block_digests() const noexcept { return data_.has_block_digests(); }
    uint64_t stream_block_count() const noexcept { return data_.stream_block_count(); }
    Result<FileExtent> block_extent(uint64_t index, const Ctx& ctx) const {
        return data_.block_extent(index, ctx);
    }
    Result<BlockDigest> block_digest(uint64_t index, const Ctx& ctx) const {
        return data_.block_digest(index, ctx);
    }

    // The SHA-256 of a regular file's content (size > 0): its digest record, in the base that
    // holds it for a content whole in a base (kBaseLocator). EIO when that base is not open.
    Result<Sha256Digest> content_digest(const InodeView& file, const Ctx& ctx) const;
    // Base `k` (1 ..= the base count) as attached, or nullptr.
    const PackReader* base(uint32_t k) const noexcept {
        return k >= 1 && k <= bases_.size() ? bases_[k - 1].get() : nullptr;
    }

    // A pack from a source with bases (kIncompatExtents): open() leaves them to the opener
    // (src/remote/ opens each from beside the pack's URL), which hands them here, in the order
    // of the bases section; each must be the pack its record names. Until then a read of an
    // extent in a base fails with EIO.
    Result<void> attach_bases(std::vector<std::unique_ptr<PackReader>> bases, const Ctx& ctx);

    // Everything: sections, metadata blocks, compressed blocks, contents, block digests, image
    // digest (verifier.hpp).
    VerifyReport verify(const std::function<void(uint64_t, uint64_t)>& progress) const;

private:
    PackReader() = default;
    // The bases the pack names (kIncompatExtents), opened from options.bases or beside
    // `host_path`; each opened for its stream alone (its own bases are not opened: a pack's
    // extents name every pack they read from directly).
    Result<void> open_bases(std::string_view host_path, const PackOpenOptions& options);
    static Result<std::unique_ptr<PackReader>> open_image(std::unique_ptr<PackImage> image,
                                                          std::string_view name,
                                                          const PackOpenOptions& options,
                                                          const OpenHooks& hooks,
                                                          bool with_bases);

    std::unique_ptr<PackImage> image_;
    std::vector<std::unique_ptr<PackReader>> bases_;  // data_ reads extents from them
    MetaReader meta_;
    DataReader data_;  // reads its blocks section through meta_
    std::shared_ptr<AccessObserver> observer_;
};

// The read-only Backend over an open reader (pack_backend.cpp): what open_pack returns, and
// what a remote pack's open (src/remote/) returns over its own reader.
std::shared_ptr<PackBackend> backend_over(std::unique_ptr<PackReader> reader);

}  // namespace packfs::pack
