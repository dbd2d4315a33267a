#include "overlay/backend_layer.hpp"

#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>

namespace packfs::overlay {
namespace {

// Reads a file of the backend by path, opening it for each read: a copied-up file keeps its
// backing for as long as it lives, and must not hold a descriptor for all that time.
class PathContent final : public mem::LowerContent {
public:
    PathContent(std::shared_ptr<Backend> backend, std::string path)
        : backend_(std::move(backend)), path_(std::move(path)) {}
    Result<std::size_t> read(uint64_t offset, std::span<std::byte> out) const override {
        auto file = backend_->open(path_, O_RDONLY | O_NOFOLLOW);
        if (!file) return std::unexpected(file.error());
        std::size_t done = 0;
        while (done < out.size()) {
            auto n = (*file)->pread(out.subspan(done), offset + done);
            if (!n) return std::unexpected(n.error());
            if (*n == 0) break;
            done += *n;
        }
        return done;
    }

private:
    std::shared_ptr<Backend> backend_;
    std::string path_;
};

class BackendLayer final : public mem::LowerLayer {
public:
    explicit BackendLayer(std::shared_ptr<Backend> backend) : backend_(std::move(backend)) {
        paths_.push_back({"/", FileType::directory});  // id 1: the root
        ids_.emplace("/", 1);
    }

    mem::LowerNode root() const override { return {1, 1, FileType::directory}; }

    Result<std::optional<mem::LowerNode>> lookup(const mem::LowerNode& dir,
                                                 std::string_view name) const override {
        std::string path = path_of(dir.id);
        if (path.size() > 1) path += '/';
        path += name;
        auto st = backend_->lstat(path);
        if (!st) {
            if (st.error().code() == ENOENT || st.error().code() == ENOTDIR) return std::nullopt;
            return std::unexpected(st.error());
        }
        const uint64_t id = intern(std::move(path), st->type);
        return mem::LowerNode{id, id, st->type};
    }

    Result<std::optional<mem::LowerNode>> by_ino(uint64_t ino) const override {
        std::lock_guard lock(mutex_);
        if (ino == 0 || ino > paths_.size()) return std::nullopt;
        return mem::LowerNode{ino, ino, paths_[ino - 1].type};
    }

    Result<std::vector<std::pair<std::string, mem::LowerNode>>> list(
        const mem::LowerNode& dir) const override {
        const std::string path = path_of(dir.id);
        auto entries = backend_->readdir(path);
        if (!entries) return std::unexpected(entries.error());
        std::vector<std::pair<std::string, mem::LowerNode>> out;
        out.reserve(entries->size());
        for (DirEntry& e : *entries) {
            std::string child = path.size() > 1 ? path + '/' + e.name : path + e.name;
            const uint64_t id = intern(std::move(child), e.type);
            out.emplace_back(std::move(e.name), mem::LowerNode{id, id, e.type});
        }
        return out;
    }

    Result<Stat> stat(const mem::LowerNode& node) const override {
        auto st = backend_->lstat(path_of(node.id));
        if (!st) return std::unexpected(st.error());
        st->ino = node.ino;
        return st;
    }

    Result<std::string> readlink(const mem::LowerNode& link) const override {
        return backend_->readlink(path_of(link.id));
    }

    Result<std::shared_ptr<const mem::LowerContent>> content(
        const mem::LowerNode& file) const override {
        return std::make_shared<PathContent>(backend_, path_of(file.id));
    }

    Result<std::optional<std::string>> getxattr(const mem::LowerNode& node,
                                                std::string_view name) const override {
        auto value = backend_->getxattr(path_of(node.id), name);
        if (!value) {
            const int code = value.error().code();
            if (code == ENODATA || code == ENOTSUP) return std::nullopt;
            return std::unexpected(value.error());
        }
        return std::move(*value);
    }

    Result<mem::Xattrs> xattrs(const mem::LowerNode& node) const override {
        const std::string path = path_of(node.id);
        mem::Xattrs out;
        auto names = backend_->listxattr(path);
        if (!names) {
            if (names.error().code() == ENOTSUP) return out;
            return std::unexpected(names.error());
        }
        for (std::string& name : *names) {
            auto value = backend_->getxattr(path, name);
            if (!value) {
                if (value.error().code() == ENODATA) continue;  // removed meanwhile
                return std::unexpected(value.error());
            }
            out.emplace_back(std::move(name), std::move(*value));
        }
        return out;
    }

    uint64_t ino_limit() const override { return kBackendLayerInoLimit; }

    StatFs statfs() const override {
        auto fs = backend_->statfs("/");
        return fs ? *fs : StatFs{};
    }

private:
    struct Known {
        std::string path;
        FileType type;
    };

    uint64_t intern(std::string path, FileType type) const {
        std::lock_guard lock(mutex_);
        auto [it, fresh] = ids_.try_emplace(path, paths_.size() + 1);
        if (fresh) {
            paths_.push_back({std::move(path), type});
        } else {
            paths_[it->second - 1].type = type;
        }
        return it->second;
    }
    std::string path_of(uint64_t id) const {
        std::lock_guard lock(mutex_);
        return id >= 1 && id <= paths_.size() ? paths_[id - 1].path : std::string("/");
    }

    std::shared_ptr<Backend> backend_;
    mutable std::mutex mutex_;
    mutable std::deque<Known> paths_;
    mutable std::unordered_map<std::string, uint64_t> ids_;
};

}  // namespace

mem::LowerPtr make_backend_layer(std::shared_ptr<Backend> backend) {
    return std::make_shared<BackendLayer>(std::move(backend));
}

}  // namespace packfs::overlay
