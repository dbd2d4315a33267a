// The time budget of a disk-bound arm: its run stops after its n operations or after
// `seconds` of timed work, whichever comes first. The harness then scales the run's time to n
// from the operations it did: every rate in the table is per operation, so a cut run stays
// comparable with a whole one, and a day when the disk is slow costs the benchmark its budget
// rather than half an hour of fsyncs.
//
// The untimed teardown that removes what a run made is bounded too: on a busy disk mounted
// with `discard`, removing an entry has cost 3 ms where making it cost tens of microseconds,
// so a run that makes entries also stops at as many as the scratch fs removes in `seconds`
// (RemovalCost below, measured on the teardowns so far).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>

namespace packfs::bench {

// What removing an entry costs on the scratch fs: over the teardowns that removed at least
// kMinSample entries (fewer would measure one large file's extents, not the per-entry cost
// that grows with a run's count), the larger of the last one's cost and a decayed average. A
// busy disk's cost changes within minutes, and a kind of entry can cost ten times another
// (directories against files): one slow teardown bounds the next run at once.
class RemovalCost {
public:
    static constexpr uint64_t kMinSample = 64;
    // The scratch fs's: every TempDir teardown reports to it.
    static RemovalCost& scratch();

    void record(uint64_t entries, double seconds) noexcept;
    // Seconds per entry; none before the first sample.
    std::optional<double> per_entry() const noexcept;

private:
    double entries_ = 0, seconds_ = 0;  // decayed sums
    double last_ = 0;                   // the last teardown's seconds per entry
};

class RunBudget {
public:
    // The fewest entries a run is held to by its removal cost: a median per operation needs
    // some, and on any disk a hundred removals are a fraction of a second.
    static constexpr uint64_t kMinEntries = 100;

    explicit RunBudget(double seconds = 0) : seconds_(seconds) {}

    double seconds() const noexcept { return seconds_; }
    bool limited() const noexcept { return seconds_ > 0; }

    // Before a run: forget the last one's count, and take the entries it may make from the
    // scratch fs's removal cost now (none known: no cap but the time).
    void reset() noexcept {
        done_.reset();
        removal_cut_.store(false, std::memory_order_relaxed);
        max_entries_ = std::numeric_limits<uint64_t>::max();
        if (!limited()) return;
        if (auto per = RemovalCost::scratch().per_entry(); per && *per > 0) {
            const double fit = seconds_ / *per;
            if (fit < static_cast<double>(std::numeric_limits<uint64_t>::max()))
                max_entries_ = std::max(kMinEntries, static_cast<uint64_t>(fit));
        }
    }
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
    // The same for a loop that has left `made` entries on the disk for the teardown: it also
    // stops at what the teardown can remove within the budget.
    bool spent(uint64_t made) noexcept {
        if (!limited()) return false;
        if (made >= max_entries_) {
            removal_cut_.store(true, std::memory_order_relaxed);
            return true;
        }
        return spent();
    }
    // The run stopped early, after `done` of its operations (not called: it did them all).
    // A run cut twice (its setup, then its timed part) did the smaller count.
    void stopped_after(uint64_t done) noexcept { done_ = done_ ? std::min(*done_, done) : done; }
    std::optional<uint64_t> stopped_after() const noexcept { return done_; }
    // A run that works on entries made once before all the runs (a group's setup, bounded by
    // `setup`): cut where that setup was.
    void cut_as(const RunBudget& setup) noexcept {
        if (setup.done_) stopped_after(*setup.done_);
        if (setup.stopped_at_removal()) removal_cut_.store(true, std::memory_order_relaxed);
    }
    // Whether it stopped at the entries its teardown may remove rather than at the time.
    bool stopped_at_removal() const noexcept {
        return removal_cut_.load(std::memory_order_relaxed);
    }

private:
    double seconds_;
    std::chrono::steady_clock::time_point deadline_{};
    std::optional<uint64_t> done_;
    uint64_t max_entries_ = std::numeric_limits<uint64_t>::max();
    std::atomic<bool> removal_cut_{false};  // threads of one run may set it
};

}  // namespace packfs::bench
