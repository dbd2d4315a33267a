// The writer's entry for any TreeSource (tests use it to feed a source in a chosen order).
#pragma once

#include <string_view>

#include "pack/test_hooks.hpp"
#include "pack/writer/tree_source.hpp"
#include "packfs/pack.hpp"

namespace packfs::pack {

Result<PackStats> write_pack_from_source(TreeSource& source, std::string_view out_path,
                                         const PackWriteOptions& options,
                                         const WriteHooks& hooks = {});

}  // namespace packfs::pack
