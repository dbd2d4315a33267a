// A TreeSource over any Backend (mem, a snapshot, the Vfs, a pack...).
#include <fcntl.h>

#include "pack/tree_source.hpp"
#include "packfs/path.hpp"

namespace packfs::pack {

namespace {

class BackendReader final : public ContentReader {
public:
    explicit BackendReader(FileHandle file) : file_(std::move(file)) {}
    Result<std::size_t> read(std::span<std::byte> buf, uint64_t offset) override {
        return file_->pread(buf, offset);
    }

private:
    FileHandle file_;
};

class BackendSource final : public TreeSource {
public:
    BackendSource(Backend& backend, std::string root) : backend_(backend), root_(std::move(root)) {}

    Result<SourceNode> root() override {
        auto st = backend_.lstat(root_);
        if (!st) return std::unexpected(st.error().with_path("/"));
        if (st->type != FileType::directory) return fail(ENOTDIR, "build", "/");
        return source_node("", *st, {0, st->ino});
    }

    Result<std::vector<SourceNode>> list(SourceRef ref) override {
        const std::string& dir = ref.path;
        std::string path = real(dir);
        auto entries = backend_.readdir(path);
        if (!entries) return std::unexpected(entries.error().with_path(dir));
        std::vector<SourceNode> nodes;
        nodes.reserve(entries->size());
        for (auto& entry : *entries) {
            auto st = backend_.lstat(path_join(path, entry.name));
            if (!st) return std::unexpected(st.error().with_path(path_join(dir, entry.name)));
            uint64_t ino = st->ino;
            nodes.push_back(source_node(std::move(entry.name), *st, {0, ino}));
        }
        return nodes;
    }

    Result<std::string> readlink(SourceRef ref) override {
        return rename_errors(backend_.readlink(real(ref.path)), ref.path);
    }

    Result<Xattrs> xattrs(SourceRef ref) override {
        const std::string& path = ref.path;
        std::string at = real(path);
        auto names = backend_.listxattr(at);
        if (!names) {
            if (names.error().code() == ENOTSUP) return Xattrs{};
            return std::unexpected(names.error().with_path(path));
        }
        Xattrs out;
        for (auto& name : *names) {
            auto value = backend_.getxattr(at, name);
            if (!value) {
                if (value.error().code() == ENODATA) continue;  // removed meanwhile
                return std::unexpected(value.error().with_path(path));
            }
            out.emplace_back(std::move(name), std::move(*value));
        }
        return out;
    }

    Result<std::unique_ptr<ContentReader>> open(SourceRef ref) override {
        const std::string& path = ref.path;
        auto file = backend_.open(real(path), O_RDONLY | O_NOFOLLOW);
        if (!file) return std::unexpected(file.error().with_path(path));
        return std::make_unique<BackendReader>(std::move(*file));
    }

private:
    std::string real(const std::string& path) const {
        if (root_ == "/") return path;
        return path == "/" ? root_ : root_ + path;
    }

    template <class T>
    static Result<T> rename_errors(Result<T> r, const std::string& path) {
        if (!r) return std::unexpected(r.error().with_path(path));
        return r;
    }

    Backend& backend_;
    std::string root_;
};

}  // namespace

// In mem_source.cpp: null when `backend` is not a mem backend.
Result<std::unique_ptr<TreeSource>> make_mem_source(Backend& backend, const std::string& root);

Result<std::unique_ptr<TreeSource>> make_backend_source(Backend& backend,
                                                        std::string_view root) {
    auto normal = normalize_path(root, "build");
    if (!normal) return std::unexpected(normal.error());
    auto direct = make_mem_source(backend, *normal);
    if (!direct || *direct) return direct;
    return std::make_unique<BackendSource>(backend, std::move(*normal));
}

}  // namespace packfs::pack
