// The commit interval of an explicit volume (VolumeOptions::commit_interval): a thread that
// makes everything appended durable at least that often, as ext4's commit= bounds what a crash
// can lose. A sync with nothing pending costs one uncontended lock, so it simply runs each
// interval; a failed one is left for the next interval or the next fsync to report.
#include "volume/volume_impl.hpp"

namespace packfs::volume {

void VolumeImpl::start_commit_timer() {
    if (durability_ != Durability::explicit_sync || options_.commit_interval.count() <= 0) return;
    commit_thread_ = std::thread([this] {
        std::unique_lock lock(commit_mu_);
        for (;;) {
            if (commit_cv_.wait_for(lock, options_.commit_interval, [&] { return commit_stop_; }))
                return;
            lock.unlock();
            (void)sync();
            lock.lock();
        }
    });
}

void VolumeImpl::stop_commit_timer() {
    if (!commit_thread_.joinable()) return;
    {
        std::lock_guard lock(commit_mu_);
        commit_stop_ = true;
    }
    commit_cv_.notify_all();
    commit_thread_.join();
}

}  // namespace packfs::volume
