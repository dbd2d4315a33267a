#include "extractor.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
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
    void error(Failure failure) { report_.errors.push_back(std::move(failure)); }
    void error(int code, std::string_view op, const std::string& path) {
        error({code, std::string(op), path, std::strerror(code)});
    }
    void warning(int code, std::string_view op, const std::string& path, std::string_view why) {
        report_.warnings.push_back(
            {code, std::string(op), path, fmt::format("{} ({})", std::strerror(code), why)});
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
            if (progress_) progress_(report_);
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
        ++report_.directories;
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
        ++report_.files;
        auto reader = ContentReader::open(fs_, path);
        // With its holes: those the source keeps, and aligned 4 KiB blocks of zeros.
        auto copied = !reader ? Result<void>(std::unexpected(reader.error()))
                              : reader->write_sparse_to(fd.get(), [&](std::size_t bytes) {
                                    report_.bytes += bytes;
                                    if (progress_) progress_(report_);
                                });
        if (!copied) error(Failure::from(copied.error()));
        apply_metadata(path, {fd.get(), -1, nullptr}, st);
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
        ++report_.symlinks;
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
        ++report_.specials;
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
        ++report_.hard_links;
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
    ExtractReport report_;
};

}  // namespace

ExtractReport extract_tree(Backend& fs, int dest_fd,
                           const std::function<void(const ExtractReport&)>& progress) {
    return Extractor(fs, progress).run(dest_fd);
}

}  // namespace packfs::cli
