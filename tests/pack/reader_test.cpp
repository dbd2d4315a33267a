// The pack reader: packs written from a mem tree read back the same tree (every codec, both
// access modes), resolve paths with the mem backend's errnos, refuse every mutation, serve
// zero-copy views, catch corrupt metadata on first use (not on open), survive the file being
// truncated under the mapping, and verify() names the file whose content is bad.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "conformance/conformance_suite.hpp"
#include "pack/format/digest.hpp"
#include "pack/format/format.hpp"
#include "packfs/mem.hpp"
#include "packfs/pack.hpp"
#include "packfs/path.hpp"
#include "support/files.hpp"

namespace packfs::pack {
namespace {

namespace fs = std::filesystem;
using test_support::slurp;
using test_support::TempDir;
using conformance::Capabilities;
using conformance::describe;
using conformance::FailsWith;
using conformance::FailsWithOneOf;
using conformance::IsOk;


void spit(const fs::path& p, const std::string& data) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

Header header_of(const std::string& file) {
    Header h{};
    std::memcpy(&h, file.data(), sizeof h);
    return h;
}

void reseal_header(std::string& file, Header h) {
    h.header_checksum = 0;
    h.header_checksum = xxh3_64(std::as_bytes(std::span(&h, 1)));
    std::memcpy(file.data(), &h, sizeof h);
}

// The stream offset of the content of inode `ino`, decoded with format.hpp alone.
uint64_t content_offset_of(const std::string& file, uint64_t ino) {
    const Header h = header_of(file);
    const auto* base = reinterpret_cast<const std::byte*>(file.data());
    const Inode n = load<Inode>(base + h.sections[0].offset + (ino - 1) * sizeof(Inode));
    EXPECT_GT(n.ref, 0u);
    const Content c = load<Content>(base + h.sections[2].offset + (n.ref - 1) * sizeof(Content));
    return c.offset;
}

Capabilities fixture_caps() {
    return Capabilities{};
}

// describe_tree, with directory sizes left out: a pack reports a directory's entry count (the
// format's size), a mem tree 0.
std::map<std::string, std::string> described(Backend& fs) {
    auto d = conformance::describe_tree(fs, true);
    EXPECT_TRUE(IsOk(d));
    if (!d) return {};
    for (auto& [path, line] : *d) {
        if (!line.starts_with("dir ")) continue;
        const std::size_t at = line.find(" size=");
        line.replace(at, line.find(' ', at + 1) - at, " size=-");
    }
    return *d;
}

std::string str(std::span<const std::byte> s) {
    return std::string(reinterpret_cast<const char*>(s.data()), s.size());
}

// True when `p` lies inside a mapping of the file `path` (from /proc/self/maps).
bool inside_mapping_of(const void* p, const fs::path& path) {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    const auto at = reinterpret_cast<uintptr_t>(p);
    const std::string want = fs::canonical(path).string();
    while (std::getline(maps, line)) {
        if (!line.ends_with(want)) continue;
        uintptr_t begin = 0, end = 0;
        if (std::sscanf(line.c_str(), "%lx-%lx", &begin, &end) == 2 && at >= begin && at < end)
            return true;
    }
    return false;
}

struct PackCase {
    const char* name;
    Compression compression;
    uint32_t block_size;
    uint32_t format = 1;
};
constexpr PackCase kCases[] = {{"raw", Compression::none, 128 * 1024},
                               {"zstd", Compression::zstd, 4096},
                               {"lz4", Compression::lz4, 16384},
                               {"v2-raw", Compression::none, 128 * 1024, 2},
                               {"v2-zstd", Compression::zstd, 4096, 2}};

class PackReader : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = std::make_unique<TempDir>();
        source_ = make_mem_backend();
        ASSERT_TRUE(IsOk(conformance::build_fixture_tree(*source_, fixture_caps())));
        for (const PackCase& c : kCases) {
            PackWriteOptions o;
            o.format = c.format;
            o.times = PackTimes::all;  // compared with the source, atimes included
            o.compression = c.compression;
            o.block_size = c.block_size;
            auto stats = write_pack(*source_, pack_path(c.name).string(), o);
            ASSERT_TRUE(IsOk(stats)) << c.name;
        }
    }
    static void TearDownTestSuite() {
        source_.reset();
        dir_.reset();
    }

    static fs::path pack_path(std::string_view name) {
        return dir_->path / fmt::format("{}.pack", name);
    }
    static std::shared_ptr<PackBackend> open(std::string_view name,
                                             PackAccess access = PackAccess::mmap,
                                             std::size_t cache = 64 << 20) {
        auto p =
            open_pack(pack_path(name).string(), {.access = access, .block_cache_bytes = cache});
        EXPECT_TRUE(IsOk(p)) << name;
        return p ? *p : nullptr;
    }
    // A copy of pack `name` under a new name, changed by `edit`.
    template <class Edit>
    static fs::path edited_copy(std::string_view name, std::string_view copy, Edit&& edit) {
        std::string bytes = slurp(pack_path(name));
        edit(bytes);
        fs::path out = dir_->path / fmt::format("{}.pack", copy);
        spit(out, bytes);
        return out;
    }

    static std::unique_ptr<TempDir> dir_;
    static std::shared_ptr<Backend> source_;
};

std::unique_ptr<TempDir> PackReader::dir_;
std::shared_ptr<Backend> PackReader::source_;

TEST_F(PackReader, EveryCodecAndAccessModeReadsBackTheSourceTree) {
    const auto want = described(*source_);
    ASSERT_FALSE(want.empty());
    for (const PackCase& c : kCases) {
        for (PackAccess access : {PackAccess::mmap, PackAccess::pread}) {
            auto pack = open(c.name, access);
            ASSERT_NE(pack, nullptr);
            EXPECT_TRUE(described(*pack) == want)
                << c.name << (access == PackAccess::mmap ? " mmap" : " pread");
            EXPECT_TRUE(pack->verify().ok()) << c.name;
        }
    }
}

TEST_F(PackReader, InfoDescribesTheHeader) {
    auto raw = open("raw");
    ASSERT_NE(raw, nullptr);
    const PackInfo& info = raw->info();
    EXPECT_EQ(info.version, 1u);
    EXPECT_EQ(open("v2-raw")->info().version, 2u);
    EXPECT_EQ(info.file_size, fs::file_size(pack_path("raw")));
    EXPECT_EQ(info.compression, Compression::none);
    EXPECT_EQ(info.data_length, info.stream_size);
    EXPECT_TRUE(info.has_xattrs);
    EXPECT_EQ(info.digest.size(), 64u);
    auto zstd = open("zstd");
    ASSERT_NE(zstd, nullptr);
    EXPECT_EQ(zstd->info().compression, Compression::zstd);
    EXPECT_EQ(zstd->info().block_size, 4096u);
    EXPECT_EQ(zstd->info().digest == info.digest, false) << "the options are part of the image";
}

TEST_F(PackReader, EveryEntryStatsAndListsLikeTheSource) {
    auto pack = open("lz4");
    ASSERT_NE(pack, nullptr);
    std::vector<std::string> dirs = {"/"};
    std::size_t checked = 0;
    while (!dirs.empty()) {
        std::string dir = dirs.back();
        dirs.pop_back();
        auto want = conformance::sorted_names(*source_, dir);
        auto got = pack->readdir(dir);
        ASSERT_TRUE(IsOk(want) && IsOk(got)) << dir;
        std::vector<std::string> names;
        for (const DirEntry& e : *got) names.push_back(e.name);
        EXPECT_TRUE(std::is_sorted(names.begin(), names.end())) << "pack order is name order";
        EXPECT_EQ(names, *want) << dir;
        for (const DirEntry& e : *got) {
            const std::string path = path_join(dir, e.name);
            auto a = source_->lstat(path);
            auto b = pack->lstat(path);
            ASSERT_TRUE(IsOk(a) && IsOk(b)) << path;
            EXPECT_EQ(b->ino, e.ino) << path;
            EXPECT_EQ(b->type, e.type) << path;
            EXPECT_EQ(a->type, b->type) << path;
            EXPECT_EQ(a->mode, b->mode) << path;
            EXPECT_EQ(a->nlink, b->nlink) << path;
            EXPECT_EQ(a->rdev, b->rdev) << path;
            EXPECT_EQ(a->mtime, b->mtime) << path;
            EXPECT_EQ(a->atime, b->atime) << path;
            if (b->type == FileType::directory) {
                EXPECT_EQ(b->size, conformance::sorted_names(*source_, path)->size()) << path;
                dirs.push_back(path);
            } else {
                EXPECT_EQ(a->size, b->size) << path;
            }
            if (b->type == FileType::regular) {
                EXPECT_EQ(b->blocks, (b->size + 511) / 512) << path;
                auto f = pack->open(path, O_RDONLY);
                ASSERT_TRUE(IsOk(f)) << path;
                auto st = (*f)->fstat();
                ASSERT_TRUE(IsOk(st));
                EXPECT_EQ(st->ino, b->ino);
            }
            ++checked;
        }
    }
    EXPECT_GT(checked, 300u);
}

TEST_F(PackReader, MutationsAreErofsAndSnapshotIsItself) {
    auto pack = open("raw");
    ASSERT_NE(pack, nullptr);
    EXPECT_TRUE(pack->read_only());
    conformance::expect_every_mutation_fails_with_erofs(*pack, fixture_caps());
    auto snap = pack->snapshot();
    ASSERT_TRUE(IsOk(snap));
    EXPECT_EQ(snap->get(), static_cast<Backend*>(pack.get()));
    EXPECT_TRUE(FailsWith(pack->open("/missing", O_RDONLY | O_CREAT), EROFS));
    EXPECT_TRUE(FailsWith(pack->open("/docs/readme.txt", O_RDONLY | O_CREAT | O_EXCL), EEXIST));
    EXPECT_TRUE(FailsWith(pack->open("/docs", O_RDWR | O_CREAT), EISDIR));
    EXPECT_TRUE(FailsWith(pack->open("/special/fifo", O_RDONLY), ENOTSUP));
    auto dir = pack->open("/docs", O_RDONLY | O_DIRECTORY);
    ASSERT_TRUE(IsOk(dir));
    std::byte buf[4];
    EXPECT_TRUE(FailsWith((*dir)->pread(buf, 0), EISDIR));
}

TEST_F(PackReader, StatfsDescribesThePack) {
    auto pack = open("raw");
    ASSERT_NE(pack, nullptr);
    auto s = pack->statfs("/docs");
    ASSERT_TRUE(IsOk(s));
    EXPECT_EQ(s->block_size, 4096u);
    EXPECT_EQ(s->blocks, pack->info().file_size / 4096);
    EXPECT_EQ(s->blocks_free, 0u);
    EXPECT_EQ(s->files, pack->info().inode_count);
    EXPECT_EQ(s->files_free, 0u);
    EXPECT_EQ(s->name_max, 255u);
    EXPECT_TRUE(FailsWith(pack->statfs("/nowhere"), ENOENT));
}

TEST_F(PackReader, ReadViewIsZeroCopyFromTheMapping) {
    const std::string want = conformance::pattern_bytes(65537, 65537 % 251);
    std::string scratch;
    auto raw = open("raw");
    ASSERT_NE(raw, nullptr);
    auto v = raw->read_view("/data/65537.bin", 100, 5000, scratch);
    ASSERT_TRUE(IsOk(v));
    EXPECT_EQ(str(*v), want.substr(100, 5000));
    EXPECT_TRUE(scratch.empty());
    EXPECT_TRUE(inside_mapping_of(v->data(), pack_path("raw"))) << "a view into the mapping";
    auto clipped = raw->read_view("/data/65537.bin", 65530, 100, scratch);
    ASSERT_TRUE(IsOk(clipped));
    EXPECT_EQ(str(*clipped), want.substr(65530));
    auto past = raw->read_view("/data/65537.bin", 70000, 10, scratch);
    ASSERT_TRUE(IsOk(past));
    EXPECT_TRUE(past->empty());
    auto small = raw->read_view("/links/abs", 0, 100, scratch);  // inline, through a symlink
    ASSERT_TRUE(IsOk(small));
    EXPECT_EQ(str(*small), conformance::kReadme);
    EXPECT_TRUE(inside_mapping_of(small->data(), pack_path("raw")));
    EXPECT_TRUE(FailsWith(raw->read_view("/docs", 0, 1, scratch), EISDIR));
    EXPECT_TRUE(FailsWith(raw->read_view("/nope", 0, 1, scratch), ENOENT));

    for (auto [name, access] : {std::pair{"raw", PackAccess::pread}, {"zstd", PackAccess::mmap}}) {
        auto pack = open(name, access);
        ASSERT_NE(pack, nullptr);
        std::string copy;
        auto c = pack->read_view("/data/65537.bin", 4000, 9000, copy);
        ASSERT_TRUE(IsOk(c)) << name;
        EXPECT_EQ(str(*c), want.substr(4000, 9000)) << name;
        EXPECT_EQ(static_cast<const void*>(c->data()), static_cast<const void*>(copy.data()))
            << name << ": copied into the scratch buffer";
    }
}

TEST_F(PackReader, ReadsAcrossCompressedBlocksWithATinyCache) {
    const std::string want = conformance::pattern_bytes(3 * 65536 + 1, (3 * 65536 + 1) % 251);
    for (const PackCase& c : kCases) {
        for (PackAccess access : {PackAccess::mmap, PackAccess::pread}) {
            auto pack = open(c.name, access, c.block_size);  // room for one block only
            ASSERT_NE(pack, nullptr);
            auto f = pack->open("/data/196609.bin", O_RDONLY);
            ASSERT_TRUE(IsOk(f));
            for (uint64_t off : {0ull, 4095ull, 4096ull, 16383ull, 70000ull, 196600ull}) {
                auto part = conformance::pread_string(**f, off, 9000);
                ASSERT_TRUE(IsOk(part)) << c.name << " at " << off;
                EXPECT_TRUE(*part == want.substr(off, 9000)) << c.name << " at " << off;
            }
        }
    }
}

// Symlinks and errnos: the pack answers exactly what a snapshot of its mem source answers.
TEST(PackReaderSemantics, PathResolutionMatchesTheMemBackend) {
    TempDir dir;
    auto mem = make_mem_backend();
    ASSERT_TRUE(IsOk(mem->mkdir("/a")));
    ASSERT_TRUE(IsOk(mem->mkdir("/a/b")));
    ASSERT_TRUE(IsOk(mem->mkdir("/a/b/sub")));
    ASSERT_TRUE(IsOk(mem->mkdir("/chain")));
    ASSERT_TRUE(IsOk(write_file(*mem, "/a/b/file.txt", "the file")));
    ASSERT_TRUE(IsOk(write_file(*mem, "/a/b/sub/inner", "inner")));
    ASSERT_TRUE(IsOk(mem->setxattr("/a/b/file.txt", "user.k", "v")));
    const std::pair<const char*, std::string> links[] = {
        {"/a/up", "../a/b"},
        {"/a/b/back", "../../a/b/file.txt"},
        {"/a/b/dotty", "./././file.txt"},
        {"/a/b/abs", "/a/b/sub"},
        {"/a/b/trail", "sub/"},
        {"/a/b/tofile_slash", "file.txt/"},
        {"/a/b/up2", "../.."},
        {"/a/b/upmany", "../../../../../a"},
        {"/a/b/through", "../b/sub/../file.txt"},
        {"/a/b/sublink", "sub"},
        {"/a/b/via", "sublink/../file.txt"},
        {"/a/b/toolong", std::string(300, 'x')},
        {"/a/b/dangling", "nowhere/at/all"},
        {"/dirlink", "a/b"},
        {"/self", "self"},
        {"/rootlink", "/"},
    };
    for (const auto& [path, target] : links) ASSERT_TRUE(IsOk(mem->symlink(target, path))) << path;
    // l0 -> l1 -> ... -> l40 -> /a/b/file.txt: l1 takes 40 follows, l0 takes 41.
    for (int i = 0; i < 41; ++i)
        ASSERT_TRUE(IsOk(mem->symlink(fmt::format("l{}", i + 1), fmt::format("/chain/l{}", i))));
    ASSERT_TRUE(IsOk(mem->symlink("/a/b/file.txt", "/chain/l41")));
    auto snap = mem->snapshot();
    ASSERT_TRUE(IsOk(snap));
    const std::string out = (dir.path / "sem.pack").string();
    ASSERT_TRUE(IsOk(write_pack(*mem, out)));

    std::vector<std::string> paths = {"/",
                                      "/a",
                                      "/a/",
                                      "/a/up",
                                      "/a/up/",
                                      "/a/up/file.txt",
                                      "/a/up/sub/..",
                                      "/a/up/sub/inner",
                                      "/a/b/back",
                                      "/a/b/dotty",
                                      "/a/b/abs",
                                      "/a/b/abs/",
                                      "/a/b/abs/inner",
                                      "/a/b/trail",
                                      "/a/b/trail/",
                                      "/a/b/trail/inner",
                                      "/a/b/tofile_slash",
                                      "/a/b/up2",
                                      "/a/b/up2/a/b",
                                      "/a/b/upmany",
                                      "/a/b/upmany/b/file.txt",
                                      "/a/b/through",
                                      "/a/b/via",
                                      "/a/b/toolong",
                                      "/a/b/toolong/x",
                                      "/a/b/dangling",
                                      "/a/b/dangling/",
                                      "/dirlink",
                                      "/dirlink/file.txt",
                                      "/dirlink/../a",
                                      "/self",
                                      "/self/x",
                                      "/rootlink",
                                      "/rootlink/a/b/sub",
                                      "/chain/l0",
                                      "/chain/l1",
                                      "/chain/l40",
                                      "/chain/l1/x",
                                      "/a/b/file.txt/x",
                                      "/a/b/file.txt/",
                                      "/a/b/file.txt/..",
                                      "/a/missing/x",
                                      "/" + std::string(256, 'x'),
                                      "a/b/./sub//inner",
                                      std::string("/a\0b", 4),
                                      "",
                                      "/a/b/sub/inner/"};
    for (PackAccess access : {PackAccess::mmap, PackAccess::pread}) {
        auto opened = open_pack(out, {.access = access});
        ASSERT_TRUE(IsOk(opened));
        Backend& pack = **opened;
        Backend& want = **snap;
        auto outcome_stat = [](const Result<Stat>& st) -> std::string {
            if (!st) return std::string(errno_name(st.error().code()));
            return fmt::format("{} {:o} nlink={} size={}", file_type_name(st->type), st->mode,
                               st->nlink, st->type == FileType::directory ? 0 : st->size);
        };
        auto outcome = [](const auto& r) -> std::string {
            if (!r) return std::string(errno_name(r.error().code()));
            return "ok";
        };
        for (const std::string& p : paths) {
            EXPECT_EQ(outcome_stat(pack.stat(p)), outcome_stat(want.stat(p))) << "stat " << p;
            EXPECT_EQ(outcome_stat(pack.lstat(p)), outcome_stat(want.lstat(p))) << "lstat " << p;
            auto la = pack.readlink(p);
            auto lb = want.readlink(p);
            EXPECT_EQ(la ? *la : outcome(la), lb ? *lb : outcome(lb)) << "readlink " << p;
            auto da = pack.readdir(p);
            auto db = want.readdir(p);
            EXPECT_EQ(outcome(da), outcome(db)) << "readdir " << p;
            if (da && db) {
                EXPECT_EQ(da->size(), db->size()) << "readdir " << p;
            }
            for (int flags :
                 {O_RDONLY, O_RDONLY | O_NOFOLLOW, O_RDONLY | O_DIRECTORY, O_WRONLY,
                  O_RDWR | O_CREAT, O_WRONLY | O_CREAT | O_EXCL, O_RDONLY | O_TRUNC, O_ACCMODE}) {
                auto fa = pack.open(p, flags);
                auto fb = want.open(p, flags);
                EXPECT_EQ(outcome(fa), outcome(fb)) << "open " << p << " flags " << flags;
                if (fa && fb) {
                    EXPECT_EQ(conformance::read_all(**fa).value_or("<error>"),
                              conformance::read_all(**fb).value_or("<error>"))
                        << p;
                }
            }
            auto xa = pack.getxattr(p, "user.k");
            auto xb = want.getxattr(p, "user.k");
            EXPECT_EQ(xa ? *xa : outcome(xa), xb ? *xb : outcome(xb)) << "getxattr " << p;
            auto na = pack.listxattr(p);
            auto nb = want.listxattr(p);
            EXPECT_EQ(outcome(na), outcome(nb)) << "listxattr " << p;
            if (na && nb) {
                EXPECT_EQ(*na, *nb) << "listxattr " << p;
            }
            EXPECT_EQ(outcome(pack.statfs(p)), outcome(want.statfs(p))) << "statfs " << p;
        }
        EXPECT_TRUE(FailsWith(pack.getxattr("/a/b/file.txt", "bogus"), ENOTSUP));
        EXPECT_TRUE(FailsWith(pack.getxattr("/a/b/file.txt", ""), EINVAL));
    }
}

TEST_F(PackReader, CorruptMetadataBlockFailsOnFirstUseNotOnOpen) {
    const Header h = header_of(slurp(pack_path("raw")));
    ASSERT_GT(h.meta_length, 2 * kMetaBlockSize) << "the fixture spans several metadata blocks";
    const uint64_t last_block = (h.meta_length - 1) / kMetaBlockSize;
    const uint64_t flip = h.meta_offset + last_block * kMetaBlockSize + 3;
    auto path = edited_copy("raw", "bad_meta", [&](std::string& b) { b[flip] ^= 0x40; });
    for (PackAccess access : {PackAccess::mmap, PackAccess::pread}) {
        auto opened = open_pack(path.string(), {.access = access});
        ASSERT_TRUE(IsOk(opened)) << "opening checks the header and sums only";
        Backend& pack = **opened;
        PACKFS_EXPECT_OK(pack.stat("/"));  // inode 1 lives in block 0
        auto walk = conformance::describe_tree(pack, true);
        ASSERT_TRUE(FailsWith(walk, kErrCorrupt));
        ASSERT_TRUE(walk.error().corruption().has_value());
        EXPECT_EQ(walk.error().corruption()->offset, h.meta_offset + last_block * kMetaBlockSize);
        EXPECT_NE(walk.error().corruption()->what.find("metadata block"), std::string::npos)
            << walk.error().message();
        EXPECT_TRUE(FailsWith(conformance::describe_tree(pack, true), kErrCorrupt))
            << "a failed block stays failed";
        auto report = (*opened)->verify();
        EXPECT_FALSE(report.ok());
        bool named = false;
        for (const auto& p : report.problems)
            named |= p.where.starts_with(fmt::format("metadata block {}", last_block));
        EXPECT_TRUE(named);
    }
    // Block 0 holds the root inode: every lookup fails, the open still does not.
    auto first = edited_copy("raw", "bad_root", [&](std::string& b) { b[h.meta_offset + 2] ^= 1; });
    auto opened = open_pack(first.string());
    ASSERT_TRUE(IsOk(opened));
    auto st = (*opened)->stat("/docs/readme.txt");
    ASSERT_TRUE(FailsWith(st, kErrCorrupt));
    EXPECT_EQ(st.error().path(), "/docs/readme.txt");
    EXPECT_EQ(st.error().op(), "stat");
    EXPECT_TRUE(FailsWith((*opened)->readdir("/"), kErrCorrupt));
}

TEST_F(PackReader, OpenRejectsBadHeadersWithClearErrors) {
    const std::string good = slurp(pack_path("raw"));
    auto try_open = [&](std::string_view name, const std::string& bytes) {
        fs::path p = dir_->path / fmt::format("{}.pack", name);
        spit(p, bytes);
        return open_pack(p.string());
    };
    EXPECT_TRUE(FailsWith(open_pack((dir_->path / "absent.pack").string()), ENOENT));
    EXPECT_TRUE(FailsWith(open_pack(dir_->path.string()), EISDIR));
    EXPECT_TRUE(FailsWith(try_open("empty", ""), kErrCorrupt));
    EXPECT_TRUE(FailsWith(try_open("short", good.substr(0, 100)), kErrCorrupt));
    EXPECT_TRUE(FailsWith(try_open("cut", good.substr(0, good.size() - 1)), kErrCorrupt));
    EXPECT_TRUE(FailsWith(try_open("longer", good + "x"), kErrCorrupt));

    std::string magic = good;
    magic[0] = 'X';
    EXPECT_TRUE(FailsWith(try_open("magic", magic), kErrCorrupt));

    std::string newer = good;
    Header h = header_of(good);
    h.version = kFormatVersion + 1;
    reseal_header(newer, h);
    auto v3 = try_open("newer", newer);
    ASSERT_TRUE(FailsWith(v3, ENOTSUP));
    EXPECT_NE(v3.error().message().find("version 3"), std::string::npos) << v3.error().message();

    std::string feature = good;
    h = header_of(good);
    h.incompat_features |= 1u << 6;
    reseal_header(feature, h);
    auto f = try_open("feature", feature);
    ASSERT_TRUE(FailsWith(f, ENOTSUP));
    EXPECT_NE(f.error().message().find("0x40"), std::string::npos) << f.error().message();

    std::string checksum = good;
    checksum[offsetof(Header, inode_count)] ^= 1;
    auto c = try_open("checksum", checksum);
    ASSERT_TRUE(FailsWith(c, kErrCorrupt));
    EXPECT_EQ(c.error().corruption()->what, "header checksum");

    // Fields that pass the checksum but not the bounds checks.
    auto resealed = [&](std::string_view name, auto&& change) {
        std::string bytes = good;
        Header x = header_of(good);
        change(x);
        reseal_header(bytes, x);
        return try_open(name, bytes);
    };
    EXPECT_TRUE(FailsWith(resealed("bs", [](Header& x) { x.block_size = 5000; }), kErrCorrupt));
    EXPECT_TRUE(FailsWith(resealed("codec", [](Header& x) { x.codec = 1; }), kErrCorrupt));
    EXPECT_TRUE(FailsWith(resealed("codec9",
                                   [](Header& x) {
                                       x.codec = 9;
                                       x.incompat_features |= kIncompatCompressedData;
                                   }),
                          ENOTSUP));
    EXPECT_TRUE(FailsWith(resealed("inodes", [](Header& x) { x.inode_count += 1; }), kErrCorrupt));
    EXPECT_TRUE(
        FailsWith(resealed("order", [](Header& x) { std::swap(x.sections[0], x.sections[1]); }),
                  kErrCorrupt));
    EXPECT_TRUE(
        FailsWith(resealed("dirents", [](Header& x) { x.sections[1].length += 8; }), kErrCorrupt));
    EXPECT_TRUE(
        FailsWith(resealed("data", [](Header& x) { x.data_length = x.file_size; }), kErrCorrupt));
    EXPECT_TRUE(FailsWith(resealed("sums", [](Header& x) { x.sums_checksum ^= 1; }), kErrCorrupt));
    EXPECT_TRUE(
        FailsWith(resealed("inline", [](Header& x) { x.inline_max = 1 << 20; }), kErrCorrupt));
}

TEST_F(PackReader, VerifyFindsAFlippedDataByteAndNamesTheFile) {
    auto clean = open("raw");
    ASSERT_NE(clean, nullptr);
    const VerifyReport ok = clean->verify();
    EXPECT_TRUE(ok.ok());
    EXPECT_EQ(ok.sections_checked, kFirstSectionCount);  // no inode-numbers sections
    EXPECT_GT(ok.blocks_checked, 1u);
    EXPECT_GT(ok.files_checked, 300u);
    EXPECT_GT(ok.bytes_checked, 300000u);

    auto target = clean->lstat("/data/65537.bin");
    auto dup = clean->lstat("/data/dup_a.bin");
    ASSERT_TRUE(IsOk(target) && IsOk(dup));
    const std::string bytes = slurp(pack_path("raw"));
    const Header h = header_of(bytes);
    const uint64_t at = h.data_offset + content_offset_of(bytes, target->ino) + 1000;
    const uint64_t at_dup = h.data_offset + content_offset_of(bytes, dup->ino) + 7;
    auto path = edited_copy("raw", "bad_data", [&](std::string& b) {
        b[at] ^= 0x01;
        b[at_dup] ^= 0x80;
    });
    for (PackAccess access : {PackAccess::mmap, PackAccess::pread}) {
        auto bad = open_pack(path.string(), {.access = access});
        ASSERT_TRUE(IsOk(bad));
        uint64_t calls = 0, last_done = 0, last_total = 0;
        const VerifyReport report = (*bad)->verify([&](uint64_t done, uint64_t total) {
            ++calls;
            last_done = done;
            last_total = total;
        });
        EXPECT_GE(calls, 1u);
        EXPECT_EQ(last_done, last_total);
        std::set<std::string> named;
        for (const auto& p : report.problems) {
            named.insert(p.where);
            EXPECT_NE(p.what.find("SHA-256"), std::string::npos) << p.where << ": " << p.what;
        }
        EXPECT_EQ(named,
                  (std::set<std::string>{"/data/65537.bin", "/data/dup_a.bin", "/data/dup_b.bin"}))
            << "each file holding a bad content, by its virtual path";
    }
}

TEST(PackReaderVerify, CompressedBlockDamageNamesTheFile) {
    TempDir dir;
    auto mem = make_mem_backend();
    std::string text;
    while (text.size() < 200000)
        text += fmt::format("line {} of a compressible file\n", text.size());
    ASSERT_TRUE(IsOk(write_file(*mem, "/big.txt", text)));
    ASSERT_TRUE(IsOk(write_file(*mem, "/other.txt", std::string(30000, 'o'))));
    const fs::path out = dir.path / "z.pack";
    PackWriteOptions options;
    options.compression = Compression::zstd;
    options.block_size = 16384;
    options.compress_metadata = false;  // the blocks section is read from the file below
    ASSERT_TRUE(IsOk(write_pack(*mem, out.string(), options)));
    std::string bytes = slurp(out);
    const Header h = header_of(bytes);
    ASSERT_EQ(h.codec, static_cast<uint32_t>(Codec::zstd));
    // The second block of the stream: a zstd frame (the text compresses well).
    const auto* base = reinterpret_cast<const std::byte*>(bytes.data());
    const uint64_t b1 = load<uint64_t>(base + h.sections[4].offset + 8);
    const uint64_t b2 = load<uint64_t>(base + h.sections[4].offset + 16);
    ASSERT_LT(b2 - b1, 16384u) << "stored compressed";
    bytes[h.data_offset + b1 + (b2 - b1) / 2] ^= 0x5a;
    spit(out, bytes);
    auto pack = open_pack(out.string());
    ASSERT_TRUE(IsOk(pack));
    const VerifyReport report = (*pack)->verify();
    ASSERT_FALSE(report.ok());
    bool big = false;
    for (const auto& p : report.problems) {
        big |= p.where == "/big.txt";
        EXPECT_NE(p.where, "/other.txt") << p.what;
    }
    EXPECT_TRUE(big) << "the file whose block is bad is named";
    EXPECT_EQ(read_file(**pack, "/other.txt").value_or(""), std::string(30000, 'o'));
}

// The pack file shrinks under a live backend, to its header alone (so every content is cut
// off, wherever the layout put it): answers become EIO (or data read before), never a crash.
// mmap: the SIGBUS handler maps zero pages and the damage counter turns answers into EIO.
// pread: metadata is in memory; data past the new end is a short read, EIO.
TEST_F(PackReader, TruncatedUnderneathGivesEioNotACrash) {
    for (const PackCase& c : kCases) {
        for (PackAccess access : {PackAccess::mmap, PackAccess::pread}) {
            SCOPED_TRACE(
                fmt::format("{} {}", c.name, access == PackAccess::mmap ? "mmap" : "pread"));
            auto path = edited_copy(c.name, "shrinking", [](std::string&) {});
            auto opened = open_pack(path.string(), {.access = access});
            ASSERT_TRUE(IsOk(opened));
            PackBackend& pack = **opened;
            // Its content lies in the data region, the part cut off below.
            auto big = pack.open("/data/65537.bin", O_RDONLY);
            ASSERT_TRUE(IsOk(big));
            PACKFS_ASSERT_OK(conformance::pread_string(**big, 0, 10));
            PACKFS_ASSERT_OK(pack.stat("/docs/readme.txt"));

            const uint64_t data_offset = header_of(slurp(path)).data_offset;
            ASSERT_LT(data_offset, fs::file_size(path) / 2);
            ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(data_offset)), 0);

            auto st = pack.stat("/docs/nested/deep/leaf.txt");
            auto list = pack.readdir("/wide");
            auto tail = conformance::pread_string(**big, 65537 - 5000, 5000);
            std::string scratch;
            auto view = pack.read_view("/data/65537.bin", 60000, 10, scratch);
            if (access == PackAccess::mmap) {
                EXPECT_TRUE(FailsWith(st, EIO));
                EXPECT_TRUE(FailsWith(list, EIO));
                EXPECT_TRUE(FailsWith(tail, EIO));
                EXPECT_TRUE(FailsWith(view, EIO));
                EXPECT_TRUE(FailsWith(pack.lstat("/"), EIO)) << "stays EIO";
            } else {
                PACKFS_EXPECT_OK(st) << "metadata was read on open";
                PACKFS_EXPECT_OK(list);
                EXPECT_TRUE(FailsWithOneOf(tail, {EIO, kErrCorrupt}));
                EXPECT_TRUE(FailsWithOneOf(view, {EIO, kErrCorrupt}));
            }
            const VerifyReport report = pack.verify();
            EXPECT_FALSE(report.ok());
        }
    }
}

TEST_F(PackReader, ConcurrentReadersShareTheCacheAndTheCheckedBlocks) {
    for (const PackCase& c : kCases) {
        auto pack = open(c.name, PackAccess::mmap, 3 * c.block_size);
        ASSERT_NE(pack, nullptr);
        const std::string want = conformance::pattern_bytes(65537, 65537 % 251);
        std::atomic<int> mismatches{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; ++t) {
            threads.emplace_back([&, t] {
                std::string scratch;
                for (int i = 0; i < 30; ++i) {
                    auto content = read_file(*pack, "/data/65537.bin");
                    if (!content || *content != want) ++mismatches;
                    auto view = pack->read_view("/data/65537.bin", (t * 977 + i * 131) % 60000,
                                                3000, scratch);
                    const std::size_t off = (t * 977 + i * 131) % 60000;
                    if (!view || str(*view) != want.substr(off, 3000)) ++mismatches;
                    auto st = pack->stat(fmt::format("/wide/entry_{:03}", (t * 30 + i) % 300));
                    if (!st) ++mismatches;
                    auto names = pack->readdir("/wide");
                    if (!names || names->size() != 300) ++mismatches;
                }
            });
        }
        for (auto& th : threads) th.join();
        EXPECT_EQ(mismatches.load(), 0) << c.name;
    }
}

}  // namespace
}  // namespace packfs::pack
