// The suite's shared pieces: fixtures, helpers and the standard fixture tree.
#include "conformance/conformance_suite.hpp"

#include <sys/sysmacros.h>

#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <ostream>
#include <thread>

#include "packfs/path.hpp"

namespace packfs::conformance {

std::string factory_name(const ::testing::TestParamInfo<BackendFactory>& info) {
    return info.param.name;
}

void PrintTo(const BackendFactory& factory, std::ostream* os) { *os << factory.name; }

std::string describe(const Error& e) {
    return fmt::format("{} ({})", errno_name(e.code()), e.message());
}

int follow_errno(const Capabilities& caps, Via via) {
    switch (caps.symlinks) {
        case SymlinkFollow::in_root: return 0;
        case SymlinkFollow::beneath: return via == Via::absolute ? EXDEV : 0;
        case SymlinkFollow::none: return ELOOP;
    }
    return 0;
}

::testing::AssertionResult ReadsThrough(Backend& fs, const Capabilities& caps,
                                        std::string_view path, Via via, std::string_view want) {
    auto content = read_file(fs, path);
    auto followed = Follows(content, caps, via);
    if (!followed) return followed << " reading " << path;
    if (!content || *content == want) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "reading " << path << ": sizes " << content->size() << " vs " << want.size()
           << ", first difference at byte " << first_difference(*content, want);
}

std::string pattern_bytes(std::size_t size, uint32_t seed) {
    std::string out(size, '\0');
    uint64_t x = 0x9E3779B97F4A7C15ull ^ (uint64_t{seed} * 0xBF58476D1CE4E5B9ull);
    for (std::size_t i = 0; i < size; ++i) {
        // xorshift64*: no short period, so a chunk shifted by any offset never matches.
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        out[i] = static_cast<char>((x * 0x2545F4914F6CDD1Dull) >> 56);
    }
    return out;
}

Result<std::string> pread_string(File& file, uint64_t offset, std::size_t size) {
    std::string out(size, '\0');
    auto n = file.pread(std::as_writable_bytes(std::span(out.data(), out.size())), offset);
    if (!n) return std::unexpected(n.error());
    out.resize(*n);
    return out;
}

Result<void> pwrite_string(File& file, std::string_view data, uint64_t offset) {
    auto n = file.pwrite(as_bytes(data), offset);
    if (!n) return std::unexpected(n.error());
    if (*n != data.size()) return fail(EIO, "pwrite (short write)");
    return {};
}

Result<std::string> read_all(File& file, std::size_t slice) {
    std::string out;
    for (;;) {
        auto part = pread_string(file, out.size(), slice);
        if (!part) return std::unexpected(part.error());
        if (part->empty()) return out;
        out += *part;
    }
}

Result<std::vector<std::string>> sorted_names(Backend& fs, std::string_view dir) {
    auto entries = fs.readdir(dir);
    if (!entries) return std::unexpected(entries.error());
    std::vector<std::string> names;
    names.reserve(entries->size());
    for (const auto& e : *entries) names.push_back(e.name);
    std::sort(names.begin(), names.end());
    return names;
}

void let_clock_tick() { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }

std::size_t first_difference(std::string_view a, std::string_view b) {
    std::size_t n = std::min(a.size(), b.size());
    for (std::size_t i = 0; i < n; ++i)
        if (a[i] != b[i]) return i;
    return n;
}

std::string fixture_long_name() { return std::string(255, 'L'); }

std::string fixture_binary_value() {
    std::string v;
    for (int i = 0; i < 256; ++i) v.push_back(static_cast<char>(i));
    return v;
}

#define PACKFS_TRY(expr)                                        \
    do {                                                        \
        auto r_ = (expr);                                       \
        if (!r_) return std::unexpected(std::move(r_.error())); \
    } while (0)

Result<void> build_fixture_tree(Backend& fs, const Capabilities& caps) {
    PACKFS_TRY(fs.mkdir("/empty", 0755));
    PACKFS_TRY(fs.mkdir("/docs", 0755));
    PACKFS_TRY(write_file(fs, "/docs/readme.txt", kReadme, 0644));
    PACKFS_TRY(write_file(fs, "/docs/empty.txt", "", 0644));
    PACKFS_TRY(fs.mkdir("/docs/nested", 0755));
    PACKFS_TRY(fs.mkdir("/docs/nested/deep", 0700));
    PACKFS_TRY(write_file(fs, "/docs/nested/deep/leaf.txt", "leaf\n", 0644));

    PACKFS_TRY(fs.mkdir("/data", 0755));
    for (std::size_t size : kFixtureSizes) {
        PACKFS_TRY(write_file(fs, fmt::format("/data/{}.bin", size),
                              pattern_bytes(size, static_cast<uint32_t>(size % 251)), 0644));
    }
    std::string dup = pattern_bytes(10000, 77);
    PACKFS_TRY(write_file(fs, "/data/dup_a.bin", dup, 0644));
    PACKFS_TRY(write_file(fs, "/data/dup_b.bin", dup, 0644));

    PACKFS_TRY(write_file(fs, "/exec.sh", "#!/bin/sh\necho hi\n", 0755));
    PACKFS_TRY(write_file(fs, "/private.txt", "secret", 0600));

    PACKFS_TRY(fs.mkdir("/hard", 0755));
    PACKFS_TRY(write_file(fs, "/hard/a", "shared\n", 0644));
    PACKFS_TRY(fs.link("/hard/a", "/hard/b"));

    PACKFS_TRY(fs.mkdir("/links", 0755));
    PACKFS_TRY(fs.symlink("../docs/readme.txt", "/links/rel"));
    PACKFS_TRY(fs.symlink("/docs/readme.txt", "/links/abs"));
    PACKFS_TRY(fs.symlink("/docs/nested", "/links/dir"));
    PACKFS_TRY(fs.symlink("/nowhere", "/links/dangling"));
    PACKFS_TRY(fs.symlink("loop_b", "/links/loop_a"));
    PACKFS_TRY(fs.symlink("loop_a", "/links/loop_b"));

    PACKFS_TRY(fs.mkdir("/wide", 0755));
    for (int i = 0; i < kWideCount; ++i) {
        std::string name = fmt::format("entry_{:03}", i);
        PACKFS_TRY(write_file(fs, "/wide/" + name, name, 0644));
    }

    PACKFS_TRY(fs.mkdir("/names", 0755));
    for (const std::string& name :
         {fixture_long_name(), std::string("sp ace"), std::string("\xc3\xbcn\xc3\xaf"),
          std::string("..."), std::string("-dash")}) {
        PACKFS_TRY(write_file(fs, "/names/" + name, name, 0644));
    }

    if (caps.special_files || caps.device_nodes) PACKFS_TRY(fs.mkdir("/special", 0755));
    if (caps.special_files) {
        PACKFS_TRY(fs.mknod("/special/fifo", FileType::fifo, 0644));
        PACKFS_TRY(fs.mknod("/special/sock", FileType::socket, 0755));
    }
    if (caps.device_nodes) {
        PACKFS_TRY(fs.mknod("/special/null", FileType::char_device, 0666, makedev(1, 3)));
        PACKFS_TRY(fs.mknod("/special/zero", FileType::char_device, 0600, makedev(0, 0)));
        PACKFS_TRY(fs.mknod("/special/blk", FileType::block_device, 0660, makedev(7, 0)));
    }

    if (caps.xattrs) {
        PACKFS_TRY(write_file(fs, "/xattr.txt", "has xattrs", 0644));
        PACKFS_TRY(fs.setxattr("/xattr.txt", "user.text", "value"));
        PACKFS_TRY(fs.setxattr("/xattr.txt", "user.empty", ""));
        PACKFS_TRY(fs.setxattr("/xattr.txt", "user.bin", fixture_binary_value()));
    }

    PACKFS_TRY(write_file(fs, "/times.txt", "times", 0644));
    PACKFS_TRY(fs.utimens("/times.txt", TimeUpdate::at(kFixtureAtime),
                          TimeUpdate::at(kFixtureMtime)));
    return {};
}

void ConformanceTest::SetUp() {
    fs_ = GetParam().make ? GetParam().make() : nullptr;
    ASSERT_NE(fs_, nullptr) << "the factory for backend '" << GetParam().name
                            << "' returned no backend (not implemented yet?)";
}

void WritableTest::SetUp() {
    if (caps().read_only) GTEST_SKIP() << "read-only backend: this topic needs a writable one";
    ConformanceTest::SetUp();
}

void FixtureTreeTest::SetUp() {
    ConformanceTest::SetUp();
    if (HasFatalFailure()) return;
    if (!caps().read_only) {
        auto built = build_fixture_tree(fs(), caps());
        ASSERT_TRUE(IsOk(built)) << "building the fixture tree";
    }
}

void Xattrs::SetUp() {
    if (!caps().xattrs) GTEST_SKIP() << "backend '" << GetParam().name << "' has no user xattrs";
    WritableTest::SetUp();
}

}  // namespace packfs::conformance

namespace packfs::conformance {

namespace {

Result<void> describe_into(Backend& fs, bool with_xattrs, const std::string& path,
                           std::map<std::string, std::string>& out) {
    auto st = fs.lstat(path);
    if (!st) return std::unexpected(st.error());
    std::string line =
        fmt::format("{} mode={:o} uid={} gid={} nlink={} size={} rdev={} mtime={}.{} ctime={}.{}",
                    file_type_name(st->type), st->mode, st->uid, st->gid, st->nlink, st->size,
                    st->rdev, st->mtime.sec, st->mtime.nsec, st->ctime.sec, st->ctime.nsec);
    if (st->type == FileType::regular) {
        auto content = read_file(fs, path);
        if (!content) return std::unexpected(content.error());
        line += fmt::format(" content[{}]={}", content->size(),
                            std::hash<std::string>{}(*content));
    } else if (st->type == FileType::symlink) {
        auto target = fs.readlink(path);
        if (!target) return std::unexpected(target.error());
        line += " -> " + *target;
    }
    if (with_xattrs && st->type != FileType::symlink) {
        auto names = fs.listxattr(path);
        if (!names) return std::unexpected(names.error());
        std::sort(names->begin(), names->end());
        for (const auto& n : *names) {
            auto v = fs.getxattr(path, n);
            if (!v) return std::unexpected(v.error());
            line += fmt::format(" {}[{}]={}", n, v->size(), std::hash<std::string>{}(*v));
        }
    }
    out[path] = std::move(line);
    if (st->type == FileType::directory) {
        auto names = sorted_names(fs, path);
        if (!names) return std::unexpected(names.error());
        for (const auto& n : *names) PACKFS_TRY(describe_into(fs, with_xattrs, path_join(path, n), out));
    }
    return {};
}

}  // namespace

Result<std::map<std::string, std::string>> describe_tree(Backend& fs, bool with_xattrs,
                                                         std::string_view root) {
    std::map<std::string, std::string> out;
    PACKFS_TRY(describe_into(fs, with_xattrs, std::string(root), out));
    return out;
}

void expect_every_mutation_fails_with_erofs(Backend& fs, const Capabilities& caps) {
    EXPECT_TRUE(fs.read_only());
    auto before = describe_tree(fs, caps.xattrs);
    ASSERT_TRUE(IsOk(before));

    PACKFS_EXPECT_ERRNO(fs.mkdir("/newdir"), EROFS);
    PACKFS_EXPECT_ERRNO(fs.mkdir("/docs/nested/new"), EROFS);
    PACKFS_EXPECT_ERRNO(fs.rmdir("/empty"), EROFS);
    PACKFS_EXPECT_ERRNO(fs.unlink("/docs/readme.txt"), EROFS);
    PACKFS_EXPECT_ERRNO(fs.unlink("/links/rel"), EROFS);
    PACKFS_EXPECT_ERRNO(fs.rename("/docs/readme.txt", "/moved.txt"), EROFS);
    PACKFS_EXPECT_ERRNO(fs.rename("/docs", "/empty"), EROFS);
    PACKFS_EXPECT_ERRNO(fs.rename("/exec.sh", "/private.txt", RenameFlags::noreplace), EROFS);
    PACKFS_EXPECT_ERRNO(fs.rename("/exec.sh", "/private.txt", RenameFlags::exchange), EROFS);
    PACKFS_EXPECT_ERRNO(fs.symlink("/docs", "/newlink"), EROFS);
    PACKFS_EXPECT_ERRNO(fs.link("/docs/readme.txt", "/newhard"), EROFS);
    PACKFS_EXPECT_ERRNO(fs.mknod("/newfifo", FileType::fifo, 0644), EROFS);
    PACKFS_EXPECT_ERRNO(fs.mknod("/newfile", FileType::regular, 0644), EROFS);
    PACKFS_EXPECT_ERRNO(fs.chmod("/docs/readme.txt", 0600), EROFS);
    PACKFS_EXPECT_ERRNO(fs.chmod("/", 0700), EROFS);
    PACKFS_EXPECT_ERRNO(fs.chown("/docs/readme.txt", 1, 1), EROFS);
    PACKFS_EXPECT_ERRNO(fs.chown("/links/abs", 1, 1, Follow::no), EROFS);
    PACKFS_EXPECT_ERRNO(fs.utimens("/docs/readme.txt", TimeUpdate::now(), TimeUpdate::now()),
                        EROFS);
    PACKFS_EXPECT_ERRNO(fs.truncate("/docs/readme.txt", 0), EROFS);
    PACKFS_EXPECT_ERRNO(fs.open("/docs/readme.txt", O_WRONLY), EROFS);
    PACKFS_EXPECT_ERRNO(fs.open("/docs/readme.txt", O_RDWR), EROFS);
    PACKFS_EXPECT_ERRNO(fs.open("/docs/readme.txt", O_RDONLY | O_TRUNC), EROFS);
    PACKFS_EXPECT_ERRNO(fs.open("/docs/readme.txt", O_WRONLY | O_APPEND), EROFS);
    PACKFS_EXPECT_ERRNO(fs.open("/created.txt", O_WRONLY | O_CREAT, 0644), EROFS);
    PACKFS_EXPECT_ERRNO(fs.open("/docs/readme.txt", O_RDWR | O_CREAT, 0644), EROFS);
    PACKFS_EXPECT_ERRNO(fs.setxattr("/docs/readme.txt", "user.new", "v"), EROFS);
    if (caps.xattrs) {
        PACKFS_EXPECT_ERRNO(fs.removexattr("/xattr.txt", "user.text"), EROFS);
    }

    // A read-only handle still reads; its writes are EBADF.
    auto f = fs.open("/docs/readme.txt", O_RDONLY);
    EXPECT_TRUE(IsOk(f));
    if (f) {
        PACKFS_EXPECT_ERRNO((*f)->pwrite(as_bytes("x"), 0), EBADF);
        auto content = read_all(**f);
        EXPECT_TRUE(IsOk(content));
        if (content) {
            EXPECT_EQ(*content, kReadme);
        }
    }

    auto after = describe_tree(fs, caps.xattrs);
    ASSERT_TRUE(IsOk(after));
    EXPECT_TRUE(*before == *after) << "a read-only backend changed under refused mutations";
}

}  // namespace packfs::conformance
