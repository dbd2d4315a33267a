// The read checks, over the standard fixture tree: what every backend, including a read-only
// one (a pack, a snapshot), must show of a tree it holds.
#include <sys/sysmacros.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <set>
#include <thread>

#include "conformance/conformance_suite.hpp"
#include "packfs/path.hpp"

namespace packfs::conformance {

namespace {

std::string content_of(Backend& fs, std::string_view path) {
    auto r = read_file(fs, path);
    return r ? *r : "<" + describe(r.error()) + ">";
}

}  // namespace

TEST_P(ReadOnlyTree, ReadOnlyFlagMatchesCapabilities) {
    EXPECT_EQ(fs().read_only(), caps().read_only);
}

TEST_P(ReadOnlyTree, RootListsTheFixture) {
    auto names = sorted_names(fs(), "/");
    PACKFS_ASSERT_OK(names);
    std::vector<std::string> expected = {"data",  "docs",        "empty", "exec.sh",  "hard",
                                         "links", "names",       "private.txt", "times.txt",
                                         "wide"};
    if (caps().special_files || caps().device_nodes) expected.push_back("special");
    if (caps().xattrs) expected.push_back("xattr.txt");
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(*names, expected);
}

TEST_P(ReadOnlyTree, FilesHoldTheirContent) {
    EXPECT_EQ(content_of(fs(), "/docs/readme.txt"), kReadme);
    EXPECT_EQ(content_of(fs(), "/docs/empty.txt"), "");
    EXPECT_EQ(content_of(fs(), "/docs/nested/deep/leaf.txt"), "leaf\n");
    EXPECT_EQ(content_of(fs(), "/exec.sh"), "#!/bin/sh\necho hi\n");
    EXPECT_EQ(content_of(fs(), "/private.txt"), "secret");
    for (std::size_t size : kFixtureSizes) {
        std::string path = fmt::format("/data/{}.bin", size);
        auto st = fs().stat(path);
        PACKFS_EXPECT_OK(st) << path;
        if (st) {
            EXPECT_EQ(st->size, size) << path;
        }
        auto content = read_file(fs(), path);
        PACKFS_EXPECT_OK(content) << path;
        if (content) {
            PACKFS_EXPECT_BYTES_EQ(*content,
                                   pattern_bytes(size, static_cast<uint32_t>(size % 251)));
        }
    }
    std::string dup = pattern_bytes(10000, 77);
    EXPECT_TRUE(content_of(fs(), "/data/dup_a.bin") == dup);
    EXPECT_TRUE(content_of(fs(), "/data/dup_b.bin") == dup);
    auto a = fs().stat("/data/dup_a.bin");
    auto b = fs().stat("/data/dup_b.bin");
    PACKFS_ASSERT_OK(a);
    PACKFS_ASSERT_OK(b);
    EXPECT_NE(a->ino, b->ino) << "equal content is still two files";
}

TEST_P(ReadOnlyTree, RandomAccessReadsMatch) {
    const std::size_t size = 3 * 65536 + 1;
    std::string expected = pattern_bytes(size, size % 251);
    auto f = fs().open(fmt::format("/data/{}.bin", size), O_RDONLY);
    PACKFS_ASSERT_OK(f);
    for (uint64_t off : {0ull, 1ull, 4095ull, 65535ull, 65536ull, 131071ull, 196600ull, 196608ull}) {
        auto part = pread_string(**f, off, 70000);
        PACKFS_EXPECT_OK(part) << "offset " << off;
        if (part) {
            PACKFS_EXPECT_BYTES_EQ(*part, expected.substr(off, 70000));
        }
    }
    auto past = pread_string(**f, size, 10);
    PACKFS_ASSERT_OK(past);
    EXPECT_EQ(past->size(), 0u);
}

TEST_P(ReadOnlyTree, ReadViewsShowTheBytesAndStayValidWhileTheFileIsOpen) {
    const std::size_t size = 3 * 65536 + 1;
    const std::string expected = pattern_bytes(size, size % 251);
    auto f = fs().open(fmt::format("/data/{}.bin", size), O_RDONLY);
    PACKFS_ASSERT_OK(f);
    // Each view with its own scratch: all of them must still hold their bytes at the end.
    struct Seen {
        uint64_t offset;
        std::size_t length;
        std::span<const std::byte> view;
    };
    std::vector<std::string> scratches(9);
    std::vector<Seen> seen;
    std::size_t i = 0;
    for (uint64_t off :
         std::initializer_list<uint64_t>{0, 1, 4095, 65535, 65536, 131071, 196600, 196608, size}) {
        auto view = (*f)->read_view(off, 70000, scratches[i++]);
        PACKFS_ASSERT_OK(view) << "offset " << off;
        seen.push_back({off, 70000, *view});
    }
    for (const Seen& s : seen) {
        SCOPED_TRACE(fmt::format("offset {}", s.offset));
        const std::string want = s.offset < size ? expected.substr(s.offset, s.length) : "";
        PACKFS_EXPECT_BYTES_EQ(
            std::string(reinterpret_cast<const char*>(s.view.data()), s.view.size()), want);
    }
    auto dir = fs().open("/data", O_RDONLY | O_DIRECTORY);
    PACKFS_ASSERT_OK(dir);
    std::string scratch;
    PACKFS_EXPECT_ERRNO((*dir)->read_view(0, 10, scratch), EISDIR);
}

TEST_P(ReadOnlyTree, ModesAndTypesAreKept) {
    struct Want {
        const char* path;
        FileType type;
        uint32_t mode;
    };
    for (const Want& w : {Want{"/exec.sh", FileType::regular, 0755},
                          Want{"/private.txt", FileType::regular, 0600},
                          Want{"/docs/readme.txt", FileType::regular, 0644},
                          Want{"/docs/nested/deep", FileType::directory, 0700},
                          Want{"/empty", FileType::directory, 0755}}) {
        auto st = fs().lstat(w.path);
        PACKFS_EXPECT_OK(st) << w.path;
        if (!st) continue;
        EXPECT_EQ(st->type, w.type) << w.path;
        EXPECT_EQ(st->mode, w.mode) << w.path << std::oct << " mode " << st->mode;
    }
    auto empty = sorted_names(fs(), "/empty");
    PACKFS_ASSERT_OK(empty);
    EXPECT_TRUE(empty->empty());
}

TEST_P(ReadOnlyTree, HardLinksShareOneInode) {
    auto a = fs().lstat("/hard/a");
    auto b = fs().lstat("/hard/b");
    PACKFS_ASSERT_OK(a);
    PACKFS_ASSERT_OK(b);
    EXPECT_EQ(a->ino, b->ino);
    EXPECT_EQ(a->nlink, 2u);
    EXPECT_EQ(b->nlink, 2u);
    EXPECT_EQ(content_of(fs(), "/hard/b"), "shared\n");
}

TEST_P(ReadOnlyTree, SymlinksReadAndResolve) {
    struct Want {
        const char* path;
        const char* target;
    };
    for (const Want& w : {Want{"/links/rel", "../docs/readme.txt"},
                          Want{"/links/abs", "/docs/readme.txt"}, Want{"/links/dir", "/docs/nested"},
                          Want{"/links/dangling", "/nowhere"}, Want{"/links/loop_a", "loop_b"}}) {
        auto t = fs().readlink(w.path);
        PACKFS_EXPECT_OK(t) << w.path;
        if (t) {
            EXPECT_EQ(*t, w.target) << w.path;
        }
        auto st = fs().lstat(w.path);
        PACKFS_EXPECT_OK(st) << w.path;
        if (st) {
            EXPECT_EQ(st->type, FileType::symlink) << w.path;
            EXPECT_EQ(st->size, std::string_view(w.target).size()) << w.path;
        }
    }
    EXPECT_TRUE(ReadsThrough(fs(), caps(), "/links/rel", Via::relative, kReadme));
    EXPECT_TRUE(ReadsThrough(fs(), caps(), "/links/abs", Via::absolute, kReadme));
    EXPECT_TRUE(ReadsThrough(fs(), caps(), "/links/dir/deep/leaf.txt", Via::absolute, "leaf\n"));
    auto through = sorted_names(fs(), "/links/dir");
    PACKFS_EXPECT_FOLLOWS(through, caps(), Via::absolute);
    if (through) {
        EXPECT_EQ(*through, std::vector<std::string>{"deep"});
    }
    PACKFS_EXPECT_FOLLOWS_ERRNO(fs().stat("/links/dangling"), caps(), Via::absolute, ENOENT);
    PACKFS_EXPECT_FOLLOWS_ERRNO(fs().stat("/links/loop_a"), caps(), Via::relative, ELOOP);
    PACKFS_EXPECT_ERRNO(fs().open("/links/abs", O_RDONLY | O_NOFOLLOW), ELOOP);
    PACKFS_EXPECT_ERRNO(fs().readlink("/docs/readme.txt"), EINVAL);
}

TEST_P(ReadOnlyTree, WideDirectoryListsEveryEntry) {
    auto entries = fs().readdir("/wide");
    PACKFS_ASSERT_OK(entries);
    EXPECT_EQ(entries->size(), static_cast<std::size_t>(kWideCount));
    std::set<std::string> names;
    for (const auto& e : *entries) {
        names.insert(e.name);
        EXPECT_EQ(e.type, FileType::regular) << e.name;
    }
    for (int i = 0; i < kWideCount; i += 37) {
        std::string name = fmt::format("entry_{:03}", i);
        EXPECT_TRUE(names.contains(name)) << name;
        EXPECT_EQ(content_of(fs(), "/wide/" + name), name);
    }
    EXPECT_EQ(names.size(), static_cast<std::size_t>(kWideCount));
}

TEST_P(ReadOnlyTree, UnusualNamesAreKept) {
    auto names = sorted_names(fs(), "/names");
    PACKFS_ASSERT_OK(names);
    std::vector<std::string> expected = {fixture_long_name(), "sp ace", "\xc3\xbcn\xc3\xaf", "...",
                                         "-dash"};
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(*names, expected);
    for (const auto& n : expected) {
        EXPECT_EQ(content_of(fs(), "/names/" + n), n);
    }
}

TEST_P(ReadOnlyTree, SpecialFilesAreListedWithTypesAndNumbers) {
    if (!caps().special_files && !caps().device_nodes)
        GTEST_SKIP() << "backend has no special files";
    struct Want {
        const char* name;
        FileType type;
        uint64_t rdev;
        bool device;
    };
    const Want wants[] = {{"fifo", FileType::fifo, 0, false},
                          {"sock", FileType::socket, 0, false},
                          {"null", FileType::char_device, makedev(1, 3), true},
                          {"zero", FileType::char_device, makedev(0, 0), true},
                          {"blk", FileType::block_device, makedev(7, 0), true}};
    auto entries = fs().readdir("/special");
    PACKFS_ASSERT_OK(entries);
    std::size_t expected_count = 0;
    for (const Want& w : wants) {
        if (w.device ? !caps().device_nodes : !caps().special_files) continue;
        ++expected_count;
        std::string path = std::string("/special/") + w.name;
        auto st = fs().lstat(path);
        PACKFS_EXPECT_OK(st) << path;
        if (st) {
            EXPECT_EQ(st->type, w.type) << path;
            if (w.device) {
                EXPECT_EQ(st->rdev, w.rdev) << path;
            }
        }
        auto it = std::find_if(entries->begin(), entries->end(),
                               [&](const DirEntry& e) { return e.name == w.name; });
        EXPECT_TRUE(it != entries->end()) << w.name << " not listed";
        if (it != entries->end()) {
            EXPECT_EQ(it->type, w.type) << w.name;
        }
        if (caps().special_open_enotsup) {
            PACKFS_EXPECT_ERRNO(fs().open(path, O_RDONLY), ENOTSUP) << " " << path;
        }
    }
    EXPECT_EQ(entries->size(), expected_count);
}

TEST_P(ReadOnlyTree, XattrsAreKept) {
    if (!caps().xattrs) GTEST_SKIP() << "backend has no user xattrs";
    auto names = fs().listxattr("/xattr.txt");
    PACKFS_ASSERT_OK(names);
    std::sort(names->begin(), names->end());
    EXPECT_EQ(*names, (std::vector<std::string>{"user.bin", "user.empty", "user.text"}));
    auto text = fs().getxattr("/xattr.txt", "user.text");
    PACKFS_EXPECT_OK(text);
    if (text) {
        EXPECT_EQ(*text, "value");
    }
    auto empty = fs().getxattr("/xattr.txt", "user.empty");
    PACKFS_EXPECT_OK(empty);
    if (empty) {
        EXPECT_EQ(*empty, "");
    }
    auto bin = fs().getxattr("/xattr.txt", "user.bin");
    PACKFS_EXPECT_OK(bin);
    if (bin) {
        EXPECT_TRUE(*bin == fixture_binary_value());
    }
    PACKFS_EXPECT_ERRNO(fs().getxattr("/xattr.txt", "user.none"), ENODATA);
}

TEST_P(ReadOnlyTree, TimesAreKeptToTheNanosecond) {
    auto st = fs().lstat("/times.txt");
    PACKFS_ASSERT_OK(st);
    EXPECT_EQ(st->mtime, kFixtureMtime);
    EXPECT_EQ(st->atime, kFixtureAtime);
}

TEST_P(ReadOnlyTree, EveryListedEntryMatchesItsLstat) {
    std::vector<std::string> dirs = {"/"};
    std::size_t checked = 0;
    while (!dirs.empty()) {
        std::string dir = dirs.back();
        dirs.pop_back();
        auto entries = fs().readdir(dir);
        PACKFS_EXPECT_OK(entries) << dir;
        if (!entries) continue;
        for (const auto& e : *entries) {
            EXPECT_NE(e.name, ".");
            EXPECT_NE(e.name, "..");
            std::string path = path_join(dir, e.name);
            auto st = fs().lstat(path);
            PACKFS_EXPECT_OK(st) << path;
            if (!st) continue;
            EXPECT_EQ(e.ino, st->ino) << path;
            EXPECT_EQ(e.type, st->type) << path;
            if (st->type == FileType::directory) dirs.push_back(path);
            ++checked;
        }
    }
    EXPECT_GT(checked, static_cast<std::size_t>(kWideCount));
}

TEST_P(ReadOnlyTree, NormalisedPathsReachTheSameEntries) {
    auto want = fs().lstat("/docs/readme.txt");
    PACKFS_ASSERT_OK(want);
    for (std::string_view p : {"//docs//readme.txt", "/./docs/./readme.txt", "docs/readme.txt",
                               "/docs/nested/../readme.txt", "/../docs/readme.txt"}) {
        auto st = fs().lstat(p);
        PACKFS_EXPECT_OK(st) << p;
        if (st) {
            EXPECT_EQ(st->ino, want->ino) << p;
        }
    }
}

TEST_P(ReadOnlyTree, ReadErrorsHaveTheirCodes) {
    PACKFS_EXPECT_ERRNO(fs().stat("/no/such"), ENOENT);
    PACKFS_EXPECT_ERRNO(fs().open("/missing", O_RDONLY), ENOENT);
    PACKFS_EXPECT_ERRNO(fs().stat("/docs/readme.txt/x"), ENOTDIR);
    PACKFS_EXPECT_ERRNO(fs().stat("/docs/readme.txt/"), ENOTDIR);
    PACKFS_EXPECT_ERRNO(fs().readdir("/docs/readme.txt"), ENOTDIR);
    PACKFS_EXPECT_ERRNO(fs().open("/docs/readme.txt", O_RDONLY | O_DIRECTORY), ENOTDIR);
    PACKFS_EXPECT_ERRNO(fs().open("/docs", O_WRONLY), EISDIR);
    PACKFS_EXPECT_ERRNO(fs().stat("/" + std::string(256, 'x')), ENAMETOOLONG);
    PACKFS_EXPECT_ERRNO(fs().stat(std::string("/do\0cs", 6)), EINVAL);
}

TEST_P(ReadOnlyTree, EveryMutationFailsWithErofs) {
    if (!caps().read_only) GTEST_SKIP() << "writable backend";
    expect_every_mutation_fails_with_erofs(fs(), caps());
}

TEST_P(ReadOnlyTree, ConcurrentReadersSeeTheSameTree) {
    constexpr int kThreads = 4;
    std::atomic<int> mismatches{0};
    std::vector<std::thread> threads;
    const std::string expected = pattern_bytes(65537, 65537 % 251);
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < 20; ++i) {
                auto content = read_file(fs(), "/data/65537.bin");
                if (!content || *content != expected) ++mismatches;
                auto names = fs().readdir("/wide");
                if (!names || names->size() != static_cast<std::size_t>(kWideCount)) ++mismatches;
                auto st = fs().stat(fmt::format("/wide/entry_{:03}", (t * 20 + i) % kWideCount));
                if (!st) ++mismatches;
            }
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace packfs::conformance
