#include "pack/writer/base_index.hpp"

#include <fmt/format.h>

namespace packfs::pack {

namespace {

std::string_view base_name(std::string_view path) {
    const auto slash = path.rfind('/');
    return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

Result<BaseIndex> BaseIndex::open(const std::vector<std::string>& paths) {
    BaseIndex out;
    // Our number (1-based, as extents name packs) of the pack with this digest, added if new.
    auto number_of = [&](const Sha256Digest& digest, std::string_view name) -> uint32_t {
        for (std::size_t i = 0; i < out.specs_.size(); ++i)
            if (out.specs_[i].image_digest == digest) return static_cast<uint32_t>(i + 1);
        out.specs_.push_back(BaseSpec{digest, std::string(name)});
        return static_cast<uint32_t>(out.specs_.size());
    };
    PackOpenOptions options;
    options.bases = paths;  // a base's own bases may be among those given
    for (const std::string& path : paths) {
        auto reader = PackReader::open(path, options);
        if (!reader) return std::unexpected(reader.error());
        const PackReader& base = **reader;
        if (base.version() < 2)
            return fail(
                EINVAL, "build",
                fmt::format("{} (a base must be a pack of format 2: `packfs convert` it)", path));
        const std::string_view name = base_name(path);
        if (name.empty() || name.size() > 255)
            return fail(EINVAL, "build",
                        fmt::format("{} (a base's file name: 1 to 255 bytes)", path));
        Sha256Digest digest;
        std::memcpy(digest.data(), base.header().image_digest, digest.size());
        if (out.chunk_size_ == 0) out.chunk_size_ = base.header().chunk_size;
        // The base's own bases first, in its order, then the base: built over the last of a
        // chain, a pack numbers the packs before it as that one does, so its locators of
        // contents unchanged since are the same bytes as that pack's.
        std::vector<uint32_t> numbering{0};
        const Ctx ctx{"build", path};
        for (uint64_t k = 0; k < base.metadata().base_count(); ++k) {
            auto its = base.metadata().base(k, ctx);
            if (!its) return std::unexpected(its.error());
            numbering.push_back(number_of(its->image_digest, its->name));
        }
        numbering[0] = number_of(digest, name);
        if (out.first_ == 0) out.first_ = numbering[0];
        if (auto ok = out.index(base, numbering, path); !ok) return std::unexpected(ok.error());
    }
    return out;
}

Result<void> BaseIndex::index(const PackReader& base, const std::vector<uint32_t>& numbering,
                              std::string_view path) {
    const MetaReader& meta = base.metadata();
    const Ctx ctx{"build", path};
    // Where a kBaseLocator may point: a base number and a stream offset it has room for.
    auto location = [&](uint32_t pack, uint64_t offset, uint64_t index) {
        std::optional<BaseLocation> out;
        if (pack <= kMaxLocatorBase && offset <= kBaseOffsetMask && index <= UINT32_MAX)
            out = BaseLocation{pack, offset, static_cast<uint32_t>(index)};
        return out;
    };
    for (uint64_t ino = 1; ino <= base.header().inode_count; ++ino) {
        auto node = meta.inode(ino, ctx);
        if (!node) return std::unexpected(node.error());
        if (node->type != FileType::regular || node->rec.size <= meta.inline_max()) continue;
        auto sha = base.content_digest(*node, ctx);
        if (!sha) return std::unexpected(sha.error());
        if (whole_.contains(*sha)) continue;
        auto content = meta.content(*node, ctx);
        if (!content) return std::unexpected(content.error());
        BaseContent out;
        // One run of one pack's stream (the base's own, or a base of it the base locates the
        // content in); its digest is that pack's record `index`.
        auto one_run = [&](uint32_t pack, uint64_t offset) {
            Extent e{.at = 0, .offset = offset, .length = content->size, .pack = pack, .count = 1,
                     .sha256 = {}};
            std::memcpy(e.sha256, sha->data(), 32);
            out.extents.push_back(e);
            out.location = location(pack, offset, meta.content_index(*node));
        };
        if (content->where == ContentRef::Where::stream) {
            one_run(numbering[0], content->offset);
        } else if (content->where == ContentRef::Where::base) {
            if (content->pack >= numbering.size())
                return fail(EIO, "build", fmt::format("{} (no base {})", path, content->pack));
            one_run(numbering[content->pack], content->offset);
        } else if (content->where == ContentRef::Where::extents) {
            for (uint64_t i = 0; i < content->extent_count; ++i) {
                auto e = meta.extent(content->offset + i, ctx);
                if (!e) return std::unexpected(e.error());
                const bool own = e->pack == 0;
                e->pack = numbering.at(e->pack);
                e->count = i == 0 ? static_cast<uint32_t>(content->extent_count) : 0;
                Sha256Digest name;
                std::memcpy(name.data(), e->sha256, 32);
                if (content->extent_count == 1) name = *sha;  // an only extent's name
                chunks_.try_emplace(name, *e);
                out.extents.push_back(*e);
                // A single extent of the base's own stream: the base's digest record names it.
                if (content->extent_count == 1 && own)
                    out.location = location(e->pack, e->offset, meta.content_index(*node));
            }
        }
        if (!out.extents.empty()) whole_.emplace(*sha, std::move(out));
    }
    return {};
}

const BaseContent* BaseIndex::whole(const Sha256Digest& sha256) const noexcept {
    auto it = whole_.find(sha256);
    return it == whole_.end() ? nullptr : &it->second;
}

const Extent* BaseIndex::chunk(const Sha256Digest& sha256, uint64_t length) const noexcept {
    auto it = chunks_.find(sha256);
    return it == chunks_.end() || it->second.length != length ? nullptr : &it->second;
}

}  // namespace packfs::pack
