// The live tree of a mem engine (engine.hpp) as a Backend: the plain mem backend's
// (make_mem_backend, mem_backend.cpp) and, with the Overlay calls added, the overlay's
// (src/overlay/overlay_backend.cpp). Its snapshots are SnapshotBackends (snapshot_backend.cpp),
// its files LiveFiles (mem_files.hpp). Paths are walked by the generic walker over the engine
// directly (core/path_api.hpp, with the ops of walk_ops.hpp): reads inside one RCU read section
// (again when a directory rename raced with the walk), mutations under the writer lock, so a path
// mutation resolves and changes the tree in one step.
#pragma once

#include <fcntl.h>

#include <memory>

#include "core/checks.hpp"
#include "core/path_api.hpp"
#include "mem/engine.hpp"
#include "mem/mem_files.hpp"
#include "mem/snapshot_backend.hpp"
#include "mem/walk_ops.hpp"
#include "packfs/mem.hpp"

namespace packfs::mem {

// `Interface` is Backend, or a Backend with more calls (Overlay) that a derived class makes.
template <class Interface>
class LiveTree : public Interface {
public:
    LiveTree(const MemOptions& options, std::shared_ptr<Lower> lower, uint64_t next_ino)
        : engine_(std::make_shared<Engine>(options, std::move(lower), next_ino)) {}

private:
    // A node reference for the caller (a hold on the inode), with its attributes.
    Result<Entry> held_entry(uint64_t ino) {
        auto cell = engine_->hold(ino);
        if (!cell) return std::unexpected(cell.error());
        Result<Stat> st;
        {
            rcu::ReadSection section;
            auto r = engine_->by_ino(ino, kLiveGen);
            st = r ? engine_->stat(*r, kLiveGen) : Result<Stat>(std::unexpected(r.error()));
        }
        if (!st) {
            engine_->release(*cell);
            return std::unexpected(st.error());
        }
        return Entry{Node{ino}, *st};
    }

    Result<Entry> make(Node dir, std::string_view name, FileType type, uint32_t mode, uint64_t rdev,
                       std::string_view target, const std::optional<Owner>& owner,
                       std::string_view op) {
        if (auto ok = check_name(name, op); !ok) return std::unexpected(ok.error());
        uint64_t ino = 0;
        {
            auto lock = engine_->lock();
            auto d = engine_->by_ino(dir.id, kLiveGen);
            if (!d) return std::unexpected(d.error());
            auto made = engine_->make(*d, name, type, mode, rdev, target, owner);
            if (!made) return std::unexpected(made.error().relabeled(op, name));
            ino = made->ino;
        }
        return held_entry(ino);
    }

    template <class Change>
    Result<void> in_dir(Node dir, std::string_view name, std::string_view op, Change&& change) {
        if (auto ok = check_name(name, op); !ok) return ok;
        auto lock = engine_->lock();
        auto d = engine_->by_ino(dir.id, kLiveGen);
        if (!d) return std::unexpected(d.error());
        return change(*d);
    }

    template <class Body>
    auto on_node(Node node, Body&& body) -> decltype(body(std::declval<const Ref&>())) {
        rcu::ReadSection section;
        auto r = engine_->by_ino(node.id, kLiveGen);
        if (!r) return std::unexpected(r.error());
        return body(*r);
    }

    // A path read in one RCU read section; again when a directory rename or a rebase raced with
    // the walk.
    template <class Body>
    auto reading(Body&& body) {
        for (;;) {
            const uint32_t seq = engine_->rename_seq();
            if (seq & 1) {
                engine_->wait_out_rebase();  // (a rename is short: spin)
                continue;
            }
            auto result = [&] {
                rcu::ReadSection section;
                LiveReadOps o{{*engine_, kLiveGen}, engine_};
                paths::PathApi<LiveReadOps> api(o);
                return body(api);
            }();
            if (engine_->rename_seq() == seq) return result;
        }
    }
    // A path mutation: resolved and made under the writer lock, as one step.
    template <class Body>
    auto writing(Body&& body) {
        auto lock = engine_->lock();
        WriteOps o{{*engine_, kLiveGen}, engine_};
        paths::PathApi<WriteOps> api(o);
        return body(api);
    }

public:
    // --- nodes: every node handed out is held (Backend::forget gives it back) ---
    Result<Entry> lookup(Node dir, std::string_view name) override {
        if (auto ok = check_name(name, "lookup"); !ok) return std::unexpected(ok.error());
        Ref found;
        {
            rcu::ReadSection section;
            auto d = engine_->by_ino(dir.id, kLiveGen);
            if (!d) return std::unexpected(d.error());
            if (!d->is_dir()) return fail(ENOTDIR, "lookup", name);
            auto c = engine_->child(*d, name, kLiveGen);
            if (!c) return std::unexpected(c.error());
            if (!*c) return fail(ENOENT, "lookup", name);
            found = **c;
        }
        // Its inode may go between the walk and the hold: the name was removed first, so the
        // lookup answers as if it came after.
        auto entry = held_entry(found.ino);
        if (!entry && entry.error().code() == ESTALE) return fail(ENOENT, "lookup", name);
        return entry;
    }
    Result<Entry> lookup_ino(uint64_t ino) override { return held_entry(ino); }
    void forget(Node node, uint64_t count) noexcept override {
        if (!node || node == kRootNode) return;
        Cell* cell = nullptr;
        {
            rcu::ReadSection section;
            cell = engine_->find_cell(node.id);
        }
        // A held node keeps its cell in the table, so it is found while references remain.
        for (uint64_t i = 0; cell && i < count; ++i) engine_->release(cell);
    }
    Result<Stat> getattr(Node node) override {
        return on_node(node, [&](const Ref& r) { return engine_->stat(r, kLiveGen); });
    }
    Result<std::vector<DirEntry>> list(Node dir) override {
        return on_node(dir, [&](const Ref& r) -> Result<std::vector<DirEntry>> {
            if (!r.is_dir()) return fail(ENOTDIR, "readdir");
            return engine_->list(r, kLiveGen);
        });
    }
    Result<std::vector<NamedEntry>> list_entries(Node dir) override {
        bool merged = false;
        std::vector<NamedEntry> out;
        std::vector<std::pair<std::string, uint64_t>> unheld;  // lower inodes: no cell yet
        {
            rcu::ReadSection section;  // the cells read below stay allocated until it ends
            auto d = engine_->by_ino(dir.id, kLiveGen);
            if (!d) return std::unexpected(d.error());
            if (!d->is_dir()) return fail(ENOTDIR, "readdir");
            auto found = engine_->own_entries(*d, kLiveGen);
            if (!found) return std::unexpected(found.error());
            merged = !*found;
            auto own = merged ? std::vector<std::pair<std::string, Ref>>() : std::move(**found);
            out.reserve(own.size());
            for (auto& [name, ref] : own) {
                if (!ref.cell) {
                    unheld.emplace_back(std::move(name), ref.ino);
                    continue;
                }
                // As lookup(): a cell dying or dead now was unlinked meanwhile.
                if (!ref.cell->try_hold()) continue;
                bool xattrs = true;
                auto st = engine_->stat(ref, kLiveGen, xattrs);
                if (!st) {
                    engine_->release(ref.cell);
                    continue;
                }
                out.push_back(NamedEntry{std::move(name), Entry{Node{ref.ino}, *st}, !xattrs});
            }
        }
        if (merged) return Interface::list_entries(dir);  // name by name, through the lower
        for (auto& [name, ino] : unheld) {
            auto entry = held_entry(ino);
            if (!entry) {
                if (entry.error().code() == ESTALE) continue;
                for (const NamedEntry& e : out) forget(e.entry.node, 1);
                return std::unexpected(entry.error().with_path(name));
            }
            out.push_back(NamedEntry{std::move(name), *entry});
        }
        return out;
    }
    Result<std::string> readlink(Node node) override {
        return on_node(node, [&](const Ref& r) -> Result<std::string> {
            if (r.type != FileType::symlink) return fail(EINVAL, "readlink");
            return engine_->target(r, kLiveGen);
        });
    }
    Result<FileHandle> open(Node node, int flags) override {
        Ref r;
        {
            rcu::ReadSection section;
            auto found = engine_->by_ino(node.id, kLiveGen);
            if (!found) return std::unexpected(found.error());
            r = *found;
        }
        return open_live(engine_, r, flags, false);
    }
    Result<std::string> getxattr(Node node, std::string_view name) override {
        if (auto ok = check_xattr_name(name, "getxattr"); !ok) return std::unexpected(ok.error());
        return on_node(node, [&](const Ref& r) { return engine_->getxattr(r, name, kLiveGen); });
    }
    Result<std::vector<std::string>> listxattr(Node node) override {
        return on_node(node, [&](const Ref& r) { return engine_->listxattr(r, kLiveGen); });
    }
    Result<StatFs> statfs(Node) override {
        rcu::ReadSection section;  // the layer it reads may be freed once no section holds it
        return engine_->statfs(kLiveGen);
    }
    Backend::InodeNumbering inode_numbering() const override { return {true, engine_->next_ino()}; }

    Result<Created> create(Node dir, std::string_view name, int flags, uint32_t mode,
                           std::optional<Owner> owner) override {
        if (auto ok = check_name(name, "create"); !ok) return std::unexpected(ok.error());
        if ((flags & O_ACCMODE) == O_ACCMODE) return fail(EINVAL, "create", name);
        FileHandle file;
        uint64_t ino = 0;
        {
            auto lock = engine_->lock();
            auto d = engine_->by_ino(dir.id, kLiveGen);
            if (!d) return std::unexpected(d.error());
            auto existing = engine_->child(*d, name, kLiveGen);
            if (!existing) return std::unexpected(existing.error());
            if (*existing) {
                if (flags & O_EXCL) return fail(EEXIST, "create", name);
                auto opened = open_live(engine_, **existing, flags, true);
                if (!opened) return std::unexpected(opened.error());
                file = std::move(*opened);
                ino = (*existing)->ino;
            } else {
                auto made = engine_->make(*d, name, FileType::regular, mode, 0, {}, owner);
                if (!made) return std::unexpected(made.error());
                if (!made->cell->try_hold()) return fail(ESTALE, "create", name);
                file = std::make_unique<LiveFile>(engine_, made->cell, flags);
                ino = made->ino;
            }
        }
        auto entry = held_entry(ino);
        if (!entry) return std::unexpected(entry.error());
        return Created{*entry, std::move(file)};
    }
    Result<Entry> mkdir(Node dir, std::string_view name, uint32_t mode,
                        std::optional<Owner> owner) override {
        return make(dir, name, FileType::directory, mode, 0, {}, owner, "mkdir");
    }
    Result<Entry> mknod(Node dir, std::string_view name, FileType type, uint32_t mode,
                        uint64_t rdev, std::optional<Owner> owner) override {
        if (type == FileType::directory || type == FileType::symlink)
            return fail(EINVAL, "mknod", name);
        return make(dir, name, type, mode, rdev, {}, owner, "mknod");
    }
    Result<Entry> symlink(Node dir, std::string_view name, std::string_view target,
                          std::optional<Owner> owner) override {
        if (auto ok = check_symlink_target(target, name); !ok) return std::unexpected(ok.error());
        return make(dir, name, FileType::symlink, 0777, 0, target, owner, "symlink");
    }
    Result<Entry> link(Node node, Node dir, std::string_view name) override {
        if (auto ok = check_name(name, "link"); !ok) return std::unexpected(ok.error());
        {
            auto lock = engine_->lock();
            auto n = engine_->by_ino(node.id, kLiveGen);
            if (!n) return std::unexpected(n.error());
            auto d = engine_->by_ino(dir.id, kLiveGen);
            if (!d) return std::unexpected(d.error());
            if (auto ok = engine_->link(*n, *d, name); !ok) return std::unexpected(ok.error());
        }
        return held_entry(node.id);
    }
    Result<void> unlink(Node dir, std::string_view name) override {
        return in_dir(dir, name, "unlink", [&](const Ref& d) { return engine_->unlink(d, name); });
    }
    Result<void> rmdir(Node dir, std::string_view name) override {
        return in_dir(dir, name, "rmdir", [&](const Ref& d) { return engine_->rmdir(d, name); });
    }
    Result<void> rename(Node dir, std::string_view name, Node to_dir, std::string_view to_name,
                        RenameFlags flags) override {
        if (auto ok = check_name(name, "rename"); !ok) return ok;
        if (auto ok = check_name(to_name, "rename"); !ok) return ok;
        auto lock = engine_->lock();
        auto from = engine_->by_ino(dir.id, kLiveGen);
        if (!from) return std::unexpected(from.error());
        auto to = engine_->by_ino(to_dir.id, kLiveGen);
        if (!to) return std::unexpected(to.error());
        return engine_->rename(*from, name, *to, to_name, flags, false);
    }
    Result<Stat> setattr(Node node, const SetAttr& change) override {
        auto lock = engine_->lock();
        auto r = engine_->by_ino(node.id, kLiveGen);
        if (!r) return std::unexpected(r.error());
        return engine_->setattr(*r, change);
    }
    // Between two files of this tree: their chunks shared (Engine::clone_range) where the
    // offsets allow, else the default's copy through handles.
    Result<uint64_t> copy_range(Node from, uint64_t offset, Node to, uint64_t to_offset,
                                uint64_t length) override {
        // The source held across the call (a lower file's stub made if need be); released
        // after the lock, since the last release of an orphan takes it.
        auto source = engine_->hold(from.id);
        if (!source) return std::unexpected(source.error());
        const std::unique_ptr<Cell, CellRelease> held(*source, CellRelease{engine_.get()});
        {
            auto lock = engine_->lock();
            auto target = engine_->by_ino(to.id, kLiveGen);
            if (!target) return std::unexpected(target.error());
            if (target->type == FileType::directory) return fail(EISDIR, "copy_file_range");
            if (target->type != FileType::regular) return fail(EINVAL, "copy_file_range");
            auto cell = engine_->own(*target);
            if (!cell) return std::unexpected(cell.error());
            auto shared = engine_->clone_range(*source, offset, *cell, to_offset, length);
            if (!shared) return std::unexpected(shared.error());
            if (*shared) return **shared;
        }
        return Interface::copy_range(from, offset, to, to_offset, length);
    }
    Result<void> setxattr(Node node, std::string_view name, std::string_view value,
                          XattrMode mode) override {
        if (auto ok = check_xattr_name(name, "setxattr"); !ok) return ok;
        if (auto ok = check_xattr_value(value); !ok) return ok;
        auto lock = engine_->lock();
        auto r = engine_->by_ino(node.id, kLiveGen);
        if (!r) return std::unexpected(r.error());
        return engine_->setxattr(*r, name, value, mode);
    }
    Result<void> removexattr(Node node, std::string_view name) override {
        if (auto ok = check_xattr_name(name, "removexattr"); !ok) return ok;
        auto lock = engine_->lock();
        auto r = engine_->by_ino(node.id, kLiveGen);
        if (!r) return std::unexpected(r.error());
        return engine_->removexattr(*r, name);
    }

    // --- paths: reads lock-free, mutations under the writer lock ---
    Result<Stat> stat(std::string_view p) override {
        return reading([&](auto& api) { return api.stat(p, true, "stat"); });
    }
    Result<Stat> lstat(std::string_view p) override {
        return reading([&](auto& api) { return api.stat(p, false, "lstat"); });
    }
    Result<std::vector<DirEntry>> readdir(std::string_view p) override {
        return reading([&](auto& api) { return api.readdir(p); });
    }
    Result<std::string> readlink(std::string_view p) override {
        return reading([&](auto& api) { return api.readlink(p); });
    }
    Result<StatFs> statfs(std::string_view p) override {
        return reading([&](auto& api) { return api.statfs(p); });
    }
    Result<std::string> getxattr(std::string_view p, std::string_view name) override {
        return reading([&](auto& api) { return api.getxattr(p, name); });
    }
    Result<std::vector<std::string>> listxattr(std::string_view p) override {
        return reading([&](auto& api) { return api.listxattr(p); });
    }
    Result<FileHandle> open(std::string_view p, int flags, uint32_t mode) override {
        const bool changes = (flags & O_CREAT) || (flags & O_ACCMODE) != O_RDONLY;
        if (changes) return writing([&](auto& api) { return api.open(p, flags, mode); });
        return reading([&](auto& api) { return api.open(p, flags, mode); });
    }
    Result<void> truncate(std::string_view p, uint64_t size) override {
        return writing([&](auto& api) { return api.truncate(p, size); });
    }
    Result<void> mkdir(std::string_view p, uint32_t mode) override {
        return writing([&](auto& api) { return api.mkdir(p, mode); });
    }
    Result<void> rmdir(std::string_view p) override {
        return writing([&](auto& api) { return api.rmdir(p); });
    }
    Result<void> unlink(std::string_view p) override {
        return writing([&](auto& api) { return api.unlink(p); });
    }
    Result<void> rename(std::string_view from, std::string_view to, RenameFlags flags) override {
        return writing([&](auto& api) { return api.rename(from, to, flags); });
    }
    Result<void> symlink(std::string_view target, std::string_view link_path) override {
        return writing([&](auto& api) { return api.symlink(target, link_path); });
    }
    Result<void> link(std::string_view existing, std::string_view new_path) override {
        return writing([&](auto& api) { return api.link(existing, new_path); });
    }
    Result<void> mknod(std::string_view p, FileType type, uint32_t mode, uint64_t rdev) override {
        return writing([&](auto& api) { return api.mknod(p, type, mode, rdev); });
    }
    Result<void> chmod(std::string_view p, uint32_t mode) override {
        return writing([&](auto& api) { return api.chmod(p, mode); });
    }
    Result<void> chown(std::string_view p, uint32_t uid, uint32_t gid, Follow follow) override {
        return writing([&](auto& api) { return api.chown(p, uid, gid, follow); });
    }
    Result<void> utimens(std::string_view p, TimeUpdate atime, TimeUpdate mtime,
                         Follow follow) override {
        return writing([&](auto& api) { return api.utimens(p, atime, mtime, follow); });
    }
    Result<void> setxattr(std::string_view p, std::string_view name, std::string_view value,
                          XattrMode mode) override {
        return writing([&](auto& api) { return api.setxattr(p, name, value, mode); });
    }
    Result<void> removexattr(std::string_view p, std::string_view name) override {
        return writing([&](auto& api) { return api.removexattr(p, name); });
    }

    Result<std::shared_ptr<Backend>> snapshot() override {
        Engine::SnapshotInfo info;
        {
            auto lock = engine_->lock();
            info = engine_->take_snapshot();
        }
        return make_snapshot_backend(engine_, info);
    }
    bool read_only() const noexcept override { return false; }

protected:
    std::shared_ptr<Engine> engine_;
};

}  // namespace packfs::mem
