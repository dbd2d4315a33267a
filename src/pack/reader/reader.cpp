// PackReader: opening (the header validated, the image loaded, then its metadata and data
// parts), and what needs both parts: info, a file's Stat, listings and opens for a remote
// pack's walk-ahead.
#include "pack/reader/reader.hpp"

#include <algorithm>
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
    if (r->image_->remote() != nullptr && h.version >= 2) r->walk_ = std::make_unique<WalkAhead>();
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
    if (walk_ == nullptr) return meta_.list(dir, ctx);
    std::vector<uint64_t> files;  // the regular files' records, for walk_
    auto entries = meta_.list(dir, ctx, &files);
    if (entries && !files.empty()) walk_->listed(files);
    return entries;
}

void PackReader::note_open(const InodeView& file) const noexcept try {
    if (walk_ == nullptr) return;
    RemoteBytes& remote = *image_->remote();
    const uint64_t budget = remote.walk_ahead_bytes();
    if (budget == 0) return;
    // An open must never wait on the server for another file's sake (in an outage, a cached
    // file must still open): with metadata fetched by block, the files ahead are scheduled
    // from metadata fetched already or in the cache, and skipped when theirs is neither.
    const MetaFrames::LocalOnly local_only;
    std::vector<RemoteBytes::Range> ranges;
    walk_->opened(file.ino, budget, [&](uint64_t record) -> uint64_t {
        const Ctx ctx{"open", {}};
        auto node = meta_.inode(record, ctx);
        // Inline contents (v2: up to inline_max bytes) are in the metadata: nothing to fetch.
        if (!node || node->type != FileType::regular || node->rec.size <= meta_.inline_max())
            return 0;
        auto content = meta_.content(*node, ctx);
        if (!content) return 0;
        auto range = data_.stored_range(*content);
        if (!range) return 0;
        ranges.push_back(*range);
        return range->end - range->offset;
    });
    // A directory's files lie next to each other in the pack, but a walk meets them in listing
    // (name hash) order, so a batch holds every other file of a directory or so. In pack
    // order, ranges less than kWalkGap apart become one, the gap being files of the same
    // directory the walk will read next: a directory is fetched in a few large requests
    // instead of one request a file (what is fetched already is not fetched again).
    constexpr uint64_t kWalkGap = 64 << 10;
    std::sort(ranges.begin(), ranges.end(),
              [](const auto& a, const auto& b) { return a.offset < b.offset; });
    std::size_t kept = 0;
    for (const RemoteBytes::Range& r : ranges) {
        if (kept != 0 && r.offset <= ranges[kept - 1].end + kWalkGap)
            ranges[kept - 1].end = std::max(ranges[kept - 1].end, r.end);
        else
            ranges[kept++] = r;
    }
    ranges.resize(kept);
    if (!ranges.empty()) remote.prefetch(ranges);
} catch (const std::bad_alloc&) {
}

}  // namespace packfs::pack
