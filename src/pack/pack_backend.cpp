// The read-only Backend over one pack (PackBackend, pack.hpp): every query resolves on the
// PackReader and answers from the records it checked; every mutation is EROFS, with the errno
// order of a mem snapshot (what exists answers first, then EROFS). The backend holds no
// mutable state of its own, so it is its own snapshot.
//
// Every operation checks the image's damage counter after its work (image.hpp): once the file
// shrank under the mapping, answers are EIO instead of whatever zeros were read.
#include <fcntl.h>

#include <memory>

#include "mem/tree_reader.hpp"  // check_xattr_name: the namespace rules, shared by every backend
#include "core/refuse_mutations.hpp"
#include "pack/pack_access.hpp"
#include "pack/reader.hpp"
#include "packfs/pack.hpp"
#include "packfs/path.hpp"

namespace packfs::pack {
namespace {

// The result of an operation, or EIO when the pack file changed underneath it meanwhile.
template <class T>
Result<T> unless_damaged(const PackReader& reader, Result<T>&& result, const Ctx& ctx) {
    if (reader.image().damaged()) [[unlikely]]
        return fail(EIO, ctx.op, ctx.path);
    return std::move(result);
}

// open()'s checks on what the path resolved to, as the mem backend makes them.
Result<void> check_open_target(FileType type, int flags, std::string_view path) {
    const int access = flags & O_ACCMODE;
    if ((flags & O_DIRECTORY) && type != FileType::directory) return fail(ENOTDIR, "open", path);
    if (type == FileType::directory && access != O_RDONLY) return fail(EISDIR, "open", path);
    if (type == FileType::symlink) return fail(ELOOP, "open", path);  // O_NOFOLLOW
    if (type != FileType::regular && type != FileType::directory)
        return fail(ENOTSUP, "open", path);
    return {};
}

// A read-only handle: the inode it opened and where its bytes are, resolved once.
class PackFile final : public File {
public:
    PackFile(std::shared_ptr<const PackReader> reader, const InodeView& node, ContentRef content)
        : reader_(std::move(reader)), node_(node), content_(content) {}

    Result<std::size_t> pread(std::span<std::byte> buf, uint64_t offset) override {
        const Ctx ctx{"read", {}};
        if (node_.type == FileType::directory) return fail(EISDIR, "read");
        return unless_damaged(*reader_, reader_->read(content_, offset, buf, ctx), ctx);
    }
    Result<std::size_t> pwrite(std::span<const std::byte>, uint64_t) override {
        return fail(EBADF, "write");
    }
    Result<void> truncate(uint64_t) override { return fail(EINVAL, "ftruncate"); }
    Result<void> fsync(bool) override { return {}; }
    Result<Stat> fstat() override { return reader_->stat_of(node_); }

private:
    std::shared_ptr<const PackReader> reader_;  // keeps the mapping alive
    InodeView node_;
    ContentRef content_;
};

class PackBackendImpl final : public RefuseMutations<PackBackend>,
                              public std::enable_shared_from_this<PackBackendImpl> {
public:
    explicit PackBackendImpl(std::unique_ptr<PackReader> reader)
        : reader_(std::move(reader)), info_(reader_->info()) {}

    Result<Stat> stat(std::string_view path) override { return stat_as(path, true, "stat"); }
    Result<Stat> lstat(std::string_view path) override { return stat_as(path, false, "lstat"); }

    Result<std::vector<DirEntry>> readdir(std::string_view path) override {
        const Ctx ctx{"readdir", path};
        auto normal = NormalPath::make(path, ctx.op);
        if (!normal) return std::unexpected(normal.error());
        auto dir = reader_->resolve(*normal, true, ctx);
        if (!dir)
            return unless_damaged<std::vector<DirEntry>>(*reader_, std::unexpected(dir.error()),
                                                         ctx);
        if (dir->type != FileType::directory) return fail(ENOTDIR, ctx.op, path);
        return unless_damaged(*reader_, reader_->list(*dir, ctx), ctx);
    }

    Result<std::string> readlink(std::string_view path) override {
        const Ctx ctx{"readlink", path};
        auto normal = NormalPath::make(path, ctx.op);
        if (!normal) return std::unexpected(normal.error());
        auto link = reader_->resolve(*normal, false, ctx);
        Result<std::string> out = [&]() -> Result<std::string> {
            if (!link) return std::unexpected(link.error());
            if (link->type != FileType::symlink) return fail(EINVAL, ctx.op, path);
            auto target = reader_->symlink_target(*link, ctx);
            if (!target) return std::unexpected(target.error());
            return std::string(*target);
        }();
        return unless_damaged(*reader_, std::move(out), ctx);
    }

    Result<StatFs> statfs(std::string_view path) override {
        const Ctx ctx{"statfs", path};
        auto normal = NormalPath::make(path, ctx.op);
        if (!normal) return std::unexpected(normal.error());
        auto node = reader_->resolve(*normal, true, ctx);
        if (!node) return unless_damaged<StatFs>(*reader_, std::unexpected(node.error()), ctx);
        StatFs fs;
        fs.block_size = 4096;
        fs.blocks = info_.file_size / 4096;
        fs.blocks_free = 0;
        fs.files = info_.inode_count;
        fs.files_free = 0;
        fs.name_max = kMaxNameLength;
        return unless_damaged<StatFs>(*reader_, fs, ctx);
    }

    Result<FileHandle> open(std::string_view path, int flags, uint32_t) override {
        const Ctx ctx{"open", path};
        if ((flags & O_ACCMODE) == O_ACCMODE) return fail(EINVAL, ctx.op, path);
        auto normal = NormalPath::make(path, ctx.op);
        if (!normal) return std::unexpected(normal.error());
        auto r = reader_->resolve(*normal, !(flags & O_NOFOLLOW), ctx);
        Result<FileHandle> out = [&]() -> Result<FileHandle> {
            // As on a read-only mount: what exists answers first (EEXIST, EISDIR), then EROFS.
            if (!r) {
                if (r.error().code() == ENOENT && (flags & O_CREAT))
                    return fail(EROFS, ctx.op, path);
                return std::unexpected(r.error());
            }
            if ((flags & O_CREAT) && (flags & O_EXCL)) return fail(EEXIST, ctx.op, path);
            if (auto ok = check_open_target(r->type, flags, path); !ok)
                return std::unexpected(ok.error());
            if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC))
                return fail(EROFS, ctx.op, path);
            ContentRef content;
            if (r->type == FileType::regular) {
                auto c = reader_->content(*r, ctx);
                if (!c) return std::unexpected(c.error());
                content = *c;
            }
            return std::make_unique<PackFile>(reader_, *r, content);
        }();
        return unless_damaged(*reader_, std::move(out), ctx);
    }


    Result<std::string> getxattr(std::string_view path, std::string_view name) override {
        const Ctx ctx{"getxattr", path};
        if (auto ok = mem::check_xattr_name(name, ctx.op, path); !ok)
            return std::unexpected(ok.error());
        auto normal = NormalPath::make(path, ctx.op);
        if (!normal) return std::unexpected(normal.error());
        auto node = reader_->resolve(*normal, false, ctx);
        Result<std::string> out = [&]() -> Result<std::string> {
            if (!node) return std::unexpected(node.error());
            std::string value;
            auto found = reader_->find_xattr(*node, name, value, ctx);
            if (!found) return std::unexpected(found.error());
            if (!*found) return fail(ENODATA, ctx.op, path);
            return value;
        }();
        return unless_damaged(*reader_, std::move(out), ctx);
    }

    Result<std::vector<std::string>> listxattr(std::string_view path) override {
        const Ctx ctx{"listxattr", path};
        auto normal = NormalPath::make(path, ctx.op);
        if (!normal) return std::unexpected(normal.error());
        auto node = reader_->resolve(*normal, false, ctx);
        if (!node)
            return unless_damaged<std::vector<std::string>>(*reader_, std::unexpected(node.error()),
                                                            ctx);
        return unless_damaged(*reader_, reader_->xattr_names(*node, ctx), ctx);
    }

    Result<std::shared_ptr<Backend>> snapshot() override {
        return std::shared_ptr<Backend>(shared_from_this());  // a pack never changes
    }
    const PackInfo& info() const noexcept override { return info_; }

    Result<std::span<const std::byte>> read_view(std::string_view path, uint64_t offset,
                                                 std::size_t length,
                                                 std::string& scratch) override {
        const Ctx ctx{"read", path};
        auto normal = NormalPath::make(path, ctx.op);
        if (!normal) return std::unexpected(normal.error());
        auto node = reader_->resolve(*normal, true, ctx);
        Result<std::span<const std::byte>> out = [&]() -> Result<std::span<const std::byte>> {
            if (!node) return std::unexpected(node.error());
            if (node->type == FileType::directory) return fail(EISDIR, ctx.op, path);
            if (node->type != FileType::regular) return fail(ENOTSUP, ctx.op, path);
            auto content = reader_->content(*node, ctx);
            if (!content) return std::unexpected(content.error());
            return reader_->view(*content, offset, length, scratch, ctx);
        }();
        return unless_damaged(*reader_, std::move(out), ctx);
    }

    VerifyReport verify(std::function<void(uint64_t, uint64_t)> progress) override {
        return reader_->verify(progress);
    }

private:
    Result<Stat> stat_as(std::string_view path, bool follow, std::string_view op) {
        const Ctx ctx{op, path};
        auto normal = NormalPath::make(path, op);
        if (!normal) return std::unexpected(normal.error());
        auto node = reader_->resolve(*normal, follow, ctx);
        if (!node) return unless_damaged<Stat>(*reader_, std::unexpected(node.error()), ctx);
        return unless_damaged<Stat>(*reader_, reader_->stat_of(*node), ctx);
    }

public:
    const std::shared_ptr<const PackReader>& reader() const noexcept { return reader_; }

private:
    std::shared_ptr<const PackReader> reader_;
    PackInfo info_;
};

}  // namespace

std::shared_ptr<const PackReader> reader_of(const Backend& backend) {
    auto* pack = dynamic_cast<const PackBackendImpl*>(&backend);
    return pack ? pack->reader() : nullptr;
}

}  // namespace packfs::pack

namespace packfs {

Result<std::shared_ptr<PackBackend>> open_pack(std::string_view pack_path,
                                               const PackOpenOptions& options) {
    auto reader = pack::PackReader::open(pack_path, options);
    if (!reader) return std::unexpected(reader.error());
    return std::make_shared<pack::PackBackendImpl>(std::move(*reader));
}

}  // namespace packfs
