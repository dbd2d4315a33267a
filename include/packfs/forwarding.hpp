// ForwardingBackend (DESIGN §4): a Backend that hands every node call to another one, for a
// wrapper that changes one behaviour and keeps the rest (LLVM's ProxyFileSystem): a read-only
// view, tracing, fault injection for tests.
//
// What forwards is the node calls, the backend's own calls (snapshot, read_only, numbering) and
// nothing else: the path calls are the Backend defaults, walked through *this* object's node
// calls. So a wrapper that overrides lookup() or getattr() changes what stat("/a/b") answers
// too, without writing a path call; one that wants the inner backend's faster path calls
// overrides them to call inner()'s.
#pragma once

#include <memory>
#include <utility>

#include "packfs/backend.hpp"
#include "packfs/export.hpp"

namespace packfs {

class PACKFS_API ForwardingBackend : public Backend {
public:
    explicit ForwardingBackend(std::shared_ptr<Backend> inner) : inner_(std::move(inner)) {}

    Backend& inner() const noexcept { return *inner_; }
    const std::shared_ptr<Backend>& inner_ptr() const noexcept { return inner_; }

    // --- nodes ---
    Result<Entry> lookup(Node dir, std::string_view name) override {
        return inner_->lookup(dir, name);
    }
    Result<Entry> lookup_ino(uint64_t ino) override { return inner_->lookup_ino(ino); }
    void forget(Node node, uint64_t count) noexcept override { inner_->forget(node, count); }
    Result<Stat> getattr(Node node) override { return inner_->getattr(node); }
    Result<std::vector<DirEntry>> list(Node dir) override { return inner_->list(dir); }
    Result<std::string> readlink(Node node) override { return inner_->readlink(node); }
    Result<FileHandle> open(Node node, int flags) override { return inner_->open(node, flags); }
    Result<StatFs> statfs(Node node) override { return inner_->statfs(node); }
    InodeNumbering inode_numbering() const override { return inner_->inode_numbering(); }
    Result<Created> create(Node dir, std::string_view name, int flags, uint32_t mode,
                           std::optional<Owner> owner) override {
        return inner_->create(dir, name, flags, mode, owner);
    }
    Result<Entry> mkdir(Node dir, std::string_view name, uint32_t mode,
                        std::optional<Owner> owner) override {
        return inner_->mkdir(dir, name, mode, owner);
    }
    Result<Entry> mknod(Node dir, std::string_view name, FileType type, uint32_t mode,
                        uint64_t rdev, std::optional<Owner> owner) override {
        return inner_->mknod(dir, name, type, mode, rdev, owner);
    }
    Result<Entry> symlink(Node dir, std::string_view name, std::string_view target,
                          std::optional<Owner> owner) override {
        return inner_->symlink(dir, name, target, owner);
    }
    Result<Entry> link(Node node, Node dir, std::string_view name) override {
        return inner_->link(node, dir, name);
    }
    Result<void> unlink(Node dir, std::string_view name) override {
        return inner_->unlink(dir, name);
    }
    Result<void> rmdir(Node dir, std::string_view name) override { return inner_->rmdir(dir, name); }
    Result<void> rename(Node dir, std::string_view name, Node to_dir, std::string_view to_name,
                        RenameFlags flags) override {
        return inner_->rename(dir, name, to_dir, to_name, flags);
    }
    Result<Stat> setattr(Node node, const SetAttr& change) override {
        return inner_->setattr(node, change);
    }
    Result<uint64_t> copy_range(Node from, uint64_t offset, Node to, uint64_t to_offset,
                                uint64_t length) override {
        return inner_->copy_range(from, offset, to, to_offset, length);
    }
    Result<std::string> getxattr(Node node, std::string_view name) override {
        return inner_->getxattr(node, name);
    }
    Result<std::vector<std::string>> listxattr(Node node) override {
        return inner_->listxattr(node);
    }
    Result<void> setxattr(Node node, std::string_view name, std::string_view value,
                          XattrMode mode) override {
        return inner_->setxattr(node, name, value, mode);
    }
    Result<void> removexattr(Node node, std::string_view name) override {
        return inner_->removexattr(node, name);
    }

    // --- the backend ---
    Result<std::shared_ptr<Backend>> snapshot() override { return inner_->snapshot(); }
    bool read_only() const noexcept override { return inner_->read_only(); }

    // The path calls keep the Backend defaults (through the node calls above); these names stay
    // visible beside the node overloads.
    using Backend::getxattr;
    using Backend::link;
    using Backend::listxattr;
    using Backend::mkdir;
    using Backend::mknod;
    using Backend::open;
    using Backend::readlink;
    using Backend::removexattr;
    using Backend::rename;
    using Backend::rmdir;
    using Backend::setxattr;
    using Backend::statfs;
    using Backend::symlink;
    using Backend::unlink;

private:
    std::shared_ptr<Backend> inner_;
};

}  // namespace packfs
