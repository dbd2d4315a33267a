// The power-cut test's workload: a volume made and driven through a fixed sequence of
// mutations in one durability mode, closed and reopened once, with two compactions, while a
// DiskRecorder
// (disk_log.hpp) records every call that changed its directory. Each mutation is one
// Backend call, made on the volume and on a reference model (a mem backend given the same
// calls); the run keeps, for each, the calls recorded when it started and when it was
// acknowledged durable, and the model's tree after it (tree_dump.hpp).
//
// Acknowledged durable: in `always` and `batch` mode when the call returned; in `explicit`
// mode (commit interval off) when a later Volume::sync() returned. Mutations are made from
// one thread. Some are made while Volume::compact() runs, from core/io.hpp's fault hook at the
// compaction's named steps "compact.after_pack" (after the snapshot, before the new journal
// exists: their records are copied into it by the catch-up passes) and "compact.caught_up"
// (before the switch: copied under the volume's lock).
#pragma once

#include <cstddef>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "packfs/volume.hpp"
#include "volume/powercut/disk_log.hpp"

namespace packfs::powercut {

inline constexpr std::size_t kNever = std::numeric_limits<std::size_t>::max();

struct Mutation {
    std::string what;              // "write /big @0 +71680"
    std::size_t started = 0;       // calls recorded when it began
    std::size_t acked = kNever;    // calls recorded when it was acknowledged durable
};

struct RecordedRun {
    std::string scenario;             // "always", "batch", "explicit"
    Durability mode = Durability::always;
    std::vector<DiskOp> ops;          // every call in the volume's directory
    std::size_t created = 0;          // calls recorded when Volume::create returned
    std::vector<Mutation> mutations;
    std::vector<std::string> model_dumps;  // [i]: the model's tree after the first i mutations
    // Calls recorded when each named point was reached, in order ("mutation 3: create
    // /docs/a.txt 644" as it begins, "sync returned", "compact.after_pack", "manifest.after_rename",
    // "volume closed"): where a cut falls, for the report.
    std::vector<std::pair<std::size_t, std::string>> marks;

    // Mutations acknowledged durable by the time `cut` calls were recorded (a prefix).
    std::size_t acked_by(std::size_t cut) const;
    // Mutations that had begun before the `cut`-th call: at most these may have reached the disk.
    std::size_t started_before(std::size_t cut) const;
};

// Makes a volume in `dir` (an empty directory) and drives it through the workload in `mode`.
// The error names the mutation or step that failed.
Result<RecordedRun> record_workload(const std::string& dir, Durability mode);

}  // namespace packfs::powercut
