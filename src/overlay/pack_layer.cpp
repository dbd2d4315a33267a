#include "overlay/pack_layer.hpp"

#include <atomic>

namespace packfs::overlay {
namespace {

using pack::ContentRef;
using pack::Ctx;
using pack::InodeView;
using pack::PackReader;

// EIO once the pack file changed under its mapping (image.hpp): what was read may be zeros.
std::unexpected<Error> damage(const Ctx& ctx) { return fail(EIO, ctx.op, ctx.path); }

mem::LowerNode node_of(const InodeView& view) { return {view.number, view.ino, view.type}; }

class PackContent final : public mem::LowerContent {
public:
    PackContent(std::shared_ptr<const PackReader> reader, ContentRef content)
        : reader_(std::move(reader)), content_(content) {}
    Result<std::size_t> read(uint64_t offset, std::span<std::byte> out) const override {
        const Ctx ctx{"read", {}};
        auto n = reader_->read(content_, offset, out, ctx);
        if (reader_->image().damaged()) [[unlikely]]
            return damage(ctx);
        return n;
    }

private:
    std::shared_ptr<const PackReader> reader_;  // keeps the mapping alive
    ContentRef content_;
};

// The record a thread's last lookup in a pack layer returned (see PackLayer::view_of).
struct LastView {
    uint64_t layer = 0;  // the layer's serial (an address could be reused by another)
    InodeView view{};
};

class PackLayer final : public mem::LowerLayer {
public:
    explicit PackLayer(std::shared_ptr<const PackReader> reader) : reader_(std::move(reader)) {
        const Ctx ctx{"open", {}};
        auto root = reader_->inode(pack::kRootIno, ctx);
        root_ = root ? node_of(*root) : mem::LowerNode{1, pack::kRootIno,
                                                      FileType::directory};
        auto max = reader_->max_inode_number(ctx);
        limit_ = (max ? *max : reader_->header().inode_count) + 1;
    }

    mem::LowerNode root() const override { return root_; }

    Result<std::optional<mem::LowerNode>> lookup(const mem::LowerNode& dir,
                                                 std::string_view name) const override {
        const Ctx ctx{"lookup", {}};
        auto view = view_of(dir, ctx);
        if (!view) return std::unexpected(view.error());
        auto found = reader_->lookup(*view, name, ctx);
        if (reader_->image().damaged()) [[unlikely]]
            return damage(ctx);
        if (!found) return std::unexpected(found.error());
        if (!*found) return std::nullopt;
        return remember(**found);
    }

    Result<std::optional<mem::LowerNode>> by_ino(uint64_t ino) const override {
        const Ctx ctx{"lookup", {}};
        auto found = reader_->by_inode_number(ino, ctx);
        if (!found) return std::unexpected(found.error());
        if (!*found) return std::nullopt;
        return remember(**found);
    }

    Result<std::vector<std::pair<std::string, mem::LowerNode>>> list(
        const mem::LowerNode& dir) const override {
        const Ctx ctx{"readdir", {}};
        auto view = view_of(dir, ctx);
        if (!view) return std::unexpected(view.error());
        auto nodes = reader_->list_nodes(*view, ctx);
        if (!nodes) return std::unexpected(nodes.error());
        std::vector<std::pair<std::string, mem::LowerNode>> out;
        out.reserve(nodes->size());
        for (auto& [name, node] : *nodes) out.emplace_back(std::move(name), node_of(node));
        if (reader_->image().damaged()) [[unlikely]]
            return damage(ctx);
        return out;
    }

    Result<std::vector<DirEntry>> readdir(const mem::LowerNode& dir) const override {
        const Ctx ctx{"readdir", {}};
        auto view = view_of(dir, ctx);
        if (!view) return std::unexpected(view.error());
        auto entries = reader_->list(*view, ctx);
        if (reader_->image().damaged()) [[unlikely]]
            return damage(ctx);
        return entries;
    }

    Result<Stat> stat(const mem::LowerNode& node) const override {
        const Ctx ctx{"stat", {}};
        auto view = view_of(node, ctx);
        if (!view) return std::unexpected(view.error());
        if (reader_->image().damaged()) [[unlikely]]
            return damage(ctx);
        return reader_->stat_of(*view);
    }

    Result<std::string> readlink(const mem::LowerNode& link) const override {
        const Ctx ctx{"readlink", {}};
        auto view = view_of(link, ctx);
        if (!view) return std::unexpected(view.error());
        auto target = reader_->symlink_target(*view, ctx);
        if (!target) return std::unexpected(target.error());
        if (reader_->image().damaged()) [[unlikely]]
            return damage(ctx);
        return std::string(*target);
    }

    Result<std::shared_ptr<const mem::LowerContent>> content(
        const mem::LowerNode& file) const override {
        const Ctx ctx{"open", {}};
        auto view = view_of(file, ctx);
        if (!view) return std::unexpected(view.error());
        auto where = reader_->content(*view, ctx);
        if (!where) return std::unexpected(where.error());
        return std::make_shared<PackContent>(reader_, *where);
    }

    Result<std::optional<std::string>> getxattr(const mem::LowerNode& node,
                                                std::string_view name) const override {
        const Ctx ctx{"getxattr", {}};
        if (!has_xattrs_) return std::nullopt;
        auto view = view_of(node, ctx);
        if (!view) return std::unexpected(view.error());
        std::string value;
        auto found = reader_->find_xattr(*view, name, value, ctx);
        if (!found) return std::unexpected(found.error());
        if (!*found) return std::nullopt;
        return value;
    }

    Result<mem::Xattrs> xattrs(const mem::LowerNode& node) const override {
        const Ctx ctx{"listxattr", {}};
        mem::Xattrs out;
        if (!has_xattrs_) return out;
        auto view = view_of(node, ctx);
        if (!view) return std::unexpected(view.error());
        auto names = reader_->xattr_names(*view, ctx);
        if (!names) return std::unexpected(names.error());
        for (std::string& name : *names) {
            std::string value;
            auto found = reader_->find_xattr(*view, name, value, ctx);
            if (!found) return std::unexpected(found.error());
            out.emplace_back(std::move(name), std::move(value));
        }
        return out;
    }

    uint64_t ino_limit() const override { return limit_; }

    StatFs statfs() const override {
        StatFs fs;
        fs.block_size = 4096;
        fs.blocks = (reader_->header().file_size + fs.block_size - 1) / fs.block_size;
        fs.blocks_free = 0;
        fs.files = reader_->header().inode_count;
        fs.files_free = 0;
        return fs;
    }

private:
    // The record of `node`: the engine walks by asking for the node a lookup just returned
    // (as the next directory, or to stat it), so the last record this thread was handed is
    // kept and handed again without a second decode.
    Result<InodeView> view_of(const mem::LowerNode& node, const Ctx& ctx) const {
        if (last_.layer == serial_ && last_.view.ino == node.id) return last_.view;
        return reader_->inode(node.id, ctx);
    }
    mem::LowerNode remember(const InodeView& view) const {
        last_ = {serial_, view};
        return node_of(view);
    }
    static inline thread_local LastView last_;
    static inline std::atomic<uint64_t> next_serial_{1};
    const uint64_t serial_ = next_serial_.fetch_add(1, std::memory_order_relaxed);

    std::shared_ptr<const PackReader> reader_;
    mem::LowerNode root_;
    uint64_t limit_ = 2;
    bool has_xattrs_ = (reader_->header().compat_features & pack::kCompatXattrs) != 0;
};

}  // namespace

mem::LowerPtr make_pack_layer(std::shared_ptr<const PackReader> reader) {
    return std::make_shared<PackLayer>(std::move(reader));
}

}  // namespace packfs::overlay
