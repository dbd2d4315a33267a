#include "pack/writer/output_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>
#include <utility>

#include "core/io.hpp"

namespace packfs::pack {

namespace {

std::string directory_of(const std::string& path) {
    auto slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    if (slash == 0) return "/";
    return path.substr(0, slash);
}

// The output's errors name the pack being built, with op "build" (the CLI relies on it).
Result<void> as_build_error(Result<void> r) {
    if (r) return r;
    return fail(r.error().code(), "build", r.error().path());
}

}  // namespace

Result<OutputFile> OutputFile::create(std::string_view final_path) {
    std::string target(final_path);
    if (target.empty() || target.back() == '/') return fail(EISDIR, "build", target);
    std::string dir = directory_of(target);
    std::string base = target.substr(target.rfind('/') == std::string::npos ? 0 : target.rfind('/') + 1);
    std::random_device entropy;
    for (int attempt = 0; attempt < 16; ++attempt) {
        std::string temp = fmt::format("{}/.{}.tmp-{}-{:08x}", dir, base, ::getpid(), entropy());
        auto created = io::create_file(temp, O_WRONLY | O_CREAT | O_EXCL, 0644, target);
        if (created) return OutputFile(created->release(), std::move(temp), std::move(target));
        if (created.error().code() != EEXIST) return fail(created.error().code(), "build", target);
    }
    return fail(EEXIST, "build", target);
}

OutputFile::OutputFile(int fd, std::string temp_path, std::string final_path)
    : fd_(fd), temp_path_(std::move(temp_path)), final_path_(std::move(final_path)) {
    buffer_.reserve(kBufferBytes);
}

OutputFile::OutputFile(OutputFile&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)),
      temp_path_(std::move(o.temp_path_)),
      final_path_(std::move(o.final_path_)),
      buffer_(std::move(o.buffer_)),
      buffer_offset_(o.buffer_offset_),
      position_(o.position_),
      writeback_from_(o.writeback_from_),
      committed_(o.committed_) {}

OutputFile::~OutputFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_ && !temp_path_.empty()) (void)io::unlink(temp_path_, final_path_);
}

Result<void> OutputFile::write_fully(const std::byte* data, std::size_t size, uint64_t offset) {
    auto r = as_build_error(io::pwrite_all(fd_, {data, size}, offset, final_path_));
    if (r) start_writeback(offset + size);
    return r;
}

// Asks the kernel to start writing back what was written since the last call, once that is
// kWritebackBytes, without waiting for it (SYNC_FILE_RANGE_WRITE alone). Only a hint: an error
// here (a filesystem without it) changes nothing, and commit's fsync reports any write error.
void OutputFile::start_writeback(uint64_t written_end) noexcept {
    if (written_end < writeback_from_ + kWritebackBytes) return;
    (void)::sync_file_range(fd_, static_cast<off64_t>(writeback_from_),
                            static_cast<off64_t>(written_end - writeback_from_),
                            SYNC_FILE_RANGE_WRITE);
    writeback_from_ = written_end;
}

Result<void> OutputFile::flush() {
    if (buffer_.empty()) return {};
    auto r = write_fully(buffer_.data(), buffer_.size(), buffer_offset_);
    buffer_offset_ += buffer_.size();
    buffer_.clear();
    return r;
}

Result<void> OutputFile::append(std::span<const std::byte> bytes) {
    if (buffer_.empty()) buffer_offset_ = position_;
    position_ += bytes.size();
    // A large append goes straight to the file rather than through the buffer.
    if (bytes.size() >= kBufferBytes) {
        if (auto r = flush(); !r) return r;
        auto r = write_fully(bytes.data(), bytes.size(), buffer_offset_);
        buffer_offset_ += bytes.size();
        return r;
    }
    if (buffer_.size() + bytes.size() > kBufferBytes) {
        if (auto r = flush(); !r) return r;
    }
    buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
    return {};
}

Result<void> OutputFile::append_zeros(std::size_t count) {
    static constexpr std::byte kZeros[4096]{};
    while (count > 0) {
        std::size_t n = std::min(count, sizeof kZeros);
        if (auto r = append({kZeros, n}); !r) return r;
        count -= n;
    }
    return {};
}

Result<void> OutputFile::write_at(std::span<const std::byte> bytes, uint64_t offset) {
    if (auto r = flush(); !r) return r;
    return write_fully(bytes.data(), bytes.size(), offset);
}

Result<void> OutputFile::commit() {
    if (auto r = flush(); !r) return r;
    if (auto r = as_build_error(io::fsync(fd_, final_path_)); !r) return r;
    if (::close(std::exchange(fd_, -1)) != 0) return fail(errno, "build", final_path_);
    if (auto r = as_build_error(io::rename(temp_path_, final_path_, final_path_)); !r) return r;
    committed_ = true;
    // The rename is durable once the directory is.
    return as_build_error(io::fsync_dir(directory_of(final_path_), final_path_));
}

}  // namespace packfs::pack
