// The tree put back after a journal failure (docs/VOLUME.md, "When the journal fails"). "A
// mutation that fails changes nothing": when the journal loses records, the tree must again be
// what the journal holds, and it stays the same tree, so node references and open files go on.
//
// - always, batch: a failed write or fdatasync discards the record and every one after it
//   (journal_writer.hpp). Before each change whose record the journal may still lose, the
//   volume takes a checkpoint of the tree (Overlay::checkpoint: a snapshot, O(1)); one goes
//   once its record is durable, so there are as many as records in flight. On a failure the
//   tree goes back to the checkpoint of the first record lost (Overlay::rollback, in place).
//   These modes wait for an fdatasync per change, so the checkpoint's cost does not show.
// - explicit: a failed write keeps every record until a sync succeeds, so none is ever lost;
//   a change is refused before it is made when the journal could not take its record
//   (JournalWriter::make_room), and the one record that could still be refused (larger than
//   a frame holds) never is: writes are split below that. No checkpoints: the fast mode pays
//   nothing for this.
#include <algorithm>

#include "volume/volume_impl.hpp"

namespace packfs::volume {

Result<void> VolumeImpl::checkpoint_locked() {
    const uint64_t durable = writer_->durable_seq();
    while (!checkpoints_.empty() && checkpoints_.front().seq <= durable) checkpoints_.pop_front();
    // A change that made no record leaves its checkpoint to the next one.
    const uint64_t next = writer_->last_seq() + 1;
    if (!checkpoints_.empty() && checkpoints_.back().seq == next) return {};
    auto taken = tree_->checkpoint();
    if (!taken) return std::unexpected(taken.error());
    checkpoints_.push_back(SeqCheckpoint{next, std::move(*taken)});
    return {};
}

void VolumeImpl::recover_locked(uint64_t first_lost) {
    auto at = std::find_if(checkpoints_.begin(), checkpoints_.end(),
                           [&](const SeqCheckpoint& c) { return c.seq == first_lost; });
    // (Every record not yet durable has one; without it the tree cannot be put back.)
    if (at == checkpoints_.end() || !tree_->rollback(at->checkpoint)) {
        broken_ = true;
        return;
    }
    checkpoints_.erase(at, checkpoints_.end());
    ++recoveries_;
    if (auto ok = writer_->resume(); !ok) broken_ = true;  // (nothing to resume: refused alone)
}

}  // namespace packfs::volume
