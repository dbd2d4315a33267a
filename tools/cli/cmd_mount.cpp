// `packfs mount SOURCE MOUNTPOINT` and `packfs umount MOUNTPOINT` (DESIGN §12): a pack
// read-only, a volume read-write (journaled, in the volume's durability mode), a host
// directory read-write through the dir backend (nothing reaches outside it).
//
// Daemon mode (the default) forks before anything is opened, so no thread of the library
// crosses a fork; the parent waits on a pipe and exits 0 only once the child has mounted and
// serves requests, or prints the child's error and exits 1. -f stays in the foreground.
#include <fcntl.h>
#include <fmt/format.h>
#include <malloc.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <memory>
#include <thread>

#include "access_trace.hpp"
#include "command.hpp"
#include "daemon_log.hpp"
#include "format.hpp"
#include "fuse/control.hpp"
#include "fuse/mount.hpp"
#include "fuse/mountinfo.hpp"
#include "fuse/serve.hpp"
#include "host_io.hpp"
#include "packfs/dir.hpp"
#include "packfs/volume.hpp"
#include "report.hpp"
#include "source.hpp"

namespace packfs::cli {

namespace {

struct MountArgs {
    std::string source;
    std::string mountpoint;
    std::vector<std::string> options;  // -o, comma lists split
    bool foreground = false;
    bool debug = false;
    unsigned threads = 0;
    std::string compact_at;  // volume: compact by itself past this journal size (auto, off)
    double commit_interval = 5;  // volume, explicit mode: seconds between syncs; 0: never
    bool lazy = false;       // umount: detach now, finish when no longer busy
    std::string record_trace;  // where to write the paths of the files opened
    std::string prefetch;      // a list of paths to read in the background once mounted
    std::string log;           // the daemon's log file (else stderr, then syslog)
    std::string durability;    // volume: this mount's mode (empty: the volume's own)
    std::string block_cache;   // a compressed pack: its decompressed-block cache (a size)
};

std::optional<std::string> absolute(const std::string& path) {
    char buf[PATH_MAX];
    if (!::realpath(path.c_str(), buf)) return std::nullopt;
    return std::string(buf);
}

// --compact-at: "auto" (the default), "off", or a journal size. Auto compacts once the journal
// is past 256 MiB and past the pack's own size, whichever is more (docs/VOLUME.md).
struct CompactAt {
    uint64_t journal_bytes = 0;  // 0: never by itself
    double pack_ratio = 0;
};
inline constexpr uint64_t kAutoCompactFloor = uint64_t{256} << 20;

std::optional<CompactAt> parse_compact_at(const std::string& text) {
    if (text.empty() || text == "auto") return CompactAt{kAutoCompactFloor, 1.0};
    if (text == "off") return CompactAt{};
    auto bytes = parse_size(text);
    if (!bytes) return std::nullopt;
    return CompactAt{*bytes, 0};
}

// What serves a mount, and whatever keeps it alive (the backend, the volume).
struct Served {
    std::shared_ptr<Volume> volume;
    fuse::Mount mount;
    std::string description;  // "pack, read-only"
};

Result<Served> open_served(const MountArgs& args, bool read_only, CompactAt compact_at,
                           std::optional<Durability> durability) {
    auto kind = source_kind(args.source);
    if (!kind) return std::unexpected(kind.error());
    Served out;
    switch (*kind) {
        case SourceKind::pack:
        case SourceKind::remote: {
            std::optional<std::size_t> block_cache;
            if (!args.block_cache.empty()) {
                auto bytes = parse_size(args.block_cache);
                if (!bytes) return fail(EINVAL, "--block-cache", args.block_cache);
                block_cache = static_cast<std::size_t>(*bytes);
            }
            auto pack = open_pack_file(args.source, block_cache);
            if (!pack) return std::unexpected(pack.error());
            // glibc gives each thread that allocates while others do an arena of its own (up to
            // 8 per core), and a decompressed block freed into one stays there for that arena's
            // thread: a pack's daemon kept 8-10 MiB more that way under 8 readers. Its
            // allocations are few (one per block decompressed), so two arenas suffice
            // (docs/FUSE.md, "Memory").
            ::mallopt(M_ARENA_MAX, 2);
            out.mount.xattrs = (*pack)->info().has_xattrs;
            out.mount.fs = std::move(*pack);
            out.mount.policy = fuse::CachePolicy::immutable();  // a pack never changes
            out.description =
                *kind == SourceKind::remote ? "remote pack, read-only" : "pack, read-only";
            return out;
        }
        case SourceKind::volume: {
            VolumeOptions options;
            options.read_only = read_only;
            options.durability = durability;
            options.auto_compact_journal_bytes = compact_at.journal_bytes;
            options.auto_compact_pack_ratio = compact_at.pack_ratio;
            options.commit_interval =
                std::chrono::milliseconds(static_cast<int64_t>(args.commit_interval * 1000));
            auto volume = Volume::open(args.source, options);
            if (!volume) return std::unexpected(volume.error());
            out.volume = *volume;
            out.mount.fs = *volume;
            if (const RecoveryReport& r = out.volume->recovery(); !r.clean())
                Output::warn(fmt::format("{}: the journal's tail was torn (a crash): dropped {} "
                                         "bytes at offset {} ({}); everything before is there",
                                         args.source, r.dropped_bytes, r.dropped_offset,
                                         r.reason));
            // The volume's lock: nobody else writes it.
            out.mount.policy = fuse::CachePolicy::exclusive();
            Volume* v = out.volume.get();
            out.mount.sync = [v] { return v->sync(); };
            out.mount.compact = [v]() -> Result<fuse::CompactReply> {
                auto stats = v->compact();
                if (!stats) return std::unexpected(stats.error());
                return fuse::CompactReply{stats->generation, stats->records_carried,
                                          v->status().pack_bytes,
                                          static_cast<uint64_t>(stats->seconds * 1e6)};
            };
            out.description = fmt::format("volume, {}, {} durability",
                                          read_only ? "read-only" : "read-write",
                                          durability_name(v->status().durability));
            return out;
        }
        case SourceKind::directory: {
            DirOptions options;
            options.read_only = read_only;
            auto dir = open_dir_backend(args.source, options);
            if (!dir) return std::unexpected(dir.error());
            out.mount.fs = std::move(*dir);
            out.mount.policy = fuse::CachePolicy::shared();  // anyone may change it
            // fsyncdir and `packfs sync`: the host filesystem's syncfs (the kernel sends no
            // sync of its own to a FUSE daemon).
            auto host = std::make_shared<UniqueFd>(
                ::open(args.source.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
            if (!*host) return fail(errno, "open", args.source);
            out.mount.sync = [host]() -> Result<void> {
                if (::syncfs(host->get()) != 0) return fail(errno, "syncfs");
                return {};
            };
            out.description = fmt::format("host directory, {}", read_only ? "read-only" : "read-write");
            return out;
        }
    }
    return fail(EINVAL, "source", args.source);
}

// The failure to show for a mount error, in words a user can act on.
Failure mount_failure(const Error& error, const MountArgs& args) {
    Failure out = source_failure(error);
    if (error.op() == "mount" && error.code() == EBUSY && error.path() == args.mountpoint)
        out.message = "already a mount point (packfs umount it first)";
    else if (error.op() == "open volume" && error.code() == EBUSY)
        out.message = "the volume is open in another process (mounted already?)";
    else if (error.op() == "mount" && error.code() == EIO)
        out.message = "the kernel refused the mount (libfuse said why above)";
    else if (error.op() == "mount" && error.code() == EINVAL)
        out.message = "an option libfuse does not know (see above)";
    return out;
}

// Splits "-o a,b -o c" into {a, b, c}; ro/rw decide the mode and sync/async the durability
// (a volume: sync makes every change durable when it returns, as `mount -o sync` does), and
// are kept out of the list.
bool take_mode(std::vector<std::string>& options, bool& read_only, bool& sync) {
    std::vector<std::string> rest;
    bool ok = true;
    for (const auto& list : options) {
        std::size_t at = 0;
        while (at <= list.size()) {
            const std::size_t comma = std::min(list.find(',', at), list.size());
            std::string o = list.substr(at, comma - at);
            at = comma + 1;
            if (o.empty()) continue;
            if (o == "ro") read_only = true;
            else if (o == "rw") read_only = false;
            else if (o == "sync") sync = true;
            else if (o == "async") sync = false;
            else if (o == "default_permissions" || o.starts_with("fsname=") ||
                     o.starts_with("subtype="))
                ok = false;  // ours to set
            else rest.push_back(std::move(o));
        }
    }
    options = std::move(rest);
    return ok;
}

void write_all(int fd, std::string_view text) {
    while (!text.empty()) {
        const ssize_t n = ::write(fd, text.data(), text.size());
        if (n <= 0) return;
        text.remove_prefix(static_cast<std::size_t>(n));
    }
}

// Daemon: everything after readiness goes to syslog, for nothing is left to print to.
void detach_stdio() {
    const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null < 0) return;
    for (int fd : {0, 1, 2}) ::dup2(null, fd);
    ::close(null);
}

// The daemon holds a shared flock on the directory under its mountpoint from before it mounts
// until it exits, so `packfs umount` can wait for it whatever it serves: a volume's journal
// synced, a remote pack's cache file let go. Its mountpoint is the one name both sides know.
UniqueFd hold_mountpoint(const std::string& mountpoint) {
    UniqueFd dir(::open(mountpoint.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dir && ::flock(dir.get(), LOCK_SH | LOCK_NB) != 0) dir.reset();
    return dir;
}

// After the unmount: waits until no daemon holds the directory under the mountpoint.
bool wait_for_daemon_exit(const std::string& mountpoint, const std::string& source,
                          std::chrono::seconds limit) {
    const UniqueFd dir(::open(mountpoint.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir) return true;  // not ours to open: nothing to wait on
    const auto start = std::chrono::steady_clock::now();
    bool said = false;
    while (::flock(dir.get(), LOCK_EX | LOCK_NB) != 0) {
        const auto waited = std::chrono::steady_clock::now() - start;
        if (waited >= limit) return false;
        if (!said && waited > std::chrono::seconds(1)) {
            fmt::print(stderr, "packfs: waiting for the daemon serving {} to finish\n", source);
            said = true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
}

int serve_mount(MountArgs args, int ready_fd) {
    const UniqueFd held = hold_mountpoint(args.mountpoint);  // closed last, as the process ends
    bool read_only = false;
    bool sync = false;
    const Output out(false);
    if (!take_mode(args.options, read_only, sync))
        return out.usage("-o default_permissions, fsname= and subtype= are set by packfs mount");
    auto compact_at = parse_compact_at(args.compact_at);
    if (!compact_at) return out.usage("--compact-at wants auto, off or a size such as 64M");
    if (!args.block_cache.empty() && !parse_size(args.block_cache))
        return out.usage("--block-cache wants a size such as 64M");
    std::optional<Durability> durability;
    if (!args.durability.empty()) durability = durability_from_name(args.durability);
    if (sync && (!durability || *durability == Durability::explicit_sync))
        durability = Durability::batch;
    raise_fd_limit();  // before the backend sizes its directory fd cache from it
    if (!args.log.empty()) {
        if (auto ok = daemon_log::open_file(args.log); !ok) return out.fail(ok.error());
    }
    // Set before the SOURCE is opened: an opened remote pack keeps the log it was given.
    set_remote_log([](std::string_view line) {
        daemon_log::write(fmt::format("remote: {}", line), LOG_WARNING);
    });
    std::vector<std::string> prefetch;
    if (!args.prefetch.empty()) {
        auto list = read_path_list(args.prefetch);
        if (!list) return out.fail(list.error());
        prefetch = std::move(*list);
    }
    auto served = open_served(args, read_only, *compact_at, durability);
    if (!served) return out.fail(mount_failure(served.error(), args));
    const std::shared_ptr<Backend> untraced = served->mount.fs;  // prefetch reads stay out of it
    if (!args.record_trace.empty()) {
        auto traced = record_trace(served->mount.fs, args.record_trace);
        if (!traced) return out.fail(traced.error());
        served->mount.fs = std::move(*traced);
    }
    std::vector<std::jthread> prefetching;  // stopped and joined when the mount ends

    fuse::ServeOptions options;
    options.mountpoint = args.mountpoint;
    options.fsname = args.source;
    options.options = args.options;
    options.debug = args.debug;
    options.max_threads = args.threads;
    const std::string what = served->description;
    options.on_ready = [&] {
        if (!prefetch.empty()) prefetching = start_prefetch(untraced, std::move(prefetch));
        if (ready_fd >= 0) {
            write_all(ready_fd, "ready\n");
            ::close(ready_fd);
            detach_stdio();
            daemon_log::detached();
        } else {
            fmt::print(stderr, "packfs: {} mounted on {} ({})\n", args.source, args.mountpoint,
                       what);
        }
    };
    auto served_ok = fuse::serve(served->mount, options);
    // Unmounted (or never mounted): make what was acknowledged durable, then close.
    auto synced = served->mount.sync ? served->mount.sync() : Result<void>{};
    served->mount.fs.reset();
    served->volume.reset();
    const bool daemon = ready_fd >= 0;
    auto report = [&](const Error& e) {
        if (daemon) daemon_log::write(e.message(), LOG_ERR);
        return out.fail(mount_failure(e, args));
    };
    if (!served_ok) return report(served_ok.error());
    if (!synced) return report(synced.error());
    return kExitOk;
}

int run_mount(MountArgs args) {
    const Output out(false);
    if (!is_remote_url(args.source)) {
        auto source = absolute(args.source);
        if (!source) return out.fail(Error(errno, "open", args.source));
        args.source = *source;
    }
    auto mountpoint = absolute(args.mountpoint);
    if (!mountpoint) return out.fail(Error(errno, "mount", args.mountpoint));
    args.mountpoint = *mountpoint;
    // The daemon works from /: the lists it reads and writes are named from here.
    for (std::string* path : {&args.record_trace, &args.prefetch, &args.log}) {
        if (path->empty() || path->front() == '/') continue;
        char cwd[PATH_MAX];
        if (::getcwd(cwd, sizeof cwd) == nullptr) return out.fail(Error(errno, "mount", *path));
        *path = std::string(cwd) + "/" + *path;
    }
    if (auto ok = fuse::check_can_mount(args.mountpoint); !ok)
        return out.fail(mount_failure(ok.error(), args));
    // A request log needs a terminal to go to: -d stays in the foreground, as libfuse's does.
    if (args.foreground || args.debug) return serve_mount(std::move(args), -1);

    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return out.fail(Error(errno, "mount", "pipe"));
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) return out.fail(Error(errno, "mount", "fork"));
    if (pid == 0) {
        ::close(pipe_fds[0]);
        ::setsid();
        if (::chdir("/") != 0) {}
        std::_Exit(serve_mount(std::move(args), pipe_fds[1]));
    }
    ::close(pipe_fds[1]);
    std::string said;
    char buf[64];
    for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof buf)) != 0;) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) break;
        said.append(buf, static_cast<std::size_t>(n));
    }
    ::close(pipe_fds[0]);
    if (said == "ready\n") return kExitOk;
    // The child said why on our stderr (it shares it) and exits.
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    return WIFEXITED(status) && WEXITSTATUS(status) != 0 ? WEXITSTATUS(status) : kExitFailed;
}

int run_umount(const MountArgs& args) {
    const Output out(false);
    auto mountpoint = absolute(args.mountpoint);
    if (!mountpoint) return out.fail(Error(errno, "umount", args.mountpoint));
    auto record = fuse::mount_at(*mountpoint);
    if (!record) {
        Failure f = Failure::from(Error(EINVAL, "umount", args.mountpoint));
        f.message = "not a mount point";
        return out.fail(f);
    }
    if (record->fstype != fuse::kFsType) {
        Failure f = Failure::from(Error(EINVAL, "umount", args.mountpoint));
        f.message = fmt::format("not a packfs mount (it is {})", record->fstype);
        return out.fail(f);
    }
    if (::geteuid() == 0) {
        if (::umount2(mountpoint->c_str(), args.lazy ? MNT_DETACH : 0) != 0) {
            Failure f = Failure::from(Error(errno, "umount", args.mountpoint));
            if (errno == EBUSY) f.message = "busy: a process uses it (--lazy detaches it now)";
            return out.fail(f);
        }
    } else {
        const pid_t pid = ::fork();
        if (pid == 0) {
            if (args.lazy)
                ::execlp("fusermount3", "fusermount3", "-u", "-z", mountpoint->c_str(), nullptr);
            else
                ::execlp("fusermount3", "fusermount3", "-u", mountpoint->c_str(), nullptr);
            std::_Exit(127);
        }
        int status = 0;
        while (pid > 0 && ::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            return out.fail(Error(EIO, "umount", args.mountpoint));  // fusermount3 said why
    }
    // Lazy: the mount lives on until its last open file closes; do not wait for that.
    if (args.lazy) return kExitOk;
    if (!wait_for_daemon_exit(*mountpoint, record->source, std::chrono::seconds(120))) {
        Output::warn(
            fmt::format("unmounted, but the daemon serving {} is still running after "
                        "120 s",
                        record->source));
        return kExitFailed;
    }
    return kExitOk;
}

}  // namespace

Command add_mount_command(CLI::App& parent) {
    auto args = std::make_shared<MountArgs>();
    CLI::App* sub = parent.add_subcommand(
        "mount", "Mount a pack (read-only), a volume or a host directory (read-write) with FUSE");
    sub->add_option("SOURCE", args->source,
                    "A pack file or URL, a volume directory or a host directory")
        ->required();
    sub->add_option("MOUNTPOINT", args->mountpoint, "An existing empty directory")->required();
    sub->add_option("-o", args->options,
                    "Mount options: ro, rw, sync (a volume: each change durable when it returns), "
                    "allow_other, allow_root, auto_unmount, ... (repeatable)");
    sub->add_flag("-f,--foreground", args->foreground, "Stay in the foreground");
    sub->add_flag("-d,--debug", args->debug,
                  "Log every request on stderr (libfuse's log; implies -f)");
    sub->add_option("--threads", args->threads, "At most this many worker threads (default 64)");
    sub->add_option("--record-trace", args->record_trace,
                    "Write the path of every file opened through the mount to FILE (one per "
                    "line, first opens only), for a later --prefetch");
    sub->add_option("--prefetch", args->prefetch,
                    "Read the files FILE lists (one path per line) in the background once "
                    "mounted: a remote pack's blocks are then cached before they are asked for");
    sub->add_option("--log", args->log,
                    "Append the daemon's reports (a remote pack's failed fetches, rate-limited; "
                    "the error that ended it) to FILE, each line stamped with the UTC time, "
                    "instead of syslog")
        ->type_name("FILE");
    sub->add_option("--block-cache", args->block_cache,
                    "A compressed pack: keep at most this many bytes of decompressed blocks in "
                    "memory (e.g. 64M; 0: none; default 8M, a remote pack 64M). The kernel's "
                    "page cache keeps what was read; this one serves blocks read again soon")
        ->type_name("SIZE");
    sub->add_option("--compact-at", args->compact_at,
                    "Volume: compact by itself once the journal passes this size (e.g. 1G); "
                    "auto (the default): past 256M and past the pack's size; off: never")
        ->default_str("auto");
    sub->add_option("--durability", args->durability,
                    "Volume: this mount's durability instead of the volume's own: explicit "
                    "(durable at fsync, packfs sync and each commit interval, as ext4), batch "
                    "(each change durable when it returns, as -o sync), always")
        ->check(CLI::IsMember({"always", "batch", "explicit"}));
    sub->add_option("--commit-interval", args->commit_interval,
                    "Volume in explicit mode: seconds between syncs of its journal, so a crash "
                    "loses at most that much (0: only fsync and packfs sync)")
        ->check(CLI::Range(0.0, 86400.0))
        ->capture_default_str();
    return {sub, [args](const std::string&) { return run_mount(*args); }};
}

Command add_umount_command(CLI::App& parent) {
    auto args = std::make_shared<MountArgs>();
    CLI::App* sub = parent.add_subcommand(
        "umount",
        "Unmount a packfs mount and wait until its daemon has finished (a volume's journal "
        "synced)");
    sub->add_option("MOUNTPOINT", args->mountpoint, "Where it is mounted")->required();
    sub->add_flag("-l,--lazy", args->lazy,
                  "Detach now even if busy (returns at once; the daemon syncs and exits once "
                  "the last open file closes)");
    return {sub, [args](const std::string&) { return run_umount(*args); }};
}

}  // namespace packfs::cli
