// A pack served by record number: node id = record number (the root is record 1, as it is
// FUSE's root id), so a kernel reference needs no table at all and every call is one checked
// record read. st_ino is the pack's inode number (the stored one, when the pack keeps them).
// Nothing can change, so the kernel may cache everything for as long as it likes.
#include <cerrno>
#include <deque>
#include <mutex>
#include <unordered_map>

#include "node_fs.hpp"
#include "pack/format.hpp"
#include "pack/pack_access.hpp"
#include "pack/reader.hpp"

namespace packfs::fuse {

namespace {

using pack::Ctx;
using pack::InodeView;
using pack::PackReader;

constexpr double kForever = 86400.0 * 365;

class PackFile final : public OpenFile {
public:
    PackFile(const PackReader& reader, pack::ContentRef content)
        : reader_(reader), content_(content) {}

    Result<std::span<const std::byte>> read(uint64_t offset, std::size_t size,
                                            std::string& scratch) override {
        return reader_.view(content_, offset, size, scratch, Ctx{"read", {}});
    }
    std::optional<FileBytes> file_bytes(uint64_t offset, std::size_t size) override {
        auto extent = reader_.file_extent(content_, offset, size);
        if (!extent) return std::nullopt;
        return FileBytes{reader_.image().fd(), extent->offset, extent->length};
    }
    Result<std::size_t> write(std::span<const std::byte>, uint64_t) override {
        return fail(EBADF, "write");
    }
    Result<void> truncate(uint64_t) override { return fail(EROFS, "truncate"); }
    Result<void> fsync(bool) override { return {}; }
    Result<Stat> fstat() override { return fail(ENOTSUP, "fstat"); }  // the driver uses getattr

private:
    const PackReader& reader_;
    pack::ContentRef content_;
};

// The listings lately served. With zero-message opendir the kernel holds no handle between
// the readdir calls of one directory, so each call asks for the listing again; a big
// directory must not be listed once per call. A listing is needed only until the kernel has
// read it all (it caches it from then on), so the cache is small: bounded by entries (about
// 3 MiB), oldest out first, the newest always kept however big.
class ListingCache {
public:
    NodeFs::Listing find(uint64_t node) {
        std::lock_guard lock(mutex_);
        auto it = listings_.find(node);
        return it == listings_.end() ? nullptr : it->second;
    }
    void add(uint64_t node, NodeFs::Listing listing) {
        std::lock_guard lock(mutex_);
        if (!listings_.emplace(node, listing).second) return;
        order_.push_back(node);
        entries_ += listing->size();
        while (entries_ > kMaxEntries && order_.size() > 1) {
            auto oldest = listings_.find(order_.front());
            entries_ -= oldest->second->size();
            listings_.erase(oldest);
            order_.pop_front();
        }
    }

private:
    static constexpr std::size_t kMaxEntries = 1 << 14;
    std::mutex mutex_;
    std::unordered_map<uint64_t, NodeFs::Listing> listings_;
    std::deque<uint64_t> order_;
    std::size_t entries_ = 0;
};

class PackNodes final : public NodeFs {
public:
    PackNodes(std::shared_ptr<Backend> backend, std::shared_ptr<const PackReader> reader)
        : backend_(std::move(backend)), reader_(std::move(reader)) {
        const auto& xattrs = pack::section(reader_->header(),
                                           static_cast<std::size_t>(pack::Section::xattrs));
        has_xattrs_ = xattrs.length != 0;
    }

    bool read_only() const noexcept override { return true; }
    CachePolicy cache_policy() const noexcept override {
        return {.entry_seconds = kForever,
                .attr_seconds = kForever,
                .cache_negative = true,
                .keep_page_cache = true,
                .cache_directories = true,
                .stateless_open = true};
    }
    bool has_xattrs() const noexcept override { return has_xattrs_; }

    Result<Entry> lookup(uint64_t parent, std::string_view name) override {
        const Ctx ctx{"lookup", name};
        auto dir = reader_->inode(parent, ctx);
        if (!dir) return std::unexpected(dir.error());
        auto found = reader_->lookup(*dir, name, ctx);
        if (!found) return std::unexpected(found.error());
        if (!*found) return fail(ENOENT, "lookup", name);
        return Entry{(*found)->ino, reader_->stat_of(**found)};
    }
    void remember(uint64_t, std::string_view, const Entry&) override {}
    void forget(uint64_t, uint64_t) override {}

    Result<Stat> getattr(uint64_t node, OpenFile*) override {
        auto view = reader_->inode(node, Ctx{"getattr", {}});
        if (!view) return std::unexpected(view.error());
        return reader_->stat_of(*view);
    }
    Result<Stat> setattr(uint64_t, const AttrChange&, OpenFile*) override {
        return fail(EROFS, "setattr");
    }
    Result<std::string> readlink(uint64_t node) override {
        const Ctx ctx{"readlink", {}};
        auto view = reader_->inode(node, ctx);
        if (!view) return std::unexpected(view.error());
        if (view->type != FileType::symlink) return fail(EINVAL, "readlink");
        auto target = reader_->symlink_target(*view, ctx);
        if (!target) return std::unexpected(target.error());
        return std::string(*target);
    }
    Result<Listing> list(uint64_t node) override {
        if (auto cached = listings_.find(node)) return cached;
        const Ctx ctx{"readdir", {}};
        auto dir = reader_->inode(node, ctx);
        if (!dir) return std::unexpected(dir.error());
        auto nodes = reader_->list_nodes(*dir, ctx);
        if (!nodes) return std::unexpected(nodes.error());
        std::vector<ListedEntry> out;
        out.reserve(nodes->size());
        for (auto& [name, view] : *nodes)
            out.push_back({std::move(name), view.ino, reader_->stat_of(view)});
        auto listing = std::make_shared<const std::vector<ListedEntry>>(std::move(out));
        listings_.add(node, listing);
        return listing;
    }
    Result<Entry> entry(uint64_t, const ListedEntry& listed) override {
        return Entry{listed.node, listed.stat};
    }

    Result<std::unique_ptr<OpenFile>> open(uint64_t node, int flags) override {
        if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC)) return fail(EROFS, "open");
        const Ctx ctx{"open", {}};
        auto view = reader_->inode(node, ctx);
        if (!view) return std::unexpected(view.error());
        if (view->type == FileType::directory) return fail(EISDIR, "open");
        if (view->type != FileType::regular) return fail(ENOTSUP, "open");
        auto content = reader_->content(*view, ctx);
        if (!content) return std::unexpected(content.error());
        return std::make_unique<PackFile>(*reader_, *content);
    }
    Result<std::pair<Entry, std::unique_ptr<OpenFile>>> create(uint64_t, std::string_view,
                                                               int, uint32_t) override {
        return fail(EROFS, "create");
    }
    void release(uint64_t, OpenFile&) override {}

    Result<Entry> mkdir(uint64_t, std::string_view, uint32_t) override {
        return fail(EROFS, "mkdir");
    }
    Result<Entry> mknod(uint64_t, std::string_view, FileType, uint32_t, uint64_t) override {
        return fail(EROFS, "mknod");
    }
    Result<Entry> symlink(uint64_t, std::string_view, std::string_view) override {
        return fail(EROFS, "symlink");
    }
    Result<Entry> link(uint64_t, uint64_t, std::string_view) override {
        return fail(EROFS, "link");
    }
    Result<void> unlink(uint64_t, std::string_view) override { return fail(EROFS, "unlink"); }
    Result<void> rmdir(uint64_t, std::string_view) override { return fail(EROFS, "rmdir"); }
    Result<void> rename(uint64_t, std::string_view, uint64_t, std::string_view,
                        RenameFlags) override {
        return fail(EROFS, "rename");
    }

    Result<std::string> getxattr(uint64_t node, std::string_view name) override {
        const Ctx ctx{"getxattr", name};
        auto view = reader_->inode(node, ctx);
        if (!view) return std::unexpected(view.error());
        std::string value;
        auto found = reader_->find_xattr(*view, name, value, ctx);
        if (!found) return std::unexpected(found.error());
        if (!*found) return fail(ENODATA, "getxattr", name);
        return value;
    }
    Result<std::vector<std::string>> listxattr(uint64_t node) override {
        const Ctx ctx{"listxattr", {}};
        auto view = reader_->inode(node, ctx);
        if (!view) return std::unexpected(view.error());
        return reader_->xattr_names(*view, ctx);
    }
    Result<void> setxattr(uint64_t, std::string_view, std::string_view, XattrMode) override {
        return fail(EROFS, "setxattr");
    }
    Result<void> removexattr(uint64_t, std::string_view) override {
        return fail(EROFS, "removexattr");
    }

    Result<StatFs> statfs() override { return backend_->statfs("/"); }
    Result<void> sync() override { return {}; }

private:
    std::shared_ptr<Backend> backend_;  // keeps the mapping alive
    std::shared_ptr<const PackReader> reader_;
    bool has_xattrs_ = true;
    ListingCache listings_;
};

}  // namespace

Result<std::unique_ptr<NodeFs>> pack_nodes(std::shared_ptr<Backend> backend) {
    auto reader = pack::reader_of(*backend);
    if (!reader) return fail(EINVAL, "mount", "not a pack");
    static_assert(pack::kRootIno == kRootNode, "the pack's root record is FUSE's root node");
    return std::make_unique<PackNodes>(std::move(backend), std::move(reader));
}

}  // namespace packfs::fuse
