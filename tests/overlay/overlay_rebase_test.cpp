// Overlay::rebase (packfs/overlay.hpp, src/mem/engine_rebase.cpp): the overlay moved onto a pack
// of one of its snapshots reads exactly as before, whatever it changed before and after the
// snapshot (names made before and removed after, copy-ups written after, clones of lower
// files, unlinked open files, older snapshots), gives its memory back, and keeps working
// while readers run through the rebase.
#include <gtest/gtest.h>

#include <fcntl.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <fmt/ranges.h>

#include "mem/engine.hpp"
#include "overlay/lower_view.hpp"
#include "overlay/overlay_test_util.hpp"
#include "packfs/dir.hpp"
#include "packfs/overlay.hpp"
#include "support/files.hpp"
#include "volume/volume_test_util.hpp"

namespace packfs {
namespace {

using overlay_test::pack_of;
using volume_test::capture;
using volume_test::diff;

std::string pattern(std::size_t size, char seed) {
    std::string s(size, '\0');
    for (std::size_t i = 0; i < size; ++i) s[i] = static_cast<char>(seed + (i * 7 + i / 251) % 61);
    return s;
}

// The lower every case starts from: a directory of files, a file of several chunks, a symlink.
std::shared_ptr<PackBackend> first_lower() {
    return pack_of([](Backend& fs) {
        return fs.mkdir("/d", 0755) && write_file(fs, "/d/a", "lower a") &&
               write_file(fs, "/d/b", "lower b") && write_file(fs, "/big", pattern(200'000, 'A')) &&
               fs.symlink("d/a", "/link") && fs.mkdir("/d/sub", 0700) &&
               write_file(fs, "/d/sub/x", "lower x");
    });
}

// A pack of `tree` that keeps its inode numbers, as a volume's compaction writes one.
class Packs {
public:
    std::shared_ptr<PackBackend> write(Backend& tree) {
        PackWriteOptions options;
        options.keep_inode_numbers = true;
        options.times = PackTimes::all;
        const std::string path = (dir_.path / fmt::format("pack.{}", ++count_)).string();
        auto written = write_pack(tree, path, options);
        EXPECT_TRUE(written.has_value()) << (written ? "" : written.error().message());
        auto pack = open_pack(path);
        EXPECT_TRUE(pack.has_value());
        return pack ? *pack : nullptr;
    }

private:
    test_support::TempDir dir_;
    int count_ = 0;
};

// Freezes the overlay, writes the snapshot into a pack, runs `after` (changes after the
// snapshot's instant) and rebases onto the pack; returns whether the rebase worked.
bool compact(Overlay& overlay, Packs& packs, const std::function<void()>& after = [] {}) {
    auto frozen = overlay.freeze();
    if (!frozen) return false;
    auto pack = packs.write(*frozen->tree);
    frozen->tree.reset();  // released, as rebase asks
    after();
    auto done = overlay.rebase(pack, frozen->generation);
    EXPECT_TRUE(done.has_value()) << (done ? "" : done.error().message());
    return done.has_value();
}

std::shared_ptr<Overlay> overlay_over(std::shared_ptr<Backend> lower) {
    auto made = make_overlay(std::move(lower));
    EXPECT_TRUE(made.has_value());
    return made ? *made : nullptr;
}

TEST(OverlayRebase, ReadsTheSameWhateverChangedBeforeAndAfterTheSnapshot) {
    auto overlay = overlay_over(first_lower());
    Packs packs;
    // Before the instant: new names, a copy-up by metadata, a removal of a lower name.
    ASSERT_TRUE(write_file(*overlay, "/d/new", "made before"));
    ASSERT_TRUE(write_file(*overlay, "/d/gone-after", "made before, removed after"));
    ASSERT_TRUE(overlay->chmod("/big", 0600));
    ASSERT_TRUE(overlay->unlink("/d/b"));
    ASSERT_TRUE(overlay->mkdir("/made", 0755));
    ASSERT_TRUE(write_file(*overlay, "/made/f", "in a made directory"));
    ASSERT_TRUE(compact(*overlay, packs, [&] {
        // After it: a name the old lower never had removed (it left no whiteout there), a
        // chunk written into a copy-up that still reads the lower for the rest, a lower name
        // re-made, a rename across directories.
        ASSERT_TRUE(overlay->unlink("/d/gone-after"));
        auto file = overlay->open("/big", O_WRONLY, 0);
        ASSERT_TRUE(file.has_value());
        ASSERT_TRUE((*file)->pwrite(std::as_bytes(std::span("#", 1)), 70'000).has_value());
        ASSERT_TRUE(write_file(*overlay, "/d/b", "re-made after"));
        ASSERT_TRUE(overlay->rename("/d/sub/x", "/made/x", RenameFlags::none));
    }));
    std::string big = pattern(200'000, 'A');
    big[70'000] = '#';
    EXPECT_EQ(*read_file(*overlay, "/big"), big);
    EXPECT_EQ(overlay->stat("/d/gone-after").error().code(), ENOENT);
    EXPECT_EQ(*read_file(*overlay, "/d/new"), "made before");
    EXPECT_EQ(*read_file(*overlay, "/d/b"), "re-made after");
    EXPECT_EQ(*read_file(*overlay, "/made/x"), "lower x");
    EXPECT_EQ(overlay->stat("/d/sub/x").error().code(), ENOENT);
    EXPECT_EQ(overlay->stat("/big")->mode & 07777, 0600u);

    // The same changes on a plain mem tree: the rebased overlay reads as it does, and goes on
    // doing so through more changes and rebases.
    auto reference = make_mem_backend();
    auto now = capture(*overlay);
    ASSERT_TRUE(now.has_value());
    ASSERT_TRUE(volume_test::materialize(*reference, "/", *now));
    for (int round = 0; round < 3; ++round) {
        const std::string name = fmt::format("/d/round{}", round);
        for (Backend* fs : {static_cast<Backend*>(overlay.get()), reference.get()}) {
            ASSERT_TRUE(write_file(*fs, name, pattern(70'000 + round, 'a')));
            ASSERT_TRUE(fs->unlink(round == 0 ? "/d/a" : fmt::format("/d/round{}", round - 1)));
        }
        ASSERT_TRUE(compact(*overlay, packs, [&] {
            for (Backend* fs : {static_cast<Backend*>(overlay.get()), reference.get()})
                ASSERT_TRUE(fs->mkdir(fmt::format("/after{}", round), 0750));
        }));
        EXPECT_EQ(diff(*capture(*reference), *capture(*overlay)), "") << "round " << round;
    }
}

// A file made by cloning a lower file reads that file's bytes, not its own inode's: when the
// source changes after the snapshot, or the clone was made after it (the pack holds an empty
// file of its number), the rebase copies the clone's bytes in.
TEST(OverlayRebase, ACloneOfALowerFileKeepsItsBytesWhenTheSourceChangesAfter) {
    auto overlay = overlay_over(first_lower());
    Packs packs;
    ASSERT_TRUE(write_file(*overlay, "/copy", ""));
    ASSERT_TRUE(write_file(*overlay, "/copy-after", ""));
    auto from = overlay->lookup(kRootNode, "big");
    auto to = overlay->lookup(kRootNode, "copy");
    auto to_after = overlay->lookup(kRootNode, "copy-after");
    ASSERT_TRUE(from && to && to_after);
    ASSERT_EQ(*overlay->copy_range(from->node, 0, to->node, 0, 200'000), 200'000u);
    ASSERT_TRUE(compact(*overlay, packs, [&] {
        ASSERT_EQ(*overlay->copy_range(from->node, 0, to_after->node, 0, 200'000), 200'000u);
        ASSERT_TRUE(write_file(*overlay, "/big", "replaced after"));
        auto file = overlay->open("/copy", O_WRONLY | O_APPEND, 0);
        ASSERT_TRUE(file.has_value());
        ASSERT_TRUE((*file)->pwrite(std::as_bytes(std::span("+", 1)), 0).has_value());
    }));
    EXPECT_EQ(*read_file(*overlay, "/copy"), pattern(200'000, 'A') + "+");
    EXPECT_EQ(*read_file(*overlay, "/copy-after"), pattern(200'000, 'A'));
    EXPECT_EQ(*read_file(*overlay, "/big"), "replaced after");
    overlay->forget(from->node, 1);
    overlay->forget(to->node, 1);
    overlay->forget(to_after->node, 1);
}

// A file unlinked while open is in no pack: its handle reads and writes on through rebases,
// including the bytes it still read from the first lower.
TEST(OverlayRebase, AnUnlinkedOpenFileReadsAndWritesOnThroughRebases) {
    auto overlay = overlay_over(first_lower());
    Packs packs;
    auto file = overlay->open("/big", O_RDWR, 0);
    ASSERT_TRUE(file.has_value());
    ASSERT_TRUE((*file)->pwrite(std::as_bytes(std::span("!", 1)), 5).has_value());
    ASSERT_TRUE(overlay->unlink("/big"));
    ASSERT_TRUE(compact(*overlay, packs));
    ASSERT_TRUE(compact(*overlay, packs));
    ASSERT_TRUE((*file)->pwrite(std::as_bytes(std::span("?", 1)), 199'999).has_value());
    std::string want = pattern(200'000, 'A');
    want[5] = '!';
    want[199'999] = '?';
    std::string got(want.size(), '\0');
    auto n = (*file)->pread(std::as_writable_bytes(std::span(got)), 0);
    ASSERT_TRUE(n.has_value());
    EXPECT_EQ(*n, want.size());
    EXPECT_EQ(got, want);
    EXPECT_EQ(overlay->stat("/big").error().code(), ENOENT);
}

// Files held by node references (FUSE's lookups hold every file the kernel caches) and open
// for writing are handed back too: their holds stay on stubs, they read the new lower, and a
// write through the open file copies it up again.
TEST(OverlayRebase, HeldAndOpenFilesAreHandedBackAndWriteOn) {
    auto overlay = overlay_over(first_lower());
    Packs packs;
    ASSERT_TRUE(write_file(*overlay, "/d/held", pattern(100'000, 'h')));
    ASSERT_TRUE(write_file(*overlay, "/d/open", pattern(100'000, 'o')));
    auto d = overlay->lookup(kRootNode, "d");
    ASSERT_TRUE(d.has_value());
    auto held = overlay->lookup(d->node, "held");
    ASSERT_TRUE(held.has_value());
    auto file = overlay->open("/d/open", O_RDWR, 0);
    ASSERT_TRUE(file.has_value());
    ASSERT_TRUE(compact(*overlay, packs));
    ASSERT_TRUE(compact(*overlay, packs));
    EXPECT_EQ(overlay->getattr(held->node)->size, 100'000u);
    EXPECT_EQ(*read_file(*overlay, "/d/held"), pattern(100'000, 'h'));
    ASSERT_TRUE((*file)->pwrite(std::as_bytes(std::span("W", 1)), 99'999).has_value());
    std::string want = pattern(100'000, 'o');
    want[99'999] = 'W';
    std::string got(want.size(), '\0');
    ASSERT_EQ(*(*file)->pread(std::as_writable_bytes(std::span(got)), 0), want.size());
    EXPECT_EQ(got, want);
    EXPECT_EQ(*read_file(*overlay, "/d/open"), want);
    EXPECT_EQ((*file)->fstat()->size, 100'000u);
    ASSERT_TRUE(compact(*overlay, packs));
    EXPECT_EQ(*read_file(*overlay, "/d/open"), want);
    overlay->forget(held->node, 1);
    overlay->forget(d->node, 1);
}

// A snapshot taken before a rebase reads what it saw, from the lower it was taken over, through
// any number of rebases.
TEST(OverlayRebase, AnOlderSnapshotReadsTheOldLower) {
    auto overlay = overlay_over(first_lower());
    Packs packs;
    auto old = overlay->snapshot();
    ASSERT_TRUE(old.has_value());
    const auto seen = capture(**old);
    ASSERT_TRUE(seen.has_value());
    ASSERT_TRUE(write_file(*overlay, "/d/later", "after the old snapshot"));
    ASSERT_TRUE(overlay->unlink("/d/a"));
    // Many more rebases than the engine has room for lowers: only the lowers the snapshots
    // read stay (the old one and a middle one), the ones between go.
    std::shared_ptr<Backend> middle;
    std::optional<volume_test::Tree> seen_middle;
    for (int round = 0; round < 100; ++round) {
        ASSERT_TRUE(write_file(*overlay, "/d/later", fmt::format("round {}", round)));
        ASSERT_TRUE(compact(*overlay, packs)) << "round " << round;
        if (round == 40) {
            middle = *overlay->snapshot();
            seen_middle = *capture(*middle);
        }
    }
    EXPECT_EQ(diff(*seen, *capture(**old)), "");
    EXPECT_EQ(diff(*seen_middle, *capture(*middle)), "");
    EXPECT_EQ(*read_file(*middle, "/d/later"), "round 40");
    EXPECT_EQ(overlay->stat("/d/a").error().code(), ENOENT);
    EXPECT_EQ(*read_file(*overlay, "/d/later"), "round 99");
    ASSERT_TRUE(write_file(*overlay, "/d/later", "after the old snapshot"));
    middle.reset();
    old->reset();
    EXPECT_EQ(*read_file(*overlay, "/d/later"), "after the old snapshot");
}

// Only an overlay over a lower that keeps its inode numbers can be rebased, and only onto one.
TEST(OverlayRebase, LowersThatDoNotKeepTheirNumbersAreRefused) {
    test_support::TempDir host;
    auto dir = open_dir_backend(host.path.string());
    ASSERT_TRUE(dir.has_value());
    auto over_dir = overlay_over(*dir);
    auto frozen = over_dir->freeze();
    ASSERT_TRUE(frozen.has_value());
    EXPECT_EQ(over_dir->rebase(first_lower(), frozen->generation).error().code(), EINVAL);

    auto overlay = overlay_over(first_lower());
    frozen = overlay->freeze();
    ASSERT_TRUE(frozen.has_value());
    EXPECT_EQ(overlay->rebase(*dir, frozen->generation).error().code(), EINVAL);
}

// What the overlay changed up to the snapshot leaves its memory: the cells of unchanged files
// go, their content with them, and what they read comes from the new lower.
TEST(OverlayRebase, WhatThePackHoldsLeavesTheOverlaysMemory) {
    auto first = first_lower();
    auto engine = std::make_shared<mem::Engine>(MemOptions{},
                                                std::make_shared<overlay::LowerView>(first), 0);
    auto ino_of = [&](std::string_view name) {
        rcu::ReadSection section;
        auto root = engine->root(mem::kLiveGen);
        auto found = engine->child(root, name, mem::kLiveGen);
        return found && *found ? (*found)->ino : 0;
    };
    std::vector<uint64_t> made;
    {
        auto lock = engine->lock();
        rcu::ReadSection section;
        const mem::Ref root = engine->root(mem::kLiveGen);
        for (int i = 0; i < 16; ++i) {
            auto file = engine->make(root, fmt::format("f{}", i), FileType::regular, 0644, 0, {},
                                     std::nullopt);
            ASSERT_TRUE(file.has_value());
            const std::string bytes = pattern(256 * 1024, static_cast<char>('a' + i));
            ASSERT_TRUE(engine->write(file->cell, std::as_bytes(std::span(bytes)), 0, false));
            made.push_back(file->ino);
        }
    }
    uint64_t used_before = 0, gen = 0;
    {
        auto lock = engine->lock();
        const auto info = engine->take_snapshot();
        used_before = info.bytes_used;
        gen = info.gen;
    }
    EXPECT_GE(used_before, 16u * 256 * 1024);
    // The snapshot as a pack, the way the overlay's own freeze() hands it out.
    auto overlay = overlay_over(first);  // (only for its pack writer: a tree of the same files)
    for (int i = 0; i < 16; ++i)
        ASSERT_TRUE(write_file(*overlay, fmt::format("/f{}", i),
                               pattern(256 * 1024, static_cast<char>('a' + i))));
    Packs packs;
    auto frozen = overlay->freeze();
    ASSERT_TRUE(frozen.has_value());
    auto pack = packs.write(*frozen->tree);
    frozen->tree.reset();
    {
        auto lock = engine->lock();
        engine->drop_snapshot(gen);
    }
    ASSERT_EQ(ino_of("f3"), made[3]);  // (both trees numbered their files alike)
    // Half of them held, as node references hold them (a stub keeps the holds).
    std::vector<mem::Cell*> holds;
    for (std::size_t i = 0; i < made.size(); i += 2) {
        auto cell = engine->hold(made[i]);
        ASSERT_TRUE(cell.has_value());
        holds.push_back(*cell);
    }
    ASSERT_TRUE(engine->rebase(std::make_shared<overlay::LowerView>(pack), gen));
    engine->free_layers();
    uint64_t used_after = 0;
    {
        auto lock = engine->lock();
        const auto info = engine->take_snapshot();
        used_after = info.bytes_used;
        engine->drop_snapshot(info.gen);
    }
    EXPECT_LT(used_after, used_before / 100) << "the files' content stayed in memory";
    for (std::size_t i = 0; i < made.size(); ++i) {
        mem::Cell* cell = engine->find_cell(made[i]);
        if (i % 2 == 1) {
            EXPECT_EQ(cell, nullptr) << "ino " << made[i];
        } else {
            ASSERT_NE(cell, nullptr);
            EXPECT_EQ(cell->kind(), mem::CellKind::stub) << "ino " << made[i];
        }
    }
    for (mem::Cell* cell : holds) engine->release(cell);
    for (uint64_t ino : made) EXPECT_EQ(engine->find_cell(ino), nullptr) << "ino " << ino;
    rcu::ReadSection section;
    auto ref = engine->by_ino(made[5], mem::kLiveGen);
    ASSERT_TRUE(ref.has_value());
    std::string got(256 * 1024, '\0');
    mem::LowerFiles files;
    auto n = engine->read(*ref, std::as_writable_bytes(std::span(got)), 0, mem::kLiveGen, files);
    ASSERT_TRUE(n.has_value());
    EXPECT_EQ(got, pattern(256 * 1024, 'f'));
}

// Whiteouts of names the lower lacks are kept only between a freeze and its rebase: an overlay
// that is never rebased gathers none for the temporary names it makes and removes.
TEST(OverlayRebase, OnlyAFreezeKeepsWhiteoutsOfNamesTheLowerLacks) {
    auto engine = std::make_shared<mem::Engine>(
        MemOptions{}, std::make_shared<overlay::LowerView>(first_lower()), 0);
    auto whiteouts_in_d = [&] {
        rcu::ReadSection section;
        auto d = engine->child(engine->root(mem::kLiveGen), "d", mem::kLiveGen);
        if (!d || !*d || !(*d)->cell) return -1;
        int n = 0;
        mem::trie_each(static_cast<const mem::TrieNode*>((*d)->cell->read().data),
                       [&](const mem::EntryRec& e) {
                           n += e.ino == 0;
                           return true;
                       });
        return n;
    };
    auto churn = [&](const std::string& prefix) {
        auto lock = engine->lock();
        rcu::ReadSection section;
        auto d = engine->child(engine->root(mem::kLiveGen), "d", mem::kLiveGen);
        ASSERT_TRUE(d && *d);
        for (int i = 0; i < 50; ++i) {
            const std::string name = fmt::format("{}{}", prefix, i);
            auto dir = engine->by_ino((*d)->ino, mem::kLiveGen);
            ASSERT_TRUE(dir.has_value());
            ASSERT_TRUE(engine->make(*dir, name, FileType::regular, 0644, 0, {}, std::nullopt));
            dir = engine->by_ino((*d)->ino, mem::kLiveGen);
            ASSERT_TRUE(engine->unlink(*dir, name));
        }
    };
    churn("tmp");
    EXPECT_EQ(whiteouts_in_d(), 0);
    {
        auto lock = engine->lock();
        engine->expect_rebase();
    }
    churn("late");
    EXPECT_EQ(whiteouts_in_d(), 50);
}

// Readers by path and through open files never see an error or other bytes while the overlay
// is rebased under them again and again; a name whose file in the old lower became a directory
// before the snapshot reads as that directory all through each rebase (its own entry, like the
// new lower's, must not go before the directory reads the new lower).
TEST(OverlayRebase, ReadersRunThroughRebases) {
    auto overlay = overlay_over(first_lower());
    Packs packs;
    for (int i = 0; i < 8; ++i)
        ASSERT_TRUE(write_file(*overlay, fmt::format("/d/r{}", i), pattern(5000 + i, 'k')));
    constexpr int kRounds = 6, kTurns = 32;  // names turned into directories a round
    for (int i = 0; i < kRounds * kTurns; ++i)
        ASSERT_TRUE(write_file(*overlay, fmt::format("/d/t{}", i), "f"));
    ASSERT_TRUE(compact(*overlay, packs));  // the t files are the lower's
    auto held = overlay->open("/d/r0", O_RDONLY, 0);
    ASSERT_TRUE(held.has_value());
    std::atomic<bool> stop{false};
    std::atomic<int> turned{0};    // /d/t<i> below this are directories
    std::atomic<int> turning{-1};  // the /d/t<i> being turned now (or last)
    std::atomic<uint64_t> reads{0}, wrong{0};
    std::mutex what_mu;
    std::vector<std::string> what;  // the first wrong reads, for the failure message
    const auto note = [&](std::string s) {
        wrong.fetch_add(1);
        std::lock_guard lock(what_mu);
        if (what.size() < 5) what.push_back(std::move(s));
    };
    std::vector<std::thread> readers;
    for (int t = 0; t < 2; ++t) {
        readers.emplace_back([&, t] {
            for (uint64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
                const int k = static_cast<int>((i + t) % 8);
                auto data = read_file(*overlay, fmt::format("/d/r{}", k));
                if (!data || *data != pattern(5000 + k, 'k'))
                    note(fmt::format("/d/r{}: {}", k, data ? "other bytes" : data.error().message()));
                std::string buf(5000, '\0');
                auto n = (*held)->pread(std::as_writable_bytes(std::span(buf)), 0);
                if (!n || buf != pattern(5000, 'k'))
                    note(fmt::format("held: {}", n ? "other bytes" : n.error().message()));
                // A listing meets every name that stays; the t names turned while it ran
                // (unlinked, then made again) it may miss (POSIX readdir), and no others.
                const int first_turned = std::max(turning.load(), 0);
                auto entries = overlay->readdir("/d");
                const int last_turned = turning.load();
                std::set<std::string> names;
                if (entries)
                    for (const DirEntry& e : *entries) names.insert(e.name);
                std::vector<std::string> missing;
                for (const char* name : {"a", "b", "sub"})
                    if (!names.contains(name)) missing.emplace_back(name);
                for (int j = 0; j < 8; ++j)
                    if (!names.contains(fmt::format("r{}", j)))
                        missing.push_back(fmt::format("r{}", j));
                for (int j = 0; j < kRounds * kTurns; ++j)
                    if ((j < first_turned || j > last_turned) &&
                        !names.contains(fmt::format("t{}", j)))
                        missing.push_back(fmt::format("t{}", j));
                if (!entries || !missing.empty())
                    note(entries ? fmt::format("readdir /d: {} entries, missing {}",
                                               entries->size(), fmt::join(missing, " "))
                                 : "readdir /d: " + entries.error().message());
                for (int j = 0, n_dirs = turned.load(); j < n_dirs; ++j) {
                    auto st = overlay->lstat(fmt::format("/d/t{}", j));
                    if (!st || st->type != FileType::directory)
                        note(fmt::format("/d/t{}: {}", j,
                                         st ? "not a directory" : st.error().message()));
                }
                reads.fetch_add(1, std::memory_order_relaxed);
            }
        });
    }
    for (int round = 0; round < kRounds; ++round) {
        for (int i = round * kTurns; i < (round + 1) * kTurns; ++i) {
            const std::string name = fmt::format("/d/t{}", i);
            turning = i;
            ASSERT_TRUE(overlay->unlink(name));
            ASSERT_TRUE(overlay->mkdir(name, 0755));
        }
        turned = (round + 1) * kTurns;
        ASSERT_TRUE(compact(*overlay, packs, [&] {
            ASSERT_TRUE(overlay->chmod(fmt::format("/d/r{}", round % 8), 0600 + round % 2));
        }));
    }
    stop = true;
    for (auto& r : readers) r.join();
    EXPECT_GT(reads.load(), 0u);
    EXPECT_EQ(wrong.load(), 0u) << fmt::format("{}", fmt::join(what, "; "));
}

}  // namespace
}  // namespace packfs
