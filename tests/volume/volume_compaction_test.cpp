// Compaction (DESIGN §10: "A crash at any step leaves either the old state or the new, both
// complete"): every call compaction makes to core/io.hpp's hook (the named steps
// compact.before_pack .. manifest.after_rename and every write, fsync, truncate, rename and
// directory fsync of the pack writer, the new journal and the manifest) is, in turn, the
// point where a forked child is SIGKILLed, and separately where an in-process compaction gets
// EIO. After a reopen the tree is the expected one (compaction does not change the tree), the
// generation is the old one or the next, and the directory holds nothing but the manifest's
// files. Also: compaction while a writer thread mutates, open handles across a compaction, a
// snapshot that keeps the old pack (file included) alive until it is dropped, and node
// references and open files used and checked while compactions and a writer run.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "core/io.hpp"
#include "packfs/mem.hpp"
#include "packfs/volume.hpp"
#include "support/files.hpp"
#include "volume/manifest.hpp"
#include "volume/volume_test_util.hpp"

namespace packfs::volume_test {
namespace {

using io::IoOp;
using test_support::TempDir;
namespace fs = std::filesystem;

const char* op_name(IoOp op) {
    switch (op) {
        case IoOp::write: return "write";
        case IoOp::fsync: return "fsync";
        case IoOp::truncate: return "truncate";
        case IoOp::rename: return "rename";
        case IoOp::fsync_dir: return "fsync_dir";
        case IoOp::step: return "step";
    }
    return "?";
}

std::shared_ptr<Volume> open_ok(const std::string& dir) {
    auto v = Volume::open(dir);
    EXPECT_TRUE(v.has_value()) << v.error().message();
    return v ? *v : nullptr;
}

// What a directory must hold once a volume of generation `g` was opened: nothing else.
std::vector<std::string> clean_listing(uint64_t g) {
    std::vector<std::string> names = {"LOCK", "MANIFEST", volume::journal_file_name(g),
                                      volume::pack_file_name(g)};
    std::sort(names.begin(), names.end());
    return names;
}

class VolumeCompaction : public ::testing::Test {
protected:
    void TearDown() override { io::set_fault_hook({}); }

    // A base volume: ops 1..300 of a seeded sequence, a compaction after op 200 (so the pack
    // holds a real tree), and 100 ops in the journal after it.
    void SetUp() override {
        base_ = (scratch_.path / "base").string();
        VolumeInit init;
        init.durability = Durability::batch;
        ASSERT_TRUE(Volume::create(base_, init).has_value());
        auto v = open_ok(base_);
        ASSERT_TRUE(v);
        auto mem = make_mem_backend();
        OpGen gen(77, "");
        for (int i = 1; i <= 300; ++i) {
            const Op op = gen.next();
            ASSERT_TRUE(apply_op(*v, op).has_value()) << describe(op);
            ASSERT_TRUE(apply_op(*mem, op).has_value()) << describe(op);
            if (i == 200) {
                ASSERT_TRUE(v->compact().has_value());
            }
        }
        expected_ = *capture(*mem);
        ASSERT_EQ(diff(expected_, *capture(*v)), "");
        generation_ = v->status().generation;
        ASSERT_EQ(generation_, 2u);
    }

    std::string copy_of_base(const std::string& name) {
        const std::string dir = (scratch_.path / name).string();
        copy_dir(base_, dir);
        return dir;
    }

    // Reopens `dir` and checks it: the expected tree (plus `/after` if `after`), an old or
    // new generation, no stray files, and a working volume (a mutation survives a reopen).
    void check_reopened(const std::string& dir, bool after, const std::string& what) {
        SCOPED_TRACE(what);
        auto v = open_ok(dir);
        ASSERT_TRUE(v);
        const uint64_t g = v->status().generation;
        EXPECT_TRUE(g == generation_ || g == generation_ + 1) << "generation " << g;
        Tree want = expected_;
        if (after) want["/after"] = Node{FileType::directory, 0755, 0, {}, {}};
        EXPECT_EQ(diff(want, *capture(*v)), "");
        EXPECT_EQ(dir_names(dir), clean_listing(g));
        ASSERT_TRUE(v->mkdir("/again", 0755).has_value());
        v.reset();
        v = open_ok(dir);
        ASSERT_TRUE(v);
        EXPECT_TRUE(v->stat("/again").has_value());
        EXPECT_TRUE(v->recovery().clean());
    }

    TempDir scratch_;
    std::string base_;
    Tree expected_;
    uint64_t generation_ = 0;
};

struct Call {
    IoOp op;
    std::string what;
};

// Every hook call one compaction of the base makes, in order.
std::vector<Call> calls_of_one_compaction(const std::string& dir) {
    auto v = open_ok(dir);
    std::vector<Call> calls;
    std::mutex mu;
    io::set_fault_hook([&](IoOp op, std::string_view what) -> int {
        std::lock_guard lock(mu);
        calls.push_back(Call{op, std::string(what)});
        return 0;
    });
    auto done = v->compact();
    io::set_fault_hook({});
    EXPECT_TRUE(done.has_value()) << done.error().message();
    return calls;
}

TEST_F(VolumeCompaction, CountedCallsIncludeEveryNamedStep) {
    const auto calls = calls_of_one_compaction(copy_of_base("count"));
    std::set<std::string> steps;
    std::map<std::string, int> per_op;
    for (const auto& c : calls) {
        ++per_op[op_name(c.op)];
        if (c.op == IoOp::step) steps.insert(c.what);
    }
    for (const char* name : {"compact.before_pack", "compact.after_pack", "compact.caught_up",
                             "compact.journal_written", "manifest.before_rename",
                             "manifest.after_rename"})
        EXPECT_TRUE(steps.contains(name)) << name;
    EXPECT_GE(per_op["write"], 3);   // the pack, the new journal's header, the manifest
    EXPECT_GE(per_op["rename"], 2);  // the pack's temp file, the manifest
    std::string summary;
    for (const auto& [op, n] : per_op) summary += fmt::format(" {}={}", op, n);
    fmt::print("one compaction: {} hook calls:{}\n", calls.size(), summary);
}

// A SIGKILL at each call: the reopened volume is the old state or the new, complete.
TEST_F(VolumeCompaction, KillAtEveryCallLeavesTheOldOrTheNewStateComplete) {
    const auto calls = calls_of_one_compaction(copy_of_base("count"));
    ASSERT_FALSE(calls.empty());
    std::set<uint64_t> generations_seen;
    for (std::size_t k = 1; k <= calls.size(); ++k) {
        const std::string what = fmt::format("SIGKILL at call {} of {} ({} {})", k, calls.size(),
                                             op_name(calls[k - 1].op), calls[k - 1].what);
        const std::string dir = copy_of_base(fmt::format("kill{}", k));
        const pid_t pid = ::fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            auto v = Volume::open(dir);
            if (!v) ::_exit(3);
            std::atomic<std::size_t> n{0};
            io::set_fault_hook([&](IoOp, std::string_view) -> int {
                if (++n == k) ::raise(SIGKILL);
                return 0;
            });
            auto done = (*v)->compact();
            ::_exit(done ? 0 : 2);
        }
        int status = 0;
        ASSERT_EQ(::waitpid(pid, &status, 0), pid);
        EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << what << ": status " << status;
        check_reopened(dir, false, what);
        auto v = open_ok(dir);
        if (v) generations_seen.insert(v->status().generation);
        if (HasFailure()) return;
    }
    // Kills before the manifest's rename keep the old generation, kills after it the new.
    EXPECT_TRUE(generations_seen.contains(generation_));
    EXPECT_TRUE(generations_seen.contains(generation_ + 1));
}

// A SIGKILL at each named step of a compaction while another thread of the same process
// keeps making directories (batch mode: each acknowledged when durable, reported through a
// pipe): after reopen the tree is the base plus a prefix of the writer's directories that
// holds every acknowledged one, whichever generation won.
TEST_F(VolumeCompaction, KillAtEveryStepWhileAWriterRunsKeepsItsAcknowledgedOps) {
    std::vector<std::string> steps;
    for (const Call& c : calls_of_one_compaction(copy_of_base("steps")))
        if (c.op == IoOp::step) steps.push_back(c.what);
    ASSERT_GE(steps.size(), 6u);
    for (std::size_t k = 1; k <= steps.size(); ++k) {
        const std::string what = fmt::format("SIGKILL at step {} ({}) with a writer", k, steps[k - 1]);
        SCOPED_TRACE(what);
        const std::string dir = copy_of_base(fmt::format("writer-kill{}", k));
        int acks[2];
        ASSERT_EQ(::pipe(acks), 0);
        const pid_t pid = ::fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            ::close(acks[0]);
            auto v = Volume::open(dir);
            if (!v) ::_exit(3);
            std::shared_ptr<Volume> volume = *v;
            std::thread writer([&] {
                for (uint32_t i = 1;; ++i) {
                    if (!volume->mkdir(fmt::format("/w{}", i), 0755)) ::_exit(4);
                    if (::write(acks[1], &i, sizeof i) != sizeof i) ::_exit(5);
                }
            });
            // Let the writer get going, then compact with the kill armed at step k.
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
            std::atomic<std::size_t> n{0};
            io::set_fault_hook([&](IoOp op, std::string_view) -> int {
                if (op == IoOp::step && ++n == k) ::raise(SIGKILL);
                return 0;
            });
            (void)volume->compact();
            ::raise(SIGKILL);  // the last step passed: die mid-write anyway
        }
        ::close(acks[1]);
        uint32_t acked = 0, value = 0;
        while (::read(acks[0], &value, sizeof value) == sizeof value) acked = value;
        ::close(acks[0]);
        int status = 0;
        ASSERT_EQ(::waitpid(pid, &status, 0), pid);
        ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "status " << status;
        auto v = open_ok(dir);
        ASSERT_TRUE(v);
        const uint64_t g = v->status().generation;
        EXPECT_TRUE(g == generation_ || g == generation_ + 1) << "generation " << g;
        // The writer's directories: /w1 .. /wm with no gap, m >= the last acknowledged.
        Tree got = *capture(*v);
        uint32_t m = 0;
        while (got.erase(fmt::format("/w{}", m + 1)) == 1) ++m;
        EXPECT_GE(m, acked) << "acknowledged " << acked << ", recovered " << m;
        fmt::print("  {}: {} acknowledged, {} recovered, generation {}\n", what, acked, m, g);
        EXPECT_EQ(diff(expected_, got), "");
        EXPECT_EQ(dir_names(dir), clean_listing(g));
        if (HasFailure()) return;
    }
}

// EIO at each call, in process: compact() fails (or, for the directory fsync after the
// switch, which it ignores, succeeds), the live volume keeps its tree, takes mutations when
// the switch had not happened (after the manifest's rename it refuses them with EIO until
// reopened: only a reopen can tell which manifest is durable), and reopens complete.
TEST_F(VolumeCompaction, InjectedErrorAtEveryCallFailsTheCompactionAndTheVolumeGoesOn) {
    const auto calls = calls_of_one_compaction(copy_of_base("count"));
    ASSERT_FALSE(calls.empty());
    int failed = 0, refused_after_rename = 0;
    for (std::size_t k = 1; k <= calls.size(); ++k) {
        const std::string what = fmt::format("EIO at call {} of {} ({} {})", k, calls.size(),
                                             op_name(calls[k - 1].op), calls[k - 1].what);
        SCOPED_TRACE(what);
        const std::string dir = copy_of_base(fmt::format("eio{}", k));
        auto v = open_ok(dir);
        ASSERT_TRUE(v);
        auto n = std::make_shared<std::atomic<std::size_t>>(0);
        io::set_fault_hook([n, k](IoOp, std::string_view) -> int { return ++*n == k ? EIO : 0; });
        auto done = v->compact();
        io::set_fault_hook({});
        EXPECT_EQ(diff(expected_, *capture(*v)), "");
        auto on_disk = volume::read_manifest(dir);
        ASSERT_TRUE(on_disk.has_value());
        const bool switched_on_disk = on_disk->generation == generation_ + 1;
        bool after = false;
        if (done) {
            EXPECT_TRUE(switched_on_disk);
            EXPECT_EQ(done->generation, generation_ + 1);
            after = v->mkdir("/after", 0755).has_value();
            EXPECT_TRUE(after);
        } else {
            ++failed;
            EXPECT_EQ(done.error().code(), EIO) << done.error().message();
            auto m = v->mkdir("/after", 0755);
            if (switched_on_disk) {
                ++refused_after_rename;
                ASSERT_FALSE(m.has_value()) << "a mutation after an unfinished switch";
                EXPECT_EQ(m.error().code(), EIO);
            } else {
                ASSERT_TRUE(m.has_value()) << m.error().message();
                after = true;
                EXPECT_EQ(v->status().generation, generation_);
                // Nothing of the failed compaction is left but (maybe) the manifest's temp.
                for (const auto& name : dir_names(dir))
                    EXPECT_TRUE(name == "LOCK" || name == "MANIFEST" || name == "MANIFEST.tmp" ||
                                name == volume::pack_file_name(generation_) ||
                                name == volume::journal_file_name(generation_))
                        << "left behind: " << name;
                // And a retry succeeds at once.
                auto retry = v->compact();
                EXPECT_TRUE(retry.has_value()) << retry.error().message();
            }
        }
        v.reset();
        check_reopened(dir, after, what);
        if (HasFailure()) return;
    }
    fmt::print("{} injected errors: {} compactions failed, {} of them after the manifest's rename\n",
               calls.size(), failed, refused_after_rename);
    EXPECT_GT(failed, 0);
}

// A writer thread goes on mutating during compactions: every op it saw acknowledged is there
// after a reopen, and so the ops carried into each new journal were carried right.
// A thread applying OpGen(seed)'s ops under "/w" to `v` until `stop`: the first failure is
// told in `error`, and `acked` (when given) counts the ops that succeeded.
std::thread start_writer(Backend& v, uint64_t seed, std::atomic<bool>& stop, std::string& error,
                         std::atomic<uint64_t>* acked = nullptr) {
    return std::thread([&v, seed, &stop, &error, acked] {
        OpGen gen(seed, "/w");
        while (!stop.load()) {
            const Op op = gen.next();
            if (auto ok = apply_op(v, op); !ok) {
                error = fmt::format("op {} ({}): {}", gen.count(), describe(op),
                                    ok.error().message());
                return;
            }
            if (acked != nullptr) *acked = gen.count();
        }
    });
}

TEST_F(VolumeCompaction, WriterDuringCompactionsKeepsEveryAcknowledgedOp) {
    auto v = open_ok(base_);
    ASSERT_TRUE(v);
    ASSERT_TRUE(v->mkdir("/w", 0755).has_value());
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> acked{0};
    std::string writer_error;
    std::thread writer = start_writer(*v, 4242, stop, writer_error, &acked);
    const int compactions = sanitizer_run() ? 3 : 8;
    uint64_t carried = 0;
    for (int i = 0; i < compactions; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        auto done = v->compact();
        ASSERT_TRUE(done.has_value()) << done.error().message();
        carried += done->records_carried;
    }
    stop = true;
    writer.join();
    ASSERT_EQ(writer_error, "");
    v.reset();
    v = open_ok(base_);
    ASSERT_TRUE(v);
    auto mem = make_mem_backend();
    ASSERT_TRUE(mem->mkdir("/w", 0755).has_value());
    OpGen gen(4242, "/w");
    while (gen.count() < acked.load()) ASSERT_TRUE(apply_op(*mem, gen.next()).has_value());
    EXPECT_EQ(diff(*capture(*mem, "/w"), *capture(*v, "/w")), "");
    EXPECT_EQ(diff(expected_, [&] {
                  Tree t = *capture(*v);
                  std::erase_if(t, [](const auto& e) { return e.first.starts_with("/w"); });
                  return t;
              }()),
              "");
    EXPECT_EQ(v->status().generation, generation_ + uint64_t(compactions));
    fmt::print("writer during {} compactions: {} ops acked, {} records carried into new journals\n",
               compactions, acked.load(), carried);
}

// Handles opened before a compaction (for reading, on a file in the pack; for writing, on a
// file of the journal) keep working after it, and what they write is journaled.
TEST_F(VolumeCompaction, OpenHandlesKeepWorkingAcrossACompaction) {
    auto v = open_ok(base_);
    ASSERT_TRUE(v);
    ASSERT_TRUE(write_file(*v, "/h_read", "contents that move to the new pack").has_value());
    ASSERT_TRUE(v->compact().has_value());  // /h_read is now in the pack
    ASSERT_TRUE(write_file(*v, "/h_write", "journal only").has_value());
    Backend& b = *v;
    auto reader = b.open("/h_read", O_RDONLY);
    auto writer = b.open("/h_write", O_RDWR);
    ASSERT_TRUE(reader.has_value() && writer.has_value());
    ASSERT_TRUE(v->compact().has_value());
    std::string buf(64, '\0');
    auto n = (*reader)->pread(std::as_writable_bytes(std::span(buf.data(), buf.size())), 0);
    ASSERT_TRUE(n.has_value());
    EXPECT_EQ(buf.substr(0, *n), "contents that move to the new pack");
    ASSERT_TRUE((*writer)->pwrite(std::as_bytes(std::span("JOURNAL", 7)), 0).has_value());
    ASSERT_TRUE((*writer)->truncate(10).has_value());
    n = (*writer)->pread(std::as_writable_bytes(std::span(buf.data(), buf.size())), 0);
    ASSERT_TRUE(n.has_value());
    EXPECT_EQ(buf.substr(0, *n), "JOURNAL on");
    EXPECT_EQ(*read_file(*v, "/h_write"), "JOURNAL on");
    ASSERT_TRUE(v->compact().has_value());  // and once more, with the handles still open
    ASSERT_TRUE((*writer)->pwrite(std::as_bytes(std::span("!", 1)), 10).has_value());
    reader->reset();
    writer->reset();
    v.reset();
    v = open_ok(base_);
    ASSERT_TRUE(v);
    EXPECT_EQ(*read_file(*v, "/h_write"), "JOURNAL on!");
    EXPECT_EQ(*read_file(*v, "/h_read"), "contents that move to the new pack");
}

// Two handles open on a file across a compaction, whose names then go: both see the one inode
// (nlink 0, each other's writes), not a copy each (found by the model with a compactor thread).
TEST_F(VolumeCompaction, HandlesAcrossACompactionShareTheFileAfterItsNamesGo) {
    auto v = open_ok(base_);
    ASSERT_TRUE(v);
    Backend& b = *v;
    ASSERT_TRUE(write_file(b, "/f", "0123456789").has_value());
    ASSERT_TRUE(b.link("/f", "/g").has_value());
    auto first = b.open("/f", O_RDWR);
    auto second = b.open("/g", O_RDONLY);
    ASSERT_TRUE(first.has_value() && second.has_value());
    ASSERT_TRUE(v->compact().has_value());  // the file is now in the new pack, named twice
    ASSERT_TRUE(b.unlink("/f").has_value());
    ASSERT_TRUE(b.unlink("/g").has_value());
    for (auto* h : {&*first, &*second}) {
        auto st = (*h)->fstat();
        ASSERT_TRUE(st.has_value());
        EXPECT_EQ(st->nlink, 0u);
    }
    ASSERT_TRUE((*first)->pwrite(std::as_bytes(std::span("AB", 2)), 0).has_value());
    std::string buf(16, '\0');
    auto n = (*second)->pread(std::as_writable_bytes(std::span(buf)), 0);
    ASSERT_TRUE(n.has_value());
    EXPECT_EQ(buf.substr(0, *n), "AB23456789");
    ASSERT_TRUE(v->compact().has_value());  // an unnamed file stays where it is
    ASSERT_TRUE((*first)->pwrite(std::as_bytes(std::span("C", 1)), 2).has_value());
    n = (*second)->pread(std::as_writable_bytes(std::span(buf)), 0);
    ASSERT_TRUE(n.has_value());
    EXPECT_EQ(buf.substr(0, *n), "ABC3456789");
    EXPECT_EQ(b.stat("/f").error().code(), ENOENT);
}

// A snapshot taken before a compaction reads its old contents after it; the old pack file
// stays until the snapshot goes, then it is removed.
TEST_F(VolumeCompaction, SnapshotKeepsTheOldPackUntilItIsDropped) {
    auto v = open_ok(base_);
    ASSERT_TRUE(v);
    ASSERT_TRUE(write_file(*v, "/snap", "old contents").has_value());
    ASSERT_TRUE(v->compact().has_value());  // /snap in pack.3
    const std::string old_pack = volume::pack_file_name(generation_ + 1);
    auto snap = v->snapshot();
    ASSERT_TRUE(snap.has_value());
    const Tree at_snapshot = *capture(**snap);
    ASSERT_TRUE(write_file(*v, "/snap", "new contents").has_value());
    ASSERT_TRUE(v->compact().has_value());  // pack.4; pack.3 is retired but still read
    auto names = dir_names(base_);
    EXPECT_TRUE(std::find(names.begin(), names.end(), old_pack) != names.end())
        << "the old pack went while a snapshot reads it";
    EXPECT_EQ(*read_file(**snap, "/snap"), "old contents");
    EXPECT_EQ(diff(at_snapshot, *capture(**snap)), "");
    EXPECT_EQ(*read_file(*v, "/snap"), "new contents");
    snap->reset();
    names = dir_names(base_);
    EXPECT_TRUE(std::find(names.begin(), names.end(), old_pack) == names.end())
        << "the old pack stayed after its last reader went";
    EXPECT_EQ(names, clean_listing(generation_ + 2));
}

// Node references and open files held across several compactions while a writer thread
// mutates elsewhere and a compactor thread compacts: a file in the pack, a file only in the
// journal, an unlinked open file, a directory (by node and as an open handle), a directory
// removed while held, a symlink. Every getattr, read, readdir and readlink through them is
// checked against what this test did to them (never ESTALE, the same inode numbers).
TEST_F(VolumeCompaction, HeldNodesAndOpenFilesStayValidAcrossCompactionsWhileAWriterRuns) {
    auto v = open_ok(base_);
    ASSERT_TRUE(v);
    Backend& b = *v;
    ASSERT_TRUE(b.mkdir("/w", 0755).has_value());
    ASSERT_TRUE(b.mkdir("/held", 0755).has_value());
    ASSERT_TRUE(b.mkdir("/held/d", 0700).has_value());
    ASSERT_TRUE(b.mkdir("/held/gone", 0755).has_value());
    ASSERT_TRUE(write_file(b, "/held/packed", "in the pack").has_value());
    ASSERT_TRUE(write_file(b, "/held/unlinked", "soon unnamed").has_value());
    ASSERT_TRUE(b.symlink("packed", "/held/link").has_value());
    ASSERT_TRUE(v->compact().has_value());  // all of /held in the pack
    ASSERT_TRUE(write_file(b, "/held/journal", "journal only").has_value());

    struct Held {
        packfs::Node node;
        uint64_t ino;
    };
    auto take = [&](packfs::Node dir, const char* name) {
        auto e = b.lookup(dir, name);
        EXPECT_TRUE(e.has_value()) << name;
        return e ? Held{e->node, e->stat.ino} : Held{};
    };
    const Held held = take(kRootNode, "held");
    const Held d = take(held.node, "d");
    const Held gone = take(held.node, "gone");
    const Held packed = take(held.node, "packed");
    const Held journal = take(held.node, "journal");
    const Held unlinked = take(held.node, "unlinked");
    const Held link = take(held.node, "link");
    ASSERT_TRUE(held.ino && d.ino && gone.ino && packed.ino && journal.ino && unlinked.ino &&
                link.ino);
    auto f_packed = b.open(packed.node, O_RDWR);
    auto f_journal = b.open(journal.node, O_RDWR);
    auto f_unlinked = b.open(unlinked.node, O_RDWR);
    auto f_dir = b.open(d.node, O_RDONLY);
    ASSERT_TRUE(f_packed && f_journal && f_unlinked && f_dir);
    ASSERT_TRUE(b.unlink(held.node, "unlinked").has_value());
    ASSERT_TRUE(b.rmdir(held.node, "gone").has_value());

    // What the test expects of each.
    std::string packed_data = "in the pack", journal_data = "journal only",
                unlinked_data = "soon unnamed";
    std::set<std::string> held_names = {"d", "packed", "journal", "link"};
    std::set<std::string> d_names;
    uint32_t d_mode = 0700;

    std::atomic<bool> stop{false};
    std::string writer_error;
    std::thread writer = start_writer(*v, 9191, stop, writer_error);
    const int compactions = sanitizer_run() ? 3 : 8;
    std::atomic<int> compacted{0};
    std::string compactor_error;
    std::thread compactor([&] {
        for (int i = 0; i < compactions; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(3));
            if (auto done = v->compact(); !done) {
                compactor_error = done.error().message();
                return;
            }
            compacted = i + 1;
        }
    });

    auto bytes = [](const std::string& s) { return std::as_bytes(std::span(s.data(), s.size())); };
    auto read_all = [&](File& f) -> std::string {
        std::string buf(4096, '\0');
        auto n = f.pread(std::as_writable_bytes(std::span(buf)), 0);
        EXPECT_TRUE(n.has_value()) << n.error().message();
        return n ? buf.substr(0, *n) : std::string("<error>");
    };
    auto names_of = [&](packfs::Node dir) {
        std::set<std::string> out;
        auto list = b.list(dir);
        EXPECT_TRUE(list.has_value()) << list.error().message();
        if (list)
            for (const DirEntry& e : *list) out.insert(e.name);
        return out;
    };
    auto stat_ok = [&](const Held& h, const char* what) -> Stat {
        auto st = b.getattr(h.node);
        EXPECT_TRUE(st.has_value()) << what << ": " << st.error().message();
        if (!st) return Stat{};
        EXPECT_EQ(st->ino, h.ino) << what;
        return *st;
    };
    auto check = [&](int round) {
        SCOPED_TRACE(fmt::format("round {} after {} compactions", round, compacted.load()));
        EXPECT_EQ(read_all(**f_packed), packed_data);
        EXPECT_EQ(read_all(**f_journal), journal_data);
        EXPECT_EQ(read_all(**f_unlinked), unlinked_data);
        EXPECT_EQ(stat_ok(packed, "packed").size, packed_data.size());
        EXPECT_EQ(stat_ok(journal, "journal").size, journal_data.size());
        const Stat dir_st = stat_ok(d, "d");
        EXPECT_EQ(dir_st.mode & 07777, d_mode);
        auto fst = (*f_dir)->fstat();
        ASSERT_TRUE(fst.has_value()) << fst.error().message();
        EXPECT_EQ(fst->ino, d.ino);
        auto ust = (*f_unlinked)->fstat();
        ASSERT_TRUE(ust.has_value()) << ust.error().message();
        EXPECT_EQ(ust->ino, unlinked.ino);
        EXPECT_EQ(ust->nlink, 0u);
        EXPECT_EQ(ust->size, unlinked_data.size());
        const Stat gone_st = stat_ok(gone, "gone");
        EXPECT_EQ(gone_st.type, FileType::directory);
        EXPECT_EQ(names_of(gone.node), std::set<std::string>{});
        EXPECT_EQ(stat_ok(held, "held").type, FileType::directory);
        EXPECT_EQ(names_of(held.node), held_names);
        EXPECT_EQ(names_of(d.node), d_names);
        auto target = b.readlink(link.node);
        ASSERT_TRUE(target.has_value()) << target.error().message();
        EXPECT_EQ(*target, "packed");
        EXPECT_EQ(stat_ok(link, "link").type, FileType::symlink);
    };

    int round = 0;
    while (compacted.load() < compactions && compactor_error.empty() && round < 100000) {
        ++round;
        check(round);
        if (::testing::Test::HasFailure()) break;
        // Changes through the held nodes and files, each mirrored in the expectation.
        const std::string tag = fmt::format("<{}>", round);
        const uint64_t at = (round * 7) % 40;
        auto overwrite = [&](std::string& data, File& f) {
            ASSERT_TRUE(f.pwrite(bytes(tag), at).has_value());
            if (data.size() < at + tag.size()) data.resize(at + tag.size(), '\0');
            data.replace(at, tag.size(), tag);
        };
        overwrite(packed_data, **f_packed);
        overwrite(journal_data, **f_journal);
        overwrite(unlinked_data, **f_unlinked);
        if (round % 5 == 0) {
            ASSERT_TRUE((*f_unlinked)->truncate(20).has_value());
            unlinked_data.resize(20, '\0');
        }
        d_mode = round % 2 ? 0750 : 0700;
        ASSERT_TRUE(b.setattr(d.node, SetAttr::chmod(d_mode)).has_value());
        const std::string name = fmt::format("e{}", round % 6);
        if (d_names.contains(name)) {
            ASSERT_TRUE(b.unlink(d.node, name).has_value());
            d_names.erase(name);
        } else {
            auto made = b.mknod(d.node, name, FileType::regular, 0644, 0, std::nullopt);
            ASSERT_TRUE(made.has_value()) << made.error().message();
            b.forget(made->node, 1);
            d_names.insert(name);
        }
        EXPECT_EQ(b.mkdir(gone.node, "x", 0755, std::nullopt).error().code(), ENOENT);
    }
    stop = true;
    compactor.join();
    writer.join();
    ASSERT_EQ(writer_error, "");
    ASSERT_EQ(compactor_error, "");
    check(round + 1);
    fmt::print("{} rounds of checks across {} compactions\n", round, compacted.load());
    EXPECT_GT(round, compactions);

    // What was named survives a reopen; the unnamed file does not.
    f_packed->reset();
    f_journal->reset();
    f_unlinked->reset();
    f_dir->reset();
    for (const Held* h : {&held, &d, &gone, &packed, &journal, &unlinked, &link})
        b.forget(h->node, 1);
    v.reset();
    v = open_ok(base_);
    ASSERT_TRUE(v);
    EXPECT_EQ(*read_file(*v, "/held/packed"), packed_data);
    EXPECT_EQ(*read_file(*v, "/held/journal"), journal_data);
    EXPECT_EQ(v->stat("/held/unlinked").error().code(), ENOENT);
    EXPECT_EQ(v->stat("/held/gone").error().code(), ENOENT);
    auto st = v->stat("/held/packed");
    ASSERT_TRUE(st.has_value());
    EXPECT_EQ(st->ino, packed.ino);
    auto listed = v->readdir("/held/d");
    ASSERT_TRUE(listed.has_value());
    std::set<std::string> reopened;
    for (const DirEntry& e : *listed) reopened.insert(e.name);
    EXPECT_EQ(reopened, d_names);
}

}  // namespace
}  // namespace packfs::volume_test
