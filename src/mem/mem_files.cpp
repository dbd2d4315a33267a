// open_live: how the live tree opens a node (mem_files.hpp).
#include <fcntl.h>

#include <memory>

#include "core/checks.hpp"
#include "mem/mem_files.hpp"

namespace packfs::mem {

Result<FileHandle> open_live(const std::shared_ptr<Engine>& engine, const Ref& node, int flags,
                             bool locked) {
    if ((flags & O_ACCMODE) == O_ACCMODE) return fail(EINVAL, "open");
    if (auto ok = check_open_target(node.type, flags); !ok) return std::unexpected(ok.error());
    const bool writes = (flags & O_ACCMODE) != O_RDONLY;
    if (writes) {
        if (!locked) {
            auto lock = engine->lock();
            auto again = engine->by_ino(node.ino, kLiveGen);
            if (!again) return std::unexpected(again.error());
            return open_live(engine, *again, flags, true);
        }
        auto cell = engine->own(node);
        if (!cell) return std::unexpected(cell.error());
        if ((flags & O_TRUNC) && (*cell)->state.size > 0) {
            if (auto ok = engine->truncate(*cell, 0); !ok) return std::unexpected(ok.error());
        }
        if (!(*cell)->try_hold()) return fail(ESTALE, "open");
        return std::make_unique<LiveFile>(engine, *cell, flags);
    }
    auto cell = engine->hold(node);
    if (!cell) return std::unexpected(cell.error());
    return std::make_unique<LiveFile>(engine, *cell, flags);
}

}  // namespace packfs::mem
