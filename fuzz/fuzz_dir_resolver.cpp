// libFuzzer target: the dir backend's two resolvers against each other (DESIGN §7, §14).
//
// A symlink's text is hostile input from the host tree; the walk resolver parses it itself.
// Each input is up to four lines: three symlink targets, planted at /l0, /a/l1 and /a/b/l2 of
// a small root that sits beside an outside/ directory, and a path to resolve. For every
// containment mode and a few open flags, the path is resolved by openat2 (the kernel's answer)
// and by the walk. Invariants:
// - both succeed and open the same inode, or both fail with the same errno;
// - whatever either opens lies inside the root (its /proc/self/fd link starts with the root).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "dir/resolver.hpp"
#include "packfs/path.hpp"

namespace {

using packfs::Containment;
using packfs::Fd;
using packfs::dir::PathResolver;

[[noreturn]] void die(const char* what, std::string_view detail) {
    std::fprintf(stderr, "fuzz_dir_resolver: invariant broken: %s (%.*s)\n", what,
                 static_cast<int>(detail.size()), detail.data());
    std::abort();
}

// base/root/{a/b/file, a/file, x, d/} and base/outside/secret, made once per process.
struct World {
    std::string base;
    std::string root_path;
    Fd root;

    World() {
        char tmpl[] = "/tmp/packfs-fuzz-dir-XXXXXX";
        if (::mkdtemp(tmpl) == nullptr) die("mkdtemp", tmpl);
        base = tmpl;
        root_path = base + "/root";
        for (const char* d : {"/root", "/root/a", "/root/a/b", "/root/d", "/outside"}) {
            if (::mkdir((base + d).c_str(), 0755) != 0) die("mkdir", d);
        }
        for (const char* f : {"/root/a/b/file", "/root/a/file", "/root/x", "/outside/secret"}) {
            Fd fd(::open((base + f).c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
            if (!fd) die("create", f);
        }
        root = Fd(::open(root_path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
        if (!root) die("open root", root_path);
    }
    ~World() {
        std::string cmd = "rm -rf '" + base + "'";
        if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", base.c_str());
    }
};

World& world() {
    static World w;
    return w;
}

constexpr std::array<const char*, 3> kLinks{"l0", "a/l1", "a/b/l2"};

bool inside(const World& w, int fd) {
    char buf[4096];
    const std::string proc = "/proc/self/fd/" + std::to_string(fd);
    ssize_t n = ::readlink(proc.c_str(), buf, sizeof buf);
    if (n <= 0) return false;
    std::string_view target(buf, static_cast<std::size_t>(n));
    return target == w.root_path ||
           (target.starts_with(w.root_path) && target[w.root_path.size()] == '/');
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    World& w = world();
    std::string_view in(reinterpret_cast<const char*>(data), size);
    std::vector<std::string_view> lines;
    while (lines.size() < 4) {
        std::size_t nl = in.find('\n');
        lines.push_back(in.substr(0, nl));
        if (nl == std::string_view::npos) break;
        in.remove_prefix(nl + 1);
    }
    if (lines.size() < 4) return 0;
    for (std::size_t i = 0; i < kLinks.size(); ++i) {
        const std::string target(lines[i]);
        if (target.empty() || target.size() > packfs::kMaxPathLength ||
            target.find('\0') != std::string::npos) {
            continue;
        }
        (void)::symlinkat(target.c_str(), w.root.get(), kLinks[i]);
    }
    // The backend hands the resolver a normalised path without its leading '/'.
    if (auto normal = packfs::normalize_path(lines[3])) {
        const std::string rel = *normal == "/" ? std::string(".") : normal->substr(1);
        for (Containment c : {Containment::beneath, Containment::in_root, Containment::no_symlinks}) {
            const PathResolver kernel(c, packfs::Resolver::openat2);
            const PathResolver walk(c, packfs::Resolver::walk);
            for (int flags : {O_PATH, O_PATH | O_NOFOLLOW, O_RDONLY | O_DIRECTORY}) {
                auto a = kernel.open(w.root.get(), rel, flags);
                auto b = walk.open(w.root.get(), rel, flags);
                const std::string where = rel + " mode " + packfs::containment_name(c) +
                                          " flags " + std::to_string(flags);
                if (a.has_value() != b.has_value()) die("one resolver opened, the other failed", where);
                if (!a) {
                    if (a.error() != b.error()) die("different errnos", where);
                    continue;
                }
                struct stat sa, sb;
                if (::fstat(a->get(), &sa) != 0 || ::fstat(b->get(), &sb) != 0) die("fstat", where);
                if (sa.st_dev != sb.st_dev || sa.st_ino != sb.st_ino) die("different inodes", where);
                if (!inside(w, a->get()) || !inside(w, b->get())) die("opened outside the root", where);
            }
        }
    }
    for (const char* link : kLinks) (void)::unlinkat(w.root.get(), link, 0);
    return 0;
}
