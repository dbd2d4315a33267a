// The commit interval of an explicit volume (VolumeOptions::commit_interval): a thread that
// makes everything appended durable at least that often, as ext4's commit= bounds what a crash
// can lose. A sync with nothing pending costs one uncontended lock, so it simply runs each
// interval; a failed one is left for the next interval or the next fsync to report.
#include "volume/volume_impl.hpp"

namespace packfs::volume {

void VolumeImpl::start_commit_timer() {
    if (durability_ != Durability::explicit_sync || options_.commit_interval.count() <= 0) return;
    Background& b = committer_;
    b.thread = std::thread([this, &b] {
        std::unique_lock lock(b.mu);
        while (!b.cv.wait_for(lock, options_.commit_interval, [&] { return b.stopping; })) {
            lock.unlock();
            (void)sync();
            lock.lock();
        }
    });
}

}  // namespace packfs::volume
