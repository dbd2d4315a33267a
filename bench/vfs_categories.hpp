// Category 10 of the earlier PackFS's benchmark, for the Vfs (DESIGN §11): how the mount
// table scales with the number of mounts.
#pragma once

#include <vector>

#include "bench/categories.hpp"
#include "bench/harness.hpp"

namespace packfs::bench {

// - "mount table": for each count in sizes.mounts (500, 2k, 8k), one run mounts that many
//   fresh mem backends at "/m/<i>", stats the one file in each through the Vfs, and unmounts
//   them, each step timed ("mount 8k backends", "resolve, 8k mounts", "unmount 8k
//   backends"); the counts are 1x, 4x and 16x the first, so the steps are in the scaling
//   check.
// - resolve through many mounts: sizes.resolves stats through a table of the first count of
//   mounts ("resolve 500 mounts, table of 500"), against the same number through a table
//   of sizes.mounts_many: reaching only 500 of its mounts ("resolve 500 mounts, table of
//   100k": the table's size alone) and reaching all of them ("resolve 100k mounts, table of
//   100k": the table's size plus 200x as many backends to keep in cache). Each table is
//   built once, untimed; the ratio is per op against the small table (flat means 1).
// Both groups warm up with one untimed run of each arm: their runs are milliseconds, and a
// process's first touch of freshly allocated memory would otherwise be one of them.
std::vector<Group> mount_table_groups(const Sizes& sizes);

}  // namespace packfs::bench
