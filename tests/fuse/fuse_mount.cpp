#include "fuse/fuse_mount.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#ifndef PACKFS_BINARY
#error "PACKFS_BINARY must name the packfs binary (set in tests/fuse/CMakeLists.txt)"
#endif

namespace packfs::fuse_test {

namespace {

// /proc/self/mountinfo escapes ' ', '\t', '\n' and '\\' as octal.
std::string unescape_mountinfo(const std::string& s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 3 < s.size()) {
            const std::string oct = s.substr(i + 1, 3);
            if (oct.find_first_not_of("01234567") == std::string::npos) {
                out += static_cast<char>(std::stoi(oct, nullptr, 8));
                i += 3;
                continue;
            }
        }
        out += s[i];
    }
    return out;
}

// Runs argv with stdout and stderr into a memfd; returns the exit status (-1: not exited).
int run(const std::vector<std::string>& args, std::string* output) {
    const int out_fd = ::memfd_create("packfs-test-output", MFD_CLOEXEC);
    if (out_fd < 0) return -1;
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) {
        ::close(out_fd);
        return -1;
    }
    if (pid == 0) {
        const int null = ::open("/dev/null", O_RDONLY);
        if (null >= 0) ::dup2(null, 0);
        ::dup2(out_fd, 1);
        ::dup2(out_fd, 2);
        // Nothing of ours may reach a daemon: an fd open on a mount would keep it busy.
        ::close_range(3, ~0u, 0);
        ::execvp(argv[0], argv.data());
        std::_Exit(127);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (output) {
        char buf[4096];
        ::lseek(out_fd, 0, SEEK_SET);
        for (ssize_t n; (n = ::read(out_fd, buf, sizeof buf)) > 0;)
            output->append(buf, static_cast<std::size_t>(n));
    }
    ::close(out_fd);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool mentions_permission(const std::string& text) {
    for (const char* needle : {"Permission denied", "Operation not permitted", "EPERM", "EACCES",
                               "fusermount3: ", "fusermount: "})
        if (text.find(needle) != std::string::npos) return true;
    return false;
}

}  // namespace

ScratchDir::ScratchDir(const char* tag) {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/packfs-" + tag + "-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) {
        ADD_FAILURE() << "mkdtemp " << tmpl << ": " << std::strerror(errno);
        return;
    }
    char real[PATH_MAX];
    path_ = ::realpath(tmpl.c_str(), real) ? std::string(real) : tmpl;
}

ScratchDir::~ScratchDir() {
    if (path_.empty()) return;
    // Never recurse into a live mount beneath us.
    std::ifstream in("/proc/self/mountinfo");
    for (std::string line; std::getline(in, line);) {
        std::istringstream fields(line);
        std::string id, parent, dev, root, point;
        fields >> id >> parent >> dev >> root >> point;
        point = unescape_mountinfo(point);
        if (point == path_ || point.starts_with(path_ + "/")) {
            std::fprintf(stderr, "packfs test: %s is still mounted; leaving %s\n", point.c_str(),
                         path_.c_str());
            return;
        }
    }
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
}

int run_packfs(const std::vector<std::string>& args, std::string* output) {
    // $PACKFS_TEST_BINARY runs the suites against another build of the tool.
    const char* other = std::getenv("PACKFS_TEST_BINARY");
    std::vector<std::string> argv{other && *other ? other : PACKFS_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, output);
}

bool is_mounted(const std::string& path) {
    std::ifstream in("/proc/self/mountinfo");
    for (std::string line; std::getline(in, line);) {
        std::istringstream fields(line);
        std::string id, parent, dev, root, point;
        fields >> id >> parent >> dev >> root >> point;
        if (unescape_mountinfo(point) == path) return true;
    }
    return false;
}

std::string fuse_unavailable_reason() {
    if (::access("/dev/fuse", F_OK) != 0) return "/dev/fuse does not exist (no FUSE module?)";
    if (::access("/dev/fuse", R_OK | W_OK) != 0)
        return std::string("/dev/fuse is not usable: ") + std::strerror(errno);
    return {};
}

FuseMount::FuseMount(std::string source, std::vector<std::string> options)
    : source_(std::move(source)), options_(std::move(options)) {
    if (scratch_.path().empty()) {
        error_ = "no scratch directory";
        return;
    }
    // Other users may pass (a test acting as another user on an allow_other mount).
    ::chmod(scratch_.path().c_str(), 0755);
    mountpoint_ = scratch_ / "mnt";
    if (::mkdir(mountpoint_.c_str(), 0755) != 0) {
        error_ = "mkdir " + mountpoint_ + ": " + std::strerror(errno);
        return;
    }
    mount();
}

FuseMount::~FuseMount() {
    if (!mountpoint_.empty() && (mounted_ || is_mounted(mountpoint_))) {
        if (!unmount()) ADD_FAILURE() << "unmounting " << mountpoint_ << " failed: " << error_;
    }
}

bool FuseMount::mount() {
    if (std::string why = fuse_unavailable_reason(); !why.empty()) {
        unavailable_ = true;
        error_ = why;
        return false;
    }
    std::vector<std::string> args{"mount", source_, mountpoint_};
    args.insert(args.end(), options_.begin(), options_.end());
    std::string output;
    const int rc = run_packfs(args, &output);
    if (rc == 0 && is_mounted(mountpoint_)) {
        mounted_ = true;
        error_.clear();
        return true;
    }
    if (rc == 0) {
        error_ = "packfs mount said 0 but nothing is mounted on " + mountpoint_;
    } else {
        error_ = "packfs mount exited " + std::to_string(rc) + ": " + output;
        unavailable_ = mentions_permission(output);
    }
    return false;
}

bool FuseMount::unmount() {
    std::string output;
    const int rc = run_packfs({"umount", mountpoint_}, &output);
    bool ok = rc == 0;
    if (!ok) error_ = "packfs umount exited " + std::to_string(rc) + ": " + output;
    if (is_mounted(mountpoint_)) {
        // The fallback: detach it, whatever holds it.
        ok = false;
        if (error_.empty()) error_ = "packfs umount said 0 but " + mountpoint_ + " is mounted";
        run({"umount", "-l", mountpoint_}, nullptr);
        if (is_mounted(mountpoint_)) run({"fusermount3", "-u", "-z", mountpoint_}, nullptr);
    }
    mounted_ = is_mounted(mountpoint_);
    return ok && !mounted_;
}

bool FuseMount::remount() {
    if (mounted_ && !unmount()) return false;
    return mount();
}

}  // namespace packfs::fuse_test
