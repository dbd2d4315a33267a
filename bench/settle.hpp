// Flushing the scratch filesystem between runs, within a time limit. syncfs writes back
// everything dirty on that filesystem, other programs' writes included: on a shared, busy disk
// one call can take a minute. With a limit, a run waits that long for the flush and then goes
// ahead while it finishes (one flush in flight at a time); the report counts such flushes.
#pragma once

#include <cstdint>
#include <string>

namespace packfs::bench {

// How long settle_host_filesystem waits; 0 (the start): as long as the flush takes.
void set_settle_limit(double seconds);

// After a run's teardown (untimed), flush the scratch filesystem (writeback, the journal
// commit and, on a filesystem mounted with `discard`, the trims of what the teardown
// deleted), so that work does not land inside whichever timed run comes next.
void settle_host_filesystem(const std::string& scratch);

struct SettleCounts {
    uint64_t flushes = 0;     // settle calls
    uint64_t not_waited = 0;  // of them, those that went ahead before the flush had finished
};
SettleCounts settle_counts();

}  // namespace packfs::bench
