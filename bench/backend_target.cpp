#include "bench/backend_target.hpp"

#include <fcntl.h>

#include <algorithm>
#include <utility>

namespace packfs::bench {
namespace {

class BackendTarget final : public Target {
public:
    BackendTarget(std::shared_ptr<Backend> fs, std::optional<TempDir> host_dir)
        : host_dir_(std::move(host_dir)), fs_(std::move(fs)) {}

    std::string path(std::string_view rel) const override {
        std::string out = "/";
        out += rel;
        return out;
    }

    Result<void> create_file(const std::string& path, std::span<const std::byte> data) override {
        auto file = fs_->open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
        if (!file) return std::unexpected(file.error());
        auto n = (*file)->pwrite(data, 0);
        if (!n) return std::unexpected(n.error());
        if (*n != data.size()) return fail(EIO, "pwrite", path);
        return {};  // the handle closes here
    }

    Result<void> create_empty(const std::string& path) override {
        auto file = fs_->open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
        if (!file) return std::unexpected(file.error());
        return {};
    }

    Result<std::size_t> read_file(const std::string& path, std::span<std::byte> buf) override {
        auto file = fs_->open(path, O_RDONLY);
        if (!file) return std::unexpected(file.error());
        return (*file)->pread(buf, 0);
    }

    Result<void> stat(const std::string& path) override {
        auto st = fs_->stat(path);
        if (!st) return std::unexpected(st.error());
        return {};
    }

    Result<std::size_t> list_dir(const std::string& path) override {
        auto entries = fs_->readdir(path);
        if (!entries) return std::unexpected(entries.error());
        return entries->size();
    }

    Result<void> unlink(const std::string& path) override { return fs_->unlink(path); }
    Result<void> mkdir(const std::string& path) override { return fs_->mkdir(path, 0755); }
    Result<void> rmdir(const std::string& path) override { return fs_->rmdir(path); }

    Result<void> write_large(const std::string& path, std::span<std::byte> chunk,
                             uint64_t size) override {
        auto file = fs_->open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
        if (!file) return std::unexpected(file.error());
        for (uint64_t offset = 0, index = 0; offset < size; ++index) {
            const uint64_t len = std::min<uint64_t>(chunk.size(), size - offset);
            stamp(chunk, index);
            auto n = (*file)->pwrite(chunk.first(len), offset);
            if (!n) return std::unexpected(n.error());
            if (*n != len) return fail(EIO, "pwrite", path);
            offset += len;
        }
        return {};
    }

    Result<uint64_t> read_large(const std::string& path, std::span<std::byte> chunk) override {
        auto file = fs_->open(path, O_RDONLY);
        if (!file) return std::unexpected(file.error());
        uint64_t total = 0;
        for (;;) {
            auto n = (*file)->pread(chunk, total);
            if (!n) return std::unexpected(n.error());
            if (*n == 0) break;
            total += *n;
        }
        return total;
    }

    Backend* backend() noexcept override { return fs_.get(); }

private:
    std::optional<TempDir> host_dir_;  // destroyed after fs_
    std::shared_ptr<Backend> fs_;
};

}  // namespace

std::unique_ptr<Target> make_backend_target(std::shared_ptr<Backend> fs,
                                            std::optional<TempDir> host_dir) {
    return std::make_unique<BackendTarget>(std::move(fs), std::move(host_dir));
}

}  // namespace packfs::bench
