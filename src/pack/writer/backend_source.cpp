// A TreeSource over any Backend (mem, a snapshot, the Vfs, a pack, a host directory through the
// dir backend...), walked by node: one list_entries per directory (a mem tree answers it from
// one pass over the directory), never a path. Every node it hands the writer stays held until
// the source goes, so a live tree cannot reuse it meanwhile.
#include <fcntl.h>

#include <algorithm>
#include <string>

#include "pack/writer/tree_source.hpp"
#include "packfs/dir.hpp"
#include "packfs/path.hpp"

namespace packfs::pack {

namespace {

class BackendReader final : public ContentReader {
public:
    explicit BackendReader(FileHandle file) : file_(std::move(file)) {}
    Result<std::size_t> read(std::span<std::byte> buf, uint64_t offset) override {
        return file_->pread(buf, offset);
    }
    Result<std::pair<uint64_t, uint64_t>> data_extent(uint64_t offset) override {
        auto begin = file_->seek_data(offset, true);
        if (!begin) {
            if (begin.error().code() == ENXIO) return std::pair{UINT64_MAX, UINT64_MAX};
            // A host file whose filesystem has no SEEK_DATA: all data, as far as is known.
            if (begin.error().code() == EINVAL) return std::pair{offset, UINT64_MAX};
            return std::unexpected(begin.error());
        }
        auto end = file_->seek_data(*begin, false);
        if (!end) return std::unexpected(end.error());
        return std::pair{*begin, *end};
    }

private:
    FileHandle file_;
};

class BackendSource final : public TreeSource {
public:
    BackendSource(Backend& backend, Entry root, LinkIdentity links)
        : backend_(backend), root_(root), links_(links) {
        held_.push_back(root.node);
    }
    // A source that owns its backend (a host directory's dir backend).
    BackendSource(std::shared_ptr<Backend> owned, Entry root, LinkIdentity links)
        : BackendSource(*owned, root, links) {
        owned_ = std::move(owned);
    }
    ~BackendSource() override {
        for (Node n : held_) backend_.forget(n, 1);
    }

    Result<SourceNode> root() override {
        if (root_.stat.type != FileType::directory) return fail(ENOTDIR, "build", "/");
        return source_node("", root_.stat, identity(root_), root_.node.id);
    }

    Result<std::vector<SourceNode>> list(SourceRef ref) override {
        auto entries = backend_.list_entries(Node{ref.handle});
        if (!entries) return std::unexpected(entries.error().with_path(ref.path));
        std::vector<SourceNode> nodes;
        nodes.reserve(entries->size());
        for (NamedEntry& e : *entries) {
            held_.push_back(e.entry.node);
            const Stat& st = e.entry.stat;
            nodes.push_back(source_node(std::move(e.name), st, identity(e.entry), e.entry.node.id));
            // Known to have no xattrs (and no target to read): nothing more to ask for it.
            nodes.back().has_extras = e.no_xattrs && st.type != FileType::symlink;
        }
        return nodes;
    }

    Result<std::string> readlink(SourceRef ref) override {
        auto target = backend_.readlink(Node{ref.handle});
        if (!target) return std::unexpected(target.error().with_path(ref.path));
        return target;
    }

    Result<Xattrs> xattrs(SourceRef ref) override {
        auto names = backend_.listxattr(Node{ref.handle});
        if (!names) {
            if (names.error().code() == ENOTSUP) return Xattrs{};
            return std::unexpected(names.error().with_path(ref.path));
        }
        Xattrs out;
        for (auto& name : *names) {
            auto value = backend_.getxattr(Node{ref.handle}, name);
            if (!value) {
                if (value.error().code() == ENODATA) continue;  // removed meanwhile
                return std::unexpected(value.error().with_path(ref.path));
            }
            out.emplace_back(std::move(name), std::move(*value));
        }
        return out;
    }

    Result<std::unique_ptr<ContentReader>> open(SourceRef ref) override {
        auto file = backend_.open(Node{ref.handle}, O_RDONLY);
        if (!file) return std::unexpected(file.error().with_path(ref.path));
        return std::make_unique<BackendReader>(std::move(*file));
    }

    // A backend that numbers its objects itself (mem, a snapshot, a pack) counts them in
    // statfs; a whole host filesystem's count (the dir backend) would say nothing of the tree.
    uint64_t inode_count_hint() override {
        constexpr uint64_t kMaxHint = uint64_t{1} << 24;
        if (!backend_.inode_numbering().unique) return 0;
        auto fs = backend_.statfs(root_.node);
        if (!fs || fs->files_free > fs->files) return 0;
        return std::min(fs->files - fs->files_free, kMaxHint);
    }

private:
    std::pair<uint64_t, uint64_t> identity(const Entry& e) const {
        return links_ == LinkIdentity::node ? std::pair{uint64_t{1}, e.node.id}
                                            : std::pair{uint64_t{0}, e.stat.ino};
    }

    Backend& backend_;
    std::shared_ptr<Backend> owned_;  // null, or what `backend_` is (alive for the forgets)
    Entry root_;
    LinkIdentity links_;
    std::vector<Node> held_;
};

}  // namespace

Result<std::unique_ptr<TreeSource>> make_backend_source(Backend& backend, std::string_view root,
                                                        LinkIdentity links) {
    auto entry = lookup_path(backend, root, Follow::no);
    if (!entry) return std::unexpected(entry.error().with_path("/"));
    return std::make_unique<BackendSource>(backend, *entry, links);
}

Result<std::unique_ptr<TreeSource>> make_host_source(std::string_view host_dir) {
    DirOptions options;
    options.containment = Containment::no_symlinks;
    options.read_only = true;
    options.cache_dirs = false;  // the path calls' cache: the source makes node calls only
    options.no_atime = true;
    const std::string dir(host_dir);
    if (dir.empty()) return fail(ENOENT, "build", dir);
    auto backend = open_dir_backend(dir, options);
    if (!backend) return std::unexpected(backend.error().relabeled("build", dir));
    auto entry = lookup_path(**backend, "/", Follow::no);
    if (!entry) return std::unexpected(entry.error().with_path("/"));
    return std::make_unique<BackendSource>(std::move(*backend), *entry, LinkIdentity::node);
}

}  // namespace packfs::pack
