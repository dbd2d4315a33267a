// SnapshotBackend: a frozen generation of the mem tree, read-only. Paths are walked by the
// generic walker over the engine at that generation, inside one RCU read section.
#include <fcntl.h>

#include <memory>

#include "core/checks.hpp"
#include "core/path_api.hpp"
#include "mem/engine.hpp"
#include "mem/mem_files.hpp"
#include "mem/snapshot_backend.hpp"
#include "mem/walk_ops.hpp"

namespace packfs::mem {
namespace {

class SnapshotBackend;

// A snapshot: a read-only tree.
struct SnapshotOps : ReadOps {
    const SnapshotBackend& snapshot;

    bool read_only() const noexcept { return true; }
    Result<FileHandle> open(const Ref& node, int flags) const;  // after SnapshotBackend
};

// Holds its generation itself (one allocation per snapshot() call); what must outlive it (its
// files) keeps it alive through hold().
class SnapshotBackend final : public Backend, public std::enable_shared_from_this<SnapshotBackend> {
public:
    SnapshotBackend(std::shared_ptr<Engine> engine, Engine::SnapshotInfo info)
        : hold_(std::move(engine), info), engine_(hold_.engine()), gen_(info.gen) {}

    // The generation, owned: it keeps this backend (and so the generation) alive.
    std::shared_ptr<const SnapshotHold> hold() const { return {shared_from_this(), &hold_}; }

private:
    SnapshotOps ops() const { return SnapshotOps{{engine_, gen_}, *this}; }
    template <class Body>
    auto on_node(Node node, Body&& body) -> decltype(body(std::declval<const Ref&>())) {
        rcu::ReadSection section;
        auto r = engine_.by_ino(node.id, gen_);
        if (!r) return std::unexpected(r.error());
        return body(*r);
    }
    template <class Body>
    auto on_path(Body&& body) {
        rcu::ReadSection section;
        SnapshotOps o = ops();
        paths::PathApi<SnapshotOps> api(o);
        return body(api);
    }


public:

    // --- nodes (a snapshot's need no holding: they live as long as it) ---
    Result<Entry> lookup(Node dir, std::string_view name) override {
        if (auto ok = check_name(name, "lookup"); !ok) return std::unexpected(ok.error());
        rcu::ReadSection section;
        auto d = engine_.by_ino(dir.id, gen_);
        if (!d) return std::unexpected(d.error());
        if (!d->is_dir()) return fail(ENOTDIR, "lookup", name);
        auto c = engine_.child(*d, name, gen_);
        if (!c) return std::unexpected(c.error());
        if (!*c) return fail(ENOENT, "lookup", name);
        auto st = engine_.stat(**c, gen_);
        if (!st) return std::unexpected(st.error());
        return Entry{Node{(*c)->ino}, *st};
    }
    Result<Entry> lookup_ino(uint64_t ino) override {
        rcu::ReadSection section;
        auto r = engine_.by_ino(ino, gen_);
        if (!r) return std::unexpected(r.error());
        auto st = engine_.stat(*r, gen_);
        if (!st) return std::unexpected(st.error());
        return Entry{Node{ino}, *st};
    }
    Result<Stat> getattr(Node node) override {
        return on_node(node, [&](const Ref& r) { return engine_.stat(r, gen_); });
    }
    Result<std::vector<DirEntry>> list(Node dir) override {
        return on_node(dir, [&](const Ref& r) -> Result<std::vector<DirEntry>> {
            if (!r.is_dir()) return fail(ENOTDIR, "readdir");
            return engine_.list(r, gen_);
        });
    }
    Result<std::vector<NamedEntry>> list_entries(Node dir) override {
        std::vector<NamedEntry> out;
        {
            rcu::ReadSection section;
            auto d = engine_.by_ino(dir.id, gen_);
            if (!d) return std::unexpected(d.error());
            if (!d->is_dir()) return fail(ENOTDIR, "readdir");
            auto own = engine_.own_entries(*d, gen_);
            if (!own) return std::unexpected(own.error());
            if (*own) {
                out.reserve((*own)->size());
                for (auto& [name, ref] : **own) {
                    bool xattrs = true;
                    auto st = engine_.stat(ref, gen_, xattrs);
                    if (!st) return std::unexpected(st.error().with_path(name));
                    out.push_back(NamedEntry{std::move(name), Entry{Node{ref.ino}, *st}, !xattrs});
                }
                return out;
            }
        }
        return Backend::list_entries(dir);  // it merges a lower directory
    }
    Result<std::string> readlink(Node node) override {
        return on_node(node, [&](const Ref& r) -> Result<std::string> {
            if (r.type != FileType::symlink) return fail(EINVAL, "readlink");
            return engine_.target(r, gen_);
        });
    }
    Result<FileHandle> open(Node node, int flags) override {
        return on_node(node, [&](const Ref& r) { return ops().open(r, flags); });
    }
    Result<std::string> getxattr(Node node, std::string_view name) override {
        if (auto ok = check_xattr_name(name, "getxattr"); !ok) return std::unexpected(ok.error());
        return on_node(node, [&](const Ref& r) { return engine_.getxattr(r, name, gen_); });
    }
    Result<std::vector<std::string>> listxattr(Node node) override {
        return on_node(node, [&](const Ref& r) { return engine_.listxattr(r, gen_); });
    }
    Result<StatFs> statfs(Node) override {
        rcu::ReadSection section;  // the layer it reads may be freed once no section holds it
        return engine_.statfs(gen_);
    }
    InodeNumbering inode_numbering() const override { return {true, hold_.info().next_ino}; }

    // --- paths ---
    Result<Stat> stat(std::string_view p) override {
        return on_path([&](auto& api) { return api.stat(p, true, "stat"); });
    }
    Result<Stat> lstat(std::string_view p) override {
        return on_path([&](auto& api) { return api.stat(p, false, "lstat"); });
    }
    Result<std::vector<DirEntry>> readdir(std::string_view p) override {
        return on_path([&](auto& api) { return api.readdir(p); });
    }
    Result<std::string> readlink(std::string_view p) override {
        return on_path([&](auto& api) { return api.readlink(p); });
    }
    Result<StatFs> statfs(std::string_view p) override {
        return on_path([&](auto& api) { return api.statfs(p); });
    }
    Result<FileHandle> open(std::string_view p, int flags, uint32_t mode) override {
        return on_path([&](auto& api) { return api.open(p, flags, mode); });
    }
    Result<std::string> getxattr(std::string_view p, std::string_view name) override {
        return on_path([&](auto& api) { return api.getxattr(p, name); });
    }
    Result<std::vector<std::string>> listxattr(std::string_view p) override {
        return on_path([&](auto& api) { return api.listxattr(p); });
    }

    // A snapshot of a snapshot is the same frozen tree.
    Result<std::shared_ptr<Backend>> snapshot() override { return shared_from_this(); }
    bool read_only() const noexcept override { return true; }

private:
    SnapshotHold hold_;
    Engine& engine_;
    uint64_t gen_;
};

Result<FileHandle> SnapshotOps::open(const Ref& node, int flags) const {
    if (auto ok = check_open_target(node.type, flags); !ok) return std::unexpected(ok.error());
    if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC)) return fail(EROFS, "open");
    return std::make_unique<SnapshotFile>(snapshot.hold(), node);
}

}  // namespace

std::shared_ptr<Backend> make_snapshot_backend(std::shared_ptr<Engine> engine,
                                               Engine::SnapshotInfo info) {
    return std::make_shared<SnapshotBackend>(std::move(engine), info);
}

}  // namespace packfs::mem
