// TEST ONLY. Drives one backend and the reference model through the same random operations
// and compares them after every step (DESIGN §14).
//
// Per step: the op's outcome (success, or the exact errno; the model may name a second
// acceptable errno), the data it returned (bytes read, readdir names and types, link targets,
// xattrs, stat fields the model defines), then an lstat of the paths the op touched, and the
// inode relations (one backend ino per live model inode and back, so hard links share one).
// Every `tree_check_interval` steps and at the end: the whole tree, walked on both sides.
// At the end, every retained snapshot against the model state copied when it was taken.
//
// On the first mismatch the run stops (the states have diverged) and `report` holds the
// seed, the step, the op, expected vs got, and the last operations, enough to replay with
// PACKFS_MODEL_SEED=<seed> PACKFS_MODEL_OPS=<step+1>.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/op_generator.hpp"
#include "model/reference_model.hpp"
#include "packfs/backend.hpp"

namespace packfs::model {

struct CompareOptions {
    bool dir_nlink = true;  // 2 + subdirectories
    bool owners = true;     // uid, gid
    bool mtime = true;      // where the model knows it (set by utimens, untouched since)
    bool atime = true;      // likewise
    bool modes = true;
    bool symlink_mode = true;  // 0777
    // Accepts a known, documented deviation of one backend (both sides failed, with
    // different errnos); each use is counted in RunResult::tolerated.
    std::function<bool(const Op& op, int expected, int got)> tolerate;
    std::size_t tree_check_interval = 500;
    std::size_t history = 20;
};

// Every `every` steps, the driver closes every handle, drops its snapshots, and replaces the
// backend with what `make` returns for the current one (the same tree, in a new form: an
// overlay whose lower is a pack of the current tree, say); then it checks the whole tree.
struct Rebase {
    uint64_t every = 0;  // 0: never
    std::function<std::shared_ptr<Backend>(std::shared_ptr<Backend> current)> make;
};

struct DriverConfig {
    ModelOptions model;
    GeneratorOptions generator;
    CompareOptions compare;
    Rebase rebase;
    // copy_range between handles of a backend without node calls (default: copy_bytes).
    std::function<Result<uint64_t>(File&, uint64_t, File&, uint64_t, uint64_t)> copy_handles;
};

struct RunResult {
    bool ok = true;
    uint64_t steps = 0;
    uint64_t successes = 0;  // ops the model said succeed
    uint64_t failures = 0;   // ops the model said fail (and the backend agreed)
    uint64_t snapshots_taken = 0;
    uint64_t tolerated = 0;  // deviations CompareOptions::tolerate accepted
    uint64_t rebases = 0;
    std::map<std::string, uint64_t> per_op;  // executed ops by kind
    std::string report;                      // on a mismatch
};

class ModelDriver {
public:
    ModelDriver(std::shared_ptr<Backend> backend, uint64_t seed, DriverConfig config);
    // Runs `ops` random operations (stopping at the first mismatch), then the final checks.
    RunResult run(uint64_t ops);

private:
    struct InoMap {
        std::map<uint64_t, uint64_t> model_to_backend;
        std::map<uint64_t, uint64_t> backend_to_model;
    };
    struct Snapshot {
        std::shared_ptr<Backend> fs;
        ReferenceModel model;     // answers the ops aimed at this snapshot
        ReferenceModel pristine;  // the state at the instant it was taken
        uint64_t step;
        InoMap inos;
    };

    bool step(const Op& op);
    bool rebase();
    bool apply(const Op& op, Backend& fs, ReferenceModel& m, InoMap& inos);
    bool post_check(const Op& op);
    bool check_tree(Backend& fs, ReferenceModel& m, InoMap& inos, std::string_view what,
                    bool times);
    bool compare_stat(const ModelStat& want, const Stat& got, const ReferenceModel& m,
                      InoMap& inos, std::string_view what, bool check_times = true);
    template <class A, class B>
    bool compare_outcome(const Result<A>& want, const Result<B>& got, int alt,
                         std::string_view what);
    bool mismatch(std::string detail);
    int writable_errno(const Op& op, const ReferenceModel& frozen);

    std::shared_ptr<Backend> backend_;
    uint64_t seed_;
    DriverConfig config_;
    ReferenceModel model_;
    OpGenerator generator_;
    std::map<int, FileHandle> handles_;
    std::map<int, HeldNode> handle_nodes_;  // each handle's node (copy_range is by node)
    std::vector<Snapshot> snapshots_;
    InoMap inos_;
    std::deque<std::string> history_;
    uint64_t step_ = 0;
    const Op* current_op_ = nullptr;
    RunResult result_;
};

// What a run against a real kernel filesystem switches off (the host directory itself, or a
// FUSE mount of PackFS, both reached through the test-only host backend): snapshots
// (ENOTSUP), special files (a fifo would block open), xattrs on symlinks (Linux refuses
// user.* there), setuid bits (the kernel clears them on chown/write), and the host backend's
// own known differences (see model_driver.cpp); atime is not compared.
DriverConfig kernel_driver_config();

// The run plan from the environment: PACKFS_MODEL_SEED (one seed, all ops), PACKFS_MODEL_OPS
// (total ops), PACKFS_SANITIZER_RUN=1 (5x fewer). Otherwise `fixed_seeds` plus one random
// seed, sharing `default_ops`.
struct RunPlanItem {
    uint64_t seed;
    uint64_t ops;
};
std::vector<RunPlanItem> run_plan_from_env(uint64_t default_ops,
                                           const std::vector<uint64_t>& fixed_seeds);

}  // namespace packfs::model
