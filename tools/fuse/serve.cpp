#include "serve.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>

#include "fuse_ops.hpp"

namespace packfs::fuse {

namespace {

// A value inside one -o list: ',' and '\' are escaped as libfuse's option parser expects.
std::string escape_option(std::string_view value) {
    std::string out;
    for (char c : value) {
        if (c == ',' || c == '\\') out += '\\';
        out += c;
    }
    return out;
}

struct SessionDeleter {
    void operator()(fuse_session* se) const { fuse_session_destroy(se); }
};
struct LoopConfigDeleter {
    void operator()(fuse_loop_config* c) const { fuse_loop_cfg_destroy(c); }
};

// Enough workers that many writers' fsyncs meet in one group commit (libfuse's default is
// 10; a worker starts only when all are busy), but never more than the descriptor limit
// leaves room for: each worker holds three (its clone of /dev/fuse and a splice pipe), and the
// backend's caches take their quarters of the limit (docs/DIR.md).
unsigned default_max_threads() {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 64;
    return static_cast<unsigned>(std::clamp<rlim_t>(limit.rlim_cur / 16, 2, 64));
}

}  // namespace

Result<void> check_can_mount(const std::string& mountpoint) {
    if (::access("/dev/fuse", R_OK | W_OK) != 0)
        return fail(errno, "mount", "/dev/fuse (FUSE is not available here: modprobe fuse?)");
    struct statx sx {};
    if (::statx(AT_FDCWD, mountpoint.c_str(), 0, STATX_TYPE, &sx) != 0)
        return fail(errno, "mount", mountpoint);
    if (!S_ISDIR(sx.stx_mode)) return fail(ENOTDIR, "mount", mountpoint);
    if ((sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
        (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
        return fail(EBUSY, "mount", mountpoint);
    return {};
}

Result<void> serve(Mount& mount, const ServeOptions& options) {
    MountContext context;
    context.mount = &mount;
    context.read_only = mount.fs->read_only();

    std::string o = "fsname=" + escape_option(options.fsname) + ",subtype=packfs";
    if (context.read_only) o += ",ro";
    bool others = false;  // may anyone but the mounting user come in?
    for (const auto& extra : options.options) {
        o += "," + extra;
        others = others || extra == "allow_other" || extra == "allow_root";
    }
    // The kernel checks permissions (POSIX, for every caller) unless the only caller can be
    // root: then every check but exec passes anyway, and skipping them saves a GETATTR of the
    // directory per create and unlink (each one invalidates the directory's attributes).
    // Exec is still checked (op_access, and the kernel's own exec-bit check).
    if (others || ::geteuid() != 0) o += ",default_permissions";
    std::vector<std::string> argv_text{"packfs", "-o", o};
    if (options.debug) argv_text.push_back("-d");
    std::vector<char*> argv;
    for (auto& a : argv_text) argv.push_back(a.data());
    fuse_args args = FUSE_ARGS_INIT(static_cast<int>(argv.size()), argv.data());

    std::unique_ptr<fuse_session, SessionDeleter> se(
        fuse_session_new(&args, &operations(), sizeof(fuse_lowlevel_ops), &context));
    fuse_opt_free_args(&args);  // parsing may have copied them
    if (!se) return fail(EINVAL, "mount", "-o " + o);  // libfuse named the option on stderr
    if (fuse_set_signal_handlers(se.get()) != 0) return fail(EIO, "mount", "signal handlers");
    if (fuse_session_mount(se.get(), options.mountpoint.c_str()) != 0) {
        fuse_remove_signal_handlers(se.get());
        return fail(EIO, "mount", options.mountpoint);
    }
    if (options.on_ready) options.on_ready();

    std::unique_ptr<fuse_loop_config, LoopConfigDeleter> loop(fuse_loop_cfg_create());
    fuse_loop_cfg_set_max_threads(loop.get(), options.max_threads ? options.max_threads
                                                                  : default_max_threads());
    fuse_loop_cfg_set_clone_fd(loop.get(), 1);
    const int rc = fuse_session_loop_mt(se.get(), loop.get());

    fuse_session_unmount(se.get());
    fuse_remove_signal_handlers(se.get());
    se.reset();
    if (rc < 0) return fail(EIO, "serve", options.mountpoint);
    return {};
}

CachePolicy CachePolicy::immutable() {
    constexpr double kForever = 86400.0 * 365;
    return {.entry_seconds = kForever,
            .attr_seconds = kForever,
            .cache_negative = true,
            .keep_page_cache = true,
            .cache_directories = true,
            .stateless_open = true,
            .stateless_opendir = true};
}

CachePolicy CachePolicy::exclusive() {
    return {.entry_seconds = 3600,
            .attr_seconds = 3600,
            .cache_negative = true,
            .keep_page_cache = true,
            .cache_directories = true,
            .stateless_open = true};
}

}  // namespace packfs::fuse
