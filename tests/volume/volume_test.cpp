// The volume's own behaviour beyond the contract and the crash tests: automatic compaction,
// the lock, read-only opens, inode numbers across compaction and reopen, refusing what it
// cannot read.
#include "packfs/volume.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "support/files.hpp"

namespace packfs {
namespace {

using test_support::TempDir;

std::string make_volume(const TempDir& scratch, Durability durability = Durability::batch) {
    const std::string dir = (scratch.path / "vol").string();
    VolumeInit init;
    init.durability = durability;
    EXPECT_TRUE(Volume::create(dir, init).has_value());
    return dir;
}

std::shared_ptr<Volume> open_ok(const std::string& dir, const VolumeOptions& options = {}) {
    auto volume = Volume::open(dir, options);
    EXPECT_TRUE(volume.has_value()) << (volume ? "" : volume.error().message());
    return volume ? *volume : nullptr;
}

// Waits (20 s at most) until a compaction by itself has brought `volume` to `generation`.
void wait_for_generation(Volume& volume, uint64_t generation) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (volume.status().generation < generation && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

// A journal left past the threshold (written with auto-compaction off here, as a crash in
// the middle of a compaction leaves one) is compacted right after an open that has it on,
// without waiting for a write.
TEST(Volume, AJournalPastTheThresholdAtOpenIsCompactedWithoutAWrite) {
    TempDir scratch;
    const std::string dir = make_volume(scratch);
    const std::string data(1000, 'y');
    {
        VolumeOptions off;
        off.auto_compact_journal_bytes = 0;
        auto volume = open_ok(dir, off);
        ASSERT_NE(volume, nullptr);
        for (int i = 0; i < 100; ++i)
            ASSERT_TRUE(write_file(*volume, fmt::format("/g{}", i), data).has_value());
        EXPECT_EQ(volume->status().generation, 1u);
    }
    VolumeOptions options;
    options.auto_compact_journal_bytes = 32 * 1024;
    auto volume = open_ok(dir, options);
    ASSERT_NE(volume, nullptr);
    wait_for_generation(*volume, 2);
    EXPECT_GE(volume->status().generation, 2u) << "compacted with no write after the open";
    EXPECT_LT(volume->status().journal_bytes, 32u * 1024);
    for (int i = 0; i < 100; ++i)
        EXPECT_EQ(read_file(*volume, fmt::format("/g{}", i)).value_or(""), data);
}

TEST(Volume, CompactsByItselfPastTheJournalThreshold) {
    TempDir scratch;
    const std::string dir = make_volume(scratch, Durability::explicit_sync);
    VolumeOptions options;
    options.auto_compact_journal_bytes = 64 * 1024;
    auto volume = open_ok(dir, options);
    ASSERT_NE(volume, nullptr);
    const std::string data(1000, 'x');
    for (int i = 0; i < 200; ++i)
        ASSERT_TRUE(write_file(*volume, fmt::format("/f{}", i), data).has_value());
    wait_for_generation(*volume, 2);
    EXPECT_GE(volume->status().generation, 2u);
    ASSERT_TRUE(volume->sync().has_value());
    volume.reset();
    auto again = open_ok(dir);
    ASSERT_NE(again, nullptr);
    for (int i = 0; i < 200; ++i) EXPECT_EQ(read_file(*again, fmt::format("/f{}", i)).value_or(""), data);
}

// Past the threshold a compaction waits for the writers to pause: a steady writer is not
// interrupted until it stops (or passes 4 times the threshold), then the volume compacts by
// itself; and a volume closed with its journal past the threshold compacts as it closes.
TEST(Volume, AutoCompactionWaitsForAPauseAndHappensAtClose) {
    TempDir scratch;
    const std::string dir = make_volume(scratch, Durability::explicit_sync);
    VolumeOptions options;
    options.auto_compact_journal_bytes = 256 * 1024;
    {
        auto volume = open_ok(dir, options);
        ASSERT_NE(volume, nullptr);
        const std::string data(4000, 'w');
        int i = 0;
        // Past the threshold, under 4 times it, writing without a pause for 1.5 s.
        const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
        while (std::chrono::steady_clock::now() < until) {
            if (volume->status().journal_bytes < 600 * 1024)
                ASSERT_TRUE(write_file(*volume, fmt::format("/f{}", i++ % 100), data).has_value());
            else
                ASSERT_TRUE(volume->setattr(kRootNode, SetAttr::chmod(0755)).has_value());
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
        EXPECT_GT(volume->status().journal_bytes, options.auto_compact_journal_bytes);
        EXPECT_EQ(volume->status().generation, 1u) << "compacted while the writer went on";
        wait_for_generation(*volume, 2);
        EXPECT_EQ(volume->status().generation, 2u) << "no compaction once the writer paused";
        // Past the threshold again, then closed at once: the close compacts.
        while (volume->status().journal_bytes < 300 * 1024)
            ASSERT_TRUE(write_file(*volume, fmt::format("/g{}", i++ % 100), data).has_value());
    }
    VolumeOptions read_only;
    read_only.read_only = true;
    auto again = open_ok(dir, read_only);
    ASSERT_NE(again, nullptr);
    EXPECT_EQ(again->status().generation, 3u) << "the close did not compact";
    EXPECT_LT(again->status().journal_bytes, 64u * 1024);
}

// With a pack ratio, the journal must also outgrow the pack before a compaction starts: the old
// pack a compaction rewrites is then never larger than the journal. The check runs at
// each append, so "not yet" is known at once (no waiting); past both thresholds it compacts,
// and the next threshold is measured against the new pack.
TEST(Volume, AutoCompactionWaitsForTheJournalToOutgrowThePack) {
    TempDir scratch;
    const auto source = scratch.path / "source";
    std::filesystem::create_directories(source);
    std::ofstream(source / "big", std::ios::binary) << std::string(1 << 20, 'b');
    const std::string dir = (scratch.path / "vol").string();
    VolumeInit init;
    init.durability = Durability::explicit_sync;
    init.from_dir = source.string();
    ASSERT_TRUE(Volume::create(dir, init).has_value());
    VolumeOptions options;
    options.auto_compact_journal_bytes = 64 * 1024;
    options.auto_compact_pack_ratio = 1.0;
    auto volume = open_ok(dir, options);
    ASSERT_NE(volume, nullptr);
    const uint64_t pack_bytes = volume->status().pack_bytes;
    ASSERT_GT(pack_bytes, uint64_t{1} << 20);
    const std::string data(16 * 1024, 'x');
    int written = 0;
    // Past the byte threshold, still under the pack's size: no compaction.
    while (volume->status().journal_bytes < pack_bytes / 2)
        ASSERT_TRUE(write_file(*volume, fmt::format("/f{}", written++), data).has_value());
    EXPECT_GT(volume->status().journal_bytes, options.auto_compact_journal_bytes);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(volume->status().generation, 1u);
    // Past the pack's size too: it compacts by itself.
    while (volume->status().journal_bytes < pack_bytes + data.size())
        ASSERT_TRUE(write_file(*volume, fmt::format("/f{}", written++), data).has_value());
    wait_for_generation(*volume, 2);
    EXPECT_EQ(volume->status().generation, 2u);
    EXPECT_LT(volume->status().journal_bytes, pack_bytes);
    for (int i = 0; i < written; ++i)
        EXPECT_EQ(read_file(*volume, fmt::format("/f{}", i)).value_or(""), data) << i;
}

// A punched hole and a grown zero range are journaled as asked, so a reopen replays them: the
// same bytes, and the hole is a hole again (SEEK_HOLE finds it), not 64 KiB of stored zeros.
TEST(Volume, FallocateIsReplayedWithItsHoles) {
    TempDir scratch;
    const std::string dir = make_volume(scratch);
    constexpr uint64_t kChunk = 64 * 1024;
    std::string expected(3 * kChunk, 'v');
    {
        auto volume = open_ok(dir);
        ASSERT_NE(volume, nullptr);
        ASSERT_TRUE(write_file(*volume, "/f", expected).has_value());
        auto f = volume->open("/f", O_RDWR);
        ASSERT_TRUE(f.has_value());
        ASSERT_TRUE((*f)->allocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, kChunk, kChunk));
        ASSERT_TRUE((*f)->allocate(FALLOC_FL_ZERO_RANGE, 3 * kChunk - 10, 100));
        std::fill(expected.begin() + kChunk, expected.begin() + 2 * kChunk, '\0');
        expected.resize(3 * kChunk + 90, '\0');
        std::fill(expected.end() - 100, expected.end(), '\0');
        EXPECT_EQ(read_file(*volume, "/f").value_or(""), expected);
    }
    auto again = open_ok(dir);
    ASSERT_NE(again, nullptr);
    EXPECT_EQ(read_file(*again, "/f").value_or(""), expected);
    auto f = again->open("/f", O_RDONLY);
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ((*f)->seek_data(0, false).value_or(0), kChunk);
    EXPECT_EQ((*f)->seek_data(kChunk, true).value_or(0), 2 * kChunk);
}

// `size` bytes of (i * step) % mod: no block of zeros, and a shift shows.
std::string patterned(std::size_t size, std::size_t step, std::size_t mod) {
    std::string s(size, '\0');
    for (std::size_t i = 0; i < size; ++i) s[i] = static_cast<char>(i * step % mod);
    return s;
}

// copy_range by node (as FUSE makes it) from one path's file to another's.
Result<uint64_t> copy_by_node(Backend& fs, std::string_view from, std::string_view to,
                              uint64_t length) {
    auto a = lookup_path(fs, from);
    if (!a) return std::unexpected(a.error());
    const HeldNode held_a(fs, a->node);
    auto b = lookup_path(fs, to);
    if (!b) return std::unexpected(b.error());
    const HeldNode held_b(fs, b->node);
    return fs.copy_range(a->node, 0, b->node, 0, length);
}

// A copy between two of the volume's files shares their chunks: one small record in the
// journal (no data), replayed as a share again, and both files change apart afterwards;
// compaction stores the two equal files once (the pack's dedup).
TEST(Volume, CloneRangeIsOneRecordWithoutDataAndReplaysAsAShare) {
    TempDir scratch;
    const std::string dir = make_volume(scratch);
    constexpr uint64_t kMiB = 1 << 20;
    std::string source = patterned(8 * kMiB + 5, 131, 251);
    std::string copy = source;
    {
        auto volume = open_ok(dir);
        ASSERT_NE(volume, nullptr);
        ASSERT_TRUE(write_file(*volume, "/src", source).has_value());
        const uint64_t before = volume->status().journal_bytes;
        auto from = volume->open("/src", O_RDONLY);
        ASSERT_TRUE(from.has_value());
        auto to = volume->open("/dst", O_WRONLY | O_CREAT, 0644);
        ASSERT_TRUE(to.has_value());
        auto n = copy_by_node(*volume, "/src", "/dst", UINT64_MAX / 2);
        ASSERT_TRUE(n.has_value()) << n.error().message();
        EXPECT_EQ(*n, source.size());
        const uint64_t grew = volume->status().journal_bytes - before;
        EXPECT_LT(grew, 1024u) << "the journal holds the copy's metadata, not its 8 MiB";
        EXPECT_EQ(read_file(*volume, "/dst").value_or(""), copy);
        ASSERT_TRUE(write_file(*volume, "/src", "rewritten").has_value());  // O_TRUNC
        source = "rewritten";
    }
    auto again = open_ok(dir);  // replays the create, the write, the clone and the rewrite
    ASSERT_NE(again, nullptr);
    EXPECT_EQ(read_file(*again, "/src").value_or("?"), source);
    EXPECT_TRUE(read_file(*again, "/dst").value_or("?") == copy);
    auto f = again->open("/dst", O_RDWR);
    ASSERT_TRUE(f.has_value());
    ASSERT_TRUE((*f)->pwrite(std::as_bytes(std::span(std::string_view("new"))), 70000));
    copy.replace(70000, 3, "new");
    ASSERT_TRUE(again->compact().has_value());
    EXPECT_TRUE(read_file(*again, "/dst").value_or("?") == copy);
}

// The same from a file that lives in the volume's pack (after a compaction): the copy reads
// the pack's file as a copy-up does, so the journal still holds no data, and the copy can
// be changed, replayed and compacted.
TEST(Volume, CloneOfAFileInThePackTakesNoData) {
    TempDir scratch;
    const std::string dir = make_volume(scratch);
    constexpr uint64_t kMiB = 1 << 20;
    const std::string source = patterned(4 * kMiB + 3, 7, 253);
    std::string copy = source;
    {
        auto volume = open_ok(dir);
        ASSERT_NE(volume, nullptr);
        ASSERT_TRUE(write_file(*volume, "/src", source).has_value());
        ASSERT_TRUE(volume->compact().has_value());
        const uint64_t before = volume->status().journal_bytes;
        auto from = volume->open("/src", O_RDONLY);
        ASSERT_TRUE(from.has_value());
        auto to = volume->open("/dst", O_RDWR | O_CREAT, 0644);
        ASSERT_TRUE(to.has_value());
        auto n = copy_by_node(*volume, "/src", "/dst", source.size());
        ASSERT_TRUE(n.has_value()) << n.error().message();
        EXPECT_EQ(*n, source.size());
        EXPECT_LT(volume->status().journal_bytes - before, 1024u);
        ASSERT_TRUE((*to)->pwrite(std::as_bytes(std::span(std::string_view("edit"))), 65530));
        copy.replace(65530, 4, "edit");
        EXPECT_TRUE(read_file(*volume, "/dst").value_or("?") == copy);
        EXPECT_TRUE(read_file(*volume, "/src").value_or("?") == source);
    }
    auto again = open_ok(dir);
    ASSERT_NE(again, nullptr);
    EXPECT_TRUE(read_file(*again, "/dst").value_or("?") == copy);
    EXPECT_TRUE(read_file(*again, "/src").value_or("?") == source);
    ASSERT_TRUE(again->compact().has_value());
    EXPECT_TRUE(read_file(*again, "/dst").value_or("?") == copy);
    EXPECT_TRUE(read_file(*again, "/src").value_or("?") == source);
}

// What a copy of the volume's files holds now: what a crash at this instant would leave.
std::shared_ptr<Volume> crash_copy(const TempDir& scratch, const std::string& dir,
                                   const std::string& name) {
    const auto copy = scratch.path / name;
    std::filesystem::copy(dir, copy, std::filesystem::copy_options::recursive);
    std::filesystem::remove(copy / "LOCK");
    VolumeOptions read_only;
    read_only.read_only = true;
    return open_ok(copy.string(), read_only);
}

// Explicit mode with a commit interval: an un-fsynced change is on disk within the interval
// (a copy of the files then has it); without one it stays in memory until an fsync.
TEST(Volume, ExplicitModeCommitsEachIntervalWithoutAnFsync) {
    TempDir scratch;
    for (const int interval_ms : {100, 0}) {
        const std::string dir = make_volume(scratch, Durability::explicit_sync);
        VolumeOptions options;
        options.commit_interval = std::chrono::milliseconds(interval_ms);
        auto volume = open_ok(dir, options);
        ASSERT_NE(volume, nullptr);
        ASSERT_TRUE(volume->mkdir("/made without fsync").has_value());
        ASSERT_TRUE(write_file(*volume, "/f", "unsynced bytes").has_value());
        std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms > 0 ? 600 : 300));
        auto copy = crash_copy(scratch, dir, fmt::format("copy-{}", interval_ms));
        ASSERT_NE(copy, nullptr);
        if (interval_ms > 0) {
            EXPECT_TRUE(copy->stat("/made without fsync").has_value());
            EXPECT_EQ(read_file(*copy, "/f").value_or(""), "unsynced bytes");
        } else {
            EXPECT_FALSE(copy->stat("/made without fsync").has_value());
        }
        volume.reset();
        std::filesystem::remove_all(dir);
    }
}

// A file whose last name went is changed through its node and its handle (fchmod, fsetxattr,
// writes), before and after a compaction: none of it is journaled (a replay would name an inode
// it never makes), the volume reopens, and the file is gone. A removed directory held by node
// takes no names.
TEST(Volume, ChangesToAnUnnamedObjectAreNotJournaled) {
    TempDir scratch;
    const std::string dir = make_volume(scratch, Durability::explicit_sync);
    {
        auto volume = open_ok(dir);
        ASSERT_NE(volume, nullptr);
        Backend& fs = *volume;
        ASSERT_TRUE(write_file(fs, "/f", "named once").has_value());
        ASSERT_TRUE(fs.mkdir("/d").has_value());
        auto f = lookup_path(fs, "/f");
        auto d = lookup_path(fs, "/d");
        ASSERT_TRUE(f.has_value() && d.has_value());
        auto handle = fs.open("/f", O_RDWR);
        ASSERT_TRUE(handle.has_value());
        ASSERT_TRUE(fs.unlink("/f").has_value());
        ASSERT_TRUE(fs.rmdir("/d").has_value());
        for (int round = 0; round < 2; ++round) {
            SCOPED_TRACE(round == 0 ? "before a compaction" : "after a compaction");
            EXPECT_TRUE(fs.setattr(f->node, SetAttr::chmod(0600 + round)).has_value());
            EXPECT_TRUE(fs.setxattr(f->node, "user.k", "v").has_value());
            EXPECT_TRUE(fs.removexattr(f->node, "user.k").has_value());
            EXPECT_TRUE((*handle)->pwrite(std::as_bytes(std::span("more", 4)), 10).has_value());
            EXPECT_EQ(fs.getattr(f->node).value_or(Stat{}).mode, 0600u + round);
            EXPECT_EQ(fs.link(f->node, kRootNode, "back").error().code(), ENOENT);
            EXPECT_EQ(fs.mkdir(d->node, "sub", 0755).error().code(), ENOENT);
            if (round == 0) {
                ASSERT_TRUE(volume->compact().has_value());
            }
        }
        fs.forget(f->node, 1);
        fs.forget(d->node, 1);
        ASSERT_TRUE(volume->sync().has_value());
    }
    auto again = open_ok(dir);
    ASSERT_NE(again, nullptr);
    EXPECT_EQ(again->lstat("/f").error().code(), ENOENT);
    EXPECT_EQ(again->lstat("/back").error().code(), ENOENT);
    EXPECT_EQ(again->lstat("/d").error().code(), ENOENT);
}

// `sync FILE` (coreutils) fsyncs a read-only descriptor: in explicit mode that is a
// durability point like any other fsync of the volume's files.
TEST(Volume, ExplicitFsyncOfAReadOnlyHandleMakesEverythingDurable) {
    TempDir scratch;
    const std::string dir = make_volume(scratch, Durability::explicit_sync);
    auto volume = open_ok(dir);
    ASSERT_NE(volume, nullptr);
    ASSERT_TRUE(write_file(*volume, "/a", "one").has_value());
    VolumeOptions ro;
    ro.read_only = true;
    auto before = open_ok(dir, ro);  // sees what reached the journal file: nothing yet
    ASSERT_NE(before, nullptr);
    EXPECT_EQ(before->stat("/a").error().code(), ENOENT);
    auto reader = volume->open("/a", O_RDONLY);
    ASSERT_TRUE(reader.has_value());
    EXPECT_EQ((*reader)->pwrite(std::as_bytes(std::span("x", 1)), 0).error().code(), EBADF);
    ASSERT_TRUE((*reader)->fsync().has_value());
    auto after = open_ok(dir, ro);
    ASSERT_NE(after, nullptr);
    EXPECT_EQ(read_file(*after, "/a").value_or(""), "one");
}

TEST(Volume, SecondReadWriteOpenIsBusyButReadOnlyOpensWork) {
    TempDir scratch;
    const std::string dir = make_volume(scratch);
    auto volume = open_ok(dir);
    ASSERT_NE(volume, nullptr);
    ASSERT_TRUE(write_file(*volume, "/a", "one").has_value());
    auto second = Volume::open(dir);
    ASSERT_FALSE(second.has_value());
    EXPECT_EQ(second.error().code(), EBUSY);
    VolumeOptions ro;
    ro.read_only = true;
    auto reader = open_ok(dir, ro);
    ASSERT_NE(reader, nullptr);
    EXPECT_EQ(read_file(*reader, "/a").value_or(""), "one");  // batch: durable, so visible
    EXPECT_EQ(reader->mkdir("/b").error().code(), EROFS);
    EXPECT_EQ(write_file(*reader, "/a", "two").error().code(), EROFS);
    EXPECT_EQ(reader->compact().error().code(), EROFS);
}

TEST(Volume, InodeNumbersSurviveCompactionAndReopen) {
    TempDir scratch;
    const std::string dir = make_volume(scratch);
    auto volume = open_ok(dir);
    ASSERT_NE(volume, nullptr);
    ASSERT_TRUE(volume->mkdir("/d").has_value());
    ASSERT_TRUE(write_file(*volume, "/d/x", "x").has_value());
    ASSERT_TRUE(volume->link("/d/x", "/y").has_value());
    ASSERT_TRUE(write_file(*volume, "/gone", "g").has_value());
    ASSERT_TRUE(volume->unlink("/gone").has_value());
    const uint64_t d = volume->stat("/d")->ino, x = volume->stat("/d/x")->ino;
    auto file = volume->open("/d/x", O_RDWR);
    ASSERT_TRUE(file.has_value());
    ASSERT_TRUE(volume->compact().has_value());
    EXPECT_EQ(volume->stat("/d")->ino, d);
    EXPECT_EQ(volume->stat("/d/x")->ino, x);
    EXPECT_EQ(volume->stat("/y")->ino, x);
    // The handle opened before the compaction writes into the same file after it.
    const std::string more = "x, then more";
    ASSERT_TRUE((*file)->pwrite(std::as_bytes(std::span(more)), 0).has_value());
    EXPECT_EQ(read_file(*volume, "/y").value_or(""), more);
    // A new inode after compaction does not reuse a number (not even the unlinked one's).
    ASSERT_TRUE(write_file(*volume, "/new", "n").has_value());
    const uint64_t fresh = volume->stat("/new")->ino;
    EXPECT_GT(fresh, x);
    file->reset();
    volume.reset();
    auto again = open_ok(dir);
    ASSERT_NE(again, nullptr);
    EXPECT_EQ(again->stat("/d/x")->ino, x);
    EXPECT_EQ(again->stat("/new")->ino, fresh);
    EXPECT_EQ(read_file(*again, "/d/x").value_or(""), more);
    EXPECT_EQ(again->stat("/d/x")->nlink, 2u);
}

// What stat says of every entry (a directory's size and link count, every time with its ns)
// is the same before a compaction, after it, after a reopen, and after a change copies a
// directory that came from the pack up into the live tree: `tar c` and rsync compare them.
TEST(Volume, StatOfEveryEntryIsTheSameAcrossCompactionAndReopen) {
    TempDir scratch;
    const std::string dir = make_volume(scratch);
    auto volume = open_ok(dir);
    ASSERT_NE(volume, nullptr);
    for (const char* d : {"/a", "/a/b", "/a/b/c", "/e"}) ASSERT_TRUE(volume->mkdir(d).has_value());
    for (const char* f : {"/a/f", "/a/b/g", "/e/h", "/top"})
        ASSERT_TRUE(write_file(*volume, f, f).has_value());
    ASSERT_TRUE(volume->symlink("a/f", "/link").has_value());
    const std::vector<std::string> paths = {"/", "/a", "/a/b", "/a/b/c", "/e", "/a/f",
                                            "/a/b/g", "/e/h", "/top", "/link"};
    auto snapshot = [&](Backend& fs) {
        std::vector<std::string> out;
        for (const auto& p : paths) {
            auto st = fs.lstat(p);
            out.push_back(st ? fmt::format("{} {} {} {} {}.{} {}.{} {}.{}", p, st->ino, st->size,
                                           st->nlink, st->atime.sec, st->atime.nsec, st->mtime.sec,
                                           st->mtime.nsec, st->ctime.sec, st->ctime.nsec)
                             : p + " " + st.error().message());
        }
        return out;
    };
    const auto before = snapshot(*volume);
    ASSERT_TRUE(volume->compact().has_value());
    EXPECT_EQ(snapshot(*volume), before) << "after the compaction";
    volume.reset();
    volume = open_ok(dir);
    ASSERT_NE(volume, nullptr);
    EXPECT_EQ(snapshot(*volume), before) << "after a reopen";
    // /a/b from the pack, copied up by a chmod of /a/b/g (its parent's entries untouched).
    ASSERT_TRUE(volume->chmod("/a/b/g", 0600).has_value());
    auto after = snapshot(*volume);
    EXPECT_EQ(after[2], before[2]) << "a pack directory copied up";
}

TEST(Volume, NewerManifestVersionIsRefusedNamingIt) {
    TempDir scratch;
    const std::string dir = make_volume(scratch);
    const std::string manifest = dir + "/MANIFEST";
    std::string text = test_support::slurp(manifest);
    const auto at = text.find("\"version\": 1");
    ASSERT_NE(at, std::string::npos);
    text.replace(at, 12, "\"version\": 7");
    std::ofstream(manifest, std::ios::trunc) << text;
    auto volume = Volume::open(dir);
    ASSERT_FALSE(volume.has_value());
    EXPECT_EQ(volume.error().code(), ENOTSUP);
    EXPECT_NE(volume.error().message().find("version 7"), std::string::npos)
        << volume.error().message();
}

TEST(Volume, DamagedManifestIsCorruptionNotACrash) {
    TempDir scratch;
    const std::string dir = make_volume(scratch);
    for (const char* text : {"", "{", "[]", "{\"format\": \"packfs-volume\", \"version\": 1}",
                             "{\"format\": \"packfs-volume\", \"version\": 1, \"volume_id\": \"00\"}"}) {
        std::ofstream(dir + "/MANIFEST", std::ios::trunc) << text;
        auto volume = Volume::open(dir);
        ASSERT_FALSE(volume.has_value()) << text;
        EXPECT_EQ(volume.error().code(), EUCLEAN) << text << ": " << volume.error().message();
    }
    // The message says what was wrong and where: the JSON parser's own words and position for
    // trailing garbage, the kind of document for one that is not an object.
    const std::string good = R"({"format":"packfs-volume","version":1})";
    std::ofstream(dir + "/MANIFEST", std::ios::trunc) << good << "\ngarbage";
    auto trailing = Volume::open(dir);
    ASSERT_FALSE(trailing.has_value());
    const std::string said = trailing.error().message();
    EXPECT_NE(said.find("not valid JSON"), std::string::npos) << said;
    EXPECT_NE(said.find("parse error"), std::string::npos) << said;
    EXPECT_NE(said.find(fmt::format("at offset {}", good.size() + 2)), std::string::npos) << said;
    EXPECT_EQ(said.find("0x0"), std::string::npos) << said;
    std::ofstream(dir + "/MANIFEST", std::ios::trunc) << "[1, 2]";
    auto array = Volume::open(dir);
    ASSERT_FALSE(array.has_value());
    EXPECT_NE(array.error().message().find("not a JSON object (the document is a array)"),
              std::string::npos)
        << array.error().message();
    // A manifest naming a file outside the volume is refused too.
    std::ofstream(dir + "/MANIFEST", std::ios::trunc)
        << R"({"format":"packfs-volume","version":1,"volume_id":"00000000000000000000000000000000",)"
        << R"("generation":1,"pack":"../x","journal":"journal.1","first_seq":1,"next_ino":2,)"
        << R"("durability":"batch"})";
    auto volume = Volume::open(dir);
    ASSERT_FALSE(volume.has_value());
    EXPECT_EQ(volume.error().code(), EUCLEAN);
}

TEST(Volume, CreateRefusesANonEmptyDirectoryAndABadPack) {
    TempDir scratch;
    const std::string dir = make_volume(scratch);
    EXPECT_EQ(Volume::create(dir, {}).error().code(), ENOTEMPTY);
    std::ofstream(scratch.path / "not.pack") << "not a pack";
    VolumeInit init;
    init.from_pack = (scratch.path / "not.pack").string();
    auto made = Volume::create((scratch.path / "v2").string(), init);
    ASSERT_FALSE(made.has_value());
    EXPECT_EQ(made.error().code(), EUCLEAN);
}

}  // namespace
}  // namespace packfs
