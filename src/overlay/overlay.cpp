// make_overlay (overlay.hpp): the overlay's live tree (overlay_backend.hpp) over a lower Backend,
// which the engine reaches only through a LowerView (lower_view.hpp), or over several stacked.
#include "packfs/overlay.hpp"

#include "overlay/lower_view.hpp"
#include "overlay/overlay_backend.hpp"
#include "overlay/stacked_backend.hpp"

namespace packfs {
namespace {

Result<void> check_lower(const std::shared_ptr<Backend>& lower) {
    if (!lower) return fail(EINVAL, "overlay");
    auto root = lower->getattr(kRootNode);
    if (!root) return std::unexpected(root.error());
    if (root->type != FileType::directory) return fail(ENOTDIR, "overlay", "/");
    return {};
}

MemOptions mem_options_of(const OverlayOptions& options) {
    MemOptions mem_options;
    mem_options.uid = options.uid;
    mem_options.gid = options.gid;
    mem_options.capacity_bytes = options.capacity_bytes;
    return mem_options;
}

}  // namespace

Result<std::shared_ptr<Overlay>> make_overlay(std::shared_ptr<Backend> lower,
                                              const OverlayOptions& options) {
    if (auto ok = check_lower(lower); !ok) return std::unexpected(ok.error());
    auto view = std::make_shared<overlay::LowerView>(std::move(lower));
    // A rebase keeps every inode number: both lowers must number as the overlay does.
    overlay::LowerMaker rebase_onto;
    if (view->keeps_numbers()) {
        rebase_onto = [](std::shared_ptr<Backend> next) -> Result<std::shared_ptr<mem::Lower>> {
            if (auto ok = check_lower(next); !ok) return std::unexpected(ok.error());
            auto next_view = std::make_shared<overlay::LowerView>(std::move(next));
            if (!next_view->keeps_numbers())
                return fail(EINVAL, "rebase (the new lower does not keep its inode numbers)");
            return next_view;
        };
    }
    return overlay::make_overlay_backend(std::move(view), mem_options_of(options),
                                         options.first_ino, std::move(rebase_onto));
}

Result<std::shared_ptr<Backend>> make_overlay(std::vector<std::shared_ptr<Backend>> lowers,
                                              const OverlayOptions& options) {
    if (lowers.empty()) return fail(EINVAL, "overlay (no lower)");
    if (lowers.size() == 1) return make_overlay(std::move(lowers.front()), options);
    for (auto& lower : lowers)
        if (auto ok = check_lower(lower); !ok) return std::unexpected(ok.error());
    return overlay::make_overlay_backend(
        std::make_shared<overlay::LowerView>(overlay::make_stacked_backend(std::move(lowers))),
        mem_options_of(options), options.first_ino);
}

}  // namespace packfs
