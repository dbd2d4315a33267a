// An open file of the volume (volume_impl.hpp): the tree's handle, moved to each new tree by
// inode number; its changes go through the volume (journaled.cpp) to be journaled by inode.
#include <fcntl.h>

#include "volume/volume_impl.hpp"

namespace packfs::volume {

VolumeFile::VolumeFile(std::shared_ptr<VolumeImpl> volume, FileHandle inner, uint64_t ino,
                       int flags)
    : volume_(std::move(volume)),
      inner_(std::move(inner)),
      ino_(ino),
      flags_(flags & (O_ACCMODE | O_APPEND)) {
    volume_->add_file(this);
}

VolumeFile::~VolumeFile() { volume_->remove_file(this); }

bool VolumeFile::move_to(Backend& next) {
    auto moved = next.open(Node{ino_}, flags_);
    std::unique_lock lock(mu_);
    if (!moved) {
        // Not there: it has no name left and stays on its tree. But a named file that could
        // not be opened on the new tree (no memory, a lower's I/O error) would read and write
        // a copy the volume no longer journals against: it fails from now on instead.
        auto st = inner_->fstat();
        if (st && st->nlink > 0) lost_ = moved.error().relabeled("volume file", {});
        return false;
    }
    inner_ = std::move(*moved);
    return true;
}

template <class Body>
auto VolumeFile::with_inner(Body&& body) -> decltype(body(std::declval<File&>())) {
    std::shared_lock lock(mu_);
    if (lost_) return std::unexpected(*lost_);
    return body(*inner_);
}

Result<File*> VolumeFile::inner_locked() {
    if (lost_) return std::unexpected(*lost_);
    return inner_.get();
}

Result<std::size_t> VolumeFile::pread(std::span<std::byte> buf, uint64_t offset) {
    return with_inner([&](File& f) { return f.pread(buf, offset); });
}
Result<Stat> VolumeFile::fstat() {
    return with_inner([&](File& f) { return f.fstat(); });
}
Result<uint64_t> VolumeFile::seek_data(uint64_t offset, bool data) {
    return with_inner([&](File& f) { return f.seek_data(offset, data); });
}
Result<void> VolumeFile::allocate(int mode, uint64_t offset, uint64_t length) {
    if ((flags_ & O_ACCMODE) == O_RDONLY) return fail(EBADF, "fallocate");
    return volume_->allocate_by_handle(*this, mode, offset, length);
}
Result<std::size_t> VolumeFile::pwrite(std::span<const std::byte> data, uint64_t offset) {
    if ((flags_ & O_ACCMODE) == O_RDONLY) return fail(EBADF, "write");
    return volume_->write_by_handle(*this, data, offset);
}
Result<void> VolumeFile::truncate(uint64_t size) {
    if ((flags_ & O_ACCMODE) == O_RDONLY) return fail(EINVAL, "ftruncate");
    return volume_->truncate_by_handle(*this, size);
}
Result<void> VolumeFile::fsync(bool) {
    // always and batch: every change was durable when it returned. explicit: any handle's
    // fsync (a read-only one too: coreutils' `sync FILE`) makes the volume durable.
    if (volume_->durability() != Durability::explicit_sync) return {};
    return volume_->sync();
}

}  // namespace packfs::volume
