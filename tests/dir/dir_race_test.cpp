// The dir backend against a host that swaps a directory for a symlink while PackFS walks
// through it (DESIGN §7: "no race (a component swapped for a symlink between check and use)
// may ever reach outside the root"). Runs under ThreadSanitizer too (label tsan).
//
// The world: T/outside/ (files and a sub/ with the names the workers use, so an escape that
// wrote, truncated, renamed, unlinked or read one would show), and T/root/ holding d/ (a real
// directory with sub/) and d.link, a symlink to the outside: "../outside" or its absolute
// path. For in_root, root/outside/ and root/T/outside/ exist too, so that the link resolved
// chroot-style lands inside the root and the operations through it succeed there.
//
// One thread swaps root/d and root/d.link over and over: renameat2(RENAME_EXCHANGE), and
// every eighth round the non-atomic way, three rename(2)s, with a moment where d is missing.
// Three workers meanwhile create, write, read, stat, rename, link, unlink, mkdir, rmdir,
// list, chmod, truncate and set xattrs through the backend at paths under /d and /d/sub.
//
// Afterwards nothing outside the root was created, changed or read (the whole of T but
// root/, byte for byte with modes, times and xattrs, atime included where reads show), and
// every operation either succeeded (inside the root) or failed with an errno from the list
// (ENOENT, ENOTDIR, ELOOP, EXDEV, EEXIST, ENOTEMPTY): never EAGAIN (openat2's answer to a
// rename racing a ".." lookup, which the backend must retry), EIO, EBADF or EINVAL, and never
// with a host path in the error. For each containment, resolver, cache on and off, and link
// kind.
//
// At most 150 ms a run (~4 s for all 24, on ext4) in a release build: 3 x 500 operations
// against tens of thousands of swaps; PACKFS_SANITIZER_RUN=1 runs a fifth of the operations.
#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "dir/host_tree.hpp"
#include "packfs/backend.hpp"
#include "packfs/dir.hpp"

namespace packfs::dir_test {
namespace {

constexpr int kWorkers = 3;
constexpr int kSlots = 4;  // names per worker

struct RaceParam {
    Containment containment;
    Resolver resolver;
    bool cache;
    bool absolute_link;
};

std::string param_name(const ::testing::TestParamInfo<RaceParam>& info) {
    const RaceParam& p = info.param;
    return fmt::format("{}_{}_{}_{}", containment_name(p.containment), resolver_name(p.resolver),
                       p.cache ? "cache" : "nocache", p.absolute_link ? "abs" : "rel");
}

std::vector<RaceParam> all_params() {
    std::vector<RaceParam> out;
    for (auto c : {Containment::beneath, Containment::in_root, Containment::no_symlinks}) {
        for (auto r : {Resolver::automatic, Resolver::walk}) {
            for (bool cache : {true, false}) {
                for (bool abs : {false, true}) out.push_back({c, r, cache, abs});
            }
        }
    }
    return out;
}

int iterations() {
    return sanitizer_run() ? 100 : 500;
}
std::chrono::milliseconds deadline() {
    return std::chrono::milliseconds(sanitizer_run() ? 600 : 150);
}

bool allowed(int code) {
    switch (code) {
        case ENOENT:
        case ENOTDIR:
        case ELOOP:
        case EXDEV:
        case EEXIST:
        case ENOTEMPTY:
            return true;
        default:
            return false;
    }
}

// What the workers saw: counts by errno (0 = success), and the first few bad answers.
class Tally {
public:
    void add(const std::string& what, const Error* e, const std::string& host) {
        const int code = e ? e->code() : 0;
        if (code == 0) successes_.fetch_add(1, std::memory_order_relaxed);
        std::lock_guard lock(mu_);
        ++counts_[code];
        if (e == nullptr) return;
        std::string bad;
        if (!allowed(code)) bad = "errno not in the list";
        if (e->message().find(host) != std::string::npos) bad = "names a host path";
        if (!bad.empty() && ++bad_count_ <= 20) {
            samples_.push_back(fmt::format("{}: {} ({})", what, e->message(), bad));
        }
    }
    uint64_t bad() const { return bad_count_; }
    uint64_t successes() const { return successes_.load(std::memory_order_relaxed); }
    uint64_t count(int code) const {
        auto it = counts_.find(code);
        return it == counts_.end() ? 0 : it->second;
    }
    std::string summary() const {
        std::string out;
        for (const auto& [code, n] : counts_) {
            out += fmt::format("{}{} {}", out.empty() ? "" : ", ", errno_name(code), n);
        }
        return out;
    }
    const std::vector<std::string>& samples() const { return samples_; }

private:
    std::mutex mu_;
    std::atomic<uint64_t> successes_{0};
    std::map<int, uint64_t> counts_;
    uint64_t bad_count_ = 0;
    std::vector<std::string> samples_;
};

class DirRace : public ::testing::TestWithParam<RaceParam> {};

TEST_P(DirRace, SwappingADirectoryForALinkOutsideNeverEscapes) {
    const RaceParam param = GetParam();
    Scratch scratch;
    ASSERT_TRUE(scratch.ok());
    const fs::path t = scratch.path(), outside = t / "outside", root = t / "root";
    std::error_code ec;
    fs::create_directories(outside / "sub", ec);
    fs::create_directories(root / "d" / "sub", ec);
    if (param.containment == Containment::in_root) {
        fs::create_directories(root / "outside" / "sub", ec);
        fs::create_directories(root / t.relative_path() / "outside" / "sub", ec);
    }
    ASSERT_FALSE(ec) << ec.message();
    for (int w = 0; w < kWorkers; ++w) {
        for (int s = 0; s < kSlots; ++s) {
            const std::string name = fmt::format("w{}_{}", w, s);
            ASSERT_TRUE(host_write(outside / name, "outside " + name + "\n"));
            ASSERT_TRUE(host_write(outside / "sub" / name, "outside sub " + name + "\n"));
        }
    }
    const std::string target = param.absolute_link ? outside.string() : "../outside";
    ASSERT_EQ(::symlink(target.c_str(), (root / "d.link").c_str()), 0);

    const bool atime = atime_is_observable(t);
    age_atimes(outside);
    const HostTree before = snapshot_host_tree(t, {"root"});

    DirOptions options;
    options.containment = param.containment;
    options.resolver = param.resolver;
    options.cache_dirs = param.cache;
    auto opened = open_dir_backend(root.string(), options);
    ASSERT_TRUE(opened.has_value()) << opened.error().message();
    std::shared_ptr<Backend> fs = *opened;

    HeldFd root_fd(root, O_PATH | O_DIRECTORY);
    ASSERT_GE(root_fd.get(), 0);
    std::atomic<int> running{kWorkers};
    std::atomic<uint64_t> swaps{0}, swap_errors{0};
    std::thread swapper([&] {
        const int rfd = root_fd.get();
        for (uint64_t round = 0; running.load(std::memory_order_relaxed) > 0; ++round) {
            // Mostly the atomic exchange: a swapper preempted inside the three renames leaves
            // d missing for a whole time slice, and the workers would see nothing else.
            if (round % 8 != 7) {
                if (::renameat2(rfd, "d", rfd, "d.link", RENAME_EXCHANGE) != 0) ++swap_errors;
            } else {
                // d (whichever it is) aside, d.link into its place, the old d into d.link.
                if (::renameat(rfd, "d", rfd, "d.swap") != 0 ||
                    ::renameat(rfd, "d.link", rfd, "d") != 0 ||
                    ::renameat(rfd, "d.swap", rfd, "d.link") != 0) {
                    ++swap_errors;
                }
            }
            swaps.fetch_add(1, std::memory_order_relaxed);
        }
    });

    Tally tally;
    const std::string host = t.string();
    const auto stop_at = std::chrono::steady_clock::now() + deadline();
    // On a loaded machine the workers may not have run by the deadline: they go on (10 s at
    // most) until something succeeded, so "nothing succeeded" means the backend, not the load.
    auto keep_going = [&] {
        const auto now = std::chrono::steady_clock::now();
        return now < stop_at || (tally.successes() == 0 && now < stop_at + std::chrono::seconds(10));
    };
    std::vector<std::thread> workers;
    for (int w = 0; w < kWorkers; ++w) {
        workers.emplace_back([&, w] {
            Backend& b = *fs;
            for (int i = 0; i < iterations() && keep_going(); ++i) {
                // One file per round of the 13 operations, so they act on what the round made.
                // A round starts after at least one more swap, so that the rounds see both
                // states however the threads are scheduled (two cores, four threads).
                const int round = i / 13;
                if (i % 13 == 0) {
                    const uint64_t seen = swaps.load(std::memory_order_relaxed);
                    while (swaps.load(std::memory_order_relaxed) == seen && keep_going()) {
                        std::this_thread::yield();
                    }
                }
                const std::string dir = round % 3 == 2 ? "/d/sub" : "/d";
                const std::string p = fmt::format("{}/w{}_{}", dir, w, (round / 3) % kSlots);
                auto note = [&](const char* what, const auto& r) {
                    tally.add(fmt::format("{} {}", what, p), r ? nullptr : &r.error(), host);
                };
                switch (i % 13) {
                    case 0:
                        note("write", write_file(b, p, "inside\n"));
                        break;
                    case 1:
                        note("stat", b.stat(p));
                        break;
                    case 2:
                        note("read", read_file(b, p));
                        break;
                    case 3:
                        note("rename", b.rename(p, p + "_r"));
                        break;
                    case 4:
                        note("rename back", b.rename(p + "_r", p));
                        break;
                    case 5:
                        note("mkdir", b.mkdir(p + "_dir"));
                        break;
                    case 6:
                        note("readdir", b.readdir(dir));
                        break;
                    case 7:
                        note("rmdir", b.rmdir(p + "_dir"));
                        break;
                    case 8:
                        note("link", b.link(p, p + "_h"));
                        break;
                    case 9:
                        note("unlink link", b.unlink(p + "_h"));
                        break;
                    case 10:
                        note("chmod", b.chmod(p, 0640));
                        break;
                    case 11:
                        note("truncate", b.truncate(p, 3));
                        break;
                    case 12:
                        note("setxattr", b.setxattr(p, "user.race", "x"));
                        note("unlink", b.unlink(p));
                        break;
                }
            }
            running.fetch_sub(1);
        });
    }
    for (auto& th : workers) th.join();
    swapper.join();
    fs.reset();

    std::printf("%s: %s; %llu swaps\n", param_name({param, 0}).c_str(), tally.summary().c_str(),
                static_cast<unsigned long long>(swaps.load()));
    EXPECT_EQ(swap_errors.load(), 0u);
    EXPECT_GT(swaps.load(), 0u);
    EXPECT_GT(tally.count(0), 0u) << "nothing succeeded inside the root";
    EXPECT_EQ(tally.bad(), 0u) << "bad answers: " << join_lines(tally.samples());

    TreeCompare how;
    how.atime = atime;
    auto diffs = tree_differences(before, snapshot_host_tree(t, {"root"}), how);
    EXPECT_TRUE(diffs.empty()) << "changed outside the root:" << join_lines(diffs, 40);
    EXPECT_EQ(host_names(outside).size(), static_cast<std::size_t>(kWorkers * kSlots + 1))
        << "new names in the outside directory";
}

INSTANTIATE_TEST_SUITE_P(Modes, DirRace, ::testing::ValuesIn(all_params()), param_name);

}  // namespace
}  // namespace packfs::dir_test
