// What makes a second start faster (docs/REMOTE.md, "Prefetch"): `packfs mount --record-trace
// FILE` writes the path of every regular file the mount's users open, once each, in the order
// of their first open; `--prefetch FILE` reads the files such a list names in the background
// as soon as the mount is up, so that a remote pack's blocks are in the cache before they are
// asked for. A trace is a plain list of paths: it can be written or edited by hand.
#pragma once

#include <memory>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "packfs/backend.hpp"
#include "packfs/error.hpp"

namespace packfs::cli {

// `fs` wrapped so that every first open of a regular file appends its path to `trace_path`
// (created or truncated now; each line written as it happens, so a killed daemon's trace is
// complete up to its last open).
Result<std::shared_ptr<Backend>> record_trace(std::shared_ptr<Backend> fs,
                                              const std::string& trace_path);

// The paths listed in `list_path` (one per line; blank lines and lines starting with # are
// skipped).
Result<std::vector<std::string>> read_path_list(const std::string& list_path);

// Reads each of `paths` whole through `fs` with `threads` workers, in the background, until
// done or stopped (the returned threads are joined, and stop, when destroyed). A path that does
// not open is skipped.
std::vector<std::jthread> start_prefetch(std::shared_ptr<Backend> fs,
                                         std::vector<std::string> paths, unsigned threads = 4);

}  // namespace packfs::cli
