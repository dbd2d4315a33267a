// The time budget of a disk-bound arm: its run stops after its n operations or after
// `seconds` of timed work, whichever comes first. The harness then scales the run's time to n
// from the operations it did: every rate in the table is per operation, so a cut run stays
// comparable with a whole one, and a day when the disk is slow costs the benchmark its budget
// rather than half an hour of fsyncs.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>

namespace packfs::bench {

class RunBudget {
public:
    explicit RunBudget(double seconds = 0) : seconds_(seconds) {}

    double seconds() const noexcept { return seconds_; }
    bool limited() const noexcept { return seconds_ > 0; }

    // Before a run: forget the last one's count.
    void reset() noexcept { done_.reset(); }
    // The timed part starts now: the deadline counts from here.
    void start() noexcept {
        deadline_ = std::chrono::steady_clock::now() +
                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                        std::chrono::duration<double>(seconds_));
    }
    // Whether the run must stop; never without a limit (a branch, no clock read). Threads of
    // one run may ask at once: start() happens before they are released.
    bool spent() const noexcept {
        return limited() && std::chrono::steady_clock::now() >= deadline_;
    }
    // The run stopped early, after `done` of its operations (not called: it did them all).
    // A run cut twice (its setup, then its timed part) did the smaller count.
    void stopped_after(uint64_t done) noexcept { done_ = done_ ? std::min(*done_, done) : done; }
    std::optional<uint64_t> stopped_after() const noexcept { return done_; }

private:
    double seconds_;
    std::chrono::steady_clock::time_point deadline_{};
    std::optional<uint64_t> done_;
};

}  // namespace packfs::bench
