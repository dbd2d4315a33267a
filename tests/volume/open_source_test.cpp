// packfs::open_source: each kind of SOURCE opened as the CLI, Python and C open it, and the
// errors a wrong one gets.
#include "packfs/source.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "packfs/mem.hpp"
#include "support/files.hpp"

namespace packfs {
namespace {

using test_support::TempDir;

// A host directory holding "hello.txt" ("hi"), a pack of it and a volume made from it.
struct Sources {
    TempDir tmp;
    std::string dir = tmp.path / "dir";
    std::string pack = tmp.path / "p.pack";
    std::string volume = tmp.path / "vol";
    Sources() {
        std::filesystem::create_directory(dir);
        std::ofstream(dir + "/hello.txt") << "hi";
        EXPECT_TRUE(write_pack_from_host(dir, pack).has_value());
        VolumeInit init;
        init.from_dir = dir;
        EXPECT_TRUE(Volume::create(volume, init).has_value());
    }
};

SourceOptions writable() {
    SourceOptions o;
    o.writable = true;
    return o;
}

std::string read_hello(Backend& fs) {
    auto st = fs.stat("/hello.txt");
    if (!st) return "stat failed: " + st.error().message();
    auto file = fs.open("/hello.txt", O_RDONLY);
    if (!file) return "open failed";
    std::string out(st->size, '\0');
    auto n = (*file)->pread(std::as_writable_bytes(std::span(out)), 0);
    return n ? out.substr(0, *n) : "read failed";
}

TEST(OpenSource, EachKindOpensWithItsInterface) {
    Sources s;
    auto pack = open_source(s.pack);
    ASSERT_TRUE(pack) << pack.error().message();
    EXPECT_EQ(pack->kind, SourceKind::pack);
    EXPECT_NE(pack->pack, nullptr);
    EXPECT_EQ(pack->volume, nullptr);
    EXPECT_EQ(read_hello(*pack->backend), "hi");

    auto volume = open_source(s.volume);
    ASSERT_TRUE(volume) << volume.error().message();
    EXPECT_EQ(volume->kind, SourceKind::volume);
    EXPECT_NE(volume->volume, nullptr);
    EXPECT_EQ(volume->pack, nullptr);
    EXPECT_TRUE(volume->backend->read_only());
    EXPECT_EQ(read_hello(*volume->backend), "hi");

    auto dir = open_source(s.dir);
    ASSERT_TRUE(dir) << dir.error().message();
    EXPECT_EQ(dir->kind, SourceKind::directory);
    EXPECT_TRUE(dir->backend->read_only());
    EXPECT_EQ(read_hello(*dir->backend), "hi");
}

TEST(OpenSource, WritableOpensVolumesAndDirectoriesForChanges) {
    Sources s;
    auto volume = open_source(s.volume, writable());
    ASSERT_TRUE(volume) << volume.error().message();
    EXPECT_FALSE(volume->backend->read_only());
    ASSERT_TRUE(volume->backend->mkdir("/made", 0755));
    ASSERT_TRUE(volume->volume->sync());
    volume = open_source(s.dir, writable());
    ASSERT_TRUE(volume) << volume.error().message();
    ASSERT_TRUE(volume->backend->mkdir("/made", 0755));
    EXPECT_TRUE(std::filesystem::is_directory(s.dir + "/made"));
}

TEST(OpenSource, APackIsNeverWritable) {
    Sources s;
    auto pack = open_source(s.pack, writable());
    ASSERT_FALSE(pack);
    EXPECT_EQ(pack.error().code(), EROFS);
}

TEST(OpenSource, WrongSourcesSayWhy) {
    Sources s;
    auto missing = open_source((s.tmp.path / "nothing").string());
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().code(), ENOENT);
    EXPECT_FALSE(open_source(""));

    const std::string fifo = s.tmp.path / "fifo";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    auto kind = source_kind(fifo);
    ASSERT_FALSE(kind);
    EXPECT_EQ(kind.error().code(), EINVAL);
    EXPECT_EQ(kind.error().op(), kSourceKindOp);

    const std::string junk = s.tmp.path / "junk";
    std::ofstream(junk) << "not a pack";
    auto not_pack = open_source(junk);
    ASSERT_FALSE(not_pack);  // a regular file is taken as a pack, and this one is refused
}

}  // namespace
}  // namespace packfs
