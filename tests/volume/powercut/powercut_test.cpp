// Power-cut replay of volumes (DESIGN §10: tested at the level of the disk, not only by killing
// the daemon). A SIGKILL leaves the page cache to the kernel, so every write a process made
// reaches the disk; a power cut does not. This test replays what a cut may leave instead, as
// CrashMonkey and SQLite's crash tests do:
//
//   1. Record. A volume is made and driven through a workload (workload.hpp: mkdir, create,
//      writes of 1 B to 1.1 MiB, truncate, rename, unlink, setxattr, link, symlink, chmod,
//      rmdir, a close and reopen, and two compactions with mutations made while they run) in
//      each durability mode (always, batch, explicit with sync() at chosen points and the
//      commit interval off),
//      while core/io.hpp's recorder logs every call that changed the volume's directory: each
//      file created, written (where, which bytes), truncated, synced, renamed and unlinked, and
//      each fsync of the directory. Those are all the calls the journal writer, the manifest
//      writer and the pack writer make. Each mutation is made on a reference model too (a mem
//      backend), whose tree after each is kept as text (tree_dump.hpp).
//   2. Build the states. For a cut after each call k, the disk model (disk_model.hpp, which
//      says the model in full) gives the states the disk may hold: each file its durable
//      content plus any subset of its unsynced writes and truncates, in any order, each write
//      possibly torn at 512-byte sectors; the names a prefix of the namespace operations not
//      committed by an fsync of the directory (a file's fsync does not commit its name). States
//      are enumerated systematically where the choices are few and drawn with a fixed seed
//      beyond that, up to a budget of states.
//   3. Check each state. Its files are written into a fresh directory, which is opened as a
//      volume (a normal read-write open: recovery runs). It must open, and its tree must be the
//      model's after some prefix of the mutations that holds every mutation acknowledged as
//      durable by the cut and none that had not begun. The one exception: a state cut before
//      Volume::create returned that has no manifest is not a volume yet, and its open must fail
//      with ENOENT (the manifest is written last, so no other half-made volume is acceptable).
//      Then a mutation, a sync and a close, and a second open: its recovery must drop nothing
//      (the first one left a consistent journal) and its tree must be the first one's plus that
//      mutation. A state whose files equal an earlier state's is not opened again; its result is
//      judged against its own cut.
//
// A failure names the mode, the cut (the call it follows and the workload's last mark before
// it), each choice the state made, the prefixes allowed, and the diff of the trees.
//
// PACKFS_POWERCUT_STATES=<n>: states that differ in what they keep (DiskModel::fingerprint),
// in all (default 12,000; 3,000 with PACKFS_SANITIZER_RUN=1, the ASan build), shared by the
// modes (always and batch leave fewer states open than explicit; what they cannot use goes to
// the modes after them). A systematic state that keeps what an earlier one kept at another cut
// is judged too, without counting. 12,000 gave 13,272 states judged and 10,769 distinct sets
// of files opened, in 32 s on 2 cores; 200,000 gave 201,272 and 192,280, in 7 minutes. PACKFS_POWERCUT_SEED=<n> changes the sampling,
// PACKFS_POWERCUT_THREADS=<n> the checking threads (default: one a core),
// PACKFS_POWERCUT_VERBOSE=1 prints each mode's recorded calls and marks. States are checked
// in a directory on /dev/shm when there is one (a tmpfs: the opens' fsyncs cost nothing),
// else under $TMPDIR; PACKFS_POWERCUT_TMPDIR overrides.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <xxhash.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "packfs/volume.hpp"
#include "support/files.hpp"
#include "volume/powercut/disk_model.hpp"
#include "volume/powercut/tree_dump.hpp"
#include "volume/powercut/workload.hpp"
#include "volume/volume_test_util.hpp"

namespace packfs::powercut {
namespace {

using Clock = std::chrono::steady_clock;
using volume_test::env_count;
using volume_test::Rng;
namespace fs = std::filesystem;

constexpr const char* kProbe = "/.powercut-probe";

// Where states are opened: a tmpfs if there is one.
std::string scratch_base() {
    if (const char* dir = std::getenv("PACKFS_POWERCUT_TMPDIR"); dir && *dir) return dir;
    if (::access("/dev/shm", W_OK) == 0) return "/dev/shm";
    const char* tmp = std::getenv("TMPDIR");
    return tmp && *tmp ? tmp : "/tmp";
}

struct ScratchDir {
    fs::path path;
    ScratchDir() {
        std::string tmpl = scratch_base() + "/packfs-powercut-XXXXXX";
        if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp " + tmpl);
        path = tmpl;
    }
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;
    ~ScratchDir() {
        std::error_code ignored;
        fs::remove_all(path, ignored);
    }
};

struct ImageKey {
    uint64_t low = 0, high = 0;
    friend bool operator==(const ImageKey&, const ImageKey&) = default;
};
struct ImageKeyHash {
    std::size_t operator()(const ImageKey& k) const noexcept { return k.low ^ (k.high * 31); }
};

ImageKey key_of(const DiskImage& image) {
    const std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(),
                                                                         &XXH3_freeState);
    XXH3_128bits_reset(state.get());
    for (const auto& [name, content] : image) {
        const uint64_t sizes[2] = {name.size(), content.size()};
        XXH3_128bits_update(state.get(), sizes, sizeof sizes);
        XXH3_128bits_update(state.get(), name.data(), name.size());
        XXH3_128bits_update(state.get(), content.data(), content.size());
    }
    const XXH128_hash_t h = XXH3_128bits_digest(state.get());
    return {h.low64, h.high64};
}

// What opening one disk image gave.
struct Outcome {
    bool opened = false;
    Error error{0, "", ""};  // when it did not open
    std::string tree;        // the recovered tree (tree_dump.hpp)
    std::string recovery;    // what the first open's recovery dropped
    std::string second;      // what was wrong with the second open; "" when nothing
};

Outcome open_image(const DiskImage& image, const fs::path& dir) {
    Outcome outcome;
    fs::create_directory(dir);
    for (const auto& [name, content] : image) {
        std::ofstream out(dir / name, std::ios::binary);
        out.write(content.data(), static_cast<std::streamsize>(content.size()));
        out.close();
        if (!out) {
            outcome.error = Error(EIO, "writing the state's files", (dir / name).string());
            return outcome;
        }
    }
    VolumeOptions options;
    options.commit_interval = std::chrono::milliseconds(0);
    {
        auto volume = Volume::open(dir.string(), options);
        if (!volume) {
            outcome.error = volume.error();
            return outcome;
        }
        outcome.opened = true;
        const RecoveryReport& r = (*volume)->recovery();
        if (!r.clean())
            outcome.recovery = fmt::format("{} records replayed, {} bytes dropped at {} ({})",
                                           r.records_replayed, r.dropped_bytes, r.dropped_offset,
                                           r.reason);
        auto tree = dump_tree(**volume);
        if (!tree) {
            outcome.second = "the first open's tree could not be read: " + tree.error().message();
            return outcome;
        }
        outcome.tree = std::move(*tree);
        if (auto ok = (*volume)->mkdir(kProbe, 0755); !ok) {
            outcome.second = "a mkdir after recovery failed: " + ok.error().message();
            return outcome;
        }
        if (auto ok = (*volume)->sync(); !ok) {
            outcome.second = "a sync after recovery failed: " + ok.error().message();
            return outcome;
        }
    }
    auto again = Volume::open(dir.string(), options);
    if (!again) {
        outcome.second = "the second open failed: " + again.error().message();
        return outcome;
    }
    if (!(*again)->recovery().clean())
        outcome.second = "the second open dropped part of the journal: " + (*again)->recovery().reason;
    auto tree = dump_tree(**again);
    if (!tree) {
        outcome.second = "the second open's tree could not be read: " + tree.error().message();
        return outcome;
    }
    // The first tree plus the probe, and nothing else.
    const std::string probe_line = fmt::format("{} ", kProbe);
    std::string without_probe;
    bool probe_seen = false;
    for (std::size_t at = 0; at < tree->size();) {
        const std::size_t nl = tree->find('\n', at);
        const std::string_view line(tree->data() + at, nl - at + 1);
        if (line.starts_with(probe_line))
            probe_seen = true;
        else
            without_probe.append(line);
        at = nl + 1;
    }
    if (!probe_seen) outcome.second += "the second open lost the mkdir synced after recovery; ";
    if (without_probe != outcome.tree)
        outcome.second += fmt::format("the second open's tree differs from the first:\n{}",
                                      diff_dumps(outcome.tree, without_probe));
    return outcome;
}

// One mode's run and the states chosen for it.
struct Plan {
    RecordedRun run;
    std::unique_ptr<DiskModel> model;
    std::vector<CutState> states;
    std::unordered_map<std::string, std::vector<std::size_t>> prefixes_by_tree;  // tree -> i
    std::size_t systematic = 0;          // systematic states of the run (all cuts)
    std::size_t opened = 0;              // distinct disk images of the run opened
};

// States for the run until `budget` of them are distinct (DiskModel::fingerprint): its
// systematic states, in a seeded order (each kept, its image new or not: the same image at a
// later cut is judged against more acknowledged mutations), then random states with new
// images, at cuts drawn in proportion to how much each leaves open, until the budget is met
// or draws stop finding new ones.
std::vector<CutState> choose_states(const DiskModel& model, std::size_t budget, uint64_t seed,
                                    std::size_t& systematic, std::size_t& distinct) {
    std::vector<CutState> candidates;
    for (std::size_t cut = 0; cut < model.cuts(); ++cut) {
        auto more = model.systematic(cut);
        std::move(more.begin(), more.end(), std::back_inserter(candidates));
    }
    systematic = candidates.size();
    Rng rng(seed);
    for (std::size_t i = candidates.size(); i > 1; --i)
        std::swap(candidates[i - 1], candidates[rng.below(i)]);
    std::unordered_set<std::string> seen;
    std::vector<CutState> states;
    for (auto& state : candidates) {
        if (seen.size() >= budget) break;
        seen.insert(model.fingerprint(state));
        states.push_back(std::move(state));
    }
    std::vector<std::size_t> cut_of, weight_end;  // cumulative weights
    std::size_t total = 0;
    for (std::size_t cut = 0; cut < model.cuts(); ++cut) {
        if (const std::size_t w = model.freedom(cut); w > 0) {
            total += w;
            cut_of.push_back(cut);
            weight_end.push_back(total);
        }
    }
    for (std::size_t misses = 0; seen.size() < budget && total > 0 && misses < 20 * budget;) {
        const std::size_t r = rng.below(total);
        const auto i = std::upper_bound(weight_end.begin(), weight_end.end(), r) - weight_end.begin();
        CutState state = model.random(cut_of[static_cast<std::size_t>(i)], rng);
        if (!seen.insert(model.fingerprint(state)).second) {
            ++misses;
            continue;
        }
        states.push_back(std::move(state));
    }
    distinct = seen.size();
    return states;
}

// The workload's last mark at or before `cut`.
std::string where(const RecordedRun& run, std::size_t cut) {
    std::string at = "before the volume was created";
    for (const auto& [calls, what] : run.marks)
        if (calls <= cut) at = fmt::format("after \"{}\" (call {})", what, calls);
    return at;
}

struct Tally {
    std::atomic<std::size_t> checked{0}, opened{0}, not_yet_a_volume{0}, recovered_torn{0};
    std::atomic<std::size_t> failures{0};
    std::mutex mu;
    std::vector<std::string> reports;  // the first few failures, in full
};

// The verdict on one state: "" when it holds.
std::string judge(const Plan& plan, const CutState& state, const DiskImage& image,
                  const Outcome& outcome, Tally& tally) {
    const RecordedRun& run = plan.run;
    const std::size_t acked = run.acked_by(state.cut), started = run.started_before(state.cut);
    if (!outcome.opened) {
        if (state.cut < run.created && !image.contains("MANIFEST") && outcome.error.code() == ENOENT) {
            ++tally.not_yet_a_volume;
            return {};
        }
        return fmt::format("the volume did not open: {}", outcome.error.message());
    }
    if (!outcome.recovery.empty()) ++tally.recovered_torn;
    if (outcome.tree.empty()) return outcome.second;  // the tree could not be read
    auto it = plan.prefixes_by_tree.find(outcome.tree);
    if (it == plan.prefixes_by_tree.end() ||
        std::none_of(it->second.begin(), it->second.end(),
                     [&](std::size_t i) { return i >= acked && i <= started; })) {
        std::string why = fmt::format(
            "the tree is not the model's after any prefix of {}..{} mutations (acknowledged "
            "durable: {}; begun: {})",
            acked, started, acked, started);
        if (it != plan.prefixes_by_tree.end())
            why += fmt::format("; it is the model's after {} mutations", it->second.front());
        if (acked > 0 && acked <= run.mutations.size())
            why += fmt::format("\n  last acknowledged mutation: {}", run.mutations[acked - 1].what);
        why += fmt::format("\n  diff against the model after {} mutations:\n{}", acked,
                           diff_dumps(run.model_dumps[acked], outcome.tree));
        if (started != acked)
            why += fmt::format("  diff against the model after {} mutations:\n{}", started,
                               diff_dumps(run.model_dumps[started], outcome.tree));
        if (!outcome.recovery.empty()) why += "  recovery: " + outcome.recovery + "\n";
        return why;
    }
    if (!outcome.second.empty()) return outcome.second;
    return {};
}

// Checks every state of every plan with `threads` workers; the tally says what was found.
void check_states(std::vector<Plan>& plans, unsigned threads, Tally& tally) {
    struct Job {
        std::size_t plan, state;
    };
    std::vector<Job> jobs;
    for (std::size_t p = 0; p < plans.size(); ++p)
        for (std::size_t s = 0; s < plans[p].states.size(); ++s) jobs.push_back({p, s});
    std::atomic<std::size_t> next{0};
    std::mutex cache_mu;
    std::unordered_map<ImageKey, std::shared_ptr<const Outcome>, ImageKeyHash> cache;
    ScratchDir scratch;
    auto work = [&](unsigned worker) {
        for (std::size_t n = 0;; ++n) {
            const std::size_t j = next.fetch_add(1);
            if (j >= jobs.size()) return;
            Plan& plan = plans[jobs[j].plan];
            const CutState& state = plan.states[jobs[j].state];
            const DiskImage image = plan.model->image(state);
            const ImageKey key = key_of(image);
            std::shared_ptr<const Outcome> outcome;
            {
                std::lock_guard lock(cache_mu);
                if (auto it = cache.find(key); it != cache.end()) outcome = it->second;
            }
            if (!outcome) {
                const fs::path dir = scratch.path / fmt::format("w{}-{}", worker, n);
                outcome = std::make_shared<const Outcome>(open_image(image, dir));
                std::error_code ignored;
                fs::remove_all(dir, ignored);
                ++tally.opened;
                std::lock_guard lock(cache_mu);
                ++plan.opened;
                cache.emplace(key, outcome);
            }
            ++tally.checked;
            std::string verdict = judge(plan, state, image, *outcome, tally);
            if (verdict.empty()) continue;
            if (tally.failures++ >= 5) continue;
            std::string files;
            for (const auto& [name, content] : image) files += fmt::format(" {} ({} B)", name, content.size());
            std::lock_guard lock(tally.mu);
            tally.reports.push_back(fmt::format(
                "mode {}: {}\n  {}\n  cut {}; files:{}\n  {}", plan.run.scenario,
                plan.model->describe(state), where(plan.run, state.cut), state.cut, files, verdict));
        }
    };
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) pool.emplace_back(work, t);
    for (auto& t : pool) t.join();
}

// How many of the states cut inside each stretch between two marks of the run (the compaction's
// steps among them): the cuts cover before, inside and after each.
std::string coverage(const Plan& plan) {
    std::vector<std::pair<std::size_t, std::string>> steps;
    for (const auto& mark : plan.run.marks)
        if (mark.second.starts_with("compact") || mark.second.starts_with("manifest"))
            steps.push_back(mark);
    std::vector<std::size_t> per_step(steps.size(), 0);
    for (const CutState& s : plan.states) {
        std::size_t m = 0;
        while (m < steps.size() && steps[m].first <= s.cut) ++m;
        if (m > 0 && m < steps.size()) ++per_step[m - 1];  // inside a compaction, or between two
    }
    std::string out;
    for (std::size_t i = 0; i + 1 < steps.size(); ++i)
        out += fmt::format(" {} {};", steps[i].second, per_step[i]);
    return out;
}

// The run's calls, with its marks between them (PACKFS_POWERCUT_VERBOSE=1).
void print_log(const RecordedRun& run) {
    fmt::print("{} mode: {} calls\n", run.scenario, run.ops.size());
    std::size_t mark = 0;
    for (std::size_t i = 0; i <= run.ops.size(); ++i) {
        for (; mark < run.marks.size() && run.marks[mark].first == i; ++mark)
            fmt::print("      -- {}\n", run.marks[mark].second);
        if (i < run.ops.size()) fmt::print("  {:4} {}\n", i + 1, describe(run.ops[i]));
    }
}

TEST(VolumePowerCut, EveryStateACutMayLeaveRecoversAPrefixWithEveryAcknowledgedMutation) {
    const bool sanitizer = volume_test::sanitizer_run();
    const std::size_t total = env_count("PACKFS_POWERCUT_STATES", sanitizer ? 3'000 : 12'000);
    const uint64_t seed = env_count("PACKFS_POWERCUT_SEED", 1);
    const auto threads = static_cast<unsigned>(
        env_count("PACKFS_POWERCUT_THREADS", std::max(1u, std::thread::hardware_concurrency())));
    const auto t0 = Clock::now();

    // The budget is shared; a mode whose states run out (always and batch leave less open than
    // explicit) leaves the rest to the modes after it.
    const Durability modes[] = {Durability::always, Durability::batch, Durability::explicit_sync};
    std::vector<Plan> plans;
    std::size_t remaining = total;
    for (Durability mode : modes) {
        ScratchDir dir;
        auto run = record_workload(dir.path.string(), mode);
        ASSERT_TRUE(run.has_value()) << durability_name(mode) << ": " << run.error().message();
        Plan plan;
        plan.run = std::move(*run);
        plan.model = std::make_unique<DiskModel>(plan.run.ops);
        for (const auto& problem : plan.model->problems()) ADD_FAILURE() << problem;
        for (std::size_t i = 0; i < plan.run.model_dumps.size(); ++i)
            plan.prefixes_by_tree[plan.run.model_dumps[i]].push_back(i);
        std::size_t distinct = 0;
        plan.states = choose_states(*plan.model, remaining / (std::size(modes) - plans.size()),
                                    seed + plans.size(), plan.systematic, distinct);
        remaining -= std::min(remaining, distinct);
        if (env_count("PACKFS_POWERCUT_VERBOSE", 0) != 0) print_log(plan.run);
        plans.push_back(std::move(plan));
    }
    const double record_seconds = std::chrono::duration<double>(Clock::now() - t0).count();

    Tally tally;
    check_states(plans, threads, tally);
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();

    for (const Plan& p : plans) {
        std::size_t acked = 0;
        for (const auto& m : p.run.mutations) acked += m.acked != kNever;
        fmt::print("power cut, {}: {} calls recorded, {} mutations ({} acknowledged durable); "
                   "{} states ({} systematic of {}, the rest random), {} distinct disk images; "
                   "cut after each compaction step:{}\n",
                   p.run.scenario, p.run.ops.size(), p.run.mutations.size(), acked,
                   p.states.size(), std::min(p.systematic, p.states.size()), p.systematic,
                   p.opened, coverage(p));
    }
    fmt::print("power cut: {} states checked ({} distinct disk images opened, {} not yet a volume, "
               "{} with a torn journal tail recovered) in {:.1f} s ({:.1f} s recording), "
               "{} threads\n",
               tally.checked.load(), tally.opened.load(), tally.not_yet_a_volume.load(),
               tally.recovered_torn.load(), seconds, record_seconds, threads);
    for (const auto& report : tally.reports) ADD_FAILURE() << report;
    EXPECT_EQ(tally.failures.load(), 0u) << "states that broke the durability contract";
    EXPECT_EQ(tally.checked.load(), [&] {
        std::size_t n = 0;
        for (const Plan& p : plans) n += p.states.size();
        return n;
    }());
}

}  // namespace
}  // namespace packfs::powercut
