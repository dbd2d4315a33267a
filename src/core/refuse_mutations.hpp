// The mutations of a read-only backend: every one answers EROFS naming its path (DESIGN §4).
// A mixin over the backend's own base, so read-only backends of different families (a mem
// snapshot, a pack) share one definition: `class X final : public RefuseMutations<Base>`.
// open() and truncate-by-handle stay the backend's own: what exists answers first there.
#pragma once

#include <string_view>

#include "packfs/backend.hpp"
#include "packfs/path.hpp"

namespace packfs {

template <class Base>
class RefuseMutations : public Base {
public:
    using Base::Base;

    Result<void> truncate(std::string_view p, uint64_t) override { return fail(EROFS, "truncate", p); }
    Result<void> mkdir(std::string_view p, uint32_t) override { return fail(EROFS, "mkdir", p); }
    Result<void> rmdir(std::string_view p) override { return fail(EROFS, "rmdir", p); }
    Result<void> unlink(std::string_view p) override { return fail(EROFS, "unlink", p); }
    Result<void> rename(std::string_view p, std::string_view, RenameFlags) override {
        return fail(EROFS, "rename", p);
    }
    Result<void> symlink(std::string_view target, std::string_view p) override {
        if (auto ok = check_symlink_target(target, p); !ok) return ok;
        return fail(EROFS, "symlink", p);
    }
    Result<void> link(std::string_view, std::string_view p) override { return fail(EROFS, "link", p); }
    Result<void> mknod(std::string_view p, FileType, uint32_t, uint64_t) override {
        return fail(EROFS, "mknod", p);
    }
    Result<void> chmod(std::string_view p, uint32_t) override { return fail(EROFS, "chmod", p); }
    Result<void> chown(std::string_view p, uint32_t, uint32_t, Follow) override {
        return fail(EROFS, "chown", p);
    }
    Result<void> utimens(std::string_view p, TimeUpdate, TimeUpdate, Follow) override {
        return fail(EROFS, "utimens", p);
    }
    Result<void> setxattr(std::string_view p, std::string_view, std::string_view, XattrMode) override {
        return fail(EROFS, "setxattr", p);
    }
    Result<void> removexattr(std::string_view p, std::string_view) override {
        return fail(EROFS, "removexattr", p);
    }
    bool read_only() const noexcept override { return true; }
};

}  // namespace packfs
