#include "access_trace.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "packfs/forwarding.hpp"

namespace packfs::cli {

namespace {

class TracingBackend final : public ForwardingBackend {
public:
    TracingBackend(std::shared_ptr<Backend> inner, int fd)
        : ForwardingBackend(std::move(inner)), fd_(fd) {}
    ~TracingBackend() override { ::close(fd_); }

    Result<Entry> lookup(Node dir, std::string_view name) override {
        auto entry = inner().lookup(dir, name);
        if (entry &&
            (entry->stat.type == FileType::regular || entry->stat.type == FileType::directory)) {
            std::lock_guard lock(mutex_);
            names_.try_emplace(entry->node.id, Name{dir.id, std::string(name)});
        }
        return entry;
    }

    Result<FileHandle> open(Node node, int flags) override {
        auto file = inner().open(node, flags);
        if (file) note(node);
        return file;
    }

private:
    struct Name {
        uint64_t parent;
        std::string name;
    };

    void note(Node node) {
        std::string line;
        {
            std::lock_guard lock(mutex_);
            if (!seen_.insert(node.id).second) return;
            // The path from the names seen on the way down (bounded: a damaged tree cannot loop).
            std::vector<const std::string*> parts;
            uint64_t at = node.id;
            for (int depth = 0; at != kRootNode.id && depth < 4096; ++depth) {
                auto it = names_.find(at);
                if (it == names_.end()) return;  // reached by a way not seen (by number): skip
                parts.push_back(&it->second.name);
                at = it->second.parent;
            }
            if (at != kRootNode.id) return;
            for (auto p = parts.rbegin(); p != parts.rend(); ++p) line += "/" + **p;
            if (line.empty()) return;
            line += '\n';
            // Written under the lock, so lines never interleave; O_APPEND, one write each.
            (void)!::write(fd_, line.data(), line.size());
        }
    }

    int fd_;
    std::mutex mutex_;
    std::unordered_map<uint64_t, Name> names_;
    std::unordered_set<uint64_t> seen_;
};

}  // namespace

Result<std::shared_ptr<Backend>> record_trace(std::shared_ptr<Backend> fs,
                                              const std::string& trace_path) {
    const int fd =
        ::open(trace_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return fail(errno, "record_trace", trace_path);
    return std::make_shared<TracingBackend>(std::move(fs), fd);
}

Result<std::vector<std::string>> read_path_list(const std::string& list_path) {
    std::ifstream in(list_path);
    if (!in) return fail(errno != 0 ? errno : ENOENT, "prefetch", list_path);
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line.front() == '#') continue;
        out.push_back(std::move(line));
    }
    return out;
}

std::vector<std::jthread> start_prefetch(std::shared_ptr<Backend> fs,
                                         std::vector<std::string> paths, unsigned threads) {
    auto list = std::make_shared<const std::vector<std::string>>(std::move(paths));
    auto next = std::make_shared<std::atomic<std::size_t>>(0);
    std::vector<std::jthread> workers;
    for (unsigned t = 0; t < std::max(1u, threads); ++t) {
        workers.emplace_back([fs, list, next](std::stop_token stop) {
            std::vector<std::byte> buffer(1 << 20);
            for (std::size_t i; !stop.stop_requested() && (i = (*next)++) < list->size();) {
                auto file = fs->open((*list)[i], O_RDONLY);
                if (!file) continue;
                for (uint64_t at = 0; !stop.stop_requested();) {
                    auto n = (*file)->pread(buffer, at);
                    if (!n || *n == 0) break;
                    at += *n;
                }
            }
        });
    }
    return workers;
}

}  // namespace packfs::cli
