// The read-only Backend over one pack (PackBackend, pack.hpp). Nodes are the pack's record
// numbers (the root is record 1, kRootNode); every query answers from the records the
// PackReader checked. Paths are walked by the generic walker over the records directly
// (core/path_api.hpp, static dispatch: no virtual call per component). Every mutation is EROFS,
// with the errno order of a read-only mount (what exists answers first). The backend holds no
// mutable state of its own, so it is its own snapshot, and its nodes cost nothing to hold.
//
// Every operation checks the image's damage counter after its work (image.hpp): once the file
// shrank under the mapping, answers are EIO instead of whatever zeros were read.
#include <fcntl.h>

#include <memory>

#include "core/checks.hpp"
#include "core/handle_pool.hpp"
#include "core/path_api.hpp"
#include "pack/reader/path_cache.hpp"
#include "pack/reader/reader.hpp"
#include "packfs/pack.hpp"
#include "packfs/path.hpp"

namespace packfs::pack {
namespace {

// The result of an operation, or EIO when the pack file changed underneath it meanwhile.
template <class T>
Result<T> unless_damaged(const PackReader& reader, Result<T>&& result, std::string_view op) {
    if (reader.image().damaged()) [[unlikely]]
        return fail(EIO, op);
    return std::move(result);
}

// A read-only handle: the inode it opened and where its bytes are, resolved once.
class PackFile final : public File {
public:
    PACKFS_POOLED(PackFile)  // an open + close is short: the block comes from a per-thread pool

    PackFile(std::shared_ptr<const PackReader> reader, const InodeView& node, ContentRef content)
        : reader_(std::move(reader)), node_(node), content_(content) {}

    Result<std::size_t> pread(std::span<std::byte> buf, uint64_t offset) override {
        const Ctx ctx{"read", {}};
        if (node_.type == FileType::directory) return fail(EISDIR, "read");
        return unless_damaged(*reader_, reader_->read(content_, offset, buf, ctx), ctx.op);
    }
    Result<std::size_t> pwrite(std::span<const std::byte>, uint64_t) override {
        return fail(EBADF, "write");
    }
    Result<void> truncate(uint64_t) override { return fail(EINVAL, "ftruncate"); }
    Result<void> fsync(bool) override { return {}; }
    Result<Stat> fstat() override { return reader_->stat_of(node_); }
    Result<uint64_t> seek_data(uint64_t offset, bool data) override {
        const Ctx ctx{"lseek", {}};
        if (node_.type == FileType::directory) return fail(EISDIR, ctx.op);
        return unless_damaged(*reader_, reader_->seek(content_, offset, data, ctx), ctx.op);
    }
    Result<std::span<const std::byte>> read_view(uint64_t offset, std::size_t length,
                                                 std::string& scratch) override {
        const Ctx ctx{"read", {}};
        if (node_.type == FileType::directory) return fail(EISDIR, ctx.op);
        return unless_damaged(*reader_, reader_->view(content_, offset, length, scratch, ctx),
                              ctx.op);
    }
    std::optional<HostBytes> host_bytes(uint64_t offset, std::size_t length) override {
        auto extent = reader_->file_extent(content_, offset, length);
        if (!extent) return std::nullopt;
        return HostBytes{reader_->image().fd(), extent->offset, extent->length};
    }

private:
    std::shared_ptr<const PackReader> reader_;  // keeps the mapping alive
    InodeView node_;
    ContentRef content_;
};

// The walker's and the path layer's view of a pack: nodes are checked inode records.
struct PackOps {
    using NodeT = InodeView;
    const std::shared_ptr<const PackReader>& reader;
    Ctx ctx;
    uint64_t cache_owner;  // the pack's id in path_cache

    Result<InodeView> root() const { return reader->root(ctx); }
    Result<std::optional<walk::Step<InodeView>>> lookup(const InodeView& dir,
                                                        std::string_view name) const {
        auto found = reader->lookup(dir, name, ctx);
        if (!found) return std::unexpected(found.error());
        if (!*found) return std::nullopt;
        return walk::Step<InodeView>{**found, (*found)->type};
    }
    // The walker's fast try: an entry that is there, from checked bytes (a miss or anything
    // unsure goes to the rules).
    bool fast_lookup(const InodeView& dir, std::string_view name,
                     walk::Step<InodeView>& out) const noexcept {
        if (reader->probe(dir, name, out.node) != PackReader::Probe::found) return false;
        out.type = out.node.type;
        return true;
    }
    // A pack never changes: the directories plain prefixes name are remembered (path_cache.hpp).
    bool cached_dir(std::string_view prefix, InodeView& out) const noexcept {
        return path_cache::find(cache_owner, prefix, out);
    }
    void remember_dir(std::string_view prefix, const InodeView& dir) const {
        path_cache::remember(cache_owner, prefix, dir);
    }
    Result<std::string_view> readlink(const InodeView& link) const {
        return reader->symlink_target(link, ctx);
    }
    void release(const InodeView&) const noexcept {}
    bool read_only() const noexcept { return true; }
    bool same(const InodeView& a, const InodeView& b) const noexcept { return a.ino == b.ino; }
    bool has_entries(const InodeView& dir) const noexcept { return dir.rec.size != 0; }

    Result<Stat> getattr(const InodeView& node) const { return reader->stat_of(node); }
    Result<std::vector<DirEntry>> list(const InodeView& dir) const { return reader->list(dir, ctx); }
    Result<FileHandle> open(const InodeView& node, int flags) const;
    Result<std::string> getxattr(const InodeView& node, std::string_view name) const {
        std::string value;
        auto found = reader->find_xattr(node, name, value, ctx);
        if (!found) return std::unexpected(found.error());
        if (!*found) return fail(ENODATA, "getxattr");
        return value;
    }
    Result<std::vector<std::string>> listxattr(const InodeView& node) const {
        return reader->xattr_names(node, ctx);
    }
    Result<StatFs> statfs(const InodeView&) const {
        StatFs fs;
        fs.block_size = 4096;
        fs.blocks = reader->header().file_size / 4096;
        fs.blocks_free = 0;
        fs.files = reader->header().inode_count;
        fs.files_free = 0;
        fs.name_max = kMaxNameLength;
        return fs;
    }
    // A read-only tree has none of the mutations the path layer would call.
    Result<FileHandle> create(const InodeView&, std::string_view, int, uint32_t) const {
        return fail(EROFS, "open");
    }
    template <class... A>
    Result<void> refuse(A&&...) const {
        return fail(EROFS, ctx.op);
    }
    Result<void> mkdir(const InodeView&, std::string_view, uint32_t) const { return refuse(); }
    Result<void> mknod(const InodeView&, std::string_view, FileType, uint32_t, uint64_t) const {
        return refuse();
    }
    Result<void> symlink(const InodeView&, std::string_view, std::string_view) const {
        return refuse();
    }
    Result<void> link(const InodeView&, const InodeView&, std::string_view) const {
        return refuse();
    }
    Result<void> unlink(const InodeView&, std::string_view) const { return refuse(); }
    Result<void> rmdir(const InodeView&, std::string_view) const { return refuse(); }
    Result<void> rename(const InodeView&, std::string_view, const InodeView&, std::string_view,
                        RenameFlags) const {
        return refuse();
    }
    Result<void> setattr(const InodeView&, const SetAttr&) const { return refuse(); }
    Result<void> setxattr(const InodeView&, std::string_view, std::string_view, XattrMode) const {
        return refuse();
    }
    Result<void> removexattr(const InodeView&, std::string_view) const { return refuse(); }
};

Result<FileHandle> PackOps::open(const InodeView& node, int flags) const {
    if ((flags & O_ACCMODE) == O_ACCMODE) return fail(EINVAL, "open");
    if (auto ok = check_open_target(node.type, flags); !ok) return std::unexpected(ok.error());
    if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC)) return fail(EROFS, "open");
    ContentRef content;
    if (node.type == FileType::regular) {
        auto c = reader->content(node, ctx);
        if (!c) return std::unexpected(c.error());
        content = *c;
        reader->note_open(node);
    }
    return std::make_unique<PackFile>(reader, node, content);
}

class PackBackendImpl final : public PackBackend,
                              public std::enable_shared_from_this<PackBackendImpl> {
public:
    explicit PackBackendImpl(std::unique_ptr<PackReader> reader)
        : reader_(std::move(reader)), info_(reader_->info()) {
        // Inode numbers are unique in a pack (by position, or the kept ones that verify proves
        // unique); the largest is one record away (O(1), the open stays O(1)).
        auto max = reader_->max_inode_number(Ctx{"open", {}});
        if (max) numbering_ = {true, *max + 1};
    }

private:
    PackOps ops(const Ctx& ctx) const { return PackOps{reader_, ctx, cache_owner_}; }

    // The record a node names: ESTALE for a number no record has (a node is never 0 and
    // never past the last record).
    Result<InodeView> record(Node node, const Ctx& ctx) const {
        if (node.id == 0 || node.id > reader_->header().inode_count) return fail(ESTALE, ctx.op);
        return reader_->inode(node.id, ctx);
    }

    template <class Body>
    auto on_paths(std::string_view op, std::string_view path, Body&& body) {
        PackOps o = ops(Ctx{op, path});
        paths::PathApi<PackOps> api(o);
        return unless_damaged(*reader_, body(api), op);
    }

public:

    // --- nodes ---------------------------------------------------------------------------

    Result<Entry> lookup(Node dir, std::string_view name) override {
        if (auto ok = check_name(name, "lookup"); !ok) return std::unexpected(ok.error());
        const Ctx ctx{"lookup", name};
        auto parent = record(dir, ctx);
        if (!parent) return std::unexpected(parent.error());
        if (parent->type != FileType::directory) return fail(ENOTDIR, ctx.op, name);
        auto found = reader_->lookup(*parent, name, ctx);
        Result<Entry> out = [&]() -> Result<Entry> {
            if (!found) return std::unexpected(found.error());
            if (!*found) return fail(ENOENT, ctx.op, name);
            return Entry{Node{(*found)->ino}, reader_->stat_of(**found)};
        }();
        return unless_damaged(*reader_, std::move(out), ctx.op);
    }

    Result<Entry> lookup_ino(uint64_t ino) override {
        const Ctx ctx{"lookup by inode number", {}};
        auto found = reader_->by_inode_number(ino, ctx);
        Result<Entry> out = [&]() -> Result<Entry> {
            if (!found) return std::unexpected(found.error());
            if (!*found) return fail(ESTALE, ctx.op);
            return Entry{Node{(*found)->ino}, reader_->stat_of(**found)};
        }();
        return unless_damaged(*reader_, std::move(out), ctx.op);
    }

    Result<Stat> getattr(Node node) override {
        const Ctx ctx{"getattr", {}};
        auto r = record(node, ctx);
        if (!r) return std::unexpected(r.error());
        return unless_damaged<Stat>(*reader_, reader_->stat_of(*r), ctx.op);
    }

    Result<std::vector<DirEntry>> list(Node dir) override {
        const Ctx ctx{"readdir", {}};
        auto r = record(dir, ctx);
        if (!r) return std::unexpected(r.error());
        if (r->type != FileType::directory) return fail(ENOTDIR, ctx.op);
        return unless_damaged(*reader_, reader_->list(*r, ctx), ctx.op);
    }

    Result<std::string> readlink(Node node) override {
        const Ctx ctx{"readlink", {}};
        auto r = record(node, ctx);
        if (!r) return std::unexpected(r.error());
        if (r->type != FileType::symlink) return fail(EINVAL, ctx.op);
        auto target = reader_->symlink_target(*r, ctx);
        if (!target) return std::unexpected(target.error());
        return unless_damaged<std::string>(*reader_, std::string(*target), ctx.op);
    }

    Result<FileHandle> open(Node node, int flags) override {
        const Ctx ctx{"open", {}};
        auto r = record(node, ctx);
        if (!r) return std::unexpected(r.error());
        return unless_damaged(*reader_, ops(ctx).open(*r, flags), ctx.op);
    }

    Result<StatFs> statfs(Node) override { return ops({"statfs", {}}).statfs({}); }
    InodeNumbering inode_numbering() const override { return numbering_; }

    Result<std::string> getxattr(Node node, std::string_view name) override {
        const Ctx ctx{"getxattr", {}};
        if (auto ok = check_xattr_name(name, ctx.op); !ok) return std::unexpected(ok.error());
        auto r = record(node, ctx);
        if (!r) return std::unexpected(r.error());
        return unless_damaged(*reader_, ops(ctx).getxattr(*r, name), ctx.op);
    }

    Result<std::vector<std::string>> listxattr(Node node) override {
        const Ctx ctx{"listxattr", {}};
        auto r = record(node, ctx);
        if (!r) return std::unexpected(r.error());
        return unless_damaged(*reader_, reader_->xattr_names(*r, ctx), ctx.op);
    }

    // --- paths: the generic walk over the records ------------------------------------------

    Result<Stat> stat(std::string_view path) override {
        return on_paths("stat", path, [&](auto& api) { return api.stat(path, true, "stat"); });
    }
    Result<Stat> lstat(std::string_view path) override {
        return on_paths("lstat", path, [&](auto& api) { return api.stat(path, false, "lstat"); });
    }
    Result<std::vector<DirEntry>> readdir(std::string_view path) override {
        return on_paths("readdir", path, [&](auto& api) { return api.readdir(path); });
    }
    Result<std::string> readlink(std::string_view path) override {
        return on_paths("readlink", path, [&](auto& api) { return api.readlink(path); });
    }
    Result<StatFs> statfs(std::string_view path) override {
        return on_paths("statfs", path, [&](auto& api) { return api.statfs(path); });
    }
    Result<FileHandle> open(std::string_view path, int flags, uint32_t mode) override {
        return on_paths("open", path, [&](auto& api) { return api.open(path, flags, mode); });
    }
    Result<std::string> getxattr(std::string_view path, std::string_view name) override {
        return on_paths("getxattr", path, [&](auto& api) { return api.getxattr(path, name); });
    }
    Result<std::vector<std::string>> listxattr(std::string_view path) override {
        return on_paths("listxattr", path, [&](auto& api) { return api.listxattr(path); });
    }

    // --- the pack ------------------------------------------------------------------------

    Result<std::shared_ptr<Backend>> snapshot() override {
        return std::shared_ptr<Backend>(shared_from_this());  // a pack never changes
    }
    bool read_only() const noexcept override { return true; }
    const PackInfo& info() const noexcept override { return info_; }

    Result<std::span<const std::byte>> read_view(std::string_view path, uint64_t offset,
                                                 std::size_t length,
                                                 std::string& scratch) override {
        const Ctx ctx{"read", path};
        PackOps o = ops(ctx);
        walk::Walker<PackOps> w(o, ctx.op, path);
        Result<walk::Step<InodeView>> node = [&]() -> Result<walk::Step<InodeView>> {
            if (auto fast = w.try_fast(path, true)) return *fast;  // a plain path, no normalising
            auto normal = NormalPath::make(path, ctx.op);
            if (!normal) return std::unexpected(normal.error());
            return w.resolve(*normal, true);
        }();
        Result<std::span<const std::byte>> out = [&]() -> Result<std::span<const std::byte>> {
            if (!node) return std::unexpected(node.error());
            if (node->type == FileType::directory) return fail(EISDIR, ctx.op, path);
            if (node->type != FileType::regular) return fail(ENOTSUP, ctx.op, path);
            auto content = reader_->content(node->node, ctx);
            if (!content) return std::unexpected(content.error());
            return reader_->view(*content, offset, length, scratch, ctx);
        }();
        return unless_damaged(*reader_, std::move(out), ctx.op);
    }

    VerifyReport verify(std::function<void(uint64_t, uint64_t)> progress) override {
        return reader_->verify(progress);
    }

private:
    std::shared_ptr<const PackReader> reader_;
    PackInfo info_;
    InodeNumbering numbering_;
    const uint64_t cache_owner_ = path_cache::new_owner();
};

}  // namespace

}  // namespace packfs::pack

namespace packfs {

Result<std::shared_ptr<PackBackend>> open_pack(std::string_view pack_path,
                                               const PackOpenOptions& options) {
    return pack::open_pack_with_hooks(pack_path, options, pack::OpenHooks{});
}

Result<std::shared_ptr<PackBackend>> pack::open_pack_with_hooks(std::string_view pack_path,
                                                                const PackOpenOptions& options,
                                                                const OpenHooks& hooks) {
    auto reader = PackReader::open(pack_path, options, hooks);
    if (!reader) return std::unexpected(reader.error());
    return backend_over(std::move(*reader));
}

std::shared_ptr<PackBackend> pack::backend_over(std::unique_ptr<PackReader> reader) {
    return std::make_shared<pack::PackBackendImpl>(std::move(reader));
}

}  // namespace packfs
