#include "packfs/overlay.hpp"

#include "mem/mem_version.hpp"
#include "overlay/backend_layer.hpp"
#include "overlay/pack_layer.hpp"
#include "pack/pack_access.hpp"

namespace packfs {

namespace overlay {

mem::LowerPtr make_layer(std::shared_ptr<Backend> lower) {
    if (auto reader = pack::reader_of(*lower)) return make_pack_layer(std::move(reader));
    return make_backend_layer(std::move(lower));
}

}  // namespace overlay

Result<std::shared_ptr<Backend>> make_overlay(std::shared_ptr<Backend> lower,
                                              const OverlayOptions& options) {
    if (!lower) return fail(EINVAL, "overlay");
    if (auto root = lower->stat("/"); !root) {
        return std::unexpected(root.error());
    } else if (root->type != FileType::directory) {
        return fail(ENOTDIR, "overlay", "/");
    }
    MemOptions mem_options;
    mem_options.uid = options.uid;
    mem_options.gid = options.gid;
    mem_options.capacity_bytes = options.capacity_bytes;
    return mem::make_mem_backend_over(overlay::make_layer(std::move(lower)), mem_options);
}

}  // namespace packfs
