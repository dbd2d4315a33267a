// The commit interval of an explicit volume (VolumeOptions::commit_interval): a thread that
// makes everything appended durable at least that often, as ext4's commit= bounds what a crash
// can lose. It also makes the syncs the journal writer asks for once it has written kSyncBytes
// since the last one (JournalWriter::set_sync_due), so no mutation waits for an fdatasync
// under the volume's lock. A sync with nothing pending costs one uncontended lock, so it simply
// runs each interval; a failed one is left for the next interval or the next fsync to report.
#include "volume/volume_impl.hpp"

namespace packfs::volume {

void VolumeImpl::start_commit_timer() {
    if (durability_ != Durability::explicit_sync || options_.commit_interval.count() <= 0) return;
    Background& b = committer_;
    b.thread = std::thread([this, &b] {
        std::unique_lock lock(b.mu);
        for (;;) {
            b.cv.wait_for(lock, options_.commit_interval,
                          [&] { return b.stopping || commit_due_; });
            if (b.stopping) return;
            commit_due_ = false;
            lock.unlock();
            (void)sync();
            lock.lock();
        }
    });
    hook_writer(*writer_);
}

void VolumeImpl::hook_writer(JournalWriter& writer) {
    if (!committer_.thread.joinable()) return;  // the writer syncs by itself
    writer.set_sync_due([this] {
        std::lock_guard lock(committer_.mu);
        commit_due_ = true;
        committer_.cv.notify_one();
    });
}

}  // namespace packfs::volume
