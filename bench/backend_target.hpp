// Any packfs::Backend as a benchmark target: each operation shape through the contract.
#pragma once

#include <memory>
#include <optional>

#include "bench/target.hpp"
#include "bench/temp_dir.hpp"

namespace packfs::bench {

// `host_dir`, if given, is kept alive as long as the target (a backend over host storage,
// such as dir or volume, lives in it) and removed afterwards.
std::unique_ptr<Target> make_backend_target(std::shared_ptr<Backend> fs,
                                            std::optional<TempDir> host_dir = std::nullopt);

}  // namespace packfs::bench
