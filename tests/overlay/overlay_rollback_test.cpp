// Overlay::rollback (packfs/overlay.hpp, src/mem/engine_rollback.cpp): an overlay put back to a
// checkpoint reads exactly as it did then, whatever was changed since (lower files copied up,
// removed and renamed, names made and removed, directories made and filled, xattrs, links),
// with snapshots taken in between still reading as they did, open files and node references
// of inodes that existed going on, those of inodes made since holding unnamed files, and the
// overlay usable after: further changes, another rollback, a rebase.
#include <fcntl.h>
#include <gtest/gtest.h>

#include <random>

#include "overlay/overlay_test_util.hpp"
#include "packfs/overlay.hpp"
#include "support/files.hpp"
#include "volume/volume_test_util.hpp"

namespace packfs {
namespace {

using overlay_test::pack_of;
using volume_test::capture;
using volume_test::diff;

std::shared_ptr<PackBackend> lower_tree() {
    return pack_of([](Backend& fs) {
        return fs.mkdir("/d", 0755) && write_file(fs, "/d/a", "lower a") &&
               write_file(fs, "/d/b", std::string(150'000, 'b')) && fs.symlink("d/a", "/link") &&
               fs.mkdir("/d/sub", 0700) && write_file(fs, "/d/sub/x", "lower x") &&
               fs.link("/d/a", "/d/a2");
    });
}

std::shared_ptr<Overlay> overlay_over(std::shared_ptr<Backend> lower) {
    auto made = make_overlay(std::move(lower));
    EXPECT_TRUE(made.has_value());
    return made ? *made : nullptr;
}

// Random changes over a small pool of names, lower ones among them; failures (a name that is
// not there, a directory not empty) are part of the mix and change nothing.
class Changes {
public:
    explicit Changes(uint32_t seed) : rng_(seed) {}

    void run(Backend& fs, int count) {
        for (int i = 0; i < count; ++i) one(fs);
    }

private:
    std::string path() {
        static const char* const pool[] = {"/d/a",  "/d/b", "/d/a2",   "/d/sub/x", "/d/sub",
                                           "/link", "/n1",  "/n2",     "/d/n3",    "/e",
                                           "/e/f",  "/e/g", "/d/sub/y"};
        return pool[rng_() % std::size(pool)];
    }
    void one(Backend& fs) {
        const std::string p = path(), q = path();
        const std::string data(static_cast<std::size_t>(rng_() % 70'000), char('a' + rng_() % 26));
        switch (rng_() % 11) {
            case 0:
                (void)write_file(fs, p, data);
                break;
            case 1:
                (void)fs.mkdir(p, 0750);
                break;
            case 2:
                (void)fs.unlink(p);
                break;
            case 3:
                (void)fs.rmdir(p);
                break;
            case 4:
                (void)fs.rename(p, q, RenameFlags::none);
                break;
            case 5:
                (void)fs.chmod(p, 0600 + rng_() % 0100);
                break;
            case 6:
                (void)fs.setxattr(p, "user.k", data.substr(0, 9));
                break;
            case 7:
                (void)fs.truncate(p, rng_() % 200'000);
                break;
            case 8:
                (void)fs.symlink(q, p);
                break;
            case 9:
                (void)fs.link(p, q);
                break;
            case 10: {
                auto f = fs.open(p, O_WRONLY);
                if (f) (void)(*f)->pwrite(std::as_bytes(std::span(data)), rng_() % 160'000);
                break;
            }
        }
    }
    std::mt19937 rng_;
};

TEST(OverlayRollback, PutsTheTreeBackWhateverChangedSince) {
    for (uint32_t seed = 1; seed <= 40; ++seed) {
        SCOPED_TRACE(seed);
        auto overlay = overlay_over(lower_tree());
        Changes changes(seed);
        changes.run(*overlay, static_cast<int>(seed % 7) * 5);  // what the checkpoint holds
        auto checkpoint = overlay->checkpoint();
        ASSERT_TRUE(checkpoint.has_value());
        const auto at_checkpoint = capture(*overlay);
        ASSERT_TRUE(at_checkpoint.has_value());
        changes.run(*overlay, 20);
        auto middle = overlay->snapshot();  // a snapshot taken since reads on as it did
        ASSERT_TRUE(middle.has_value());
        const auto at_middle = capture(*overlay);
        changes.run(*overlay, 20);
        ASSERT_TRUE(overlay->rollback(*checkpoint).has_value());
        EXPECT_EQ(diff(*at_checkpoint, *capture(*overlay)), "");
        EXPECT_EQ(diff(*at_middle, *capture(**middle)), "");
        // Usable after, and again to the same checkpoint.
        changes.run(*overlay, 20);
        ASSERT_TRUE(overlay->rollback(*checkpoint).has_value());
        EXPECT_EQ(diff(*at_checkpoint, *capture(*overlay)), "");
    }
}

TEST(OverlayRollback, HeldNodesOfInodesThatExistedGoOnAndThoseMadeSinceAreUnnamed) {
    auto overlay = overlay_over(lower_tree());
    ASSERT_TRUE(write_file(*overlay, "/own", "own before").has_value());
    auto checkpoint = overlay->checkpoint();
    ASSERT_TRUE(checkpoint.has_value());
    const uint64_t first_new = overlay->inode_numbering().limit;

    // Held across: a lower file (copied up since, then removed), the tree's own file
    // (rewritten), a file and a directory made since (with a name inside).
    auto d = overlay->lookup(kRootNode, "d");
    ASSERT_TRUE(d.has_value());
    auto lower_a = overlay->lookup(d->node, "a");
    ASSERT_TRUE(lower_a.has_value());
    auto own = overlay->open("/own", O_RDWR, 0);
    ASSERT_TRUE(own.has_value());
    ASSERT_TRUE(write_file(*overlay, "/d/a", "copied up and changed").has_value());
    ASSERT_TRUE(overlay->unlink("/d/a").has_value());
    ASSERT_TRUE((*own)->pwrite(std::as_bytes(std::span("OWN", 3)), 0).has_value());
    ASSERT_TRUE(overlay->mkdir("/made", 0755).has_value());
    ASSERT_TRUE(write_file(*overlay, "/made/inside", "inside").has_value());
    auto made_dir = overlay->lookup(kRootNode, "made");
    ASSERT_TRUE(made_dir.has_value());
    auto made_file = overlay->open("/new", O_CREAT | O_RDWR, 0644);
    ASSERT_TRUE(made_file.has_value());
    ASSERT_TRUE((*made_file)->pwrite(std::as_bytes(std::span("new bytes", 9)), 0).has_value());
    const uint64_t made_ino = (*(*made_file)->fstat()).ino;

    ASSERT_TRUE(overlay->rollback(*checkpoint).has_value());

    // What existed reads as it did, through the same references.
    auto st = overlay->getattr(lower_a->node);
    ASSERT_TRUE(st.has_value()) << st.error().message();
    EXPECT_EQ(st->nlink, 2u);  // /d/a and /d/a2 again
    EXPECT_EQ(*read_file(*overlay, "/d/a"), "lower a");
    std::string buf(10, '\0');
    auto n = (*own)->pread(std::as_writable_bytes(std::span(buf)), 0);
    ASSERT_TRUE(n.has_value());
    EXPECT_EQ(buf.substr(0, *n), "own before");
    ASSERT_TRUE((*own)->pwrite(std::as_bytes(std::span("OWN", 3)), 0).has_value());
    EXPECT_EQ(*read_file(*overlay, "/own"), "OWN before");

    // What was made since has no name; the open file still reads its bytes.
    EXPECT_FALSE(overlay->stat("/new").has_value());
    EXPECT_FALSE(overlay->stat("/made").has_value());
    auto made_st = (*made_file)->fstat();
    ASSERT_TRUE(made_st.has_value());
    EXPECT_EQ(made_st->nlink, 0u);
    n = (*made_file)->pread(std::as_writable_bytes(std::span(buf)), 0);
    ASSERT_TRUE(n.has_value());
    EXPECT_EQ(buf.substr(0, *n), "new bytes");
    auto dir_st = overlay->getattr(made_dir->node);
    ASSERT_TRUE(dir_st.has_value());
    EXPECT_EQ(dir_st->nlink, 0u);
    auto listed = overlay->list(made_dir->node);
    EXPECT_TRUE(!listed || listed->empty());
    EXPECT_FALSE(overlay->create(made_dir->node, "x", O_CREAT | O_WRONLY, 0644, std::nullopt))
        << "a removed directory took a name";

    // Numbers are not given again.
    ASSERT_TRUE(write_file(*overlay, "/after", "after").has_value());
    auto after = overlay->stat("/after");
    ASSERT_TRUE(after.has_value());
    EXPECT_GT(after->ino, made_ino);
    EXPECT_GE(made_ino, first_new);
    made_file->reset();
    own->reset();
    overlay->forget(made_dir->node, 1);
    overlay->forget(lower_a->node, 1);
    overlay->forget(d->node, 1);
}

TEST(OverlayRollback, RefusedAcrossARebaseAndForAnEmptyCheckpoint) {
    test_support::TempDir dir;
    auto overlay = overlay_over(lower_tree());
    EXPECT_FALSE(overlay->rollback(Overlay::Checkpoint{}).has_value());
    auto checkpoint = overlay->checkpoint();
    ASSERT_TRUE(checkpoint.has_value());
    ASSERT_TRUE(write_file(*overlay, "/x", "x").has_value());
    auto frozen = overlay->freeze();
    ASSERT_TRUE(frozen.has_value());
    PackWriteOptions options;
    options.keep_inode_numbers = true;
    options.times = PackTimes::all;
    const std::string path = (dir.path / "pack").string();
    ASSERT_TRUE(write_pack(*frozen->tree, path, options).has_value());
    frozen->tree.reset();
    auto pack = open_pack(path);
    ASSERT_TRUE(pack.has_value());
    *checkpoint = Overlay::Checkpoint{};  // released (held, it would keep the old lower)
    auto before = overlay->checkpoint();
    ASSERT_TRUE(before.has_value());
    ASSERT_TRUE(overlay->rebase(*pack, frozen->generation).has_value());
    auto refused = overlay->rollback(*before);
    ASSERT_FALSE(refused.has_value());
    EXPECT_EQ(refused.error().code(), EINVAL);
    EXPECT_EQ(*read_file(*overlay, "/x"), "x");
}

}  // namespace
}  // namespace packfs
