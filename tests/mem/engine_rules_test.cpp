// The mem engine's own rules, beyond what the conformance suite and the model see (engine.hpp,
// content.hpp, cell.hpp): appends in place past a chunk's frontier never touch what a snapshot
// sees; truncating then growing reads zeros; copy-up of a lower
// file is by chunk; an unlinked open file is freed at its last close; a dropped snapshot lets
// the writer change in place again.
#include <fcntl.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "packfs/forwarding.hpp"
#include "packfs/mem.hpp"
#include "packfs/overlay.hpp"
#include "packfs/pack.hpp"
#include "support/files.hpp"

namespace packfs {
namespace {

std::string bytes(std::size_t n, char seed) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + i * 7 % 251);
    return s;
}

Result<void> pwrite(File& f, std::string_view data, uint64_t offset) {
    auto n = f.pwrite(std::as_bytes(std::span(data.data(), data.size())), offset);
    if (!n) return std::unexpected(n.error());
    return {};
}

uint64_t used_blocks(Backend& fs) {
    auto s = fs.statfs("/");
    return s ? s->blocks - s->blocks_free : 0;
}

uint64_t inodes_in_use(Backend& fs) {
    auto s = fs.statfs("/");
    return s ? s->files - s->files_free : 0;
}

TEST(MemEngine, AppendsPastTheFrontierLeaveASnapshotsBytesAlone) {
    auto fs = make_mem_backend();
    auto f = fs->open("/f", O_RDWR | O_CREAT, 0644);
    ASSERT_TRUE(f);
    const std::string first = bytes(1000, 'a');
    ASSERT_TRUE(pwrite(**f, first, 0));
    auto snap = fs->snapshot();
    ASSERT_TRUE(snap);
    // In place (the chunk's buffer has room past what the snapshot can see)...
    const std::string more = bytes(3000, 'b');
    ASSERT_TRUE(pwrite(**f, more, 1000));
    EXPECT_EQ(read_file(*fs, "/f").value_or(""), first + more);
    EXPECT_EQ(read_file(**snap, "/f").value_or(""), first);
    // ...and an overwrite of what the snapshot sees copies the chunk instead.
    ASSERT_TRUE(pwrite(**f, "XYZ", 10));
    std::string now = first + more;
    now.replace(10, 3, "XYZ");
    EXPECT_EQ(read_file(*fs, "/f").value_or(""), now);
    EXPECT_EQ(read_file(**snap, "/f").value_or(""), first);
}

TEST(MemEngine, TruncatingThenGrowingReadsZerosWhileASnapshotKeepsTheOldBytes) {
    auto fs = make_mem_backend();
    ASSERT_TRUE(write_file(*fs, "/f", bytes(200000, 'c')));
    auto snap = fs->snapshot();
    ASSERT_TRUE(snap);
    ASSERT_TRUE(fs->truncate("/f", 70000));
    ASSERT_TRUE(fs->truncate("/f", 150000));
    const std::string got = read_file(*fs, "/f").value_or("");
    ASSERT_EQ(got.size(), 150000u);
    EXPECT_EQ(got.substr(0, 70000), bytes(200000, 'c').substr(0, 70000));
    EXPECT_EQ(got.substr(70000), std::string(80000, '\0'));
    EXPECT_EQ(read_file(**snap, "/f").value_or(""), bytes(200000, 'c'));
}

// A lower that fails getattr of one node on demand (an I/O error of the lower's storage).
class FailingLower final : public ForwardingBackend {
public:
    using ForwardingBackend::ForwardingBackend;
    Node broken;
    Result<Stat> getattr(Node node) override {
        if (node == broken) return fail(EIO, "getattr");
        return ForwardingBackend::getattr(node);
    }
};

// A rename over a lower file, an unlink of one: what can fail (the lower's link count, a
// copy-up) is asked before any name changes, so a failure leaves both names as they were.
TEST(MemEngine, ARemovalThatFailsChangesNoName) {
    auto base = make_mem_backend();
    ASSERT_TRUE(write_file(*base, "/a", "from a"));
    ASSERT_TRUE(write_file(*base, "/b", "from b"));
    auto lower = std::make_shared<FailingLower>(base);
    auto b = lookup_path(*base, "/b", Follow::no);
    ASSERT_TRUE(b);
    auto fs = make_overlay(lower);
    ASSERT_TRUE(fs);
    lower->broken = b->node;
    auto moved = (*fs)->rename("/a", "/b");
    ASSERT_FALSE(moved);
    EXPECT_EQ(moved.error().code(), EIO);
    auto gone = (*fs)->unlink("/b");
    ASSERT_FALSE(gone);
    EXPECT_EQ(gone.error().code(), EIO);
    EXPECT_EQ(read_file(**fs, "/a").value_or("<none>"), "from a");
    lower->broken = Node{};
    EXPECT_EQ(read_file(**fs, "/b").value_or("<none>"), "from b");
    ASSERT_TRUE((*fs)->rename("/a", "/b"));
    EXPECT_EQ(read_file(**fs, "/b").value_or("<none>"), "from a");
    EXPECT_EQ((*fs)->lstat("/a").error().code(), ENOENT);
    base->forget(b->node, 1);
}

TEST(MemEngine, CopyUpOfALowerFileIsByChunk) {
    test_support::TempDir dir;
    auto source = make_mem_backend();
    ASSERT_TRUE(write_file(*source, "/big", bytes(8 << 20, 'e')));
    const std::string pack_path = (dir.path / "lower.pack").string();
    ASSERT_TRUE(write_pack(*source, pack_path));
    auto pack = open_pack(pack_path);
    ASSERT_TRUE(pack);
    auto fs = make_overlay(*pack);
    ASSERT_TRUE(fs);
    const uint64_t before = used_blocks(**fs);
    auto f = (*fs)->open("/big", O_RDWR);
    ASSERT_TRUE(f);
    ASSERT_TRUE(pwrite(**f, "!", 3'000'000));
    std::string want = bytes(8 << 20, 'e');
    want[3'000'000] = '!';
    EXPECT_EQ(read_file(**fs, "/big").value_or(""), want);
    EXPECT_EQ(used_blocks(**fs) - before, 16u);  // one chunk of the upper's own
}

TEST(MemEngine, AnUnlinkedOpenFileIsFreedAtItsLastClose) {
    auto fs = make_mem_backend();
    const uint64_t empty = inodes_in_use(*fs);
    auto f = fs->open("/orphan", O_RDWR | O_CREAT, 0644);
    ASSERT_TRUE(f);
    auto g = fs->open("/orphan", O_RDONLY);
    ASSERT_TRUE(g);
    ASSERT_TRUE(pwrite(**f, "lives on", 0));
    ASSERT_TRUE(fs->unlink("/orphan"));
    EXPECT_EQ(inodes_in_use(*fs), empty + 1);  // an orphan: no name, still there
    f->reset();
    EXPECT_EQ(inodes_in_use(*fs), empty + 1);  // one handle left
    std::string buf(8, '\0');
    auto n = (*g)->pread(std::as_writable_bytes(std::span(buf.data(), buf.size())), 0);
    ASSERT_TRUE(n);
    EXPECT_EQ(buf, "lives on");
    EXPECT_EQ((*g)->fstat()->nlink, 0u);
    g->reset();
    EXPECT_EQ(inodes_in_use(*fs), empty);  // the last close freed it
}

TEST(MemEngine, ASnapshotKeepsAnUnlinkedFileUntilItIsDropped) {
    auto fs = make_mem_backend();
    ASSERT_TRUE(write_file(*fs, "/f", "kept"));
    const uint64_t with_file = inodes_in_use(*fs);
    auto snap = fs->snapshot();
    ASSERT_TRUE(snap);
    ASSERT_TRUE(fs->unlink("/f"));
    EXPECT_EQ(inodes_in_use(*fs), with_file - 1);  // gone from the live tree
    EXPECT_EQ(read_file(**snap, "/f").value_or(""), "kept");
    snap->reset();
    EXPECT_FALSE(fs->stat("/f"));
}

TEST(MemEngine, ManySnapshotsEachSeeTheirOwnGeneration) {
    auto fs = make_mem_backend();
    std::vector<std::shared_ptr<Backend>> snaps;
    for (int i = 0; i < 40; ++i) {
        ASSERT_TRUE(write_file(*fs, "/f", std::to_string(i)));
        ASSERT_TRUE(fs->chmod("/f", 0600 + i % 8));
        snaps.push_back(*fs->snapshot());
    }
    // Drop every other one: those between still see theirs.
    for (int i = 0; i < 40; i += 2) snaps[i].reset();
    for (int i = 1; i < 40; i += 2) {
        EXPECT_EQ(read_file(*snaps[i], "/f").value_or(""), std::to_string(i)) << i;
        EXPECT_EQ(snaps[i]->stat("/f")->mode, 0600u + i % 8) << i;
    }
    EXPECT_EQ(read_file(*fs, "/f").value_or(""), "39");
}

// A snapshot's generation lives as long as anything of it does: the backend, a snapshot taken
// of it (the same frozen tree), an open file.
TEST(MemEngine, ASnapshotsGenerationLivesAsLongAsItsLastBackendOrFile) {
    auto fs = make_mem_backend();
    ASSERT_TRUE(write_file(*fs, "/f", "old"));
    auto snap = fs->snapshot();
    ASSERT_TRUE(snap);
    auto again = (*snap)->snapshot();
    ASSERT_TRUE(again);
    ASSERT_TRUE(write_file(*fs, "/f", "new"));
    snap->reset();
    EXPECT_EQ(read_file(**again, "/f").value_or(""), "old");
    auto file = (*again)->open("/f", O_RDONLY);
    ASSERT_TRUE(file);
    again->reset();
    char buf[8] = {};
    auto n = (*file)->pread(std::as_writable_bytes(std::span(buf)), 0);
    ASSERT_TRUE(n);
    EXPECT_EQ(std::string_view(buf, *n), "old");
    file->reset();  // the last of the snapshot: its generation is dropped (ASan: nothing leaks)
    EXPECT_EQ(read_file(*fs, "/f").value_or(""), "new");
}

// A node handed in from outside (a journal record, a FUSE request) may name a file where a
// directory is wanted: every call answers ENOTDIR (a fuzzed journal record once made the engine
// read a file's content as a directory).
TEST(MemEngine, AFileNodeGivenAsADirectoryIsNotADirectory) {
    auto fs = make_mem_backend();
    ASSERT_TRUE(write_file(*fs, "/f", "data").has_value());
    auto f = lookup_path(*fs, "/f");
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(fs->lookup(f->node, "x").error().code(), ENOTDIR);
    EXPECT_EQ(fs->create(f->node, "x", O_CREAT | O_WRONLY, 0644, {}).error().code(), ENOTDIR);
    EXPECT_EQ(fs->mkdir(f->node, "x", 0755, {}).error().code(), ENOTDIR);
    EXPECT_EQ(fs->unlink(f->node, "x").error().code(), ENOTDIR);
    EXPECT_EQ(read_file(*fs, "/f").value_or(""), "data");
}

// Holes are chunks never written: SEEK_HOLE and SEEK_DATA find them to the 64 KiB chunk, on
// the live file, in a snapshot taken before the gap was filled (which keeps its hole), and over
// a map tall enough that whole missing subtrees are skipped (a byte at 64 GiB).
TEST(MemHoles, SeekFindsTheChunksNeverWrittenLiveAndInASnapshot) {
    constexpr uint64_t kChunk = 64 * 1024;
    auto fs = make_mem_backend();
    auto f = fs->open("/s", O_RDWR | O_CREAT | O_EXCL, 0644);
    ASSERT_TRUE(f);
    const std::string_view byte = "x";
    ASSERT_TRUE((*f)->pwrite(std::as_bytes(std::span(byte)), 0));
    ASSERT_TRUE((*f)->pwrite(std::as_bytes(std::span(byte)), 16 * kChunk + 7));
    EXPECT_EQ((*f)->seek_data(0, false).value_or(0), kChunk);
    EXPECT_EQ((*f)->seek_data(kChunk, true).value_or(0), 16 * kChunk);
    EXPECT_EQ((*f)->seek_data(3, true).value_or(0), 3u);
    EXPECT_EQ((*f)->seek_data(16 * kChunk + 1, false).value_or(0), 16 * kChunk + 8);  // the end
    auto snap = fs->snapshot();
    ASSERT_TRUE(snap);
    ASSERT_TRUE((*f)->pwrite(std::as_bytes(std::span(byte)), 5 * kChunk));  // fills one chunk
    EXPECT_EQ((*f)->seek_data(kChunk, true).value_or(0), 5 * kChunk);
    auto old = (*snap)->open("/s", O_RDONLY);
    ASSERT_TRUE(old);
    EXPECT_EQ((*old)->seek_data(kChunk, true).value_or(0), 16 * kChunk);  // its hole is whole
    const uint64_t far = uint64_t{64} << 30;
    ASSERT_TRUE((*f)->pwrite(std::as_bytes(std::span(byte)), far));
    EXPECT_EQ((*f)->seek_data(17 * kChunk, true).value_or(0), far / kChunk * kChunk);
    auto past = (*f)->seek_data(far + 1, true);
    ASSERT_FALSE(past);
    EXPECT_EQ(past.error().code(), ENXIO);
}

// A punched hole frees its whole chunks (the hole is found by SEEK_HOLE and the bytes kept
// fall), and on a file copied up from a lower it reads as zeros, never as the lower's bytes
// again (there, a missing chunk would mean "still the lower's": zeros are stored instead).
TEST(MemHoles, APunchFreesWholeChunksAndNeverUncoversTheLower) {
    constexpr uint64_t kChunk = 64 * 1024;
    auto base = make_mem_backend();
    const std::string lower_bytes(4 * kChunk, 'L');
    ASSERT_TRUE(write_file(*base, "/copied", lower_bytes));
    auto fs = make_overlay(base);
    ASSERT_TRUE(fs);
    for (const char* path : {"/own", "/copied"}) {
        SCOPED_TRACE(path);
        auto f = (*fs)->open(path, O_RDWR | O_CREAT, 0644);
        ASSERT_TRUE(f);
        if (std::string_view(path) == "/own") {
            ASSERT_TRUE((*f)->pwrite(std::as_bytes(std::span(lower_bytes)), 0));
        }
        const uint64_t used = (*fs)->statfs("/")->blocks_free;
        ASSERT_TRUE(
            (*f)->allocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, kChunk - 1, 2 * kChunk + 2));
        std::string expected = lower_bytes;
        std::fill(expected.begin() + kChunk - 1, expected.begin() + 3 * kChunk + 1, '\0');
        EXPECT_EQ(read_file(**fs, path).value_or(""), expected);
        if (std::string_view(path) == "/own") {
            EXPECT_EQ((*f)->seek_data(0, false).value_or(0), kChunk);  // chunks 1 and 2 freed
            EXPECT_EQ((*f)->seek_data(kChunk, true).value_or(0), 3 * kChunk);
            EXPECT_GT((*fs)->statfs("/")->blocks_free, used);
        }
    }
}

}  // namespace
}  // namespace packfs
