// Crash tests of the volume's durability contract (include/packfs/volume.hpp, DESIGN §10, §14):
// a forked child runs seeded journaled operations on a volume and tells the parent, through a
// pipe, each operation it starts and each one acknowledged as durable; the parent SIGKILLs it
// at a random moment, reopens the volume and checks that the tree is exactly the state after
// op k of the same seeded sequence replayed on a plain mem backend, for some k from the last
// acknowledged op to the last op started (in explicit mode, ops after the last sync() may each
// be lost, but only as a suffix). The same volume directory goes on to the next child, so
// later kills test recovery after recovery (and after compactions the parent makes when the
// journal grows).
//
// PACKFS_CRASH_KILLS=<n> sets the kills per test (default 200; a fifth of that, at least 20,
// when PACKFS_SANITIZER_RUN=1). PACKFS_CRASH_SEED=<n> changes the seeds.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "packfs/mem.hpp"
#include "packfs/volume.hpp"
#include "support/files.hpp"
#include "volume/volume_test_util.hpp"

namespace packfs::volume_test {
namespace {

using test_support::TempDir;
using Clock = std::chrono::steady_clock;

// ---- the pipe protocol: one 8-byte write(2) per message (atomic: < PIPE_BUF) --------------

enum Msg : uint64_t { kReady = 1, kStart = 2, kAck = 3, kFail = 4, kDone = 5 };

constexpr uint64_t encode(Msg kind, uint64_t lane, uint64_t seq) {
    return (uint64_t(kind) << 60) | (lane << 52) | seq;
}
constexpr Msg kind_of(uint64_t m) { return Msg(m >> 60); }
constexpr uint64_t lane_of(uint64_t m) { return (m >> 52) & 0xff; }
constexpr uint64_t seq_of(uint64_t m) { return m & ((uint64_t{1} << 52) - 1); }

void send(int fd, Msg kind, uint64_t lane, uint64_t seq) {
    const uint64_t m = encode(kind, lane, seq);
    while (::write(fd, &m, sizeof m) < 0 && errno == EINTR) {
    }
}

struct LaneSpec {
    std::string root;   // "" (the whole tree) or "/t2"
    uint64_t seed = 0;  // of the lane's OpGen
    uint64_t start = 0; // ops of the sequence already in the volume
};

struct ChildPlan {
    std::string dir;
    Durability mode = Durability::batch;
    std::vector<LaneSpec> lanes;
    uint64_t sync_every = 1;  // explicit: sync() after every this many ops, then ack them
    uint64_t max_ops = 50'000;
};

// One lane's loop in the child: never returns on failure (reports it and _exits).
void run_lane(Volume& volume, const ChildPlan& plan, std::size_t lane, int fd) {
    const LaneSpec& spec = plan.lanes[lane];
    OpGen gen(spec.seed, spec.root);
    while (gen.count() < spec.start) (void)gen.next();
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    auto die = [&](uint64_t n, const Error& e, const std::string& what) {
        std::fprintf(stderr, "crash child: lane %zu op %llu (%s): %s\n", lane,
                     (unsigned long long)n, what.c_str(), e.message().c_str());
        send(fd, kFail, lane, n);
        ::_exit(3);
    };
    while (gen.count() - spec.start < plan.max_ops && Clock::now() < deadline) {
        const Op op = gen.next();
        const uint64_t n = gen.count();
        send(fd, kStart, lane, n);
        if (auto ok = apply_op(volume, op); !ok) die(n, ok.error(), describe(op));
        if (plan.mode == Durability::explicit_sync) {
            if (n % plan.sync_every != 0) continue;
            if (auto ok = volume.sync(); !ok) die(n, ok.error(), "sync");
        }
        send(fd, kAck, lane, n);
    }
    if (plan.mode == Durability::explicit_sync) {
        if (auto ok = volume.sync(); !ok) die(gen.count(), ok.error(), "sync");
        send(fd, kAck, lane, gen.count());
    }
}

[[noreturn]] void child_main(const ChildPlan& plan, int fd) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    auto opened = Volume::open(plan.dir);
    if (!opened) {
        std::fprintf(stderr, "crash child: open: %s\n", opened.error().message().c_str());
        send(fd, kFail, 0, 0);
        ::_exit(3);
    }
    std::shared_ptr<Volume> volume = *opened;
    send(fd, kReady, 0, 0);
    if (plan.lanes.size() == 1) {
        run_lane(*volume, plan, 0, fd);
    } else {
        std::vector<std::thread> threads;
        for (std::size_t i = 0; i < plan.lanes.size(); ++i)
            threads.emplace_back([&, i] { run_lane(*volume, plan, i, fd); });
        for (auto& t : threads) t.join();
    }
    send(fd, kDone, 0, 0);
    ::_exit(0);  // no destructors, no GoogleTest: the volume is simply abandoned
}

// ---- the parent ----------------------------------------------------------------------------

struct Lane {
    std::string root;
    uint64_t seed;
    OpLog log;
    uint64_t k = 0;                // the volume holds ops 1..k of this lane
    std::shared_ptr<Backend> ref;  // mem backend holding the same ops 1..k
    // Per child:
    uint64_t acked = 0, started = 0;
};

struct Totals {
    uint64_t kills = 0, early_kills = 0, finished = 0, acked_ops = 0, ops_in_volume = 0;
    uint64_t max_in_flight = 0;   // ops started but not acknowledged when killed
    uint64_t max_beyond_ack = 0;  // of those, how many the reopened volume held
    uint64_t kept_unacked = 0;    // kills after which the volume held an unacknowledged op
    uint64_t compactions = 0;
    double seconds = 0;
};

class CrashRun {
public:
    CrashRun(Durability mode, std::size_t lanes, uint64_t seed)
        : mode_(mode), rng_(seed), dir_((scratch_.path / "vol").string()) {
        VolumeInit init;
        init.durability = mode;
        auto made = Volume::create(dir_, init);
        EXPECT_TRUE(made.has_value()) << made.error().message();
        for (std::size_t i = 0; i < lanes; ++i) {
            const std::string root = lanes == 1 ? "" : fmt::format("/t{}", i);
            lanes_.push_back(Lane{root, seed * 1000 + i, OpLog(seed * 1000 + i, root), 0,
                                  make_mem_backend()});
        }
        if (lanes > 1) {
            auto v = Volume::open(dir_);
            EXPECT_TRUE(v.has_value());
            for (auto& l : lanes_) {
                EXPECT_TRUE((*v)->mkdir(l.root, 0755).has_value());
                EXPECT_TRUE(l.ref->mkdir(l.root, 0755).has_value());
            }
        }
    }

    // Returns false (after reporting) when the reopened volume is not a state it may be in.
    bool one_kill() {
        ChildPlan plan;
        plan.dir = dir_;
        plan.mode = mode_;
        plan.sync_every = rng_.between(1, 8);
        for (auto& l : lanes_) {
            plan.lanes.push_back(LaneSpec{l.root, l.seed, l.k});
            l.acked = l.started = l.k;
        }
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC) != 0) {
            ADD_FAILURE() << "pipe: " << std::strerror(errno);
            return false;
        }
        const pid_t pid = ::fork();
        if (pid < 0) {
            ADD_FAILURE() << "fork: " << std::strerror(errno);
            return false;
        }
        if (pid == 0) {
            ::close(fds[0]);
            child_main(plan, fds[1]);
        }
        ::close(fds[1]);
        // Most kills come 0-30 ms into the child's run of operations; one in ten comes
        // 0-3 ms after the fork, often while the child is still opening (recovering) the volume.
        const bool early = rng_.below(10) == 0;
        const auto delay = std::chrono::microseconds(early ? rng_.below(3000) : rng_.below(30'000));
        auto deadline = early ? Clock::now() + delay : Clock::now() + std::chrono::seconds(30);
        bool failed = false, done = false, eof = false;
        std::string carry;
        auto take = [&](bool blocking) {
            char buf[4096];
            for (;;) {
                const ssize_t n = ::read(fds[0], buf, sizeof buf);
                if (n < 0 && errno == EINTR) continue;
                if (n <= 0) {
                    eof = true;
                    return;
                }
                carry.append(buf, std::size_t(n));
                std::size_t used = 0;
                for (; used + 8 <= carry.size(); used += 8) {
                    uint64_t m;
                    std::memcpy(&m, carry.data() + used, 8);
                    const Msg kind = kind_of(m);
                    if (kind == kReady && !early) deadline = Clock::now() + delay;
                    if (kind == kFail) failed = true;
                    if (kind == kDone) done = true;
                    if (kind == kStart || kind == kAck) {
                        Lane& l = lanes_.at(lane_of(m));
                        uint64_t& field = kind == kStart ? l.started : l.acked;
                        field = std::max(field, seq_of(m));
                    }
                }
                carry.erase(0, used);
                if (!blocking) return;
            }
        };
        while (!eof && !done && !failed) {
            const auto left = deadline - Clock::now();
            if (left <= Clock::duration::zero()) break;
            const auto us = std::chrono::duration_cast<std::chrono::microseconds>(left).count();
            timespec ts{time_t(us / 1'000'000), long(us % 1'000'000) * 1000};
            pollfd p{fds[0], POLLIN, 0};
            const int r = ::ppoll(&p, 1, &ts, nullptr);
            if (r > 0) take(false);
        }
        ::kill(pid, SIGKILL);
        int status = 0;
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        take(true);  // every message the child wrote before it died
        ::close(fds[0]);
        ++totals_.kills;
        if (early) ++totals_.early_kills;
        if (failed || (WIFEXITED(status) && WEXITSTATUS(status) != 0)) {
            ADD_FAILURE() << "the child failed (see its message above), status " << status;
            return false;
        }
        if (WIFEXITED(status)) ++totals_.finished;
        return check();
    }

    void print(const char* name) const {
        fmt::print("crash {}: {} kills ({} early, {} children finished first), {} ops acked, "
                   "{} ops in the volume, max {} ops in flight at a kill, max {} unacked ops "
                   "kept ({} kills kept some), {} compactions, {:.1f} s\n",
                   name, totals_.kills, totals_.early_kills, totals_.finished, totals_.acked_ops,
                   totals_.ops_in_volume, totals_.max_in_flight, totals_.max_beyond_ack,
                   totals_.kept_unacked, totals_.compactions, totals_.seconds);
    }
    Totals& totals() { return totals_; }

private:
    bool check() {
        auto opened = Volume::open(dir_);
        if (!opened) {
            ADD_FAILURE() << "reopen after kill " << totals_.kills << ": " << opened.error().message();
            return false;
        }
        std::shared_ptr<Volume> volume = *opened;
        uint64_t kept = 0;
        for (std::size_t i = 0; i < lanes_.size(); ++i) {
            Lane& l = lanes_[i];
            const uint64_t a = l.acked, s = std::max(l.started, l.acked);
            totals_.acked_ops += a - l.k;
            totals_.max_in_flight = std::max(totals_.max_in_flight, s - a);
            // The acknowledged ops are certain: the reference takes them all.
            for (uint64_t j = l.k + 1; j <= a; ++j) {
                if (auto ok = apply_op(*l.ref, l.log.at(j)); !ok) {
                    ADD_FAILURE() << "reference: op " << j << " (" << describe(l.log.at(j))
                                  << "): " << ok.error().message();
                    return false;
                }
            }
            l.k = a;
            auto actual = capture(*volume, l.root);
            auto expected = capture(*l.ref, l.root);
            if (!actual || !expected) {
                ADD_FAILURE() << "capture: "
                              << (!actual ? actual.error() : expected.error()).message();
                return false;
            }
            if (*actual == *expected) continue;
            // Else one of the ops in flight must have made it (and all before it).
            auto candidate = make_mem_backend();
            if (auto ok = materialize(*candidate, l.root, *expected); !ok) {
                ADD_FAILURE() << "materialize: " << ok.error().message();
                return false;
            }
            bool found = false;
            for (uint64_t j = a + 1; j <= s && !found; ++j) {
                if (auto ok = apply_op(*candidate, l.log.at(j)); !ok) {
                    ADD_FAILURE() << "reference: op " << j << ": " << ok.error().message();
                    return false;
                }
                auto state = capture(*candidate, l.root);
                if (state && *state == *actual) {
                    found = true;
                    l.k = j;
                    l.ref = candidate;
                    totals_.max_beyond_ack = std::max(totals_.max_beyond_ack, j - a);
                    ++kept;
                }
            }
            if (!found) {
                std::string ops;
                for (uint64_t j = a + 1; j <= std::min(s, a + 4); ++j)
                    ops += fmt::format("\n  in flight: op {}: {}", j, describe(l.log.at(j)));
                ADD_FAILURE() << fmt::format(
                    "kill {} ({} mode), lane {}: the reopened volume is not the state after any "
                    "op from the last acknowledged ({}) to the last started ({}); against the "
                    "state after op {}:\n{}{}\nrecovery: {} records replayed, dropped {} bytes "
                    "at {} ({})",
                    totals_.kills, durability_name(mode_), i, a, s, a, diff(*expected, *actual),
                    ops, volume->recovery().records_replayed, volume->recovery().dropped_bytes,
                    volume->recovery().dropped_offset, volume->recovery().reason);
                return false;
            }
        }
        if (kept > 0) ++totals_.kept_unacked;
        totals_.ops_in_volume = 0;
        for (const auto& l : lanes_) totals_.ops_in_volume += l.k;
        // Keep the journal (and each child's replay) short: compact now and then, so later
        // kills also recover on a compacted volume.
        if (volume->status().journal_bytes > (2u << 20)) {
            auto done = volume->compact();
            if (!done) {
                ADD_FAILURE() << "compact: " << done.error().message();
                return false;
            }
            ++totals_.compactions;
        }
        return true;  // the volume closes here, before the next fork (the child takes the lock)
    }

    Durability mode_;
    Rng rng_;
    TempDir scratch_;
    std::string dir_;
    std::vector<Lane> lanes_;
    Totals totals_;
};

uint64_t kills_per_test() {
    const uint64_t fallback = sanitizer_run() ? 40 : 200;
    return std::max<uint64_t>(1, env_count("PACKFS_CRASH_KILLS", fallback));
}

void run(Durability mode, std::size_t lanes, uint64_t seed, const char* name) {
    seed += env_count("PACKFS_CRASH_SEED", 0) * 7919;
    CrashRun run(mode, lanes, seed);
    if (::testing::Test::HasFailure()) return;
    const auto t0 = Clock::now();
    const uint64_t kills = kills_per_test();
    for (uint64_t i = 0; i < kills; ++i)
        if (!run.one_kill()) break;
    run.totals().seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    run.print(name);
    EXPECT_EQ(run.totals().kills, kills);
    EXPECT_GT(run.totals().acked_ops, 0u) << "no child got as far as an acknowledged op";
}

// Every op is durable when it returns: the volume holds every acked op and at most the one
// in flight.
TEST(VolumeCrash, AlwaysModeKeepsEveryAcknowledgedOpAndAtMostTheOneInFlight) {
    run(Durability::always, 1, 11, "always");
}

TEST(VolumeCrash, BatchModeKeepsEveryAcknowledgedOpAndAtMostTheOneInFlight) {
    run(Durability::batch, 1, 22, "batch");
}

// Acked = covered by a sync() that returned; the unsynced ops after it survive as a prefix.
TEST(VolumeCrash, ExplicitModeKeepsEverySyncedOpAndAPrefixOfTheUnsyncedOnes) {
    run(Durability::explicit_sync, 1, 33, "explicit");
}

// Four threads, each in its own directory (so their ops commute), share group commits: each
// thread's subtree is a prefix of its ops containing every op it saw acknowledged.
TEST(VolumeCrash, BatchModeWithFourThreadsKeepsEachThreadsAcknowledgedOps) {
    run(Durability::batch, 4, 44, "batch, 4 threads");
}

}  // namespace
}  // namespace packfs::volume_test
