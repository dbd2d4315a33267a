#include "volume/powercut/disk_log.hpp"

#include <limits.h>
#include <stdlib.h>

#include <fmt/format.h>

namespace packfs::powercut {

using io::IoEventKind;

std::string describe(const DiskOp& op) {
    switch (op.kind) {
        case IoEventKind::create: return fmt::format("create {}", op.name);
        case IoEventKind::unlink: return fmt::format("unlink {}", op.name);
        case IoEventKind::write:
            return fmt::format("write {} @{} +{}", op.name, op.offset, op.data.size());
        case IoEventKind::truncate: return fmt::format("ftruncate {} to {}", op.name, op.offset);
        case IoEventKind::fsync:
            return fmt::format("{} {}", op.data_only ? "fdatasync" : "fsync", op.name);
        case IoEventKind::rename: return fmt::format("rename {} -> {}", op.name, op.to);
        case IoEventKind::fsync_dir: return "fsync_dir";
    }
    return "?";
}

DiskRecorder::DiskRecorder(const std::string& dir) {
    char resolved[PATH_MAX];
    dir_ = ::realpath(dir.c_str(), resolved) ? std::string(resolved) : dir;
    io::set_recorder([this](const io::IoEvent& event) { on_event(event); });
}

DiskRecorder::~DiskRecorder() {
    if (recording_) io::set_recorder({});
}

std::size_t DiskRecorder::count() const {
    std::lock_guard lock(mu_);
    return ops_.size();
}

std::vector<DiskOp> DiskRecorder::stop() {
    if (recording_) io::set_recorder({});
    recording_ = false;
    std::lock_guard lock(mu_);
    return std::move(ops_);
}

std::vector<std::string> DiskRecorder::problems() const {
    std::lock_guard lock(mu_);
    return problems_;
}

std::string DiskRecorder::name_in_dir(std::string_view path) {
    if (!path.starts_with(dir_) || path.size() <= dir_.size() + 1 || path[dir_.size()] != '/')
        return {};
    std::string name(path.substr(dir_.size() + 1));
    if (name.find('/') != std::string::npos) {
        problems_.push_back(fmt::format("a file in a subdirectory: {}", path));
        return {};
    }
    return name;
}

void DiskRecorder::on_event(const io::IoEvent& event) {
    std::lock_guard lock(mu_);
    DiskOp op;
    op.kind = event.kind;
    op.ino = event.ino;
    op.offset = event.offset;
    op.data_only = event.data_only;
    if (event.kind == IoEventKind::fsync_dir) {
        if (event.path != dir_) return;  // another directory's entries
        ops_.push_back(std::move(op));
        return;
    }
    op.name = name_in_dir(event.path);
    if (event.kind == IoEventKind::rename) {
        op.to = name_in_dir(event.to);
        if (op.name.empty() != op.to.empty())
            problems_.push_back(
                fmt::format("a rename into or out of the directory: {} -> {}", event.path, event.to));
        if (op.name.empty() || op.to.empty()) return;
    } else if (op.name.empty()) {
        return;
    }
    if (event.kind == IoEventKind::write)
        op.data.assign(reinterpret_cast<const char*>(event.data.data()), event.data.size());
    ops_.push_back(std::move(op));
}

}  // namespace packfs::powercut
