// Metadata (DESIGN §4): mode, owner, sizes, and atime/mtime/ctime with nanoseconds, updated
// as POSIX says.
#include "conformance/conformance_suite.hpp"

namespace packfs::conformance {

namespace {

::testing::AssertionResult IsAfter(const Time& later, const Time& earlier) {
    if (later > earlier) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << later.sec << "." << later.nsec << " is not after "
                                         << earlier.sec << "." << earlier.nsec;
}

// Within a second of [lo, hi]: a kernel stamps times from a coarse clock.
::testing::AssertionResult IsAround(const Time& t, const Time& lo, const Time& hi) {
    if (t.sec >= lo.sec - 1 && t.sec <= hi.sec + 1) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << t.sec << " is not within [" << lo.sec << ", " << hi.sec << "]";
}

}  // namespace

TEST_P(MetadataTimes, ChmodSetsPermissionBitsExactly) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x"));
    PACKFS_ASSERT_OK(fs().mkdir("/d"));
    for (uint32_t mode : {0u, 0400u, 0755u, 0777u, 01777u, 04755u, 02750u}) {
        PACKFS_EXPECT_OK(fs().chmod("/f", mode));
        auto st = fs().stat("/f");
        PACKFS_ASSERT_OK(st);
        EXPECT_EQ(st->mode, mode) << std::oct << mode;
        EXPECT_EQ(st->type, FileType::regular);
        PACKFS_EXPECT_OK(fs().chmod("/d", mode));
        auto d = fs().stat("/d");
        PACKFS_ASSERT_OK(d);
        EXPECT_EQ(d->mode, mode) << std::oct << mode;
        EXPECT_EQ(d->type, FileType::directory);
    }
    PACKFS_EXPECT_ERRNO(fs().chmod("/missing", 0644), ENOENT);
}

TEST_P(MetadataTimes, ChmodThroughSymlinkChangesTarget) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x", 0644));
    PACKFS_ASSERT_OK(fs().symlink("f", "/l"));
    auto link_before = fs().lstat("/l");
    PACKFS_ASSERT_OK(link_before);
    PACKFS_EXPECT_FOLLOWS(fs().chmod("/l", 0600), caps(), Via::relative);
    auto f = fs().stat("/f");
    PACKFS_ASSERT_OK(f);
    EXPECT_EQ(f->mode, follows_via(caps(), Via::relative) ? 0600u : 0644u);
    auto link_after = fs().lstat("/l");
    PACKFS_ASSERT_OK(link_after);
    EXPECT_EQ(link_after->mode, link_before->mode);
}

TEST_P(MetadataTimes, ChmodChangesCtimeOnly) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x"));
    auto before = fs().stat("/f");
    PACKFS_ASSERT_OK(before);
    let_clock_tick();
    PACKFS_ASSERT_OK(fs().chmod("/f", 0600));
    auto after = fs().stat("/f");
    PACKFS_ASSERT_OK(after);
    EXPECT_TRUE(IsAfter(after->ctime, before->ctime)) << "ctime";
    EXPECT_EQ(after->mtime, before->mtime);
}

TEST_P(MetadataTimes, ChownSetsOwnerAndGroup) {
    if (!caps().chown) GTEST_SKIP() << "chown to arbitrary ids needs root on this backend";
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x"));
    PACKFS_ASSERT_OK(fs().chown("/f", 1234, 5678));
    auto st = fs().stat("/f");
    PACKFS_ASSERT_OK(st);
    EXPECT_EQ(st->uid, 1234u);
    EXPECT_EQ(st->gid, 5678u);
    // (uint32_t)-1 leaves an id unchanged, as chown(2)'s -1 does.
    PACKFS_ASSERT_OK(fs().chown("/f", 4321, static_cast<uint32_t>(-1)));
    st = fs().stat("/f");
    PACKFS_ASSERT_OK(st);
    EXPECT_EQ(st->uid, 4321u);
    EXPECT_EQ(st->gid, 5678u);
    PACKFS_EXPECT_ERRNO(fs().chown("/missing", 1, 1), ENOENT);
}

TEST_P(MetadataTimes, ChownFollowsOrNotAsAsked) {
    if (!caps().chown) GTEST_SKIP() << "chown to arbitrary ids needs root on this backend";
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x"));
    PACKFS_ASSERT_OK(fs().symlink("f", "/l"));
    PACKFS_ASSERT_OK(fs().chown("/l", 100, 200, Follow::no));
    auto link = fs().lstat("/l");
    auto target = fs().stat("/f");
    PACKFS_ASSERT_OK(link);
    PACKFS_ASSERT_OK(target);
    EXPECT_EQ(link->uid, 100u);
    EXPECT_EQ(link->gid, 200u);
    EXPECT_NE(target->uid, 100u);
    const bool follows = follows_via(caps(), Via::relative);
    const uint32_t uid = follows ? 300 : target->uid, gid = follows ? 400 : target->gid;
    PACKFS_EXPECT_FOLLOWS(fs().chown("/l", 300, 400, Follow::yes), caps(), Via::relative);
    target = fs().stat("/f");
    link = fs().lstat("/l");
    PACKFS_ASSERT_OK(target);
    PACKFS_ASSERT_OK(link);
    EXPECT_EQ(target->uid, uid);
    EXPECT_EQ(target->gid, gid);
    EXPECT_EQ(link->uid, 100u);
}

TEST_P(MetadataTimes, ChownChangesCtime) {
    if (!caps().chown) GTEST_SKIP() << "chown to arbitrary ids needs root on this backend";
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x"));
    auto before = fs().stat("/f");
    PACKFS_ASSERT_OK(before);
    let_clock_tick();
    PACKFS_ASSERT_OK(fs().chown("/f", 7, 7));
    auto after = fs().stat("/f");
    PACKFS_ASSERT_OK(after);
    EXPECT_TRUE(IsAfter(after->ctime, before->ctime));
}

TEST_P(MetadataTimes, NewFileTimesAreNow) {
    Time lo = Time::now();
    PACKFS_ASSERT_OK(write_file(fs(), "/f", ""));
    Time hi = Time::now();
    auto st = fs().stat("/f");
    PACKFS_ASSERT_OK(st);
    EXPECT_TRUE(IsAround(st->mtime, lo, hi)) << "mtime";
    EXPECT_TRUE(IsAround(st->ctime, lo, hi)) << "ctime";
    EXPECT_TRUE(IsAround(st->atime, lo, hi)) << "atime";
}

TEST_P(MetadataTimes, WriteChangesMtimeAndCtime) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x"));
    auto f = fs().open("/f", O_RDWR);
    PACKFS_ASSERT_OK(f);
    auto before = fs().stat("/f");
    PACKFS_ASSERT_OK(before);
    let_clock_tick();
    PACKFS_ASSERT_OK(pwrite_string(**f, "more", 1));
    auto after = fs().stat("/f");
    PACKFS_ASSERT_OK(after);
    EXPECT_TRUE(IsAfter(after->mtime, before->mtime)) << "mtime";
    EXPECT_TRUE(IsAfter(after->ctime, before->ctime)) << "ctime";
}

TEST_P(MetadataTimes, TruncateChangesMtimeAndCtime) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "0123456789"));
    auto before = fs().stat("/f");
    PACKFS_ASSERT_OK(before);
    let_clock_tick();
    PACKFS_ASSERT_OK(fs().truncate("/f", 4));
    auto mid = fs().stat("/f");
    PACKFS_ASSERT_OK(mid);
    EXPECT_TRUE(IsAfter(mid->mtime, before->mtime)) << "mtime after path truncate";
    EXPECT_TRUE(IsAfter(mid->ctime, before->ctime)) << "ctime after path truncate";
    auto f = fs().open("/f", O_RDWR);
    PACKFS_ASSERT_OK(f);
    let_clock_tick();
    PACKFS_ASSERT_OK((*f)->truncate(100));
    auto after = fs().stat("/f");
    PACKFS_ASSERT_OK(after);
    EXPECT_TRUE(IsAfter(after->mtime, mid->mtime)) << "mtime after handle truncate";
    EXPECT_TRUE(IsAfter(after->ctime, mid->ctime)) << "ctime after handle truncate";
}

TEST_P(MetadataTimes, OpenWithTruncChangesMtime) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "0123456789"));
    auto before = fs().stat("/f");
    PACKFS_ASSERT_OK(before);
    let_clock_tick();
    PACKFS_ASSERT_OK(fs().open("/f", O_WRONLY | O_TRUNC));
    auto after = fs().stat("/f");
    PACKFS_ASSERT_OK(after);
    EXPECT_TRUE(IsAfter(after->mtime, before->mtime));
}

TEST_P(MetadataTimes, ReadDoesNotChangeMtimeOrCtime) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "content"));
    auto before = fs().stat("/f");
    PACKFS_ASSERT_OK(before);
    let_clock_tick();
    PACKFS_ASSERT_OK(read_file(fs(), "/f"));
    auto after = fs().stat("/f");
    PACKFS_ASSERT_OK(after);
    EXPECT_EQ(after->mtime, before->mtime);
    EXPECT_EQ(after->ctime, before->ctime);
}

TEST_P(MetadataTimes, CreateAndUnlinkChangeDirectoryMtime) {
    PACKFS_ASSERT_OK(fs().mkdir("/d"));
    auto t0 = fs().stat("/d");
    PACKFS_ASSERT_OK(t0);
    let_clock_tick();
    PACKFS_ASSERT_OK(write_file(fs(), "/d/f", "x"));
    auto t1 = fs().stat("/d");
    PACKFS_ASSERT_OK(t1);
    EXPECT_TRUE(IsAfter(t1->mtime, t0->mtime)) << "after create";
    EXPECT_TRUE(IsAfter(t1->ctime, t0->ctime)) << "after create";
    let_clock_tick();
    PACKFS_ASSERT_OK(fs().unlink("/d/f"));
    auto t2 = fs().stat("/d");
    PACKFS_ASSERT_OK(t2);
    EXPECT_TRUE(IsAfter(t2->mtime, t1->mtime)) << "after unlink";
    let_clock_tick();
    PACKFS_ASSERT_OK(fs().mkdir("/d/sub"));
    auto t3 = fs().stat("/d");
    PACKFS_ASSERT_OK(t3);
    EXPECT_TRUE(IsAfter(t3->mtime, t2->mtime)) << "after mkdir";
    let_clock_tick();
    PACKFS_ASSERT_OK(fs().rmdir("/d/sub"));
    auto t4 = fs().stat("/d");
    PACKFS_ASSERT_OK(t4);
    EXPECT_TRUE(IsAfter(t4->mtime, t3->mtime)) << "after rmdir";
}

TEST_P(MetadataTimes, RenameChangesBothDirectoriesMtime) {
    PACKFS_ASSERT_OK(fs().mkdir("/a"));
    PACKFS_ASSERT_OK(fs().mkdir("/b"));
    PACKFS_ASSERT_OK(write_file(fs(), "/a/f", "x"));
    auto a0 = fs().stat("/a");
    auto b0 = fs().stat("/b");
    PACKFS_ASSERT_OK(a0);
    PACKFS_ASSERT_OK(b0);
    let_clock_tick();
    PACKFS_ASSERT_OK(fs().rename("/a/f", "/b/f"));
    auto a1 = fs().stat("/a");
    auto b1 = fs().stat("/b");
    PACKFS_ASSERT_OK(a1);
    PACKFS_ASSERT_OK(b1);
    EXPECT_TRUE(IsAfter(a1->mtime, a0->mtime)) << "source directory";
    EXPECT_TRUE(IsAfter(b1->mtime, b0->mtime)) << "target directory";
}

TEST_P(MetadataTimes, LinkAndUnlinkChangeCtimeOfTheFile) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x"));
    auto t0 = fs().stat("/f");
    PACKFS_ASSERT_OK(t0);
    let_clock_tick();
    PACKFS_ASSERT_OK(fs().link("/f", "/g"));
    auto t1 = fs().stat("/f");
    PACKFS_ASSERT_OK(t1);
    EXPECT_TRUE(IsAfter(t1->ctime, t0->ctime)) << "after link";
    EXPECT_EQ(t1->mtime, t0->mtime);
    let_clock_tick();
    PACKFS_ASSERT_OK(fs().unlink("/g"));
    auto t2 = fs().stat("/f");
    PACKFS_ASSERT_OK(t2);
    EXPECT_TRUE(IsAfter(t2->ctime, t1->ctime)) << "after unlink of the other name";
}

TEST_P(MetadataTimes, UtimensRoundTripsNanosecondsExactly) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x"));
    const Time atime{1111111111, 123456789};
    const Time mtime{1500000000, 999999999};
    PACKFS_ASSERT_OK(fs().utimens("/f", TimeUpdate::at(atime), TimeUpdate::at(mtime)));
    auto st = fs().stat("/f");
    PACKFS_ASSERT_OK(st);
    EXPECT_EQ(st->atime, atime);
    EXPECT_EQ(st->mtime, mtime);
    const Time epoch{0, 0};
    const Time one_ns{0, 1};
    PACKFS_ASSERT_OK(fs().utimens("/f", TimeUpdate::at(epoch), TimeUpdate::at(one_ns)));
    st = fs().stat("/f");
    PACKFS_ASSERT_OK(st);
    EXPECT_EQ(st->atime, epoch);
    EXPECT_EQ(st->mtime, one_ns);
}

TEST_P(MetadataTimes, UtimensOmitLeavesTimeUnchanged) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x"));
    const Time a{1000000000, 5};
    const Time m{1200000000, 7};
    PACKFS_ASSERT_OK(fs().utimens("/f", TimeUpdate::at(a), TimeUpdate::at(m)));
    PACKFS_ASSERT_OK(fs().utimens("/f", TimeUpdate::omit(), TimeUpdate::at(Time{1300000000, 9})));
    auto st = fs().stat("/f");
    PACKFS_ASSERT_OK(st);
    EXPECT_EQ(st->atime, a);
    EXPECT_EQ(st->mtime, (Time{1300000000, 9}));
    PACKFS_ASSERT_OK(fs().utimens("/f", TimeUpdate::at(Time{1400000000, 11}), TimeUpdate::omit()));
    st = fs().stat("/f");
    PACKFS_ASSERT_OK(st);
    EXPECT_EQ(st->atime, (Time{1400000000, 11}));
    EXPECT_EQ(st->mtime, (Time{1300000000, 9}));
}

TEST_P(MetadataTimes, UtimensNowSetsCurrentTime) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x"));
    PACKFS_ASSERT_OK(fs().utimens("/f", TimeUpdate::at(Time{1, 0}), TimeUpdate::at(Time{2, 0})));
    Time lo = Time::now();
    PACKFS_ASSERT_OK(fs().utimens("/f", TimeUpdate::now(), TimeUpdate::now()));
    Time hi = Time::now();
    auto st = fs().stat("/f");
    PACKFS_ASSERT_OK(st);
    EXPECT_TRUE(IsAround(st->atime, lo, hi)) << "atime";
    EXPECT_TRUE(IsAround(st->mtime, lo, hi)) << "mtime";
    PACKFS_ASSERT_OK(fs().utimens("/f", TimeUpdate::omit(), TimeUpdate::at(Time{2, 0})));
    PACKFS_ASSERT_OK(fs().utimens("/f", TimeUpdate::omit(), TimeUpdate::now()));
    st = fs().stat("/f");
    PACKFS_ASSERT_OK(st);
    EXPECT_TRUE(IsAround(st->mtime, lo, Time::now())) << "mtime, atime omitted";
}

TEST_P(MetadataTimes, UtimensChangesCtimeToNow) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x"));
    auto before = fs().stat("/f");
    PACKFS_ASSERT_OK(before);
    let_clock_tick();
    PACKFS_ASSERT_OK(fs().utimens("/f", TimeUpdate::at(Time{5, 5}), TimeUpdate::at(Time{6, 6})));
    auto after = fs().stat("/f");
    PACKFS_ASSERT_OK(after);
    EXPECT_TRUE(IsAfter(after->ctime, before->ctime));
}

TEST_P(MetadataTimes, UtimensOnSymlinkFollowsOrNotAsAsked) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x"));
    PACKFS_ASSERT_OK(fs().symlink("f", "/l"));
    const Time t{1300000000, 42};
    PACKFS_ASSERT_OK(fs().utimens("/l", TimeUpdate::at(t), TimeUpdate::at(t), Follow::no));
    auto link = fs().lstat("/l");
    auto target = fs().stat("/f");
    PACKFS_ASSERT_OK(link);
    PACKFS_ASSERT_OK(target);
    EXPECT_EQ(link->mtime, t);
    EXPECT_NE(target->mtime, t);
    const Time u{1310000000, 43};
    const bool follows = follows_via(caps(), Via::relative);
    const Time mtime = follows ? u : target->mtime, atime = follows ? u : target->atime;
    PACKFS_EXPECT_FOLLOWS(fs().utimens("/l", TimeUpdate::at(u), TimeUpdate::at(u), Follow::yes),
                          caps(), Via::relative);
    target = fs().stat("/f");
    link = fs().lstat("/l");
    PACKFS_ASSERT_OK(target);
    PACKFS_ASSERT_OK(link);
    EXPECT_EQ(target->mtime, mtime);
    EXPECT_EQ(target->atime, atime);
    EXPECT_EQ(link->mtime, t);
}

TEST_P(MetadataTimes, UtimensOfMissingIsNotFound) {
    PACKFS_EXPECT_ERRNO(fs().utimens("/missing", TimeUpdate::now(), TimeUpdate::now()), ENOENT);
}

TEST_P(MetadataTimes, SymlinkSizeIsTargetLength) {
    const std::string target(300, 't');
    PACKFS_ASSERT_OK(fs().symlink(target, "/l"));
    PACKFS_ASSERT_OK(fs().symlink("/a/b", "/m"));
    auto l = fs().lstat("/l");
    auto m = fs().lstat("/m");
    PACKFS_ASSERT_OK(l);
    PACKFS_ASSERT_OK(m);
    EXPECT_EQ(l->size, 300u);
    EXPECT_EQ(m->size, 4u);
    EXPECT_EQ(l->nlink, 1u);
}

TEST_P(MetadataTimes, FileSizeFollowsContent) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", std::string(12345, 'x')));
    auto st = fs().stat("/f");
    PACKFS_ASSERT_OK(st);
    EXPECT_EQ(st->size, 12345u);
    EXPECT_EQ(st->nlink, 1u);
    EXPECT_EQ(st->type, FileType::regular);
}

}  // namespace packfs::conformance
