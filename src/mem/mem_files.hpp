// The mem backend's file handles: LiveFile on the live tree (its inode's cell held, so an
// unlinked file stays readable), SnapshotFile on a frozen generation, and open_live, which opens
// a node of the live tree (copying it up first when the handle writes).
#pragma once

#include <fcntl.h>

#include <memory>

#include "mem/engine.hpp"
#include "packfs/backend.hpp"

namespace packfs::mem {

// Gives back a hold taken with Engine::hold (outside the writer lock).
struct CellRelease {
    Engine* engine;
    void operator()(Cell* cell) const noexcept { engine->release(cell); }
};

// A handle on the live tree: the inode's cell, held (so an unlinked file stays), read at its
// latest state; writes go through the writer.
class LiveFile final : public File {
public:
    LiveFile(std::shared_ptr<Engine> engine, Cell* cell, int flags)
        : engine_(std::move(engine)),
          cell_(cell),
          readable_((flags & O_ACCMODE) != O_WRONLY),
          writable_((flags & O_ACCMODE) != O_RDONLY),
          append_(flags & O_APPEND) {}
    ~LiveFile() override { engine_->release(cell_); }

    Result<std::size_t> pread(std::span<std::byte> buf, uint64_t offset) override {
        if (!readable_) return fail(EBADF, "read");
        rcu::ReadSection section;
        return engine_->read_held(*cell_, buf, offset, lower_files_);
    }
    Result<std::size_t> pwrite(std::span<const std::byte> data, uint64_t offset) override {
        if (!writable_) return fail(EBADF, "write");
        auto lock = engine_->lock();
        return engine_->write(cell_, data, offset, append_);
    }
    Result<void> truncate(uint64_t size) override {
        if (!writable_) return fail(EINVAL, "ftruncate");  // as ftruncate(2) on a read-only fd
        auto lock = engine_->lock();
        return engine_->truncate(cell_, size);
    }
    Result<void> fsync(bool) override { return {}; }  // memory is as durable as it gets
    Result<void> allocate(int mode, uint64_t offset, uint64_t length) override {
        if (!writable_) return fail(EBADF, "fallocate");
        auto lock = engine_->lock();
        return engine_->allocate(cell_, mode, offset, length);
    }
    Result<uint64_t> seek_data(uint64_t offset, bool data) override {
        rcu::ReadSection section;
        return engine_->seek_held(*cell_, offset, data);
    }
    Result<Stat> fstat() override {
        rcu::ReadSection section;
        auto ref = current();
        if (!ref) return std::unexpected(ref.error());
        return engine_->stat(*ref, kLiveGen);
    }

private:
    // The node as it is now: the tree's own (a cell) or, for a stub, the lower's.
    Result<Ref> current() const {
        const CellState s = cell_->read();
        switch (s.kind) {
            case CellKind::live: return Ref{cell_->ino, cell_, s.lower, s.type, s.layer};
            case CellKind::stub: return Ref{cell_->ino, nullptr, s.lower, s.type, s.layer};
            case CellKind::dead: break;
        }
        return fail(ESTALE, "read");
    }

    std::shared_ptr<Engine> engine_;
    Cell* cell_;
    bool readable_, writable_, append_;
    LowerFiles lower_files_;
};

// A snapshot's generation, kept until the last backend and file of the snapshot go.
class SnapshotHold {
public:
    SnapshotHold(std::shared_ptr<Engine> engine, Engine::SnapshotInfo info)
        : engine_(std::move(engine)), info_(info) {}
    ~SnapshotHold() {
        {
            auto lock = engine_->lock();
            engine_->drop_snapshot(info_.gen);
        }
        engine_->free_layers();  // the lower only this snapshot still read, if any
    }
    Engine& engine() const noexcept { return *engine_; }
    const Engine::SnapshotInfo& info() const noexcept { return info_; }

private:
    std::shared_ptr<Engine> engine_;
    Engine::SnapshotInfo info_;
};

// A handle on a frozen generation: the inode it opened, forever.
class SnapshotFile final : public File {
public:
    SnapshotFile(std::shared_ptr<const SnapshotHold> snapshot, const Ref& ref)
        : snapshot_(std::move(snapshot)), ref_(ref) {}

    Result<std::size_t> pread(std::span<std::byte> buf, uint64_t offset) override {
        rcu::ReadSection section;
        return snapshot_->engine().read(ref_, buf, offset, snapshot_->info().gen, lower_files_);
    }
    Result<std::size_t> pwrite(std::span<const std::byte>, uint64_t) override {
        return fail(EBADF, "write");
    }
    Result<void> truncate(uint64_t) override { return fail(EINVAL, "ftruncate"); }
    Result<void> fsync(bool) override { return {}; }
    Result<Stat> fstat() override {
        rcu::ReadSection section;
        return snapshot_->engine().stat(ref_, snapshot_->info().gen);
    }
    Result<uint64_t> seek_data(uint64_t offset, bool data) override {
        rcu::ReadSection section;
        return snapshot_->engine().seek(ref_, offset, data, snapshot_->info().gen);
    }
    Result<void> allocate(int, uint64_t, uint64_t) override { return fail(EBADF, "fallocate"); }

private:
    std::shared_ptr<const SnapshotHold> snapshot_;
    Ref ref_;
    LowerFiles lower_files_;
};

// Opens a node of the live tree. With the writer lock held (`locked`) it may copy the node
// up (a handle that writes holds the tree's own cell) and truncate it; without, only for reading.
Result<FileHandle> open_live(const std::shared_ptr<Engine>& engine, const Ref& node, int flags,
                             bool locked);

}  // namespace packfs::mem
