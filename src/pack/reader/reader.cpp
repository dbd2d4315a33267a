// PackReader: opening (the header validated, the image loaded, then its metadata and data
// parts), and what needs both parts: info, a file's Stat, listings and opens told to the
// observer.
#include "pack/reader/reader.hpp"

#include <cstring>

#include "pack/reader/header_check.hpp"

namespace packfs::pack {

Result<std::unique_ptr<PackReader>> PackReader::open(std::string_view host_path,
                                                     const PackOpenOptions& options,
                                                     const OpenHooks& hooks) {
    auto image = PackImage::open(host_path);
    if (!image) return std::unexpected(image.error());
    return open(std::move(*image), host_path, options, hooks);
}

Result<std::unique_ptr<PackReader>> PackReader::open(std::unique_ptr<PackImage> image,
                                                     std::string_view host_path,
                                                     const PackOpenOptions& options,
                                                     const OpenHooks& hooks) {
    std::unique_ptr<PackReader> r(new PackReader());  // private constructor
    r->image_ = std::move(image);
    Header h;
    std::memcpy(&h, r->image_->header_bytes().data(), kHeaderSize);
    if (auto ok = validate_header(h, r->image_->size(), host_path); !ok)
        return std::unexpected(ok.error());
    if (auto ok = r->image_->load(options.access, h.meta_offset, host_path); !ok)
        return std::unexpected(ok.error());
    if (auto ok = r->meta_.open(h, *r->image_, host_path, hooks); !ok)
        return std::unexpected(ok.error());
    r->data_.open(*r->image_, r->meta_, options);
    return r;
}

PackInfo PackReader::info() const {
    const Header& h = meta_.header();
    PackInfo i;
    i.version = h.version;
    i.file_size = h.file_size;
    i.inode_count = h.inode_count;
    i.data_length = h.data_length;
    i.stream_size = h.stream_size;
    i.meta_length = h.meta_length;
    i.compressed_metadata = meta_.framed();
    i.meta_stored_length = h.file_size - h.meta_offset;
    switch (data_.codec()) {
        case Codec::none:
            i.compression = Compression::none;
            break;
        case Codec::zstd:
            i.compression = Compression::zstd;
            break;
        case Codec::lz4:
            i.compression = Compression::lz4;
            break;
    }
    i.block_size = h.block_size;
    i.inline_max = h.inline_max;
    i.has_xattrs = (h.compat_features & kCompatXattrs) != 0;
    i.has_holes = data_.holes();
    i.has_block_digests = data_.has_block_digests();
    i.has_metadata_digests = meta_.has_meta_digests();
    i.keeps_inode_numbers = meta_.keeps_inode_numbers();
    i.stores_all_times = meta_.stores_all_times();
    i.digest = to_hex(std::span<const uint8_t>(h.image_digest));
    return i;
}

Stat PackReader::stat_of(const InodeView& node) const noexcept {
    Stat st = meta_.stat_of(node);
    if (node.type != FileType::regular || !data_.holes() || node.rec.size < data_.block_size())
        return st;
    auto content = meta_.content(node, Ctx{"stat", {}});
    if (content) st.blocks = data_.allocated_blocks(*content, meta_.content_index(node));
    return st;  // else its whole size: a read says what is wrong
}

Result<std::vector<DirEntry>> PackReader::list(const InodeView& dir, const Ctx& ctx) const {
    if (observer_ == nullptr) return meta_.list(dir, ctx);
    std::vector<uint64_t> files;  // the regular files' records
    auto entries = meta_.list(dir, ctx, &files);
    if (entries && !files.empty()) observer_->listed(files);
    return entries;
}

namespace {

// Files' stored ranges from the metadata here already: an open must never wait on the server
// for another file's sake (in an outage, a cached file must still open).
class RangesHere final : public StoredRanges {
public:
    RangesHere(const MetaReader& meta, const DataReader& data) : meta_(meta), data_(data) {}

    std::optional<StoredRange> of(uint64_t file) const noexcept override {
        const Ctx ctx{"open", {}, &here_};
        auto node = meta_.inode(file, ctx);
        // Inline contents (v2: up to inline_max bytes) are in the metadata: nothing stored.
        if (!node || node->type != FileType::regular || node->rec.size <= meta_.inline_max())
            return std::nullopt;
        auto content = meta_.content(*node, ctx);
        if (!content) return std::nullopt;
        return data_.stored_range(*content, ctx);
    }

private:
    const MetaReader& meta_;
    const DataReader& data_;
    mutable HereOnly here_;
};

}  // namespace

void PackReader::note_open(const InodeView& file) const noexcept try {
    if (observer_ == nullptr) return;
    const RangesHere ranges(meta_, data_);
    observer_->opened(file.ino, ranges);
} catch (const std::bad_alloc&) {
}

}  // namespace packfs::pack
