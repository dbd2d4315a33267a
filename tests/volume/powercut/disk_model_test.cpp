// The power-cut test's own parts, on small logs whose states can be listed by hand: the
// recorder in core/io.hpp (what it reports, and that a refused call reports nothing) and the
// disk model (durable content, unsynced and torn writes, names committed by a directory fsync).
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <set>

#include "core/io.hpp"
#include "support/files.hpp"
#include "volume/powercut/disk_log.hpp"
#include "volume/powercut/disk_model.hpp"

namespace packfs::powercut {
namespace {

using io::IoEventKind;
using test_support::TempDir;

std::span<const std::byte> bytes(std::string_view s) { return std::as_bytes(std::span(s.data(), s.size())); }

TEST(IoRecorder, SeesEveryCallThatChangesTheDirectoryInOrder) {
    TempDir dir;
    const std::string base = dir.path.string();
    DiskRecorder recorder(base);
    {
        auto fd = io::create_file(base + "/a", O_WRONLY | O_CREAT | O_EXCL, 0644, "a");
        ASSERT_TRUE(fd.has_value());
        ASSERT_TRUE(io::pwrite_all(fd->get(), bytes("hello"), 10, "a"));
        ASSERT_TRUE(io::write_all(fd->get(), bytes("xy"), "a"));  // at the position: 0
        ASSERT_TRUE(io::ftruncate(fd->get(), 12, "a"));
        ASSERT_TRUE(io::fdatasync(fd->get(), "a"));
        ASSERT_TRUE(io::fsync(fd->get(), "a"));
    }
    {  // O_TRUNC of a file that is there: a truncation, not a creation
        auto fd = io::create_file(base + "/a", O_WRONLY | O_CREAT | O_TRUNC, 0644, "a");
        ASSERT_TRUE(fd.has_value());
    }
    ASSERT_TRUE(io::rename(base + "/a", base + "/b", "a"));
    ASSERT_TRUE(io::fsync_dir(base, "dir"));
    ASSERT_TRUE(io::unlink(base + "/b", "b"));
    EXPECT_FALSE(io::unlink(base + "/b", "b"));  // failed: not recorded
    {
        io::set_fault_hook([](io::IoOp, std::string_view) { return EIO; });
        EXPECT_FALSE(io::fsync_dir(base, "dir"));  // refused: not recorded
        io::set_fault_hook({});
    }
    ASSERT_TRUE(recorder.problems().empty());
    const auto ops = recorder.stop();
    ASSERT_TRUE(io::fsync_dir(base, "dir"));  // after stop(): not recorded

    std::vector<std::string> seen;
    for (const auto& op : ops) seen.push_back(describe(op));
    EXPECT_EQ(seen, (std::vector<std::string>{"create a", "write a @10 +5", "write a @0 +2",
                                              "ftruncate a to 12", "fdatasync a", "fsync a",
                                              "ftruncate a to 0", "rename a -> b", "fsync_dir",
                                              "unlink b"}));
    ASSERT_EQ(ops.size(), 10u);
    EXPECT_EQ(ops[1].data, "hello");
    EXPECT_NE(ops[0].ino, 0u);
    EXPECT_EQ(ops[0].ino, ops[5].ino);  // the same file throughout
    EXPECT_TRUE(ops[4].data_only);
    EXPECT_FALSE(ops[5].data_only);
}

TEST(IoRecorder, AShortWriteRecordsTheBytesItWrote) {
    TempDir dir;
    const std::string base = dir.path.string();
    auto fd = io::create_file(base + "/a", O_WRONLY | O_CREAT, 0644, "a");
    ASSERT_TRUE(fd.has_value());
    DiskRecorder recorder(base);
    io::set_fault_hook([](io::IoOp op, std::string_view) { return op == io::IoOp::write ? io::kShortWrite : 0; });
    EXPECT_FALSE(io::pwrite_all(fd->get(), bytes("0123456789"), 0, "a"));
    io::set_fault_hook({});
    const auto ops = recorder.stop();
    ASSERT_EQ(ops.size(), 1u);
    EXPECT_EQ(ops[0].data, "01234");
}

TEST(IoRecorder, FilesElsewhereAreLeftOutAndASubdirectoryIsAProblem) {
    TempDir dir, other;
    const std::string base = dir.path.string();
    ASSERT_EQ(::mkdir((base + "/sub").c_str(), 0755), 0);
    DiskRecorder recorder(base);
    ASSERT_TRUE(io::create_file(other.path.string() + "/x", O_WRONLY | O_CREAT, 0644, "x"));
    ASSERT_TRUE(io::fsync_dir(other.path.string(), "other"));
    EXPECT_TRUE(recorder.problems().empty());
    ASSERT_TRUE(io::create_file(base + "/sub/y", O_WRONLY | O_CREAT, 0644, "y"));
    EXPECT_EQ(recorder.problems().size(), 1u);
    EXPECT_TRUE(recorder.stop().empty());
}

// ---- the model, on hand-made logs ----------------------------------------------------------

DiskOp op(IoEventKind kind, std::string name, uint64_t ino) {
    DiskOp o;
    o.kind = kind;
    o.name = std::move(name);
    o.ino = ino;
    return o;
}
DiskOp create(std::string name, uint64_t ino) { return op(IoEventKind::create, std::move(name), ino); }
DiskOp write(uint64_t ino, uint64_t offset, std::string data) {
    DiskOp o = op(IoEventKind::write, "f", ino);
    o.offset = offset;
    o.data = std::move(data);
    return o;
}
DiskOp fsync(uint64_t ino) { return op(IoEventKind::fsync, "f", ino); }
DiskOp fsync_dir() { return op(IoEventKind::fsync_dir, "", 0); }
DiskOp rename(std::string from, std::string to) {
    DiskOp o = op(IoEventKind::rename, std::move(from), 0);
    o.to = std::move(to);
    return o;
}

std::set<DiskImage> images(const DiskModel& model, std::size_t cut) {
    std::set<DiskImage> out;
    for (const auto& state : model.systematic(cut)) out.insert(model.image(state));
    return out;
}

TEST(DiskModel, AFileHoldsItsSyncedContentPlusAnySubsetOfItsUnsyncedWrites) {
    const DiskModel model({create("f", 7), fsync_dir(), write(7, 0, "AAAA"), fsync(7),
                           write(7, 4, "BB"), write(7, 0, "C")});
    EXPECT_TRUE(model.problems().empty());
    EXPECT_FALSE(model.open_at(2));  // the name is committed, nothing written yet
    EXPECT_EQ(images(model, 2), (std::set<DiskImage>{{{"f", ""}}}));
    EXPECT_EQ(images(model, 4), (std::set<DiskImage>{{{"f", "AAAA"}}}));
    // Two unsynced writes of one sector each: each kept or not, in either order, and a write
    // whose sector did not make it may still have grown the file.
    using namespace std::string_literals;
    const auto after = images(model, 6);
    for (const std::string& content : {"AAAA"s, "AAAABB"s, "CAAA"s, "CAAABB"s, "AAAA\0\0"s})
        EXPECT_TRUE(after.contains(DiskImage{{"f", content}})) << content;
    EXPECT_FALSE(after.contains(DiskImage{{"f", "CAAB"}}));
}

TEST(DiskModel, ATornWriteKeepsSomeOfItsSectors) {
    const std::string data(3 * kSectorBytes, 'x');
    const DiskModel model({create("f", 1), fsync(1), fsync_dir(), write(1, 0, data)});
    std::set<std::size_t> sizes;
    bool first_sector_only = false, last_two_only = false;
    for (const auto& image : images(model, 4)) {
        const std::string& f = image.at("f");
        sizes.insert(f.size());
        if (f.size() == data.size() && f.substr(0, kSectorBytes) == std::string(kSectorBytes, 'x') &&
            f.substr(kSectorBytes) == std::string(2 * kSectorBytes, '\0'))
            first_sector_only = true;
        if (f.size() == data.size() && f.substr(0, kSectorBytes) == std::string(kSectorBytes, '\0') &&
            f.substr(kSectorBytes) == std::string(2 * kSectorBytes, 'x'))
            last_two_only = true;
    }
    EXPECT_EQ(sizes, (std::set<std::size_t>{0, data.size()}));
    EXPECT_TRUE(first_sector_only);
    EXPECT_TRUE(last_two_only);
}

TEST(DiskModel, NamesAreAPrefixOfTheOperationsSinceTheLastDirectoryFsync) {
    // A file written and fsynced, then renamed: the rename is not durable until the
    // directory's fsync, and the file's own fsync did not make its name durable either.
    const DiskModel model({create("tmp", 3), write(3, 0, "data"), fsync(3), rename("tmp", "final"),
                           create("other", 4), fsync_dir()});
    const auto before = images(model, 5);
    EXPECT_TRUE(before.contains(DiskImage{}));                               // nothing named yet
    EXPECT_TRUE(before.contains(DiskImage{{"tmp", "data"}}));                // the create only
    EXPECT_TRUE(before.contains(DiskImage{{"final", "data"}}));              // and the rename
    EXPECT_TRUE(before.contains(DiskImage{{"final", "data"}, {"other", ""}}));
    EXPECT_FALSE(before.contains(DiskImage{{"other", ""}}));  // never out of order
    EXPECT_EQ(images(model, 6), (std::set<DiskImage>{{{"final", "data"}, {"other", ""}}}));
}

TEST(DiskModel, RandomStatesStayWithinTheModel) {
    const DiskModel model({create("f", 1), fsync_dir(), write(1, 0, std::string(2000, 'a')),
                           write(1, 2000, std::string(100, 'b')), create("g", 2)});
    volume_test::Rng rng(5);
    for (int i = 0; i < 200; ++i) {
        const auto image = model.image(model.random(5, rng));
        ASSERT_TRUE(image.contains("f"));
        const std::string& f = image.at("f");
        EXPECT_TRUE(f.size() == 0 || f.size() == 2000 || f.size() == 2100) << f.size();
        for (char c : f) ASSERT_TRUE(c == 'a' || c == 'b' || c == '\0');
    }
}

}  // namespace
}  // namespace packfs::powercut
