// The pack's output file: written beside its final name under a temporary name, through a
// bounded buffer that turns many small appends into few large writes, then fsynced, renamed
// into place and made durable with an fsync of the directory. Dropped unfinished, it removes
// the temporary file, so a failed build leaves nothing behind. Writeback of what is written
// starts every few MiB (sync_file_range), so the disk works while the build goes on and the
// final fsync finds little left to write.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "packfs/error.hpp"

namespace packfs::pack {

class OutputFile {
public:
    static constexpr std::size_t kBufferBytes = 4 << 20;
    static constexpr uint64_t kWritebackBytes = 8 << 20;  // writeback started per this much

    // Creates the temporary file beside `final_path` (mode 0644 less the umask).
    static Result<OutputFile> create(std::string_view final_path);

    OutputFile(OutputFile&&) noexcept;
    OutputFile& operator=(OutputFile&&) = delete;
    ~OutputFile();

    // Appends at the current end (starting at `position()`), buffered.
    Result<void> append(std::span<const std::byte> bytes);
    Result<void> append_zeros(std::size_t count);
    // Writes `bytes` at `offset`, below what was appended (the header, written last).
    Result<void> write_at(std::span<const std::byte> bytes, uint64_t offset);
    uint64_t position() const noexcept { return position_; }

    // Flushes, fsyncs, renames over `final_path`, fsyncs the directory.
    Result<void> commit();

private:
    OutputFile(int fd, std::string temp_path, std::string final_path);
    Result<void> flush();
    Result<void> write_fully(const std::byte* data, std::size_t size, uint64_t offset);
    void start_writeback(uint64_t written_end) noexcept;

    int fd_ = -1;
    std::string temp_path_;
    std::string final_path_;
    std::vector<std::byte> buffer_;
    uint64_t buffer_offset_ = 0;  // file offset of buffer_[0]
    uint64_t position_ = 0;
    uint64_t writeback_from_ = 0;  // where the writeback not yet started begins
    bool committed_ = false;
};

}  // namespace packfs::pack
