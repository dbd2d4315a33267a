// An open file of the volume (volume_impl.hpp): the tree's handle; its changes go through the
// volume (journaled.cpp) to be journaled by inode.
#include <fcntl.h>

#include "volume/volume_impl.hpp"

namespace packfs::volume {

VolumeFile::VolumeFile(std::shared_ptr<VolumeImpl> volume, FileHandle inner, uint64_t ino,
                       int flags)
    : volume_(std::move(volume)),
      inner_(std::move(inner)),
      ino_(ino),
      flags_(flags & (O_ACCMODE | O_APPEND)) {}

Result<std::size_t> VolumeFile::pread(std::span<std::byte> buf, uint64_t offset) {
    return inner_->pread(buf, offset);
}
Result<Stat> VolumeFile::fstat() { return inner_->fstat(); }
Result<uint64_t> VolumeFile::seek_data(uint64_t offset, bool data) {
    return inner_->seek_data(offset, data);
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
