// The overlay's own semantics (DESIGN §9), beyond what the conformance suite and the model can
// see: what copy-up copies, that whiteouts are invisible and user files named like markers are
// ordinary, that hard links survive copy-up, and that the lower is never changed.
#include <gtest/gtest.h>

#include <string>

#include "overlay/overlay_test_util.hpp"
#include "packfs/overlay.hpp"

namespace packfs {
namespace {

using overlay_test::pack_of;

std::shared_ptr<Backend> overlay_over(std::shared_ptr<Backend> lower) {
    auto overlay = make_overlay(std::move(lower));
    EXPECT_TRUE(overlay.has_value());
    return overlay ? *overlay : nullptr;
}

std::vector<std::string> names(Backend& fs, std::string_view dir) {
    std::vector<std::string> out;
    auto entries = fs.readdir(dir);
    EXPECT_TRUE(entries.has_value());
    if (!entries) return out;
    for (const auto& e : *entries) out.push_back(e.name);
    std::sort(out.begin(), out.end());
    return out;
}

TEST(Overlay, OneByteWriteIntoLargeLowerFileCopiesOneChunk) {
    constexpr std::size_t kSize = 64u << 20;
    std::string big(kSize, '\0');
    for (std::size_t i = 0; i < kSize; i += 4096) big[i] = static_cast<char>('a' + (i / 4096) % 26);
    auto lower = pack_of([&](Backend& fs) { return write_file(fs, "/big", big).has_value(); });
    ASSERT_NE(lower, nullptr);
    auto fs = overlay_over(lower);
    auto file = fs->open("/big", O_RDWR);
    ASSERT_TRUE(file.has_value());
    const uint64_t free_before = fs->statfs("/")->blocks_free;
    const std::byte one{'Z'};
    ASSERT_TRUE((*file)->pwrite(std::span(&one, 1), 40'000'000).has_value());
    // One 64 KiB chunk is the file's own; the rest is still the lower's.
    auto st = (*file)->fstat();
    ASSERT_TRUE(st.has_value());
    EXPECT_EQ(st->size, kSize);
    // The upper's bytes (statfs counts them) grew by one 64 KiB chunk: 16 blocks of 4 KiB.
    EXPECT_EQ(free_before - fs->statfs("/")->blocks_free, 16u);
    big[40'000'000] = 'Z';
    EXPECT_EQ(read_file(*fs, "/big").value_or(""), big);
    // The lower is unchanged.
    big[40'000'000] = '\0';
    EXPECT_EQ(read_file(*lower, "/big").value_or(""), big);
}

TEST(Overlay, MetadataChangeCopiesNoData) {
    auto lower = pack_of([](Backend& fs) { return write_file(fs, "/f", std::string(1 << 20, 'x')).has_value(); });
    ASSERT_NE(lower, nullptr);
    auto fs = overlay_over(lower);
    ASSERT_TRUE(fs->chmod("/f", 0600).has_value());
    auto st = fs->stat("/f");
    ASSERT_TRUE(st.has_value());
    EXPECT_EQ(st->mode, 0600u);
    EXPECT_EQ(read_file(*fs, "/f").value_or(""), std::string(1 << 20, 'x'));
    EXPECT_EQ(lower->stat("/f")->mode, 0644u);
}

TEST(Overlay, HardLinksStayLinksAfterCopyUp) {
    auto lower = pack_of([](Backend& fs) {
        return write_file(fs, "/a", "shared").has_value() && fs.link("/a", "/b").has_value();
    });
    ASSERT_NE(lower, nullptr);
    auto fs = overlay_over(lower);
    ASSERT_TRUE(write_file(*fs, "/a", "changed through a").has_value());
    EXPECT_EQ(read_file(*fs, "/b").value_or(""), "changed through a");
    EXPECT_EQ(fs->stat("/a")->ino, fs->stat("/b")->ino);
    EXPECT_EQ(fs->stat("/b")->nlink, 2u);
    ASSERT_TRUE(fs->unlink("/a").has_value());
    EXPECT_EQ(fs->stat("/b")->nlink, 1u);
    EXPECT_EQ(read_file(*fs, "/b").value_or(""), "changed through a");
}

TEST(Overlay, RenamedLowerDirectoryKeepsItsEntries) {
    auto lower = pack_of([](Backend& fs) {
        return fs.mkdir("/d").has_value() && fs.mkdir("/d/sub").has_value() &&
               write_file(fs, "/d/sub/f", "deep").has_value();
    });
    ASSERT_NE(lower, nullptr);
    auto fs = overlay_over(lower);
    ASSERT_TRUE(fs->rename("/d", "/moved").has_value());
    EXPECT_EQ(read_file(*fs, "/moved/sub/f").value_or(""), "deep");
    EXPECT_FALSE(fs->stat("/d").has_value());
    EXPECT_EQ(names(*fs, "/"), std::vector<std::string>{"moved"});
    // And a directory made where the old one was is empty (opaque).
    ASSERT_TRUE(fs->mkdir("/d").has_value());
    EXPECT_TRUE(names(*fs, "/d").empty());
}

// A rename inside one lower directory names that directory twice (source and destination):
// it is copied up once, keeping its xattrs, and counts as one inode more, not two.
TEST(Overlay, RenameWithinALowerDirectoryCopiesItUpOnce) {
    auto lower = pack_of([](Backend& fs) {
        return fs.mkdir("/d").has_value() && fs.setxattr("/d", "user.k", "v").has_value() &&
               write_file(fs, "/d/a", "content").has_value();
    });
    ASSERT_NE(lower, nullptr);
    auto fs = overlay_over(lower);
    const uint64_t used_before = fs->statfs("/")->files - fs->statfs("/")->files_free;
    ASSERT_TRUE(fs->rename("/d/a", "/d/b").has_value());
    EXPECT_EQ(read_file(*fs, "/d/b").value_or(""), "content");
    EXPECT_EQ(fs->getxattr("/d", "user.k").value_or(""), "v");
    EXPECT_EQ(names(*fs, "/d"), std::vector<std::string>{"b"});
    // Copied up: the renamed file and its directory.
    EXPECT_EQ(fs->statfs("/")->files - fs->statfs("/")->files_free, used_before + 2);
}

TEST(Overlay, DirectoryRecreatedOverDeletedLowerIsOpaque) {
    auto lower = pack_of([](Backend& fs) {
        return fs.mkdir("/d").has_value() && write_file(fs, "/d/old", "x").has_value();
    });
    ASSERT_NE(lower, nullptr);
    auto fs = overlay_over(lower);
    EXPECT_EQ(fs->rmdir("/d").error().code(), ENOTEMPTY);
    ASSERT_TRUE(fs->unlink("/d/old").has_value());
    ASSERT_TRUE(fs->rmdir("/d").has_value());
    ASSERT_TRUE(fs->mkdir("/d").has_value());
    EXPECT_TRUE(names(*fs, "/d").empty());
    EXPECT_FALSE(fs->stat("/d/old").has_value());
}

TEST(Overlay, MergedListingHasNoDuplicatesOrWhiteouts) {
    auto lower = pack_of([](Backend& fs) {
        return write_file(fs, "/keep", "1").has_value() && write_file(fs, "/gone", "2").has_value() &&
               write_file(fs, "/changed", "3").has_value();
    });
    ASSERT_NE(lower, nullptr);
    auto fs = overlay_over(lower);
    ASSERT_TRUE(fs->unlink("/gone").has_value());
    ASSERT_TRUE(write_file(*fs, "/changed", "new").has_value());
    ASSERT_TRUE(write_file(*fs, "/added", "4").has_value());
    EXPECT_EQ(names(*fs, "/"), (std::vector<std::string>{"added", "changed", "keep"}));
}

TEST(Overlay, MarkerLookalikesAreOrdinaryEntries) {
    auto lower = pack_of([](Backend& fs) { return write_file(fs, "/x", "lower").has_value(); });
    ASSERT_NE(lower, nullptr);
    auto fs = overlay_over(lower);
    // What overlayfs and fuse-overlayfs use as markers is plain data here.
    ASSERT_TRUE(fs->mknod("/c00", FileType::char_device, 0600, 0).has_value());
    ASSERT_TRUE(write_file(*fs, "/.wh.x", "").has_value());
    ASSERT_TRUE(fs->mkdir("/dir").has_value());
    ASSERT_TRUE(write_file(*fs, "/dir/.wh..wh..opq", "").has_value());
    EXPECT_EQ(read_file(*fs, "/x").value_or(""), "lower");
    EXPECT_EQ(names(*fs, "/"), (std::vector<std::string>{".wh.x", "c00", "dir", "x"}));
    EXPECT_EQ(names(*fs, "/dir"), std::vector<std::string>{".wh..wh..opq"});
    auto dev = fs->lstat("/c00");
    ASSERT_TRUE(dev.has_value());
    EXPECT_EQ(dev->type, FileType::char_device);
    EXPECT_EQ(dev->rdev, 0u);
    ASSERT_TRUE(fs->unlink("/c00").has_value());
    ASSERT_TRUE(fs->unlink("/dir/.wh..wh..opq").has_value());
    ASSERT_TRUE(fs->rmdir("/dir").has_value());
}

TEST(Overlay, SnapshotIsFrozenOverTheSameLower) {
    auto lower = pack_of([](Backend& fs) { return write_file(fs, "/f", "v1").has_value(); });
    ASSERT_NE(lower, nullptr);
    auto fs = overlay_over(lower);
    auto snap = fs->snapshot();
    ASSERT_TRUE(snap.has_value());
    ASSERT_TRUE(write_file(*fs, "/f", "v2").has_value());
    ASSERT_TRUE(fs->unlink("/f").has_value());
    EXPECT_EQ(read_file(**snap, "/f").value_or(""), "v1");
    EXPECT_FALSE(fs->stat("/f").has_value());
}

TEST(Overlay, NewInodesAreNumberedAboveTheLower) {
    auto lower = pack_of([](Backend& fs) {
        return write_file(fs, "/a", "").has_value() && write_file(fs, "/b", "").has_value();
    });
    ASSERT_NE(lower, nullptr);
    auto fs = overlay_over(lower);
    const uint64_t a = fs->stat("/a")->ino, b = fs->stat("/b")->ino;
    EXPECT_EQ(a, lower->stat("/a")->ino);
    ASSERT_TRUE(write_file(*fs, "/c", "").has_value());
    const uint64_t c = fs->stat("/c")->ino;
    EXPECT_GT(c, std::max(a, b));
    ASSERT_TRUE(fs->chmod("/a", 0600).has_value());
    EXPECT_EQ(fs->stat("/a")->ino, a);  // copy-up keeps the number
}

TEST(Overlay, UnlinkedLowerFileStaysReadableThroughItsHandle) {
    auto lower = pack_of([](Backend& fs) { return write_file(fs, "/f", "still here").has_value(); });
    ASSERT_NE(lower, nullptr);
    auto fs = overlay_over(lower);
    auto file = fs->open("/f", O_RDONLY);
    ASSERT_TRUE(file.has_value());
    ASSERT_TRUE(fs->unlink("/f").has_value());
    std::string buf(32, '\0');
    auto n = (*file)->pread(std::as_writable_bytes(std::span(buf)), 0);
    ASSERT_TRUE(n.has_value());
    EXPECT_EQ(buf.substr(0, *n), "still here");
    EXPECT_EQ((*file)->fstat()->nlink, 0u);
}

TEST(Overlay, StackedLowersFollowOverlayfsRules) {
    auto top = pack_of([](Backend& fs) {
        return fs.mkdir("/merged").has_value() && write_file(fs, "/merged/top", "t").has_value() &&
               write_file(fs, "/shadow", "file on top").has_value() &&
               write_file(fs, "/both", "top wins").has_value();
    });
    auto bottom = pack_of([](Backend& fs) {
        return fs.mkdir("/merged").has_value() &&
               write_file(fs, "/merged/bottom", "b").has_value() &&
               write_file(fs, "/merged/top", "hidden").has_value() && fs.mkdir("/shadow").has_value() &&
               write_file(fs, "/shadow/under", "hidden").has_value() &&
               write_file(fs, "/both", "bottom").has_value() &&
               write_file(fs, "/only-bottom", "deep").has_value();
    });
    ASSERT_NE(top, nullptr);
    ASSERT_NE(bottom, nullptr);
    auto overlay = make_overlay(std::vector<std::shared_ptr<Backend>>{top, bottom});
    ASSERT_TRUE(overlay.has_value());
    Backend& fs = **overlay;
    EXPECT_EQ(names(fs, "/"), (std::vector<std::string>{"both", "merged", "only-bottom", "shadow"}));
    EXPECT_EQ(names(fs, "/merged"), (std::vector<std::string>{"bottom", "top"}));
    EXPECT_EQ(read_file(fs, "/merged/top").value_or(""), "t");
    EXPECT_EQ(read_file(fs, "/merged/bottom").value_or(""), "b");
    EXPECT_EQ(read_file(fs, "/both").value_or(""), "top wins");
    EXPECT_EQ(read_file(fs, "/only-bottom").value_or(""), "deep");
    // A file on top hides the directory of that name below, and all it holds.
    EXPECT_EQ(fs.lstat("/shadow")->type, FileType::regular);
    EXPECT_EQ(fs.stat("/shadow/under").error().code(), ENOTDIR);
    // Writable over the stack: a lower file of the bottom layer copies up like any other.
    ASSERT_TRUE(write_file(fs, "/merged/bottom", "changed").has_value());
    EXPECT_EQ(read_file(fs, "/merged/bottom").value_or(""), "changed");
    ASSERT_TRUE(fs.unlink("/merged/top").has_value());
    EXPECT_EQ(names(fs, "/merged"), std::vector<std::string>{"bottom"});
    EXPECT_EQ(read_file(*bottom, "/merged/bottom").value_or(""), "b");
}

}  // namespace
}  // namespace packfs
