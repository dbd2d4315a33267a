// The dir backend's containment (DESIGN §7, dir.hpp): nothing reaches outside the root, and
// every attempt answers the documented errno. Modelled on the kernel's openat2 selftests
// (tools/testing/selftests/openat2/resolve_test.c): a tree of hostile symlinks inside the
// root, each attempted with every operation, in every Containment, with Resolver::automatic
// (openat2 here) and Resolver::walk, with the directory cache on and off.
//
// The world (a scratch dir T, canonical, so absolute targets name it exactly):
//   T/outside/   secret, file, hardfile, dir/ and the standard names S below: what an
//                escape would reach (same names as inside, different bytes and xattrs)
//   T/outside2/  S and pfsx_mirrored
//   T/root/      the backend's root: S, pfsx_file, pfsx_file_mv, pfsx_xchg/, a/b/c/,
//                hardlink (a host hard link to outside/hardfile), the links below, and
//                T-without-its-leading-slash/outside2/ (S, pfsx_mirrored): where in_root
//                takes an absolute target that names outside2.
//   S = pfsx_inner (user.tag xattr), pfsx_ilink -> pfsx_inner, pfsx_sub/pfsx_deep,
//       pfsx_trunc, pfsx_victim, pfsx_victim_mv, pfsx_victim_dir/, pfsx_modme
// After every attempt the whole of T except root/ is compared with a snapshot taken before
// (types, modes, owners, nlink, sizes, inodes, mtime, ctime, bytes, symlink targets, xattrs;
// atime too where the filesystem shows reads, see host_tree.hpp), "/" and T's parent are
// checked for the pfsx_* names, and every error must name the virtual path it was given,
// never a host path. When an attempt changed anything outside, it is run again op by op to
// name the operation that escaped.
//
// As root, the test runs in a mount namespace of its own (no mount outlives it) on a tmpfs
// mounted strictatime, and also tries real magic links (a bind mount of /proc inside the
// root) and a bind mount of the outside; otherwise it runs on $TMPDIR and those two skip.
// PACKFS_DIR_ESCAPE_TABLE=1 prints every answer as a tab-separated line "TABLE containment
// attempt operation errno", the raw material of the table below.
//
// Operations, for every attempt X (a path whose last component is a symlink):
//   through X/child: stat, lstat, read, readdir, readlink, getxattr, statfs, open O_CREAT,
//     O_CREAT|O_EXCL, O_TRUNC, mkdir, mknod, symlink, link (both ways), rename (both ways,
//     and RENAME_EXCHANGE), unlink, rmdir, chmod, chown, utimens, truncate, setxattr;
//   following X: stat, read, readdir, statfs, open O_DIRECTORY / O_WRONLY / O_TRUNC /
//     O_CREAT, truncate, chmod, chown, utimens;
//   "X/", which follows X even for the calls that otherwise do not: stat, lstat, readdir,
//     open, readlink, getxattr, statfs, link, truncate, setxattr, chmod, lchown, lutimens;
//   on the link X itself (never followed, every mode): lstat, readlink, O_NOFOLLOW (ELOOP),
//     O_CREAT|O_EXCL (EEXIST, even on a dangling link to outside), getxattr (ENODATA),
//     setxattr (EPERM: no user.* xattrs on a symlink), lchown, lutimens, rename, unlink;
//     and the "X/" forms the kernel judges without following: open O_CREAT (EISDIR),
//     mkdir/mknod/symlink (EEXIST), rmdir/unlink/rename (ENOTDIR).
//
// Results, for docs/DIR.md: the same for both resolvers and with the cache on or off.
//
//   attempt (X, a symlink in the root)          beneath        in_root              no_symlinks
//   ------------------------------------------  -------------  -------------------  -----------
//   ../outside/secret, ../../outside/secret,    EXDEV          ENOENT (root has no  ELOOP
//     a/b/../../../outside/dir, ../outside/dir,                outside/)
//     a chain of 3 links ending in ../outside
//   .., ../.., ../../../.., ../../../../../..,  EXDEV          the root             ELOOP
//     a/b/up -> ../dotdot/.. (a/dotdot -> ..),
//     a link to a link to ../../../..
//   a/b/c/in3 -> ../../.. , a/dotdot -> ..      the root       the root             ELOOP
//   /T/outside/secret, /T/outside/dir,          EXDEV          ENOENT (not in root) ELOOP
//     /../../T/outside/dir,
//     /T/outside2/../outside/dir
//   /T/outside (root holds /T, not /T/outside)  EXDEV          ENOENT; O_CREAT      ELOOP
//                                                              makes /T/outside
//   /, /../..                                   EXDEV          the root             ELOOP
//   /T/outside2, /T/outside2/pfsx_mirrored      EXDEV          the copy in the root ELOOP
//   /proc/self/root, /proc/self/fd/N (N open    EXDEV          ENOENT (no /proc in  ELOOP
//     on outside/ or outside/secret),           (absolute)     the root)
//     /proc/self/cwd (cwd = outside/),
//     ../../../../proc/self/root
//   dangling ../outside/new, /T/outside/new:    EXDEV          ENOENT               ELOOP
//     O_CREAT
//   dangling /T/outside2/new: O_CREAT           EXDEV          creates it in root   ELOOP
//   any dangling link: O_CREAT|O_EXCL           EEXIST         EEXIST               EEXIST
//   self loop, 2-cycle, loopy -> loopy/x,       ELOOP          ELOOP                ELOOP
//     a/loop_up -> ../a/loop_up, 41 and 60 hops
//   8 and 40 hops to a file in the root         the file       the file             ELOOP
//   esc_loop -> ../root/esc_loop                EXDEV          ENOENT               ELOOP
//   X/child, for any X above                    X's errno; ENOTDIR where X is a file
//   "X/" (stat, lstat, getxattr, lchown, ...)   as following X; ENOTDIR where X is a file
//   on X itself: lstat, readlink, lchown,       ok             ok                   ok
//     lutimens, rename, unlink
//   "X/" with open O_CREAT (even O_EXCL)        EISDIR         EISDIR               EISDIR
//   "X/" with mkdir, mknod, symlink             EEXIST         EEXIST               EEXIST
//   "X/" with rmdir, unlink, rename             ENOTDIR        ENOTDIR              ENOTDIR
//   with root/proc a bind mount of /proc (root only):
//   /proc/self/root, /proc/PID/root,            ELOOP          ELOOP                ELOOP
//     /proc/thread-self/root, /proc/self/fd/N,
//     /proc/PID/fd/M, /proc/PID/cwd, /proc/PID/exe,
//     proc/self/root (relative link), anything below them
//   /proc/self/root as an absolute link target  EXDEV          ELOOP                ELOOP
//   /proc/self/status (/proc/self: an ordinary  read           read                 ELOOP
//     link to PID, not a magic one)
//   lstat/readlink of /proc/PID/root itself     ok (readlink returns procfs's text, a host
//                                               path such as "/" or T/outside)
//   with outside/ bind-mounted at root/bound (root only):
//   /bound/secret (no symlink)                  read and written: the host's choice, served
//                                               as is
//   /bound/up1 -> .. (back to the mount point)  the root       the root             ELOOP
//   /bound/up2 -> ../.., /bound/dir/up3 ->      EXDEV          the root             ELOOP
//     ../../.., /bound/abs -> /
//   root/hardlink (host hard link to outside)   read and written, that inode only: the host's
//                                               choice, served as is
//   a cached directory (or its ancestor) moved  ENOENT         ENOENT               ENOENT
//     out of the root by the host, then /a/b/c/...
//   ... replaced by a link to where it went     EXDEV          ENOENT               ELOOP
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <functional>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "dir/host_tree.hpp"
#include "packfs/backend.hpp"
#include "packfs/dir.hpp"
#include "packfs/path.hpp"

namespace packfs::dir_test {
namespace {

// --- modes and the private mount namespace --------------------------------------------------

struct DirMode {
    Containment containment;
    Resolver resolver;
    bool cache;
};

std::string mode_name(const DirMode& m) {
    return fmt::format("{}_{}_{}", containment_name(m.containment), resolver_name(m.resolver),
                       m.cache ? "cache" : "nocache");
}

std::vector<DirMode> all_modes() {
    std::vector<DirMode> out;
    for (auto c : {Containment::beneath, Containment::in_root, Containment::no_symlinks}) {
        for (auto r : {Resolver::automatic, Resolver::walk}) {
            for (bool cache : {true, false}) out.push_back({c, r, cache});
        }
    }
    return out;
}

DirOptions options_of(const DirMode& m) {
    DirOptions o;
    o.containment = m.containment;
    o.resolver = m.resolver;
    o.cache_dirs = m.cache;
    return o;
}

// Bind mounts need root; they are made in a mount namespace of the test's own (entered
// before any test runs, while the process has one thread), so none can outlive it.
bool g_can_mount = false;

class PrivateMountNamespace : public ::testing::Environment {
public:
    void SetUp() override { g_can_mount = ::geteuid() == 0 && enter_private_mount_namespace(); }
};

[[maybe_unused]] ::testing::Environment* const kMountNamespace =
    ::testing::AddGlobalTestEnvironment(new PrivateMountNamespace);

// --- the world --------------------------------------------------------------------------------

// Every name an operation below may create or move; none may ever appear in "/" or in T's
// parent (where links to "/", "/proc/self/root" and too many ".." would take an escape).
constexpr std::string_view kOurNames[] = {
    "pfsx_inner",      "pfsx_ilink",      "pfsx_sub",      "pfsx_trunc",      "pfsx_victim",
    "pfsx_victim_mv",  "pfsx_victim_dir", "pfsx_modme",    "pfsx_created",    "pfsx_excl",
    "pfsx_newdir",     "pfsx_fifo",       "pfsx_newlink",  "pfsx_hard_in",    "pfsx_hard_out",
    "pfsx_moved_in",   "pfsx_moved_out",  "pfsx_newfile",  "pfsx_newfile_in", "pfsx_file",
    "pfsx_file_mv",    "pfsx_xchg",       "pfsx_via_bind", "pfsx_mirrored",   "pfsx_warm",
    "pfsx_hard_slash",
};

struct WorldOptions {
    bool proc_mount = false;    // root/proc: a bind mount of /proc
    bool bind_outside = false;  // root/bound: a bind mount of T/outside (with links in it)
};

class World {
public:
    explicit World(WorldOptions opts) : opts_(opts) {
        if (!scratch_.ok()) {
            why_ = "cannot make a scratch directory";
            return;
        }
        // A tmpfs where we may mount one: the world is rebuilt for every attempt, and
        // symlink(2) on a disk filesystem is ~20 times slower.
        if (g_can_mount) scratch_.mount_tmpfs();
        t_ = scratch_.path();
        outside_ = t_ / "outside";
        outside2_ = t_ / "outside2";
        root_ = t_ / "root";
        mirror_virt_ = "/" + t_.relative_path().string() + "/outside2";
        std::error_code ec;
        for (const auto& d : {outside_, outside_ / "dir", outside2_, root_}) {
            fs::create_directories(d, ec);
        }
        bool ok = !ec && plant_standard(outside_, "outside") &&
                  plant_standard(outside_ / "dir", "outside-dir") &&
                  plant_standard(outside2_, "outside2") &&
                  host_write(outside_ / "secret", "outside secret bytes\n", 0600) &&
                  host_write(outside_ / "file", "outside file\n") &&
                  host_write(outside_ / "hardfile", "outside hardfile\n") &&
                  host_write(outside2_ / "pfsx_mirrored", "outside2 mirrored\n");
        ok = ok && ::lsetxattr((outside_ / "secret").c_str(), "user.tag", "secret", 6, 0) == 0;
        // The outside directories carry a tag too (those in the root do not), so that an
        // escaped getxattr("X/") answers a value instead of ENODATA.
        for (const auto& d : {outside_, outside_ / "dir", outside2_}) {
            ok = ok && ::lsetxattr(d.c_str(), "user.tag", "outside-dir", 11, 0) == 0;
        }
        if (opts_.bind_outside) {
            // Links inside the bound directory: from root/bound, ".." is the root.
            ok = ok && plant_link(outside_ / "pfsx_up1", "..") &&
                 plant_link(outside_ / "pfsx_up2", "../..") &&
                 plant_link(outside_ / "dir" / "pfsx_up3", "../../..") &&
                 plant_link(outside_ / "pfsx_abs", "/");
        }
        if (!ok) {
            why_ = fmt::format("cannot build the outside tree ({})", std::strerror(errno));
            return;
        }
        outside_fd_ = std::make_unique<HeldFd>(outside_, O_PATH | O_DIRECTORY);
        secret_fd_ = std::make_unique<HeldFd>(outside_ / "secret", O_PATH);
        cwd_ = std::make_unique<CwdGuard>(outside_);
        if (outside_fd_->get() < 0 || secret_fd_->get() < 0 || !cwd_->ok()) {
            why_ = "cannot hold the outside fds or chdir there";
            return;
        }
        atime_ = atime_is_observable(t_);
        ready_ = true;
    }

    ~World() {
        backend_.reset();
        mounts_.clear();
    }

    bool ready() const noexcept { return ready_; }
    const std::string& why() const noexcept { return why_; }
    bool atime_checked() const noexcept { return atime_; }
    const fs::path& t() const noexcept { return t_; }
    const fs::path& root() const noexcept { return root_; }
    const fs::path& outside() const noexcept { return outside_; }
    const std::string& mirror_virt() const noexcept { return mirror_virt_; }
    int outside_fd() const noexcept { return outside_fd_->get(); }
    int secret_fd() const noexcept { return secret_fd_->get(); }

    // The host path under the root of a virtual path.
    fs::path host(std::string_view virt) const {
        return virt == "/" ? root_ : root_ / std::string(virt.substr(1));
    }

    // A fresh root (contents rebuilt, mounts remade, a new backend); then a new baseline.
    Result<std::shared_ptr<Backend>> rebuild(const DirOptions& options) {
        backend_.reset();
        for (auto& m : mounts_) m->release();
        mounts_.clear();
        if (!unmount_all_under(root_)) return fail(EBUSY, "rebuild", "/");
        std::error_code ec;
        // chains/ (149 links) stays: plant_root() re-plants only what an attempt changed.
        for (const auto& name : host_names(root_)) {
            if (name != "chains") fs::remove_all(root_ / name, ec);
        }
        ::chmod(root_.c_str(), 0755);
        if (ec || !plant_root()) return fail(EIO, "rebuild", "/");
        if (opts_.proc_mount && !mount_at("/proc", root_ / "proc")) {
            return fail(EPERM, "mount", "/proc");
        }
        if (opts_.bind_outside && !mount_at(outside_, root_ / "bound")) {
            return fail(EPERM, "mount", "/bound");
        }
        rebaseline();
        auto fs = open_dir_backend(root_.string(), options);
        if (fs) backend_ = *fs;
        return fs;
    }

    // Ages the outside's atimes again (so the next read shows) and snapshots it.
    void rebaseline() {
        if (atime_) {
            age_atimes(outside_);
            age_atimes(outside2_);
            const timespec times[2] = {kAgedAtime, {0, UTIME_OMIT}};
            ::utimensat(AT_FDCWD, t_.c_str(), times, AT_SYMLINK_NOFOLLOW);
        }
        baseline_ = snapshot_host_tree(t_, {"root"});
    }

    // Everything that changed outside the root since the baseline: T except root/, and our
    // names in "/" and in T's parent (removed again, so one escape is reported once).
    std::vector<std::string> escapes(const std::set<std::string>& atime_may_change = {}) {
        TreeCompare how;
        how.atime = atime_;
        how.atime_may_change = atime_may_change;
        auto diffs = tree_differences(baseline_, snapshot_host_tree(t_, {"root"}), how);
        for (const fs::path& dir : {fs::path("/"), t_.parent_path()}) {
            for (auto name : kOurNames) {
                const fs::path p = dir / std::string(name);
                if (!host_lstat(p)) continue;
                diffs.push_back(fmt::format("{} created on the host", p.string()));
                std::error_code ec;
                fs::remove_all(p, ec);
            }
        }
        return diffs;
    }

private:
    static bool plant_link(const fs::path& at, const std::string& target) {
        return ::symlink(target.c_str(), at.c_str()) == 0;
    }

    // A link at `at` with exactly this target, made only if it is not there already.
    static bool ensure_link(const fs::path& at, const std::string& target) {
        std::error_code ec;
        if (fs::is_symlink(fs::symlink_status(at, ec)) && fs::read_symlink(at, ec) == target) {
            return true;
        }
        fs::remove_all(at, ec);
        return plant_link(at, target);
    }

    // The standard names S, with bytes and an xattr that say where they are.
    static bool plant_standard(const fs::path& dir, const std::string& tag) {
        std::error_code ec;
        fs::create_directory(dir / "pfsx_sub", ec);
        fs::create_directory(dir / "pfsx_victim_dir", ec);
        bool ok = !ec && host_write(dir / "pfsx_inner", tag + " inner\n") &&
                  host_write(dir / "pfsx_sub" / "pfsx_deep", tag + " deep\n") &&
                  host_write(dir / "pfsx_trunc", tag + " trunc\n") &&
                  host_write(dir / "pfsx_victim", tag + " victim\n") &&
                  host_write(dir / "pfsx_victim_mv", tag + " victim mv\n") &&
                  host_write(dir / "pfsx_modme", tag + " modme\n") &&
                  plant_link(dir / "pfsx_ilink", "pfsx_inner");
        return ok && ::lsetxattr((dir / "pfsx_inner").c_str(), "user.tag", tag.data(), tag.size(),
                                 0) == 0;
    }

    bool plant_root() {
        const std::string t = t_.string();
        const fs::path mirror = root_ / t_.relative_path() / "outside2";
        std::error_code ec;
        for (const auto& d :
             {root_ / "a" / "b" / "c", root_ / "pfsx_xchg", root_ / "chains", mirror}) {
            fs::create_directories(d, ec);
        }
        if (ec || !plant_standard(root_, "root") || !plant_standard(mirror, "mirror")) {
            return false;
        }
        bool ok = host_write(root_ / "pfsx_file", "inside file\n") &&
                  host_write(root_ / "pfsx_file_mv", "inside file to move\n") &&
                  host_write(root_ / "pfsx_xchg" / "pfsx_x_mark", "x\n") &&
                  host_write(mirror / "pfsx_mirrored", "inside mirror\n") &&
                  ::link((outside_ / "hardfile").c_str(), (root_ / "hardlink").c_str()) == 0;
        const std::string fd_dir = fmt::format("/proc/self/fd/{}", outside_fd());
        const std::string fd_file = fmt::format("/proc/self/fd/{}", secret_fd());
        const std::pair<std::string, std::string> links[] = {
            {"rel_secret", "../outside/secret"},
            {"a/rel_secret", "../../outside/secret"},
            {"rel_outdir", "../outside/dir"},
            {"a/b/rel_outdir", "../../../outside/dir"},
            {"mixed", "a/b/../../../outside/dir"},
            {"dotdot_many", "../../../../../../../../../.."},
            {"d1", ".."},
            {"a/d2", "../.."},
            {"a/b/c/d3", "../../../.."},
            {"a/b/c/in3", "../../.."},
            {"a/dotdot", ".."},
            {"a/b/up", "../dotdot/.."},
            {"a/indirect", "b/c/d3"},
            {"hop1", "hop2"},
            {"hop2", "hop3"},
            {"hop3", "../outside/dir"},
            {"hop_file", "a/b/c/in3/rel_secret"},
            {"abs_secret", t + "/outside/secret"},
            {"abs_outdir", t + "/outside/dir"},
            {"abs_outside", t + "/outside"},
            {"abs_root", "/"},
            {"abs_outside2", t + "/outside2"},
            {"abs_mirrored", t + "/outside2/pfsx_mirrored"},
            {"abs_garbage", "/../../../.." + t + "/outside/dir"},
            {"abs_garbage_root", "/../.."},
            {"abs_mirror_up", t + "/outside2/../outside/dir"},
            {"magic_root", "/proc/self/root"},
            {"magic_fd", fd_dir},
            {"magic_fd_file", fd_file},
            {"magic_cwd", "/proc/self/cwd"},
            {"magic_rel", "../../../../../../../../../../proc/self/root"},
            {"proc_rel", "proc/self/root"},
            {"proc_rel_fd", fmt::format("proc/{}/fd/{}", ::getpid(), outside_fd())},
            {"rel_dangling", "../outside/pfsx_newfile"},
            {"abs_dangling", t + "/outside/pfsx_newfile"},
            {"abs_dangling2", t + "/outside2/pfsx_newfile"},
            {"a/b/dangling_up", "../../../outside/dir/pfsx_newfile"},
            {"dangling_in", "pfsx_newfile_in"},
            {"loop_self", "loop_self"},
            {"loop_a", "loop_b"},
            {"loop_b", "loop_a"},
            {"loopy", "loopy/x"},
            {"a/loop_up", "../a/loop_up"},
            {"esc_loop", "../root/esc_loop"},
        };
        for (const auto& [at, target] : links) ok = ok && plant_link(root_ / at, target);
        // Chains of n links ending at /pfsx_file: n = 40 is the most the kernel follows.
        for (int n : {8, 40, 41, 60}) {
            for (int i = 0; i < n; ++i) {
                const std::string at = i == 0 ? fmt::format("c{}", n) : fmt::format("c{}_{}", n, i);
                const std::string to =
                    i + 1 == n ? "../pfsx_file" : fmt::format("c{}_{}", n, i + 1);
                ok = ok && ensure_link(root_ / "chains" / at, to);
            }
        }
        return ok;
    }

    bool mount_at(const fs::path& source, const fs::path& target) {
        std::error_code ec;
        fs::create_directory(target, ec);
        auto m = std::make_unique<BindMount>(source, target);
        if (!m->mounted()) return false;
        mounts_.push_back(std::move(m));
        return true;
    }

    WorldOptions opts_;
    Scratch scratch_;
    fs::path t_, outside_, outside2_, root_;
    std::string mirror_virt_;
    std::unique_ptr<HeldFd> outside_fd_, secret_fd_;
    std::unique_ptr<CwdGuard> cwd_;
    std::vector<std::unique_ptr<BindMount>> mounts_;
    std::shared_ptr<Backend> backend_;
    HostTree baseline_;
    bool atime_ = false;
    bool ready_ = false;
    std::string why_;
};

// --- attempts -------------------------------------------------------------------------------

// Where following an attempt's link ends, in one containment.
enum class Kind : uint8_t { error, dir, file, creatable };

struct Outcome {
    Kind kind = Kind::error;
    int err = 0;
    std::string landing;  // virtual path inside the root (dir, file, creatable)
};

Outcome fails(int err) {
    return {Kind::error, err, {}};
}
Outcome dir_at(std::string v) {
    return {Kind::dir, 0, std::move(v)};
}
Outcome file_at(std::string v) {
    return {Kind::file, 0, std::move(v)};
}
Outcome creates(std::string v) {
    return {Kind::creatable, 0, std::move(v)};
}

// What may be done to an attempt's last component without following it.
enum class LinkOps : uint8_t {
    all,    // a link the test planted in the root: every no-follow operation
    reads,  // a link the test must not change (procfs, inside a bind mount): lstat, readlink,
            // O_NOFOLLOW, O_CREAT|O_EXCL
    none,   // the path's parents cannot be resolved: no no-follow operation
};

struct Attempt {
    std::string path;
    Outcome beneath, in_root;
    bool link_parents = false;  // a parent component is a symlink (ELOOP under no_symlinks)
    LinkOps link_ops = LinkOps::all;
    std::string target;  // what readlink must answer ("" = unchecked)
};

std::vector<Attempt> main_attempts(const World& w) {
    const std::string t = w.t().string();
    const std::string mirror = w.mirror_virt();
    const std::string in_root_t = "/" + w.t().relative_path().string();  // T, inside the root
    auto a = [](std::string path, Outcome beneath, Outcome in_root, std::string target,
                bool link_parents = false) {
        return Attempt{std::move(path), std::move(beneath), std::move(in_root),
                       link_parents,    LinkOps::all,       std::move(target)};
    };
    const auto exdev = fails(EXDEV), enoent = fails(ENOENT), eloop = fails(ELOOP);
    const auto root = dir_at("/");
    return {
        // ".." in relative targets climbing out.
        a("/rel_outdir", exdev, enoent, "../outside/dir"),
        a("/a/b/rel_outdir", exdev, enoent, "../../../outside/dir"),
        a("/mixed", exdev, enoent, "a/b/../../../outside/dir"),
        a("/hop1", exdev, enoent, "hop2"),
        a("/rel_secret", exdev, enoent, "../outside/secret"),
        a("/a/rel_secret", exdev, enoent, "../../outside/secret"),
        a("/hop_file", exdev, enoent, "a/b/c/in3/rel_secret"),
        a("/a/b/c/in3/rel_secret", exdev, enoent, "../outside/secret", true),
        // Links to ".." through several levels.
        a("/dotdot_many", exdev, root, "../../../../../../../../../.."),
        a("/d1", exdev, root, ".."),
        a("/a/d2", exdev, root, "../.."),
        a("/a/b/c/d3", exdev, root, "../../../.."),
        a("/a/b/c/in3", root, root, "../../.."),
        a("/a/b/c/in3/d1", exdev, root, "..", true),
        a("/a/dotdot", root, root, ".."),
        a("/a/b/up", exdev, root, "../dotdot/.."),
        a("/a/indirect", exdev, root, "b/c/d3"),
        // Absolute targets.
        a("/abs_secret", exdev, enoent, t + "/outside/secret"),
        a("/abs_outdir", exdev, enoent, t + "/outside/dir"),
        // In the root, /T exists (it holds the copy of outside2) but /T/outside does not:
        // in_root creates it as a file for O_CREAT, inside the root.
        a("/abs_outside", exdev, creates(in_root_t + "/outside"), t + "/outside"),
        a("/abs_root", exdev, root, "/"),
        a("/abs_outside2", exdev, dir_at(mirror), t + "/outside2"),
        a("/abs_mirrored", exdev, file_at(mirror + "/pfsx_mirrored"),
          t + "/outside2/pfsx_mirrored"),
        a("/abs_garbage", exdev, enoent, "/../../../.." + t + "/outside/dir"),
        a("/abs_garbage_root", exdev, root, "/../.."),
        a("/abs_mirror_up", exdev, enoent, t + "/outside2/../outside/dir"),
        // Links to magic links (no /proc inside this root).
        a("/magic_root", exdev, enoent, "/proc/self/root"),
        a("/magic_fd", exdev, enoent, fmt::format("/proc/self/fd/{}", w.outside_fd())),
        a("/magic_fd_file", exdev, enoent, fmt::format("/proc/self/fd/{}", w.secret_fd())),
        a("/magic_cwd", exdev, enoent, "/proc/self/cwd"),
        a("/magic_rel", exdev, enoent, "../../../../../../../../../../proc/self/root"),
        // Dangling links whose target is outside (O_CREAT must not create it there).
        a("/rel_dangling", exdev, enoent, "../outside/pfsx_newfile"),
        a("/abs_dangling", exdev, enoent, t + "/outside/pfsx_newfile"),
        a("/abs_dangling2", exdev, creates(mirror + "/pfsx_newfile"), t + "/outside2/pfsx_newfile"),
        a("/a/b/dangling_up", exdev, enoent, "../../../outside/dir/pfsx_newfile"),
        a("/dangling_in", creates("/pfsx_newfile_in"), creates("/pfsx_newfile_in"),
          "pfsx_newfile_in"),
        // Loops and long chains.
        a("/loop_self", eloop, eloop, "loop_self"),
        a("/loop_a", eloop, eloop, "loop_b"),
        a("/loopy", eloop, eloop, "loopy/x"),
        a("/a/loop_up", eloop, eloop, "../a/loop_up"),
        a("/chains/c8", file_at("/pfsx_file"), file_at("/pfsx_file"), "c8_1"),
        a("/chains/c40", file_at("/pfsx_file"), file_at("/pfsx_file"), "c40_1"),
        a("/chains/c41", eloop, eloop, "c41_1"),
        a("/chains/c60", eloop, eloop, "c60_1"),
        a("/esc_loop", exdev, enoent, "../root/esc_loop"),
    };
}

// With root/proc a bind mount of /proc: real magic links, reached without leaving the root.
std::vector<Attempt> proc_attempts(const World& w) {
    const int pid = ::getpid();
    const auto eloop = fails(ELOOP);
    auto p = [&](std::string path, bool link_parents, LinkOps ops = LinkOps::reads) {
        return Attempt{std::move(path), eloop, eloop, link_parents, ops, {}};
    };
    const std::string t = w.t().string();
    return {
        p("/proc/self/root", true),
        p(fmt::format("/proc/{}/root", pid), false),
        p("/proc/thread-self/root", true),
        p(fmt::format("/proc/self/fd/{}", w.outside_fd()), true),
        p(fmt::format("/proc/{}/fd/{}", pid, w.secret_fd()), false),
        p(fmt::format("/proc/{}/cwd", pid), false),
        p(fmt::format("/proc/{}/exe", pid), false),
        p(fmt::format("/proc/{}/root{}/outside/secret", pid, t), false, LinkOps::none),
        p(fmt::format("/proc/{}/cwd/secret", pid), false, LinkOps::none),
        Attempt{"/proc_rel", eloop, eloop, false, LinkOps::all, "proc/self/root"},
        Attempt{"/proc_rel_fd", eloop, eloop, false, LinkOps::all,
                fmt::format("proc/{}/fd/{}", pid, w.outside_fd())},
        // Absolute links to them: beneath refuses the absolute target first.
        Attempt{"/magic_root", fails(EXDEV), eloop, false, LinkOps::all, "/proc/self/root"},
        Attempt{"/magic_fd", fails(EXDEV), eloop, false, LinkOps::all,
                fmt::format("/proc/self/fd/{}", w.outside_fd())},
        Attempt{"/magic_fd_file", fails(EXDEV), eloop, false, LinkOps::all,
                fmt::format("/proc/self/fd/{}", w.secret_fd())},
        Attempt{"/magic_cwd", fails(EXDEV), eloop, false, LinkOps::all, "/proc/self/cwd"},
    };
}

// With root/bound a bind mount of T/outside: ".." from inside it stops at the root.
std::vector<Attempt> bind_attempts() {
    const auto root = dir_at("/");
    auto b = [](std::string path, Outcome beneath, std::string target) {
        return Attempt{std::move(path), std::move(beneath), dir_at("/"),
                       false,           LinkOps::reads,     std::move(target)};
    };
    return {
        b("/bound/pfsx_up1", root, ".."),
        b("/bound/pfsx_up2", fails(EXDEV), "../.."),
        b("/bound/dir/pfsx_up3", fails(EXDEV), "../../.."),
        b("/bound/pfsx_abs", fails(EXDEV), "/"),
    };
}

// --- operations -----------------------------------------------------------------------------

enum class Target : uint8_t { through, follow, nofollow };

constexpr int kSkip = -1;  // not attempted on this kind of landing

using Observed = Result<std::string>;
using Verify = std::function<std::string(Backend&, const World&, const std::string& virt,
                                         const std::string& seen)>;

struct Op {
    std::string_view name;
    Target target;
    std::string_view child;         // through: the name below the attempt
    std::string_view other;         // a second virtual path the operation names, or ""
    std::string_view suffix;        // no-follow: acts on the attempt's path + suffix
    std::string_view other_suffix;  // no-follow: also names the attempt's path + this
    std::function<Observed(Backend&, const std::string& path)> run;
    // Through and follow: the answer when the path resolves to a directory, a regular file,
    // or a dangling link whose target can be created, inside the root (0 = success).
    int on_dir = 0, on_file = 0, on_dangling = ENOENT;
    // No-follow: the answer on the link itself.
    int on_link = 0;
    bool changes_link = false;  // no-follow: changes the link or its xattrs (LinkOps::all only)
    Verify verify;              // on success: the effect, at the landing inside the root
};

Observed observe(const Result<void>& r) {
    if (!r) return std::unexpected(r.error());
    return std::string();
}

Observed observe_stat(const Result<Stat>& r) {
    if (!r) return std::unexpected(r.error());
    return fmt::format("{} {}", r->ino, file_type_name(r->type));
}

Observed observe_open(Result<FileHandle> r, std::string_view write = {}) {
    if (!r) return std::unexpected(r.error());
    if (!write.empty()) {
        auto w = (*r)->pwrite(std::as_bytes(std::span(write.data(), write.size())), 0);
        if (!w) return std::unexpected(w.error());
    }
    return std::string();
}

std::string joined(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ",") + n;
    return out;
}

Observed observe_names(const Result<std::vector<DirEntry>>& r) {
    if (!r) return std::unexpected(r.error());
    std::vector<std::string> names;
    for (const auto& e : *r) names.push_back(e.name);
    std::sort(names.begin(), names.end());
    return joined(names);
}

std::string want(bool ok, std::string_view what) {
    return ok ? "" : std::string(what);
}

// The same object the backend answers for the landing's own (symlink-free) path.
Verify same_object() {
    return [](Backend& fs, const World&, const std::string& virt, const std::string& seen) {
        auto st = fs.lstat(virt);
        return want(st && fmt::format("{} {}", st->ino, file_type_name(st->type)) == seen,
                    fmt::format("got '{}', the landing {} is another object", seen, virt));
    };
}

Verify host_bytes() {
    return [](Backend&, const World& w, const std::string& virt, const std::string& seen) {
        return want(host_read(w.host(virt)) == seen,
                    fmt::format("read '{}', not the bytes of {}", seen, virt));
    };
}

Verify host_listing() {
    return [](Backend&, const World& w, const std::string& virt, const std::string& seen) {
        return want(joined(host_names(w.host(virt))) == seen,
                    fmt::format("listed '{}', not the names of {}", seen, virt));
    };
}

Verify host_is(mode_t type) {
    return [type](Backend&, const World& w, const std::string& virt, const std::string&) {
        auto st = host_lstat(w.host(virt));
        return want(st && (st->st_mode & S_IFMT) == type,
                    fmt::format("{} is not where it should be in the root", virt));
    };
}

Verify host_check(std::function<bool(const World&, const fs::path& landing)> check,
                  std::string what) {
    return [check, what](Backend&, const World& w, const std::string& virt, const std::string&) {
        return want(check(w, w.host(virt)), fmt::format("{}: {}", virt, what));
    };
}

const std::vector<Op>& all_ops() {
    static const std::vector<Op> ops = [] {
        const uint32_t uid = ::getuid(), gid = ::getgid();
        auto exists = [](const fs::path& p) { return host_lstat(p).has_value(); };
        std::vector<Op> v;
        auto through = [&](std::string_view name, std::string_view child, std::string_view other,
                           std::function<Observed(Backend&, const std::string&)> run,
                           Verify verify = {}) {
            Op op;
            op.name = name;
            op.target = Target::through;
            op.child = child;
            op.other = other;
            op.run = std::move(run);
            op.verify = std::move(verify);
            v.push_back(std::move(op));
        };
        auto follow = [&](std::string_view name, int on_dir, int on_file, int on_dangling,
                          std::function<Observed(Backend&, const std::string&)> run,
                          Verify verify = {}, std::string_view suffix = {}) {
            Op op;
            op.name = name;
            op.target = Target::follow;
            op.suffix = suffix;
            op.run = std::move(run);
            op.on_dir = on_dir;
            op.on_file = on_file;
            op.on_dangling = on_dangling;
            op.verify = std::move(verify);
            v.push_back(std::move(op));
        };
        auto nofollow = [&](std::string_view name, int on_link, bool changes_link,
                            std::function<Observed(Backend&, const std::string&)> run,
                            Verify verify = {}, std::string_view suffix = {},
                            std::string_view other_suffix = {}) {
            Op op;
            op.name = name;
            op.target = Target::nofollow;
            op.suffix = suffix;
            op.other_suffix = other_suffix;
            op.run = std::move(run);
            op.on_link = on_link;
            op.changes_link = changes_link;
            op.verify = std::move(verify);
            v.push_back(std::move(op));
        };

        // Through the attempt, as a parent component. Reads first, then changes.
        through(
            "stat", "pfsx_inner", {},
            [](Backend& fs, const std::string& p) { return observe_stat(fs.stat(p)); },
            same_object());
        through(
            "lstat", "pfsx_ilink", {},
            [](Backend& fs, const std::string& p) { return observe_stat(fs.lstat(p)); },
            same_object());
        through(
            "read", "pfsx_inner", {},
            [](Backend& fs, const std::string& p) { return read_file(fs, p); }, host_bytes());
        through(
            "readdir", "pfsx_sub", {},
            [](Backend& fs, const std::string& p) { return observe_names(fs.readdir(p)); },
            host_listing());
        through(
            "readlink", "pfsx_ilink", {},
            [](Backend& fs, const std::string& p) { return fs.readlink(p); },
            [](Backend&, const World&, const std::string&, const std::string& seen) {
                return want(seen == "pfsx_inner", "readlink answered " + seen);
            });
        through(
            "getxattr", "pfsx_inner", {},
            [](Backend& fs, const std::string& p) { return fs.getxattr(p, "user.tag"); },
            [](Backend&, const World& w, const std::string& virt, const std::string& seen) {
                char buf[64];
                ssize_t n = ::lgetxattr(w.host(virt).c_str(), "user.tag", buf, sizeof buf);
                return want(n >= 0 && std::string(buf, static_cast<std::size_t>(n)) == seen,
                            "user.tag is " + seen);
            });
        through("statfs", "pfsx_inner", {}, [](Backend& fs, const std::string& p) {
            auto r = fs.statfs(p);
            if (!r) return Observed(std::unexpected(r.error()));
            return Observed(std::string());
        });
        through(
            "open O_CREAT", "pfsx_created", {},
            [](Backend& fs, const std::string& p) {
                return observe_open(fs.open(p, O_WRONLY | O_CREAT, 0644), "new\n");
            },
            host_check([](const World&, const fs::path& l) { return host_read(l) == "new\n"; },
                       "not created with its bytes"));
        through(
            "open O_CREAT|O_EXCL", "pfsx_excl", {},
            [](Backend& fs, const std::string& p) {
                return observe_open(fs.open(p, O_WRONLY | O_CREAT | O_EXCL, 0644));
            },
            host_is(S_IFREG));
        through(
            "open O_TRUNC", "pfsx_trunc", {},
            [](Backend& fs, const std::string& p) {
                return observe_open(fs.open(p, O_WRONLY | O_TRUNC));
            },
            host_check([](const World&, const fs::path& l) { return host_read(l) == ""; },
                       "not truncated"));
        through(
            "mkdir", "pfsx_newdir", {},
            [](Backend& fs, const std::string& p) { return observe(fs.mkdir(p, 0755)); },
            host_is(S_IFDIR));
        through(
            "mknod", "pfsx_fifo", {},
            [](Backend& fs, const std::string& p) {
                return observe(fs.mknod(p, FileType::fifo, 0644));
            },
            host_is(S_IFIFO));
        through(
            "symlink", "pfsx_newlink", {},
            [](Backend& fs, const std::string& p) { return observe(fs.symlink("pfsx_inner", p)); },
            host_is(S_IFLNK));
        through(
            "link into", "pfsx_hard_in", "/pfsx_file",
            [](Backend& fs, const std::string& p) { return observe(fs.link("/pfsx_file", p)); },
            host_check(
                [](const World& w, const fs::path& l) {
                    auto a = host_lstat(l), b = host_lstat(w.root() / "pfsx_file");
                    return a && b && a->st_ino == b->st_ino;
                },
                "not a link of /pfsx_file"));
        through(
            "link out of", "pfsx_inner", "/pfsx_hard_out",
            [](Backend& fs, const std::string& p) { return observe(fs.link(p, "/pfsx_hard_out")); },
            host_check(
                [](const World& w, const fs::path& l) {
                    auto a = host_lstat(l), b = host_lstat(w.root() / "pfsx_hard_out");
                    return a && b && a->st_ino == b->st_ino;
                },
                "/pfsx_hard_out is not a link of it"));
        through(
            "rename into", "pfsx_moved_in", "/pfsx_file_mv",
            [](Backend& fs, const std::string& p) {
                return observe(fs.rename("/pfsx_file_mv", p));
            },
            host_check(
                [exists](const World& w, const fs::path& l) {
                    return exists(l) && !exists(w.root() / "pfsx_file_mv");
                },
                "/pfsx_file_mv did not move there"));
        through(
            "rename out of", "pfsx_victim_mv", "/pfsx_moved_out",
            [](Backend& fs, const std::string& p) {
                return observe(fs.rename(p, "/pfsx_moved_out"));
            },
            host_check(
                [exists](const World& w, const fs::path& l) {
                    return !exists(l) && exists(w.root() / "pfsx_moved_out");
                },
                "did not move to /pfsx_moved_out"));
        through(
            "rename exchange", "pfsx_sub", "/pfsx_xchg",
            [](Backend& fs, const std::string& p) {
                return observe(fs.rename(p, "/pfsx_xchg", RenameFlags::exchange));
            },
            host_check(
                [exists](const World& w, const fs::path& l) {
                    return exists(l / "pfsx_x_mark") &&
                           exists(w.root() / "pfsx_xchg" / "pfsx_deep");
                },
                "not exchanged with /pfsx_xchg"));
        through(
            "unlink", "pfsx_victim", {},
            [](Backend& fs, const std::string& p) { return observe(fs.unlink(p)); },
            host_check([exists](const World&, const fs::path& l) { return !exists(l); },
                       "still there"));
        through(
            "rmdir", "pfsx_victim_dir", {},
            [](Backend& fs, const std::string& p) { return observe(fs.rmdir(p)); },
            host_check([exists](const World&, const fs::path& l) { return !exists(l); },
                       "still there"));
        through(
            "chmod", "pfsx_modme", {},
            [](Backend& fs, const std::string& p) { return observe(fs.chmod(p, 0600)); },
            host_check(
                [](const World&, const fs::path& l) {
                    auto st = host_lstat(l);
                    return st && (st->st_mode & 07777) == 0600;
                },
                "mode not 0600"));
        through("chown", "pfsx_modme", {}, [uid, gid](Backend& fs, const std::string& p) {
            return observe(fs.chown(p, uid, gid, Follow::yes));
        });
        through(
            "utimens", "pfsx_modme", {},
            [](Backend& fs, const std::string& p) {
                return observe(fs.utimens(p, TimeUpdate::omit(),
                                          TimeUpdate::at(Time{1234567890, 0}), Follow::yes));
            },
            host_check(
                [](const World&, const fs::path& l) {
                    auto st = host_lstat(l);
                    return st && st->st_mtim.tv_sec == 1234567890;
                },
                "mtime not set"));
        through(
            "truncate", "pfsx_modme", {},
            [](Backend& fs, const std::string& p) { return observe(fs.truncate(p, 2)); },
            host_check(
                [](const World&, const fs::path& l) {
                    auto st = host_lstat(l);
                    return st && st->st_size == 2;
                },
                "size not 2"));
        through(
            "setxattr", "pfsx_modme", {},
            [](Backend& fs, const std::string& p) {
                return observe(fs.setxattr(p, "user.pfsx", "set"));
            },
            host_check(
                [](const World&, const fs::path& l) {
                    char buf[8];
                    return ::lgetxattr(l.c_str(), "user.pfsx", buf, sizeof buf) == 3;
                },
                "user.pfsx not set"));

        // Following the attempt's link. Reads first, then changes.
        follow(
            "stat", 0, 0, ENOENT,
            [](Backend& fs, const std::string& p) { return observe_stat(fs.stat(p)); },
            same_object());
        follow(
            "read", kSkip, 0, ENOENT,
            [](Backend& fs, const std::string& p) { return read_file(fs, p); }, host_bytes());
        follow(
            "readdir", 0, ENOTDIR, ENOENT,
            [](Backend& fs, const std::string& p) { return observe_names(fs.readdir(p)); },
            host_listing());
        follow("statfs", 0, 0, ENOENT, [](Backend& fs, const std::string& p) {
            auto r = fs.statfs(p);
            if (!r) return Observed(std::unexpected(r.error()));
            return Observed(std::string());
        });
        follow("open O_DIRECTORY", 0, ENOTDIR, ENOENT, [](Backend& fs, const std::string& p) {
            return observe_open(fs.open(p, O_RDONLY | O_DIRECTORY));
        });
        follow("open O_WRONLY", EISDIR, 0, ENOENT, [](Backend& fs, const std::string& p) {
            return observe_open(fs.open(p, O_WRONLY));
        });
        follow(
            "open O_TRUNC", EISDIR, 0, ENOENT,
            [](Backend& fs, const std::string& p) {
                return observe_open(fs.open(p, O_WRONLY | O_TRUNC));
            },
            [](Backend&, const World& w, const std::string& virt, const std::string&) {
                return want(host_read(w.host(virt)) == "", "not truncated");
            });
        follow("truncate", EISDIR, 0, ENOENT,
               [](Backend& fs, const std::string& p) { return observe(fs.truncate(p, 1)); });
        // 0755: the mode "/" and the root already have, should an escape reach them.
        follow("chmod", 0, 0, ENOENT,
               [](Backend& fs, const std::string& p) { return observe(fs.chmod(p, 0755)); });
        follow("chown", 0, 0, ENOENT, [uid, gid](Backend& fs, const std::string& p) {
            return observe(fs.chown(p, uid, gid, Follow::yes));
        });
        follow("utimens", 0, 0, ENOENT, [](Backend& fs, const std::string& p) {
            return observe(fs.utimens(p, TimeUpdate::omit(), TimeUpdate::now(), Follow::yes));
        });

        // With a trailing '/', which makes even the calls that do not follow a final link
        // follow it (POSIX: "X/" names what X leads to, which must be a directory); they
        // must follow it under the containment. Same order: reads, then changes.
        follow(
            "stat X/", 0, ENOTDIR, ENOENT,
            [](Backend& fs, const std::string& p) { return observe_stat(fs.stat(p)); },
            same_object(), "/");
        follow(
            "lstat X/", 0, ENOTDIR, ENOENT,
            [](Backend& fs, const std::string& p) { return observe_stat(fs.lstat(p)); },
            same_object(), "/");
        follow(
            "readdir X/", 0, ENOTDIR, ENOENT,
            [](Backend& fs, const std::string& p) { return observe_names(fs.readdir(p)); },
            host_listing(), "/");
        follow(
            "open X/", 0, ENOTDIR, ENOENT,
            [](Backend& fs, const std::string& p) { return observe_open(fs.open(p, O_RDONLY)); },
            {}, "/");
        follow(
            "readlink X/", EINVAL, ENOTDIR, ENOENT,
            [](Backend& fs, const std::string& p) { return fs.readlink(p); }, {}, "/");
        follow(
            "getxattr X/", ENODATA, ENOTDIR, ENOENT,
            [](Backend& fs, const std::string& p) { return fs.getxattr(p, "user.tag"); }, {}, "/");
        follow(
            "statfs X/", 0, ENOTDIR, ENOENT,
            [](Backend& fs, const std::string& p) {
                auto r = fs.statfs(p);
                if (!r) return Observed(std::unexpected(r.error()));
                return Observed(std::string());
            },
            {}, "/");
        follow(
            "link X/", EPERM, ENOTDIR, ENOENT,
            [](Backend& fs, const std::string& p) {
                return observe(fs.link(p, "/pfsx_hard_slash"));
            },
            {}, "/");
        follow(
            "truncate X/", EISDIR, ENOTDIR, ENOENT,
            [](Backend& fs, const std::string& p) { return observe(fs.truncate(p, 0)); }, {}, "/");
        follow(
            "setxattr X/", 0, ENOTDIR, ENOENT,
            [](Backend& fs, const std::string& p) {
                return observe(fs.setxattr(p, "user.pfsx", "set"));
            },
            {}, "/");
        follow(
            "chmod X/", 0, ENOTDIR, ENOENT,
            [](Backend& fs, const std::string& p) { return observe(fs.chmod(p, 0755)); }, {}, "/");
        follow(
            "lchown X/", 0, ENOTDIR, ENOENT,
            [uid, gid](Backend& fs, const std::string& p) {
                return observe(fs.chown(p, uid, gid, Follow::no));
            },
            {}, "/");
        follow(
            "lutimens X/", 0, ENOTDIR, ENOENT,
            [](Backend& fs, const std::string& p) {
                return observe(fs.utimens(p, TimeUpdate::omit(), TimeUpdate::now(), Follow::no));
            },
            {}, "/");

        // Last of those that follow: O_CREAT makes a dangling link's target, after which the
        // others would find it.
        follow(
            "open O_CREAT", EISDIR, 0, 0,
            [](Backend& fs, const std::string& p) {
                return observe_open(fs.open(p, O_WRONLY | O_CREAT, 0644));
            },
            [](Backend&, const World& w, const std::string& virt, const std::string&) {
                return want(host_lstat(w.host(virt)).has_value(), "not there");
            });

        // The link itself, never followed.
        nofollow(
            "lstat", 0, false,
            [](Backend& fs, const std::string& p) { return observe_stat(fs.lstat(p)); },
            [](Backend&, const World&, const std::string&, const std::string& seen) {
                return want(seen.ends_with(" symlink"), "lstat saw " + seen);
            });
        nofollow("readlink", 0, false, [](Backend& fs, const std::string& p) {
            return fs.readlink(p);
        });  // checked against the attempt's target by run_attempt
        nofollow("open O_NOFOLLOW", ELOOP, false, [](Backend& fs, const std::string& p) {
            return observe_open(fs.open(p, O_RDONLY | O_NOFOLLOW));
        });
        nofollow("open O_CREAT|O_EXCL", EEXIST, false, [](Backend& fs, const std::string& p) {
            return observe_open(fs.open(p, O_WRONLY | O_CREAT | O_EXCL, 0644));
        });
        // "X/" where the kernel judges the link itself and follows nothing.
        nofollow(
            "open X/ O_CREAT", EISDIR, false,
            [](Backend& fs, const std::string& p) {
                return observe_open(fs.open(p, O_WRONLY | O_CREAT, 0644));
            },
            {}, "/");
        nofollow(
            "open X/ O_CREAT|O_EXCL", EISDIR, false,
            [](Backend& fs, const std::string& p) {
                return observe_open(fs.open(p, O_WRONLY | O_CREAT | O_EXCL, 0644));
            },
            {}, "/");
        nofollow(
            "mkdir X/", EEXIST, true,
            [](Backend& fs, const std::string& p) { return observe(fs.mkdir(p, 0755)); }, {}, "/");
        nofollow(
            "mknod X/", EEXIST, true,
            [](Backend& fs, const std::string& p) {
                return observe(fs.mknod(p, FileType::fifo, 0644));
            },
            {}, "/");
        nofollow(
            "symlink X/", EEXIST, true,
            [](Backend& fs, const std::string& p) { return observe(fs.symlink("pfsx_inner", p)); },
            {}, "/");
        nofollow(
            "rmdir X/", ENOTDIR, true,
            [](Backend& fs, const std::string& p) { return observe(fs.rmdir(p)); }, {}, "/");
        nofollow(
            "unlink X/", ENOTDIR, true,
            [](Backend& fs, const std::string& p) { return observe(fs.unlink(p)); }, {}, "/");
        nofollow(
            "rename X/", ENOTDIR, true,
            [](Backend& fs, const std::string& p) {
                return observe(fs.rename(p, "/pfsx_moved_out"));
            },
            {}, "/");
        nofollow("getxattr", ENODATA, true,
                 [](Backend& fs, const std::string& p) { return fs.getxattr(p, "user.tag"); });
        nofollow("setxattr", EPERM, true, [](Backend& fs, const std::string& p) {
            return observe(fs.setxattr(p, "user.pfsx", "set"));
        });
        nofollow("lchown", 0, true, [uid, gid](Backend& fs, const std::string& p) {
            return observe(fs.chown(p, uid, gid, Follow::no));
        });
        nofollow("lutimens", 0, true, [](Backend& fs, const std::string& p) {
            return observe(fs.utimens(p, TimeUpdate::omit(), TimeUpdate::now(), Follow::no));
        });
        nofollow(
            "rename", 0, true,
            [](Backend& fs, const std::string& p) { return observe(fs.rename(p, p + "_renamed")); },
            {}, {}, "_renamed");
        nofollow(
            "unlink", 0, true,
            [](Backend& fs, const std::string& p) { return observe(fs.unlink(p)); }, {},
            "_renamed");
        return v;
    }();
    return ops;
}

// The answer the contract gives to `op` on `a` under containment `c` (kSkip: not run).
int expected_errno(Containment c, const Attempt& a, const Op& op) {
    if (op.target == Target::nofollow) {
        return c == Containment::no_symlinks && a.link_parents ? ELOOP : op.on_link;
    }
    if (c == Containment::no_symlinks) return ELOOP;
    const Outcome& o = c == Containment::beneath ? a.beneath : a.in_root;
    switch (o.kind) {
        case Kind::error:
            return o.err;
        case Kind::dir:
            return op.on_dir;
        case Kind::file:
            return op.target == Target::through ? ENOTDIR : op.on_file;
        case Kind::creatable:
            return op.target == Target::through ? ENOENT : op.on_dangling;
    }
    return kSkip;
}

std::string describe(const Observed& r) {
    if (r) return "success";
    return fmt::format("{} ('{}', path '{}')", errno_name(r.error().code()), r.error().message(),
                       r.error().path());
}

// Errors name the virtual path the operation was given, and never a host path.
std::string check_error_names(const Error& e, const World& w, const std::string& path,
                              std::string_view other) {
    auto named = [&](std::string_view given) {
        if (given.size() > 1 && given.ends_with('/')) given.remove_suffix(1);
        return !given.empty() && e.path() == given;
    };
    // (Paths through /proc/PID/root name T themselves: only what is not the path counts.)
    const std::string host = w.t().string();
    std::string message = e.message();
    if (auto at = message.find(e.path()); !e.path().empty() && at != std::string::npos) {
        message.erase(at, e.path().size());
    }
    if ((e.path().find(host) != std::string::npos && !named(path) && !named(other)) ||
        message.find(host) != std::string::npos) {
        return fmt::format("error names a host path: '{}'", e.message());
    }
    if (!named(path) && !named(other)) {
        return fmt::format("error names '{}', not the path given ('{}'{}{})", e.path(), path,
                           other.empty() ? "" : " or '",
                           other.empty() ? "" : std::string(other) + "'");
    }
    return {};
}

bool print_table() {
    const char* v = std::getenv("PACKFS_DIR_ESCAPE_TABLE");
    return v != nullptr && *v == '1';
}

// Runs every operation on one attempt; failures are appended. With `each_op`, the outside is
// compared after every operation, to name the one that escaped.
void run_attempt(World& w, Backend& fs, const DirMode& mode, const Attempt& a, bool each_op,
                 std::vector<std::string>& failures) {
    const Containment c = mode.containment;
    const Outcome& o = c == Containment::beneath ? a.beneath : a.in_root;
    for (const Op& op : all_ops()) {
        if (op.target == Target::nofollow &&
            (a.link_ops == LinkOps::none || (a.link_ops == LinkOps::reads && op.changes_link))) {
            continue;
        }
        const int want_errno = expected_errno(c, a, op);
        if (want_errno == kSkip) continue;
        const std::string path = op.target == Target::through ? path_join(a.path, op.child)
                                                              : a.path + std::string(op.suffix);
        const std::string other =
            op.other_suffix.empty() ? std::string(op.other) : a.path + std::string(op.other_suffix);
        Observed r = op.run(fs, path);
        const int got = r ? 0 : r.error().code();
        const std::string where = fmt::format("{}: {} {}", mode_name(mode), op.name, path);
        if (print_table()) {
            std::printf("TABLE\t%s\t%s\t%s\t%s\n", containment_name(c), a.path.c_str(),
                        std::string(op.name).c_str(), std::string(errno_name(got)).c_str());
        }
        if (got != want_errno) {
            failures.push_back(fmt::format("{}: want {}, got {}", where,
                                           want_errno ? errno_name(want_errno) : "success",
                                           describe(r)));
        } else if (!r) {
            auto bad = check_error_names(r.error(), w, path, other);
            if (!bad.empty()) failures.push_back(fmt::format("{}: {}", where, bad));
        } else if (op.target == Target::nofollow && op.name == "readlink") {
            if (!a.target.empty() && *r != a.target) {
                failures.push_back(fmt::format("{}: answered '{}', not '{}'", where, *r, a.target));
            }
        } else if (op.verify) {
            const std::string landing = op.target == Target::nofollow ? path
                                        : op.target == Target::through
                                            ? path_join(o.landing, op.child)
                                            : o.landing;
            auto bad = op.verify(fs, w, landing, *r);
            if (!bad.empty()) failures.push_back(fmt::format("{}: {}", where, bad));
        }
        if (each_op) {
            auto diffs = w.escapes();
            if (!diffs.empty()) {
                failures.push_back(fmt::format("{}: ESCAPED, changed outside the root:{}", where,
                                               join_lines(diffs)));
                w.rebaseline();
            }
        }
    }
}

// Every attempt in a fresh root; escapes are pinned to their operation by a second run.
void run_attempts(World& w, const DirMode& mode, const std::vector<Attempt>& attempts) {
    std::vector<std::string> failures;
    for (const Attempt& a : attempts) {
        auto fs = w.rebuild(options_of(mode));
        ASSERT_TRUE(fs.has_value()) << "rebuild/open: " << fs.error().message();
        run_attempt(w, **fs, mode, a, false, failures);
        auto diffs = w.escapes();
        if (diffs.empty()) continue;
        failures.push_back(fmt::format("{}: {} changed outside the root:{}", mode_name(mode),
                                       a.path, join_lines(diffs)));
        auto again = w.rebuild(options_of(mode));
        ASSERT_TRUE(again.has_value()) << again.error().message();
        std::vector<std::string> pinned;
        run_attempt(w, **again, mode, a, true, pinned);
        for (auto& f : pinned) {
            if (f.find("ESCAPED") != std::string::npos) failures.push_back(std::move(f));
        }
    }
    EXPECT_TRUE(failures.empty()) << failures.size() << " failures:" << join_lines(failures, 300);
}

class DirEscape : public ::testing::TestWithParam<DirMode> {};

std::string param_name(const ::testing::TestParamInfo<DirMode>& info) {
    return mode_name(info.param);
}

// --- the suites -----------------------------------------------------------------------------

// Every hostile link of the main world, with every operation.
TEST_P(DirEscape, HostileLinksNeverLeaveTheRoot) {
    World w({});
    ASSERT_TRUE(w.ready()) << w.why();
    if (!w.atime_checked()) {
        std::fprintf(stderr, "note: reads are not visible in atime here; not checking them\n");
    }
    run_attempts(w, GetParam(), main_attempts(w));
}

// Real magic links inside the root: /proc bind-mounted at root/proc.
TEST_P(DirEscape, MagicLinksInsideTheRootAreLoops) {
    if (!g_can_mount) GTEST_SKIP() << "needs root and a private mount namespace to mount /proc";
    World w({.proc_mount = true});
    ASSERT_TRUE(w.ready()) << w.why();
    run_attempts(w, GetParam(), proc_attempts(w));

    // /proc/self is an ordinary symlink (to "PID"), not a magic link: followed like any other.
    auto fs = w.rebuild(options_of(GetParam()));
    ASSERT_TRUE(fs.has_value()) << fs.error().message();
    auto status = read_file(**fs, "/proc/self/status");
    if (GetParam().containment == Containment::no_symlinks) {
        EXPECT_FALSE(status.has_value());
        if (!status) {
            EXPECT_EQ(status.error().code(), ELOOP) << status.error().message();
        }
    } else {
        EXPECT_TRUE(status.has_value()) << status.error().message();
        if (status) {
            EXPECT_TRUE(status->starts_with("Name:")) << *status;
        }
    }
}

// T/outside bind-mounted at root/bound: a mount made by the host is served as it is (its
// files are read and written), but ".." from inside it still stops at the root.
TEST_P(DirEscape, BindMountOfTheOutsideIsServedButDotDotStopsAtTheRoot) {
    if (!g_can_mount) GTEST_SKIP() << "needs root and a private mount namespace for a bind mount";
    World w({.bind_outside = true});
    ASSERT_TRUE(w.ready()) << w.why();
    run_attempts(w, GetParam(), bind_attempts());

    auto fs = w.rebuild(options_of(GetParam()));
    ASSERT_TRUE(fs.has_value()) << fs.error().message();
    auto secret = read_file(**fs, "/bound/secret");
    ASSERT_TRUE(secret.has_value()) << secret.error().message();
    EXPECT_EQ(*secret, "outside secret bytes\n");
    auto names = (*fs)->readdir("/bound/dir");
    ASSERT_TRUE(names.has_value()) << names.error().message();
    ASSERT_TRUE(write_file(**fs, "/bound/pfsx_via_bind", "through the bind mount\n"));
    EXPECT_EQ(host_read(w.outside() / "pfsx_via_bind"), "through the bind mount\n");
    // Nothing else changed: only the new file, the directory holding it, and the reads.
    auto diffs = w.escapes({"outside/secret", "outside/dir"});
    std::erase_if(diffs, [](const std::string& d) {
        return d.starts_with("outside/pfsx_via_bind: created") || d.starts_with("outside: ");
    });
    EXPECT_TRUE(diffs.empty()) << join_lines(diffs);
}

// A hard link the host made from the root to an outside file is the host's choice: it is
// read and written like any file in the root, and writing it changes that inode only.
TEST_P(DirEscape, HostHardLinkToTheOutsideIsServedAsIs) {
    World w({});
    ASSERT_TRUE(w.ready()) << w.why();
    auto fs = w.rebuild(options_of(GetParam()));
    ASSERT_TRUE(fs.has_value()) << fs.error().message();
    auto before = host_lstat(w.outside() / "hardfile");
    ASSERT_TRUE(before.has_value());

    auto bytes = read_file(**fs, "/hardlink");
    ASSERT_TRUE(bytes.has_value()) << bytes.error().message();
    EXPECT_EQ(*bytes, "outside hardfile\n");
    auto st = (*fs)->stat("/hardlink");
    ASSERT_TRUE(st.has_value());
    EXPECT_EQ(st->nlink, 2u);
    {
        auto f = (*fs)->open("/hardlink", O_WRONLY);
        ASSERT_TRUE(f.has_value()) << f.error().message();
        const std::string_view data = "written via root";
        ASSERT_TRUE((*f)->pwrite(std::as_bytes(std::span(data.data(), data.size())), 0));
    }
    auto after = host_lstat(w.outside() / "hardfile");
    ASSERT_TRUE(after.has_value());
    EXPECT_EQ(after->st_ino, before->st_ino) << "the host's inode was replaced, not written";
    EXPECT_EQ(host_read(w.outside() / "hardfile"), "written via root\n");
    EXPECT_EQ(host_lstat(w.root() / "hardlink")->st_ino, before->st_ino);

    auto diffs = w.escapes({"outside/hardfile"});
    std::erase_if(diffs, [](const std::string& d) { return d.starts_with("outside/hardfile:"); });
    EXPECT_TRUE(diffs.empty()) << "more than the linked inode changed:" << join_lines(diffs);

    ASSERT_TRUE((*fs)->unlink("/hardlink"));
    auto left = host_lstat(w.outside() / "hardfile");
    ASSERT_TRUE(left.has_value()) << "unlinking the name in the root removed the outside name";
    EXPECT_EQ(left->st_nlink, 1u);
}

// The cache holds directory fds; one the host moves out of the root must not be used again,
// nor any cached below it, and a link put in its place is judged like any other.
TEST_P(DirEscape, DirectoriesMovedOutByTheHostAreGone) {
    const DirMode mode = GetParam();
    World w({});
    ASSERT_TRUE(w.ready()) << w.why();
    auto opened = w.rebuild(options_of(mode));
    ASSERT_TRUE(opened.has_value()) << opened.error().message();
    Backend& fs = **opened;
    const fs::path root = w.root(), out = w.outside();

    // Warm every level of /a/b/c.
    ASSERT_TRUE(write_file(fs, "/a/b/c/pfsx_warm", "warm\n"));
    ASSERT_TRUE(fs.stat("/a/b/c/pfsx_warm"));
    ASSERT_TRUE(fs.readdir("/a/b"));
    ASSERT_TRUE(fs.readdir("/a/b/c"));

    auto everything_is = [&](int code, std::string_view when) {
        std::vector<std::pair<std::string, Observed>> rs;
        rs.emplace_back("stat /a/b/c/pfsx_warm", observe_stat(fs.stat("/a/b/c/pfsx_warm")));
        rs.emplace_back("stat /a/b/c", observe_stat(fs.stat("/a/b/c")));
        rs.emplace_back("read", read_file(fs, "/a/b/c/pfsx_warm"));
        rs.emplace_back("readdir", observe_names(fs.readdir("/a/b/c")));
        rs.emplace_back("create", observe(write_file(fs, "/a/b/c/pfsx_created", "x")));
        rs.emplace_back("mkdir", observe(fs.mkdir("/a/b/c/pfsx_newdir")));
        rs.emplace_back("symlink", observe(fs.symlink("x", "/a/b/c/pfsx_newlink")));
        rs.emplace_back("unlink", observe(fs.unlink("/a/b/c/pfsx_warm")));
        rs.emplace_back("rename in", observe(fs.rename("/pfsx_file", "/a/b/c/pfsx_moved_in")));
        rs.emplace_back("rename out", observe(fs.rename("/a/b/c/pfsx_warm", "/pfsx_moved_out")));
        rs.emplace_back("link out", observe(fs.link("/a/b/c/pfsx_warm", "/pfsx_hard_out")));
        rs.emplace_back("chmod", observe(fs.chmod("/a/b/c", 0700)));
        rs.emplace_back("truncate", observe(fs.truncate("/a/b/c/pfsx_warm", 0)));
        rs.emplace_back("setxattr", observe(fs.setxattr("/a/b/c/pfsx_warm", "user.pfsx", "v")));
        for (const auto& [what, r] : rs) {
            EXPECT_EQ(r ? 0 : r.error().code(), code)
                << when << ": " << what << " answered " << describe(r);
        }
        auto diffs = w.escapes();
        EXPECT_TRUE(diffs.empty()) << when << ": changed outside the root:" << join_lines(diffs);
    };
    auto host_rename = [](const fs::path& from, const fs::path& to) {
        return ::rename(from.c_str(), to.c_str()) == 0;
    };

    // 1. The deepest cached directory moves out.
    ASSERT_TRUE(host_rename(root / "a/b/c", out / "pfsx_moved_c"));
    w.rebaseline();
    everything_is(ENOENT, "c moved out");
    ASSERT_TRUE(host_rename(out / "pfsx_moved_c", root / "a/b/c"));
    auto back = read_file(fs, "/a/b/c/pfsx_warm");
    ASSERT_TRUE(back.has_value()) << "moved back in, not seen: " << back.error().message();
    EXPECT_EQ(*back, "warm\n");

    // 2. An ancestor of cached directories moves out.
    ASSERT_TRUE(fs.readdir("/a/b/c"));
    ASSERT_TRUE(host_rename(root / "a", out / "pfsx_moved_a"));
    w.rebaseline();
    everything_is(ENOENT, "a moved out");

    // 3. In its place, a/b becomes a link to where it went (relative, then absolute).
    const int want_link = mode.containment == Containment::beneath       ? EXDEV
                          : mode.containment == Containment::no_symlinks ? ELOOP
                                                                         : ENOENT;
    ASSERT_EQ(::mkdir((root / "a").c_str(), 0755), 0);
    ASSERT_EQ(::symlink("../../outside/pfsx_moved_a/b", (root / "a/b").c_str()), 0);
    w.rebaseline();
    everything_is(want_link, "a/b a relative link to it");
    ASSERT_EQ(::unlink((root / "a/b").c_str()), 0);
    ASSERT_EQ(::symlink((out / "pfsx_moved_a/b").c_str(), (root / "a/b").c_str()), 0);
    w.rebaseline();
    everything_is(want_link, "a/b an absolute link to it");

    // 4. Back inside, it is served again.
    ASSERT_TRUE(fs::remove_all(root / "a") > 0);
    ASSERT_TRUE(host_rename(out / "pfsx_moved_a", root / "a"));
    auto again = read_file(fs, "/a/b/c/pfsx_warm");
    ASSERT_TRUE(again.has_value()) << again.error().message();
    EXPECT_EQ(*again, "warm\n");
}

INSTANTIATE_TEST_SUITE_P(Modes, DirEscape, ::testing::ValuesIn(all_modes()), param_name);

}  // namespace
}  // namespace packfs::dir_test
