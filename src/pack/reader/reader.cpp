// PackReader: opening (the header validated, the image loaded, then its metadata and data
// parts), and what needs both parts: info, a file's Stat, listings and opens told to the
// observer.
#include "pack/reader/reader.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

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
    return open_image(std::move(image), host_path, options, hooks, /*with_bases=*/true);
}

Result<std::unique_ptr<PackReader>> PackReader::open_image(std::unique_ptr<PackImage> image,
                                                           std::string_view host_path,
                                                           const PackOpenOptions& options,
                                                           const OpenHooks& hooks,
                                                           bool with_bases) {
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
    // A pack from a source: its opener attaches the bases (attach_bases).
    if (with_bases && !options.without_bases && r->meta_.base_count() > 0 &&
        r->image_->source() == nullptr) {
        if (auto ok = r->open_bases(host_path, options); !ok) return std::unexpected(ok.error());
    }
    return r;
}

Result<void> PackReader::attach_bases(std::vector<std::unique_ptr<PackReader>> bases,
                                      const Ctx& ctx) {
    if (bases.size() != meta_.base_count())
        return fail(EINVAL, ctx.op,
                    fmt::format("{} ({} bases given, the pack names {})", ctx.path, bases.size(),
                                meta_.base_count()));
    std::vector<const DataReader*> readers;
    for (std::size_t k = 0; k < bases.size(); ++k) {
        auto base = meta_.base(k, ctx);
        if (!base) return std::unexpected(base.error());
        if (std::memcmp(bases[k]->header().image_digest, base->image_digest.data(), 32) != 0)
            return fail(EINVAL, ctx.op,
                        fmt::format("{} (base {} ('{}') is another pack than sha256:{})", ctx.path,
                                    k, base->name, to_hex(base->image_digest)));
        readers.push_back(&bases[k]->data());
    }
    bases_ = std::move(bases);
    data_.set_bases(std::move(readers));
    return {};
}

Result<void> PackReader::open_bases(std::string_view host_path, const PackOpenOptions& options) {
    const Ctx ctx{"open_pack", host_path};
    const std::string dir = [&] {
        const auto slash = host_path.rfind('/');
        return slash == std::string_view::npos ? std::string("./")
                                               : std::string(host_path.substr(0, slash + 1));
    }();
    // Each given base opened once, whichever records it matches.
    std::vector<std::unique_ptr<PackReader>> given(options.bases.size());
    std::vector<bool> tried(options.bases.size(), false);
    PackOpenOptions base_options = options;
    base_options.bases.clear();
    // The decompressed-block cache's bound is the pack's whole: its bases share it.
    base_options.block_cache_bytes = options.block_cache_bytes / meta_.base_count();
    auto open_one = [&](const std::string& path) -> Result<std::unique_ptr<PackReader>> {
        auto image = PackImage::open(path);
        if (!image) return std::unexpected(image.error());
        return open_image(std::move(*image), path, base_options, OpenHooks{}, false);
    };
    auto digest_of = [](const PackReader& p) {
        return to_hex(std::span<const uint8_t>(p.header().image_digest));
    };
    std::vector<const DataReader*> readers;
    for (uint64_t k = 0; k < meta_.base_count(); ++k) {
        auto base = meta_.base(k, ctx);
        if (!base) return std::unexpected(base.error());
        const std::string want = to_hex(base->image_digest);
        std::unique_ptr<PackReader> found;
        for (std::size_t g = 0; g < given.size() && !found; ++g) {
            if (!tried[g]) {
                tried[g] = true;
                auto opened = open_one(options.bases[g]);
                if (!opened) return std::unexpected(opened.error());
                given[g] = std::move(*opened);
            }
            if (given[g] && digest_of(*given[g]) == want) found = std::move(given[g]);
        }
        std::string beside_why;
        if (!found && base->name.find('/') == std::string_view::npos) {
            const std::string beside = dir + std::string(base->name);
            struct stat st {};
            // A regular file only: a hostile name may be a device or a FIFO.
            if (::stat(beside.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
                auto opened = open_one(beside);
                if (!opened) return std::unexpected(opened.error());
                if (digest_of(**opened) == want)
                    found = std::move(*opened);
                else
                    beside_why = fmt::format("; {} is another pack (sha256:{})", beside,
                                             digest_of(**opened));
            }
        }
        if (!found)
            return fail(ENOENT, "open_pack",
                        fmt::format("{} (its base sha256:{} ('{}') is not found{}: give it with "
                                    "--base)",
                                    host_path, want, base->name, beside_why));
        readers.push_back(&found->data());
        bases_.push_back(std::move(found));
    }
    data_.set_bases(std::move(readers));
    return {};
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
    i.chunk_size = h.chunk_size;
    i.extents = meta_.extent_count();
    for (uint64_t k = 0; k < meta_.base_count(); ++k) {
        if (auto base = meta_.base(k, Ctx{"info", {}}))
            i.bases.emplace_back(to_hex(base->image_digest), std::string(base->name));
    }
    return i;
}

Result<Sha256Digest> PackReader::content_digest(const InodeView& file, const Ctx& ctx) const {
    auto content = meta_.content(file, ctx);
    if (!content) return std::unexpected(content.error());
    if (content->where != ContentRef::Where::base)
        return meta_.content_digest(meta_.content_index(file), ctx);
    const PackReader* holder = base(content->pack);
    if (holder == nullptr)
        return fail(EIO, ctx.op, fmt::format("{} (a content in base {}, which is not open)",
                                             ctx.path, content->pack));
    return holder->meta_.content_digest(meta_.content_index(file), ctx);
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
