// The walker's view of the engine (core/path_api.hpp instantiates PathApi over these): ReadOps
// reads at one generation and refuses every change; WriteOps is the live tree under the writer
// lock (reads and every mutation); LiveReadOps the live tree outside the lock (reads, open only
// for reading).
#pragma once

#include <fcntl.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/walker.hpp"
#include "mem/engine.hpp"
#include "mem/mem_files.hpp"
#include "packfs/backend.hpp"

namespace packfs::mem {

// Reads at one generation (inside an RCU read section, or under the writer lock).
struct ReadOps {
    using NodeT = Ref;
    Engine& engine;
    uint64_t gen;

    Result<Ref> root() const { return engine.root(gen); }
    Result<std::optional<walk::Step<Ref>>> lookup(const Ref& dir, std::string_view name) const {
        auto c = engine.child(dir, name, gen);
        if (!c) return std::unexpected(c.error());
        if (!*c) return std::nullopt;
        return walk::Step<Ref>{**c, (*c)->type};
    }
    Result<std::string> readlink(const Ref& link) const { return engine.target(link, gen); }
    void release(const Ref&) const noexcept {}
    bool same(const Ref& a, const Ref& b) const noexcept { return a.ino == b.ino; }
    bool has_entries(const Ref& dir) const {
        auto full = engine.has_entries(dir, gen);
        return !full || *full;
    }
    Result<Stat> getattr(const Ref& node) const { return engine.stat(node, gen); }
    Result<std::vector<DirEntry>> list(const Ref& dir) const { return engine.list(dir, gen); }
    Result<std::string> getxattr(const Ref& node, std::string_view name) const {
        return engine.getxattr(node, name, gen);
    }
    Result<std::vector<std::string>> listxattr(const Ref& node) const {
        return engine.listxattr(node, gen);
    }
    Result<StatFs> statfs(const Ref&) const { return engine.statfs(gen); }

    // What a read may not do (the writer's ops, WriteOps, do it).
    template <class... A>
    Result<FileHandle> create(A&&...) const {
        return fail(EROFS, "open");
    }
    template <class... A>
    Result<void> refuse(A&&...) const {
        return fail(EROFS, "change");
    }
    Result<void> mkdir(const Ref&, std::string_view, uint32_t) const { return refuse(); }
    Result<void> mknod(const Ref&, std::string_view, FileType, uint32_t, uint64_t) const {
        return refuse();
    }
    Result<void> symlink(const Ref&, std::string_view, std::string_view) const { return refuse(); }
    Result<void> link(const Ref&, const Ref&, std::string_view) const { return refuse(); }
    Result<void> unlink(const Ref&, std::string_view) const { return refuse(); }
    Result<void> rmdir(const Ref&, std::string_view) const { return refuse(); }
    Result<void> rename(const Ref&, std::string_view, const Ref&, std::string_view,
                        RenameFlags) const {
        return refuse();
    }
    Result<void> setattr(const Ref&, const SetAttr&) const { return refuse(); }
    Result<void> setxattr(const Ref&, std::string_view, std::string_view, XattrMode) const {
        return refuse();
    }
    Result<void> removexattr(const Ref&, std::string_view) const { return refuse(); }
};

// The live tree under the writer lock: reads and every mutation.
struct WriteOps : ReadOps {
    const std::shared_ptr<Engine>& shared;

    bool read_only() const noexcept { return false; }
    Result<FileHandle> open(const Ref& node, int flags) const {
        return open_live(shared, node, flags, true);
    }
    Result<FileHandle> create(const Ref& dir, std::string_view name, int flags,
                              uint32_t mode) const {
        // The path layer looked the name up under this same lock: it is free.
        auto made = engine.make(dir, name, FileType::regular, mode, 0, {}, std::nullopt, true);
        if (!made) return std::unexpected(made.error());
        if (!made->cell->try_hold()) return fail(ESTALE, "open");
        return std::make_unique<LiveFile>(shared, made->cell, flags);
    }
    static Result<void> done(Result<Ref>&& r) {
        if (!r) return std::unexpected(r.error());
        return {};
    }
    Result<void> mkdir(const Ref& dir, std::string_view name, uint32_t mode) const {
        return done(engine.make(dir, name, FileType::directory, mode, 0, {}, std::nullopt));
    }
    Result<void> mknod(const Ref& dir, std::string_view name, FileType type, uint32_t mode,
                       uint64_t rdev) const {
        return done(engine.make(dir, name, type, mode, rdev, {}, std::nullopt));
    }
    Result<void> symlink(const Ref& dir, std::string_view name, std::string_view target) const {
        return done(engine.make(dir, name, FileType::symlink, 0777, 0, target, std::nullopt));
    }
    Result<void> link(const Ref& node, const Ref& dir, std::string_view name) const {
        return engine.link(node, dir, name);
    }
    Result<void> unlink(const Ref& dir, std::string_view name) const {
        return engine.unlink(dir, name);
    }
    Result<void> rmdir(const Ref& dir, std::string_view name) const {
        return engine.rmdir(dir, name);
    }
    Result<void> rename(const Ref& dir, std::string_view name, const Ref& to_dir,
                        std::string_view to_name, RenameFlags flags) const {
        return engine.rename(dir, name, to_dir, to_name, flags, true);
    }
    Result<void> setattr(const Ref& node, const SetAttr& change) const {
        auto st = engine.setattr(node, change);
        if (!st) return std::unexpected(st.error());
        return {};
    }
    Result<void> setxattr(const Ref& node, std::string_view name, std::string_view value,
                          XattrMode mode) const {
        return engine.setxattr(node, name, value, mode);
    }
    Result<void> removexattr(const Ref& node, std::string_view name) const {
        return engine.removexattr(node, name);
    }
};

// The live tree outside the lock: reads (open only for reading).
struct LiveReadOps : ReadOps {
    const std::shared_ptr<Engine>& shared;

    bool fast_lookup(const Ref& dir, std::string_view name, walk::Step<Ref>& out) const {
        auto c = engine.child_fast(dir, name);
        if (!c) return false;
        out = walk::Step<Ref>{*c, c->type};
        return true;
    }
    bool read_only() const noexcept { return false; }
    Result<FileHandle> open(const Ref& node, int flags) const {
        return open_live(shared, node, flags, false);
    }
};

}  // namespace packfs::mem
