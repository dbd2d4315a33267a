#include "packfs/overlay.hpp"

#include "mem/mem_version.hpp"
#include "overlay/backend_layer.hpp"
#include "overlay/pack_layer.hpp"
#include "overlay/stacked_layer.hpp"
#include "pack/pack_access.hpp"

namespace packfs {

namespace overlay {

mem::LowerPtr make_layer(std::shared_ptr<Backend> lower) {
    if (auto reader = pack::reader_of(*lower)) return make_pack_layer(std::move(reader));
    return make_backend_layer(std::move(lower));
}

}  // namespace overlay

namespace {

Result<void> check_lower(const std::shared_ptr<Backend>& lower) {
    if (!lower) return fail(EINVAL, "overlay");
    auto root = lower->stat("/");
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

Result<std::shared_ptr<Backend>> make_overlay(std::shared_ptr<Backend> lower,
                                              const OverlayOptions& options) {
    if (auto ok = check_lower(lower); !ok) return std::unexpected(ok.error());
    return mem::make_mem_backend_over(overlay::make_layer(std::move(lower)),
                                      mem_options_of(options));
}

Result<std::shared_ptr<Backend>> make_overlay(std::vector<std::shared_ptr<Backend>> lowers,
                                              const OverlayOptions& options) {
    if (lowers.empty()) return fail(EINVAL, "overlay (no lower)");
    if (lowers.size() == 1) return make_overlay(std::move(lowers.front()), options);
    std::vector<mem::LowerPtr> layers;
    for (auto& lower : lowers) {
        if (auto ok = check_lower(lower); !ok) return std::unexpected(ok.error());
        layers.push_back(overlay::make_layer(std::move(lower)));
    }
    return mem::make_mem_backend_over(overlay::make_stacked_layer(std::move(layers)),
                                      mem_options_of(options));
}

}  // namespace packfs
