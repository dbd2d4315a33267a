// Injected I/O faults at the volume level (include/packfs/volume.hpp: "A mutation that fails
// changes nothing, and the volume stays usable for the next one"), through core/io.hpp's
// process-wide fault hook: ENOSPC and EIO from the journal's write and fdatasync, and a torn
// short write (io::kShortWrite), in every durability mode. Each case checks the errno of the
// operation that hit the fault, that the tree is unchanged by it, that what was acknowledged
// before is intact, that the next mutation succeeds once the hook is cleared, and that a
// reopened volume holds exactly what was acknowledged.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "core/io.hpp"
#include "packfs/mem.hpp"
#include "packfs/volume.hpp"
#include "support/files.hpp"
#include "volume/volume_test_util.hpp"

namespace packfs::volume_test {
namespace {

using io::IoOp;
using test_support::TempDir;

bool is_journal(std::string_view what) { return what.find("/journal.") != std::string_view::npos; }

struct Fault {
    const char* name;
    IoOp op;
    int answer;  // errno, or io::kShortWrite
    int expected_errno;
};

const Fault kFaults[] = {
    {"write ENOSPC", IoOp::write, ENOSPC, ENOSPC},
    {"write EIO", IoOp::write, EIO, EIO},
    {"torn short write", IoOp::write, io::kShortWrite, ENOSPC},
    {"fdatasync ENOSPC", IoOp::fsync, ENOSPC, ENOSPC},
    {"fdatasync EIO", IoOp::fsync, EIO, EIO},
};

// Fails the first journal call of `fault.op` with its answer; every later call goes ahead.
std::shared_ptr<std::atomic<int>> install_one_shot(const Fault& fault) {
    auto calls = std::make_shared<std::atomic<int>>(0);
    io::set_fault_hook([calls, fault](IoOp op, std::string_view what) -> int {
        if (op != fault.op || !is_journal(what)) return 0;
        return calls->fetch_add(1) == 0 ? fault.answer : 0;
    });
    return calls;
}

struct Mutation {
    const char* name;
    std::function<Result<void>(Backend&)> run;
};

Result<void> handle_write(Backend& fs, std::string_view path, uint64_t offset, std::string_view s) {
    auto f = fs.open(path, O_WRONLY);
    if (!f) return std::unexpected(f.error());
    auto n = (*f)->pwrite(std::as_bytes(std::span(s.data(), s.size())), offset);
    if (!n) return std::unexpected(n.error());
    return {};
}

// Each is one journaled mutation of the base tree below.
const std::vector<Mutation>& mutations() {
    static const std::vector<Mutation> all = {
        {"mkdir", [](Backend& fs) { return fs.mkdir("/new", 0755); }},
        {"create", [](Backend& fs) -> Result<void> {
             auto f = fs.open("/keep/c", O_CREAT | O_EXCL | O_WRONLY, 0644);
             if (!f) return std::unexpected(f.error());
             return {};
         }},
        {"write by handle", [](Backend& fs) { return handle_write(fs, "/keep/a", 3, "XYZ-more"); }},
        {"append by handle", [](Backend& fs) -> Result<void> {
             auto f = fs.open("/keep/b", O_WRONLY | O_APPEND);
             if (!f) return std::unexpected(f.error());
             auto n = (*f)->pwrite(std::as_bytes(std::span("tail", 4)), 0);
             if (!n) return std::unexpected(n.error());
             return {};
         }},
        {"truncate", [](Backend& fs) { return fs.truncate("/keep/a", 2); }},
        {"rename", [](Backend& fs) { return fs.rename("/keep/b", "/keep/b2"); }},
        {"unlink", [](Backend& fs) { return fs.unlink("/keep/b"); }},
        {"rmdir", [](Backend& fs) { return fs.rmdir("/empty"); }},
        {"setxattr", [](Backend& fs) { return fs.setxattr("/keep/a", "user.k", "new value"); }},
        {"chmod", [](Backend& fs) { return fs.chmod("/keep/a", 0600); }},
    };
    return all;
}

// The acknowledged state every case starts from.
Result<void> make_base(Backend& fs) {
    if (auto ok = fs.mkdir("/keep", 0755); !ok) return ok;
    if (auto ok = fs.mkdir("/empty", 0700); !ok) return ok;
    if (auto ok = write_file(fs, "/keep/a", "acknowledged contents of a\n"); !ok) return ok;
    if (auto ok = write_file(fs, "/keep/b", std::string(5000, 'b')); !ok) return ok;
    return fs.setxattr("/keep/a", "user.k", "old value");
}

// `before` with `m` applied, computed on a mem backend.
Tree expected_after(const Tree& before, const Mutation& m) {
    auto mem = make_mem_backend();
    EXPECT_TRUE(materialize(*mem, "", before).has_value());
    auto ok = m.run(*mem);
    EXPECT_TRUE(ok.has_value()) << m.name << " on mem: " << ok.error().message();
    return *capture(*mem);
}

class VolumeFault : public ::testing::Test {
protected:
    void TearDown() override { io::set_fault_hook({}); }

    // A fresh volume in `mode` holding the base tree, acknowledged (and synced).
    std::shared_ptr<Volume> fresh(Durability mode) {
        dirs_.push_back(std::make_unique<TempDir>());
        dir_ = (dirs_.back()->path / "vol").string();
        VolumeInit init;
        init.durability = mode;
        auto made = Volume::create(dir_, init);
        EXPECT_TRUE(made.has_value()) << made.error().message();
        auto v = Volume::open(dir_);
        EXPECT_TRUE(v.has_value()) << v.error().message();
        auto ok = make_base(**v);
        EXPECT_TRUE(ok.has_value()) << ok.error().message();
        EXPECT_TRUE((*v)->sync().has_value());
        return *v;
    }
    Tree reopen_and_capture(std::shared_ptr<Volume>& v, bool expect_clean = true) {
        v.reset();
        auto again = Volume::open(dir_);
        EXPECT_TRUE(again.has_value()) << again.error().message();
        if (!again) return {};
        v = *again;
        if (expect_clean) {
            EXPECT_TRUE(v->recovery().clean()) << v->recovery().reason;
        }
        return *capture(*v);
    }

    void fails_cleanly(Durability mode);

    std::string dir_;
    std::vector<std::unique_ptr<TempDir>> dirs_;
};

// always and batch: the faulted mutation fails with the fault's errno and changes nothing;
// the volume takes the same mutation once the hook is gone; a reopen gives exactly that.
void VolumeFault::fails_cleanly(Durability mode) {
    for (const Fault& fault : kFaults) {
        for (const Mutation& m : mutations()) {
            SCOPED_TRACE(fmt::format("{} mode, {} on {}", durability_name(mode), fault.name, m.name));
            auto v = fresh(mode);
            const Tree before = *capture(*v);
            auto calls = install_one_shot(fault);
            auto r = m.run(*v);
            ASSERT_FALSE(r.has_value()) << "the mutation succeeded through the fault";
            EXPECT_EQ(r.error().code(), fault.expected_errno) << r.error().message();
            EXPECT_GE(calls->load(), 1);
            // Unchanged, the acknowledged data included, while the hook is still set.
            EXPECT_EQ(diff(before, *capture(*v)), "");
            io::set_fault_hook({});
            auto again = m.run(*v);
            ASSERT_TRUE(again.has_value()) << "after the fault: " << again.error().message();
            const Tree after = expected_after(before, m);
            EXPECT_EQ(diff(after, *capture(*v)), "");
            EXPECT_EQ(diff(after, reopen_and_capture(v)), "") << "after reopen";
        }
    }
}

TEST_F(VolumeFault, AlwaysModeFailedMutationChangesNothingAndTheNextOneSucceeds) {
    fails_cleanly(Durability::always);
}

TEST_F(VolumeFault, BatchModeFailedMutationChangesNothingAndTheNextOneSucceeds) {
    fails_cleanly(Durability::batch);
}

// A failed mutation that was never reopened after: the fault, then a reopen with nothing
// else done gives exactly the state before the fault (the discarded record is gone from the
// file, a torn half included).
TEST_F(VolumeFault, AcknowledgedStateIsExactlyWhatReopensAfterAFault) {
    for (Durability mode : {Durability::always, Durability::batch}) {
        for (const Fault& fault : kFaults) {
            SCOPED_TRACE(fmt::format("{} mode, {}", durability_name(mode), fault.name));
            auto v = fresh(mode);
            const Tree before = *capture(*v);
            install_one_shot(fault);
            auto r = handle_write(*v, "/keep/b", 100, std::string(3000, 'Z'));
            ASSERT_FALSE(r.has_value());
            EXPECT_EQ(r.error().code(), fault.expected_errno);
            io::set_fault_hook({});
            EXPECT_EQ(diff(before, reopen_and_capture(v)), "");
        }
    }
}

// explicit: mutations succeed in memory; sync() (and File::fsync) report the fault; a later
// sync succeeds and everything reaches the journal.
TEST_F(VolumeFault, ExplicitModeSyncReportsTheFaultAndALaterSyncSucceeds) {
    for (const Fault& fault : kFaults) {
        for (const Mutation& m : mutations()) {
            SCOPED_TRACE(fmt::format("explicit mode, {} on {}", fault.name, m.name));
            auto v = fresh(Durability::explicit_sync);
            const Tree before = *capture(*v);
            const Tree after = expected_after(before, m);
            auto calls = install_one_shot(fault);
            auto r = m.run(*v);
            ASSERT_TRUE(r.has_value()) << r.error().message();
            auto synced = v->sync();
            ASSERT_FALSE(synced.has_value()) << "sync succeeded through the fault";
            EXPECT_EQ(synced.error().code(), fault.expected_errno) << synced.error().message();
            EXPECT_EQ(calls->load(), 1);
            EXPECT_EQ(diff(after, *capture(*v)), "") << "the mutation stays (pending)";
            io::set_fault_hook({});
            auto retried = v->sync();
            ASSERT_TRUE(retried.has_value()) << retried.error().message();
            // Usable: one more mutation, synced through a handle this time.
            {
                auto f = static_cast<Backend&>(*v).open("/late", O_CREAT | O_WRONLY, 0644);
                ASSERT_TRUE(f.has_value());
                ASSERT_TRUE((*f)->pwrite(std::as_bytes(std::span("late", 4)), 0).has_value());
                ASSERT_TRUE((*f)->fsync(false).has_value());
            }
            Tree expected = after;
            auto mem = make_mem_backend();
            ASSERT_TRUE(materialize(*mem, "", after).has_value());
            ASSERT_TRUE(write_file(*mem, "/late", "late").has_value());
            expected = *capture(*mem);
            EXPECT_EQ(diff(expected, reopen_and_capture(v)), "") << "after reopen";
        }
    }
}

// explicit: File::fsync on a handle reports the fault the same way.
TEST_F(VolumeFault, ExplicitModeHandleFsyncReportsTheFault) {
    auto v = fresh(Durability::explicit_sync);
    auto f = static_cast<Backend&>(*v).open("/keep/a", O_WRONLY);
    ASSERT_TRUE(f.has_value());
    ASSERT_TRUE((*f)->pwrite(std::as_bytes(std::span("HANDLE", 6)), 0).has_value());
    install_one_shot(kFaults[4]);  // fdatasync EIO
    auto bad = (*f)->fsync(false);
    ASSERT_FALSE(bad.has_value());
    EXPECT_EQ(bad.error().code(), EIO);
    io::set_fault_hook({});
    ASSERT_TRUE((*f)->fsync(false).has_value());
    f->reset();
    reopen_and_capture(v);
    EXPECT_EQ(*read_file(*v, "/keep/a"), "HANDLEledged contents of a\n");
}

// always: when the repair after a torn write (the truncate back) fails too, the volume
// refuses mutations with EIO until it is reopened; recovery then drops the torn tail and the
// state is exactly the acknowledged one.
TEST_F(VolumeFault, FailedRepairRefusesMutationsUntilReopenWhichDropsTheTornTail) {
    for (Durability mode : {Durability::always, Durability::batch}) {
        SCOPED_TRACE(durability_name(mode));
        auto v = fresh(mode);
        const Tree before = *capture(*v);
        io::set_fault_hook([](IoOp op, std::string_view what) -> int {
            if (!is_journal(what)) return 0;
            if (op == IoOp::write) return io::kShortWrite;
            if (op == IoOp::truncate) return EIO;
            return 0;
        });
        auto r = handle_write(*v, "/keep/b", 0, std::string(4000, 'T'));
        ASSERT_FALSE(r.has_value());
        EXPECT_EQ(r.error().code(), ENOSPC) << r.error().message();
        io::set_fault_hook({});
        auto refused = v->mkdir("/after", 0755);
        ASSERT_FALSE(refused.has_value()) << "a broken journal took a mutation";
        EXPECT_EQ(refused.error().code(), EIO) << refused.error().message();
        EXPECT_EQ(diff(before, *capture(*v)), "");
        const Tree reopened = reopen_and_capture(v, /*expect_clean=*/false);
        EXPECT_EQ(diff(before, reopened), "");
        EXPECT_GT(v->recovery().dropped_bytes, 0u) << "the torn half-frame was not in the file?";
        ASSERT_TRUE(v->mkdir("/after", 0755).has_value());
        EXPECT_TRUE(reopen_and_capture(v).contains("/after"));
    }
}

// batch: a group commit that fails while another thread holds what it changed. The tree is put
// back in place, so what was held before the failure is the same inode after it: a node
// reference to a file whose unlink was lost finds it named again; an open file goes on reading
// and writing, journaled. A node reference and an open file taken of a file whose create was
// lost hold an unnamed file (as if unlinked); its number is not given again, and a reopen
// replays the journal past the numbers it skipped.
TEST_F(VolumeFault, HeldNodesAndOpenFilesGoOnThroughALostGroupCommit) {
    auto v = fresh(Durability::batch);
    auto keep = v->lookup(kRootNode, "keep");
    ASSERT_TRUE(keep.has_value());
    auto b = v->lookup(keep->node, "b");
    ASSERT_TRUE(b.has_value());
    auto a_file = v->open("/keep/a", O_RDWR, 0);
    ASSERT_TRUE(a_file.has_value());

    // The leader's fdatasync fails once, after the test has looked at what the batch changed.
    std::mutex mu;
    std::condition_variable cv;
    bool in_sync = false, go = false;
    auto fail_after_look = [&] {
        io::set_fault_hook([&, once = std::make_shared<std::atomic<bool>>(false)](
                               IoOp op, std::string_view what) -> int {
            if (op != IoOp::fsync || !is_journal(what) || once->exchange(true)) return 0;
            std::unique_lock lock(mu);
            in_sync = true;
            cv.notify_all();
            cv.wait(lock, [&] { return go; });
            return EIO;
        });
    };
    auto wait_in_sync = [&] {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return in_sync; });
    };
    auto release = [&] {
        std::lock_guard lock(mu);
        go = true;
        cv.notify_all();
    };

    // 1. A lost unlink: the reference taken before finds b named again, its bytes unchanged.
    fail_after_look();
    std::thread unlinker([&] {
        auto r = v->unlink(keep->node, "b");
        EXPECT_FALSE(r.has_value());
        if (!r) {
            EXPECT_EQ(r.error().code(), EIO);
        }
    });
    wait_in_sync();
    EXPECT_FALSE(v->stat("/keep/b").has_value()) << "the unlink was not made before its sync";
    release();
    unlinker.join();
    io::set_fault_hook({});
    auto st = v->getattr(b->node);
    ASSERT_TRUE(st.has_value()) << st.error().message();
    EXPECT_EQ(st->nlink, 1u);
    EXPECT_EQ(*read_file(*v, "/keep/b"), std::string(5000, 'b'));

    // 2. A lost create, looked up and opened by another caller before it was lost.
    in_sync = go = false;
    fail_after_look();
    uint64_t lost_ino = 0;
    std::thread creator([&] {
        auto r = static_cast<Backend&>(*v).create(keep->node, "c", O_CREAT | O_EXCL | O_WRONLY, 0644, std::nullopt);
        EXPECT_FALSE(r.has_value());
    });
    wait_in_sync();
    auto c = v->lookup(keep->node, "c");
    ASSERT_TRUE(c.has_value()) << "the create was not made before its sync";
    lost_ino = c->node.id;
    auto c_file = v->open(c->node, O_RDONLY);
    ASSERT_TRUE(c_file.has_value());
    release();
    creator.join();
    io::set_fault_hook({});
    EXPECT_FALSE(v->stat("/keep/c").has_value());
    auto cst = (*c_file)->fstat();
    ASSERT_TRUE(cst.has_value()) << cst.error().message();
    EXPECT_EQ(cst->nlink, 0u);
    c_file->reset();
    v->forget(c->node, 1);

    // The file opened before both goes on, journaled; new numbers skip the lost one.
    const std::string more = "written after the failures";
    ASSERT_TRUE((*a_file)->pwrite(std::as_bytes(std::span(more.data(), more.size())), 0).has_value());
    a_file->reset();
    auto d = static_cast<Backend&>(*v).create(keep->node, "d", O_CREAT | O_WRONLY, 0644, std::nullopt);
    ASSERT_TRUE(d.has_value()) << d.error().message();
    EXPECT_GT(d->entry.node.id, lost_ino);
    d->file.reset();
    v->forget(d->entry.node, 1);
    v->forget(b->node, 1);
    v->forget(keep->node, 1);
    const Tree live = *capture(*v);
    EXPECT_TRUE(live.contains("/keep/d"));
    EXPECT_EQ(diff(live, reopen_and_capture(v)), "");
    EXPECT_EQ(read_file(*v, "/keep/a")->substr(0, more.size()), more);
}

// batch, many threads: every fifth journal write fails with ENOSPC, so whole group commits
// are discarded. Each mutation either succeeded (and is there, also after reopen) or failed
// with ENOSPC (and is not there): nothing in between, nothing lost.
TEST_F(VolumeFault, BatchGroupCommitFailuresLoseExactlyTheFailedMutations) {
    auto v = fresh(Durability::batch);
    const int threads = 4, per_thread = sanitizer_run() ? 40 : 150;
    for (int t = 0; t < threads; ++t) ASSERT_TRUE(v->mkdir(fmt::format("/t{}", t), 0755).has_value());
    auto count = std::make_shared<std::atomic<int>>(0);
    io::set_fault_hook([count](IoOp op, std::string_view what) -> int {
        if (op != IoOp::write || !is_journal(what)) return 0;
        return count->fetch_add(1) % 5 == 4 ? ENOSPC : 0;
    });
    std::mutex mu;
    std::set<std::string> made, refused;
    std::vector<std::string> wrong;
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            for (int i = 0; i < per_thread; ++i) {
                const std::string p = fmt::format("/t{}/d{}", t, i);
                auto r = v->mkdir(p, 0755);
                std::lock_guard lock(mu);
                if (r) {
                    made.insert(p);
                } else if (r.error().code() == ENOSPC) {
                    refused.insert(p);
                } else {
                    wrong.push_back(p + ": " + r.error().message());
                }
            }
        });
    }
    for (auto& th : pool) th.join();
    io::set_fault_hook({});
    EXPECT_TRUE(wrong.empty()) << wrong.front();
    EXPECT_GT(refused.size(), 0u) << "no fault hit";
    EXPECT_GT(made.size(), 0u);
    auto check = [&](Backend& fs, const char* when) {
        for (const auto& p : made) EXPECT_TRUE(fs.stat(p).has_value()) << when << ": lost " << p;
        for (const auto& p : refused) EXPECT_FALSE(fs.stat(p).has_value()) << when << ": kept " << p;
    };
    check(*v, "live");
    ASSERT_TRUE(v->mkdir("/usable", 0755).has_value());
    reopen_and_capture(v);
    check(*v, "after reopen");
    EXPECT_TRUE(v->stat("/usable").has_value());
    fmt::print("batch group-commit faults: {} mutations acknowledged, {} refused\n", made.size(),
               refused.size());
}

}  // namespace
}  // namespace packfs::volume_test
