// The host filesystem through plain syscalls: the baseline every backend is compared with.
#pragma once

#include <memory>
#include <string>

#include "bench/target.hpp"
#include "bench/temp_dir.hpp"

namespace packfs::bench {

// Operates in a fresh directory made under `parent`, removed when the target goes. With
// `fsync_files`, create_file fsyncs each file and write_large fsyncs before close.
Result<std::unique_ptr<Target>> make_raw_target(const std::string& parent, bool fsync_files);

}  // namespace packfs::bench
