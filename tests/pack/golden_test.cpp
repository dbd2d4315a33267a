// Compatibility: small packs written by earlier versions, checked in under tests/pack/golden/
// with their SHA-256 pinned here. Every later reader must still read each one and find
// exactly the tree recorded beside it (<name>.expected, made from the source tree when the
// pack was written, not by the reader). A format change adds new goldens, never rewrites old
// ones: the pinned digests make an accidental rewrite fail.
//
// To add goldens for a new format version: PACKFS_WRITE_GOLDENS=<dir> ./pack_golden_test
// writes them (and their .expected) into <dir>; check them in and pin their digests below.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "support/files.hpp"
#include "pack/digest.hpp"
#include "packfs/mem.hpp"
#include "packfs/pack.hpp"
#include "packfs/path.hpp"

namespace packfs {
namespace {

namespace fs = std::filesystem;
using test_support::slurp;

struct Golden {
    const char* file;
    const char* sha256;
};

// Format v1, written by the first pack writer.
constexpr Golden kGoldens[] = {
    {"v1-raw.pack", "bf241b4adbfee454cc82a8ebc3ee13bc3fc2e6717c4b1f672968498b6f57c23d"},
    {"v1-zstd.pack", "268dd89089146d1382dd679881f1be6e7509b46f34e5e17f4001f5d367f7386b"},
    {"v1-lz4.pack", "d8cffd454b850201d2fea1eaca60a6f7c6b525d91d3a2516be7935c4bce54b70"},
};
constexpr const char* kExpected = "v1.expected";

fs::path golden_dir() { return fs::path(PACKFS_SOURCE_DIR) / "tests" / "pack" / "golden"; }


std::string hex_sha256(std::string_view bytes) {
    return pack::to_hex(pack::sha256(std::as_bytes(std::span(bytes.data(), bytes.size()))));
}

// Every entry, one line each: type, mode, ids, nlink, size (not for directories, whose size
// backends report differently), rdev, times with ns, content SHA-256 or target, xattrs.
Result<void> describe(Backend& fs, const std::string& path, std::map<std::string, std::string>& out) {
    auto st = fs.lstat(path);
    if (!st) return std::unexpected(st.error());
    std::ostringstream line;
    line << file_type_name(st->type) << " mode=" << std::oct << st->mode << std::dec
         << " uid=" << st->uid << " gid=" << st->gid << " nlink=" << st->nlink;
    if (st->type != FileType::directory) line << " size=" << st->size;
    line << " rdev=" << st->rdev << " atime=" << st->atime.sec << "." << st->atime.nsec
         << " mtime=" << st->mtime.sec << "." << st->mtime.nsec << " ctime=" << st->ctime.sec
         << "." << st->ctime.nsec;
    if (st->type == FileType::regular) {
        auto content = read_file(fs, path);
        if (!content) return std::unexpected(content.error());
        line << " sha256=" << hex_sha256(*content);
    } else if (st->type == FileType::symlink) {
        auto target = fs.readlink(path);
        if (!target) return std::unexpected(target.error());
        line << " -> " << hex_sha256(*target);
    }
    if (st->type != FileType::symlink) {
        auto names = fs.listxattr(path);
        if (!names) return std::unexpected(names.error());
        std::sort(names->begin(), names->end());
        for (const auto& n : *names) {
            auto v = fs.getxattr(path, n);
            if (!v) return std::unexpected(v.error());
            line << " " << n << "=" << hex_sha256(*v);
        }
    }
    out[hex_sha256(path)] = line.str();  // names may be any bytes: key by their hash
    if (st->type == FileType::directory) {
        auto entries = fs.readdir(path);
        if (!entries) return std::unexpected(entries.error());
        for (const auto& e : *entries) {
            if (auto r = describe(fs, path_join(path, e.name), out); !r) return r;
        }
    }
    return {};
}

std::string describe_all(Backend& fs) {
    std::map<std::string, std::string> lines;
    if (auto r = describe(fs, "/", lines); !r) return "error: " + r.error().message();
    std::string text;
    for (const auto& [key, line] : lines) text += key + " " + line + "\n";
    return text;
}

// The golden tree: every kind of entry and the boundaries the format has.
std::shared_ptr<Backend> golden_tree() {
    auto m = make_mem_backend();
    auto ok = [](auto r) {
        if (!r) ADD_FAILURE() << r.error().message();
    };
    std::string pattern;
    for (int i = 0; i < 70000; ++i) pattern += static_cast<char>((i * 7919 + i / 251) & 0xff);
    ok(m->mkdir("/dir"));
    ok(m->mkdir("/dir/sub", 0700));
    ok(m->mkdir("/empty"));
    ok(write_file(*m, "/empty.txt", ""));
    ok(write_file(*m, "/one", "1"));
    ok(write_file(*m, "/dir/inline64", std::string(64, 'i')));
    ok(write_file(*m, "/dir/stream65", std::string(65, 's')));
    ok(write_file(*m, "/dir/page", pattern.substr(0, 4096)));
    ok(write_file(*m, "/dir/sub/big", pattern));
    ok(write_file(*m, "/dir/sub/big-copy", pattern));
    ok(write_file(*m, "/exec", "#!/bin/sh\n", 0755));
    ok(m->link("/one", "/dir/one-link"));
    ok(m->symlink("../one", "/dir/rel"));
    ok(m->symlink("/dir/sub", "/abs"));
    ok(m->symlink("/nowhere", "/dangling"));
    ok(m->mknod("/fifo", FileType::fifo, 0644));
    ok(m->mknod("/null", FileType::char_device, 0666, makedev(1, 3)));
    ok(write_file(*m, std::string("/latin1-\xe9\xff"), "not UTF-8"));
    ok(write_file(*m, "/" + std::string(255, 'L'), "long name"));
    ok(m->setxattr("/one", "user.text", "value"));
    ok(m->setxattr("/one", "user.empty", ""));
    ok(m->setxattr("/dir", "user.bin", std::string("\0\1\2\xff", 4)));
    ok(m->chown("/exec", 1000, 100));
    ok(m->utimens("/one", TimeUpdate::at({1000000000, 1}), TimeUpdate::at({1234567890, 123456789})));
    ok(m->utimens("/dir", TimeUpdate::at({-1, 999999999}), TimeUpdate::at({4102444800, 5})));
    return m;
}

TEST(PackGolden, WriteGoldensWhenAsked) {
    const char* dir = std::getenv("PACKFS_WRITE_GOLDENS");
    if (!dir) GTEST_SKIP() << "set PACKFS_WRITE_GOLDENS=<dir> to write new goldens";
    auto tree = golden_tree();
    auto snap = tree->snapshot();
    ASSERT_TRUE(snap);
    for (auto [name, compression] : {std::pair{"v1-raw.pack", Compression::none},
                                     {"v1-zstd.pack", Compression::zstd},
                                     {"v1-lz4.pack", Compression::lz4}}) {
        PackWriteOptions options;
        options.compression = compression;
        options.block_size = 16384;  // several blocks for the 70,000-byte file
        auto r = write_pack(**snap, (fs::path(dir) / name).string(), options);
        ASSERT_TRUE(r) << r.error().message();
        std::printf("{\"%s\", \"%s\"},\n", name, hex_sha256(slurp(fs::path(dir) / name)).c_str());
    }
    std::ofstream(fs::path(dir) / kExpected) << describe_all(**snap);
}

TEST(PackGolden, EveryGoldenIsPinnedAndReadsAsRecorded) {
    std::string expected = slurp(golden_dir() / kExpected);
    ASSERT_FALSE(expected.empty()) << "missing " << (golden_dir() / kExpected);
    for (const Golden& golden : kGoldens) {
        SCOPED_TRACE(golden.file);
        fs::path path = golden_dir() / golden.file;
        EXPECT_EQ(hex_sha256(slurp(path)), golden.sha256)
            << "a golden pack was rewritten; add a new one instead";
        for (PackAccess access : {PackAccess::mmap, PackAccess::pread}) {
            auto pack = open_pack(path.string(), {.access = access});
            ASSERT_TRUE(pack) << pack.error().message();
            EXPECT_EQ(describe_all(**pack), expected);
            EXPECT_TRUE((*pack)->verify().ok());
        }
    }
}

}  // namespace
}  // namespace packfs
