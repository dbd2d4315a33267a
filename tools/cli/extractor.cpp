#include "extractor.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "content.hpp"
#include "format.hpp"
#include "host_io.hpp"
#include "tree.hpp"

namespace packfs::cli {

namespace {

// A name a directory entry may carry: one component, not "." or "..". A hostile source with
// such a name must not make us climb out of the destination.
bool safe_name(std::string_view name) {
    return !name.empty() && name != "." && name != ".." && name.find('/') == name.npos &&
           name.find('\0') == name.npos;
}

// How the attribute calls reach an entry: through an fd of it (files and directories, which
// we open ourselves), or by name in its directory with AT_SYMLINK_NOFOLLOW (symlinks and
// special files, which cannot be opened safely).
struct EntryRef {
    int fd = -1;
    int dir_fd = -1;
    const char* name = nullptr;
};

// Copies files' contents on a pool of threads while the caller's thread walks the tree and makes
// every entry in order: inflating a compressed pack's blocks is most of an extract's CPU, and
// this puts every core on it. A job owns its file's fd and writes the content and then the
// file's metadata. Jobs go in batches (kBatchJobs files or kBatchBytes of content), so a tree of
// small files does not pay a wake-up per file; the queue holds two batches a thread, so few fds
// stay open and the walk never runs far ahead. With one CPU, jobs run on the caller's thread as
// they come.
class FilePool {
public:
    explicit FilePool(unsigned threads) {
        if (threads < 2) return;
        for (unsigned i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
    }
    ~FilePool() {
        {
            std::lock_guard lock(mu_);
            stopping_ = true;
        }
        wake_.notify_all();
    }  // (the jthreads join here, after the queue ran dry)
    FilePool(const FilePool&) = delete;
    FilePool& operator=(const FilePool&) = delete;

    static constexpr std::size_t kBatchJobs = 64;
    static constexpr uint64_t kBatchBytes = 4 << 20;

    // A job for a file of `bytes`: run at once without workers, else batched.
    void submit(std::function<void()> job, uint64_t bytes) {
        if (workers_.empty()) return job();
        batch_.push_back(std::move(job));
        batch_bytes_ += bytes;
        if (batch_.size() >= kBatchJobs || batch_bytes_ >= kBatchBytes) flush();
    }
    // Until every job submitted so far is done.
    void wait() {
        flush();
        std::unique_lock lock(mu_);
        done_.wait(lock, [&] { return pending_ == 0; });
    }

private:
    using Batch = std::vector<std::function<void()>>;

    void flush() {
        if (batch_.empty()) return;
        std::unique_lock lock(mu_);
        room_.wait(lock, [&] { return queue_.size() < 2 * workers_.size(); });
        queue_.push_back(std::move(batch_));
        ++pending_;
        lock.unlock();
        wake_.notify_one();
        batch_ = {};
        batch_bytes_ = 0;
    }
    void work() {
        std::unique_lock lock(mu_);
        for (;;) {
            wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
            if (queue_.empty()) return;  // stopping, nothing left
            Batch batch = std::move(queue_.front());
            queue_.pop_front();
            room_.notify_one();
            lock.unlock();
            for (auto& job : batch) job();
            lock.lock();
            if (--pending_ == 0) done_.notify_all();
        }
    }

    Batch batch_;  // the caller's, not yet queued
    uint64_t batch_bytes_ = 0;
    std::mutex mu_;
    std::condition_variable wake_, room_, done_;
    std::deque<Batch> queue_;
    std::size_t pending_ = 0;
    bool stopping_ = false;
    std::vector<std::jthread> workers_;  // last: joined before the rest goes
};

unsigned pool_threads() {
    const unsigned cpus = std::thread::hardware_concurrency();
    return std::clamp(cpus, 1u, 8u);
}

class Extractor {
public:
    Extractor(Backend& fs, const std::function<void(const ExtractReport&)>& progress)
        : fs_(fs), progress_(progress), root_(::geteuid() == 0) {
        std::vector<gid_t> groups(static_cast<std::size_t>(std::max(::getgroups(0, nullptr), 0)));
        const int n = ::getgroups(static_cast<int>(groups.size()), groups.data());
        groups.resize(static_cast<std::size_t>(std::max(n, 0)));
        groups.push_back(::getegid());
        groups_ = std::move(groups);
    }

    ExtractReport run(int dest_fd) {
        // One fd per directory level stays open while its subtree is filled.
        raise_fd_limit();
        dest_fd_ = dest_fd;
        auto root = fs_.lstat("/");
        if (!root) {
            error(Failure::from(root.error()));
        } else {
            fill_directory("/", dest_fd, "");
            pool_.wait();
            apply_metadata("/", {dest_fd, -1, nullptr}, *root);
        }
        if (report_.owners_kept) {
            report_.warnings.push_back(
                {EPERM, "chown", "",
                 fmt::format("owners of {} entries kept: not root", report_.owners_kept)});
        }
        return std::move(report_);
    }

private:
    // The report is shared with the pool's jobs: every change to it and every look at it
    // (progress) is made under report_mu_.
    void error(Failure failure) {
        std::lock_guard lock(report_mu_);
        report_.errors.push_back(std::move(failure));
    }
    void error(int code, std::string_view op, const std::string& path) {
        error({code, std::string(op), path, std::strerror(code)});
    }
    void warning(int code, std::string_view op, const std::string& path, std::string_view why) {
        std::lock_guard lock(report_mu_);
        report_.warnings.push_back(
            {code, std::string(op), path, fmt::format("{} ({})", std::strerror(code), why)});
    }
    // Adds `n` to a counter of the report, and shows progress.
    void count(uint64_t ExtractReport::*counter, uint64_t n = 1) {
        std::lock_guard lock(report_mu_);
        report_.*counter += n;
        if (progress_) progress_(report_);
    }

    void fill_directory(const std::string& dir, int dir_fd, const std::string& rel) {
        auto entries = sorted_entries(fs_, dir);
        if (!entries) return error(Failure::from(entries.error()));
        for (const DirEntry& entry : *entries) {
            const std::string path = child_path(dir, entry.name);
            if (!safe_name(entry.name)) {
                error({EINVAL, "extract", path, "not a valid file name; skipped"});
                continue;
            }
            auto st = fs_.lstat(path);
            if (!st) {
                error(Failure::from(st.error()));
                continue;
            }
            make_entry(path, rel.empty() ? entry.name : rel + "/" + entry.name, entry.name, dir_fd,
                       *st);
        }
    }

    void make_entry(const std::string& path, const std::string& rel, const std::string& name,
                    int dir_fd, const Stat& st) {
        // The second and later names of an inode become hard links to the first one made.
        if (st.type != FileType::directory && st.nlink > 1) {
            auto [first, inserted] = first_names_.try_emplace(st.ino, rel);
            if (!inserted) return make_hard_link(path, first->second, name, dir_fd);
        }
        bool made = false;
        switch (st.type) {
            case FileType::directory:
                made = make_directory(path, rel, name, dir_fd, st);
                break;
            case FileType::regular:
                made = make_file(path, name, dir_fd, st);
                break;
            case FileType::symlink:
                made = make_symlink(path, name, dir_fd, st);
                break;
            default:
                made = make_special(path, name, dir_fd, st);
                break;
        }
        // Not made: a later name of the inode makes it afresh rather than link to nothing.
        if (!made && st.nlink > 1) first_names_.erase(st.ino);
    }

    bool make_directory(const std::string& path, const std::string& rel, const std::string& name,
                        int dir_fd, const Stat& st) {
        // 0700 while filling, the real mode after the children.
        if (::mkdirat(dir_fd, name.c_str(), 0700) != 0) {
            error(errno, "mkdir", path);
            return false;
        }
        UniqueFd fd(
            ::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!fd) {
            error(errno, "open", path);
            return false;
        }
        count(&ExtractReport::directories);
        fill_directory(path, fd.get(), rel);
        apply_metadata(path, {fd.get(), -1, nullptr}, st);
        return true;
    }

    bool make_file(const std::string& path, const std::string& name, int dir_fd, const Stat& st) {
        UniqueFd fd(::openat(dir_fd, name.c_str(),
                             O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
        if (!fd) {
            error(errno, "create", path);
            return false;
        }
        count(&ExtractReport::files);
        pool_.submit([this, path, st, file = std::make_shared<UniqueFd>(std::move(fd))] {
            auto reader = ContentReader::open(fs_, path);
            // With its holes: those the source keeps, and aligned 4 KiB blocks of zeros.
            auto copied = !reader ? Result<void>(std::unexpected(reader.error()))
                                  : reader->write_sparse_to(file->get(), [&](std::size_t bytes) {
                                        count(&ExtractReport::bytes, bytes);
                                    });
            if (!copied) error(Failure::from(copied.error()));
            apply_metadata(path, {file->get(), -1, nullptr}, st);
        }, st.size);
        return true;
    }

    bool make_symlink(const std::string& path, const std::string& name, int dir_fd,
                      const Stat& st) {
        auto target = fs_.readlink(path);
        if (!target) {
            error(Failure::from(target.error()));
            return false;
        }
        if (::symlinkat(target->c_str(), dir_fd, name.c_str()) != 0) {
            error(errno, "symlink", path);
            return false;
        }
        count(&ExtractReport::symlinks);
        apply_metadata(path, {-1, dir_fd, name.c_str()}, st);
        return true;
    }

    bool make_special(const std::string& path, const std::string& name, int dir_fd,
                      const Stat& st) {
        const bool device = st.type == FileType::char_device || st.type == FileType::block_device;
        const mode_t mode = file_type_to_mode_bits(st.type) | 0600;
        if (::mknodat(dir_fd, name.c_str(), mode, device ? static_cast<dev_t>(st.rdev) : 0) != 0) {
            const int err = errno;
            // Only root may make devices: without root, skip them and say so, not fail.
            if (device && !root_ && (err == EPERM || err == EACCES)) {
                warning(err, "mknod", path, "devices need root; skipped");
            } else {
                error(err, "mknod", path);
            }
            return false;
        }
        count(&ExtractReport::specials);
        apply_metadata(path, {-1, dir_fd, name.c_str()}, st);
        return true;
    }

    void make_hard_link(const std::string& path, const std::string& first_rel,
                        const std::string& name, int dir_fd) {
        // Reach the first name's directory again component by component, never following a
        // symlink, then link from there.
        const std::size_t slash = first_rel.rfind('/');
        const std::string leaf = slash == first_rel.npos ? first_rel : first_rel.substr(slash + 1);
        UniqueFd parent;
        int parent_fd = dest_fd_;
        if (slash != first_rel.npos) {
            std::string_view rest(first_rel.data(), slash);
            while (!rest.empty()) {
                const std::size_t next = rest.find('/');
                const std::string component(rest.substr(0, next));
                UniqueFd child(::openat(parent_fd, component.c_str(),
                                        O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
                if (!child) return error(errno, "link", path);
                parent = std::move(child);
                parent_fd = parent.get();
                rest = next == rest.npos ? std::string_view() : rest.substr(next + 1);
            }
        }
        if (::linkat(parent_fd, leaf.c_str(), dir_fd, name.c_str(), 0) != 0) {
            return error(errno, "link", path);
        }
        count(&ExtractReport::hard_links);
    }

    bool may_chown(const Stat& st) const {
        if (root_) return true;
        return st.uid == ::geteuid() &&
               std::find(groups_.begin(), groups_.end(), st.gid) != groups_.end();
    }

    // xattrs, owner, mode, times, in that order: chown clears setuid bits, and the times
    // come last because every other change moves them.
    void apply_metadata(const std::string& path, const EntryRef& ref, const Stat& st) {
        apply_xattrs(path, ref);
        if (!may_chown(st)) {
            std::lock_guard lock(report_mu_);
            ++report_.owners_kept;
        } else if ((ref.fd >= 0 ? ::fchown(ref.fd, st.uid, st.gid)
                                : ::fchownat(ref.dir_fd, ref.name, st.uid, st.gid,
                                             AT_SYMLINK_NOFOLLOW)) != 0) {
            error(errno, "chown", path);
        }
        // A symlink's mode means nothing on Linux and cannot be set.
        if (st.type != FileType::symlink &&
            (ref.fd >= 0 ? ::fchmod(ref.fd, st.mode)
                         : ::fchmodat(ref.dir_fd, ref.name, st.mode, AT_SYMLINK_NOFOLLOW)) != 0) {
            error(errno, "chmod", path);
        }
        const timespec times[2] = {{st.atime.sec, st.atime.nsec}, {st.mtime.sec, st.mtime.nsec}};
        if ((ref.fd >= 0 ? ::futimens(ref.fd, times)
                         : ::utimensat(ref.dir_fd, ref.name, times, AT_SYMLINK_NOFOLLOW)) != 0) {
            error(errno, "utimens", path);
        }
    }

    void apply_xattrs(const std::string& path, const EntryRef& ref) {
        auto names = fs_.listxattr(path);
        if (!names) {
            if (names.error().code() != ENOTSUP) error(Failure::from(names.error()));
            return;
        }
        // Without an fd of the entry: its name under the magic link of its directory's fd,
        // with lsetxattr, so neither the directory nor the entry is reached through a symlink.
        const std::string by_name =
            ref.fd >= 0 ? std::string() : fmt::format("/proc/self/fd/{}/{}", ref.dir_fd, ref.name);
        for (const std::string& name : *names) {
            auto value = fs_.getxattr(path, name);
            if (!value) {
                error(Failure::from(value.error()));
                continue;
            }
            const int rc =
                ref.fd >= 0
                    ? ::fsetxattr(ref.fd, name.c_str(), value->data(), value->size(), 0)
                    : ::lsetxattr(by_name.c_str(), name.c_str(), value->data(), value->size(), 0);
            if (rc != 0) warning(errno, "setxattr", path, fmt::format("{} not set", name));
        }
    }

    Backend& fs_;
    const std::function<void(const ExtractReport&)>& progress_;
    const bool root_;
    std::vector<gid_t> groups_;
    int dest_fd_ = -1;
    std::unordered_map<uint64_t, std::string> first_names_;  // ino -> path below dest
    std::mutex report_mu_;
    ExtractReport report_;
    FilePool pool_{pool_threads()};  // last: its jobs are done before the rest goes
};

}  // namespace

ExtractReport extract_tree(Backend& fs, int dest_fd,
                           const std::function<void(const ExtractReport&)>& progress) {
    return Extractor(fs, progress).run(dest_fd);
}

}  // namespace packfs::cli
