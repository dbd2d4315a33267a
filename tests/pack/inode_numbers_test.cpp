// Packs that keep their source's inode numbers (PackWriteOptions::keep_inode_numbers, the
// inode-numbers feature of docs/FORMAT.md): stat, lstat, readdir and open handles report the
// source's st_ino, hard links share one, the reader finds every inode by number and knows the
// largest; a source with a 0 or a shared st_ino is refused naming the path; and without the
// option nothing changes (positional numbers; the golden tests pin the bytes).
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "pack/format/format.hpp"
#include "pack/reader/reader.hpp"
#include "packfs/forwarding.hpp"
#include "packfs/mem.hpp"
#include "packfs/pack.hpp"
#include "packfs/path.hpp"
#include "support/files.hpp"

namespace packfs::pack {
namespace {

namespace fs = std::filesystem;
using test_support::slurp;
using test_support::TempDir;

// A mem tree whose inode numbers are far from the pack's breadth-first positions: made deepest
// first, with files created and removed in between (the mem backend never reuses a number).
std::shared_ptr<Backend> numbered_tree() {
    auto mem = make_mem_backend();
    auto ok = [](auto&& r) { EXPECT_TRUE(r) << r.error().message(); };
    for (const char* d : {"/z", "/z/deep", "/z/deep/er"}) ok(mem->mkdir(d));
    ok(write_file(*mem, "/z/deep/er/leaf.txt", "leaf"));
    for (int i = 0; i < 5; ++i) {
        ok(write_file(*mem, fmt::format("/z/gone{}", i), "x"));
        ok(mem->unlink(fmt::format("/z/gone{}", i)));
    }
    for (const char* d : {"/a", "/a/b"}) ok(mem->mkdir(d));
    ok(write_file(*mem, "/a/b/big.bin", std::string(200000, 'q')));
    ok(write_file(*mem, "/a/one.txt", "one"));
    ok(mem->link("/a/one.txt", "/z/one-again.txt"));  // a hard link: one inode, one number
    ok(mem->link("/a/one.txt", "/a/b/one-more.txt"));
    ok(mem->symlink("b/big.bin", "/a/to-big"));
    ok(write_file(*mem, "/m.txt", ""));
    ok(mem->mknod("/fifo", FileType::fifo, 0644, 0));
    return mem;
}

// Every path under the root, parents first (readdir of the source, not following links).
std::vector<std::string> paths_of(Backend& b) {
    std::vector<std::string> paths{"/"};
    for (std::size_t i = 0; i < paths.size(); ++i) {
        auto list = b.readdir(paths[i]);
        if (!list) continue;
        for (const DirEntry& e : *list) paths.push_back(path_join(paths[i], e.name));
    }
    return paths;
}

std::string build(Backend& source, const fs::path& out, bool keep,
                  Compression compression = Compression::none) {
    PackWriteOptions o;
    o.keep_inode_numbers = keep;
    o.compression = compression;
    o.block_size = 16384;
    auto stats = write_pack(source, out.string(), o);
    EXPECT_TRUE(stats) << stats.error().message();
    return slurp(out);
}

std::unique_ptr<PackReader> open_reader(const fs::path& p, PackAccess access = PackAccess::mmap) {
    auto r = PackReader::open(p.string(), PackOpenOptions{.access = access});
    EXPECT_TRUE(r) << r.error().message();
    return r ? std::move(*r) : nullptr;
}

TEST(PackInodeNumbers, StatLstatReaddirAndHandlesReportTheSourcesNumbers) {
    TempDir dir;
    auto source = numbered_tree();
    for (Compression c : {Compression::none, Compression::zstd}) {
        const fs::path path = dir.path / "kept.pack";
        build(*source, path, true, c);
        for (PackAccess access : {PackAccess::mmap, PackAccess::pread}) {
            auto pack = open_pack(path.string(), {.access = access});
            ASSERT_TRUE(pack) << pack.error().message();
            PackBackend& b = **pack;
            EXPECT_TRUE(b.info().keeps_inode_numbers);
            auto paths = paths_of(*source);
            auto listed = paths_of(b);
            std::sort(paths.begin(), paths.end());
            std::sort(listed.begin(), listed.end());
            ASSERT_EQ(listed, paths);
            for (const std::string& p : paths) {
                SCOPED_TRACE(p);
                auto want = source->lstat(p);
                auto got = b.lstat(p);
                ASSERT_TRUE(want && got);
                EXPECT_EQ(got->ino, want->ino);
                EXPECT_EQ(got->nlink, want->nlink);
                auto want_followed = source->stat(p);
                auto got_followed = b.stat(p);
                ASSERT_TRUE(want_followed && got_followed);
                EXPECT_EQ(got_followed->ino, want_followed->ino);
                if (want->type == FileType::directory) {
                    auto want_list = source->readdir(p);
                    auto got_list = b.readdir(p);
                    ASSERT_TRUE(want_list && got_list);
                    auto by_name = [](const DirEntry& x, const DirEntry& y) {
                        return x.name < y.name;
                    };
                    // A v1 pack lists by name, a v2 pack by (name hash, name).
                    std::sort(want_list->begin(), want_list->end(), by_name);
                    std::sort(got_list->begin(), got_list->end(), by_name);
                    EXPECT_EQ(*got_list, *want_list);
                }
                if (want->type == FileType::regular) {
                    auto handle = b.open(p, O_RDONLY);
                    ASSERT_TRUE(handle);
                    EXPECT_EQ((*handle)->fstat()->ino, want->ino);
                }
            }
            // The hard links: one number, three names.
            EXPECT_EQ(b.lstat("/z/one-again.txt")->ino, b.lstat("/a/one.txt")->ino);
            EXPECT_EQ(b.lstat("/a/b/one-more.txt")->ino, b.lstat("/a/one.txt")->ino);
            EXPECT_EQ(b.lstat("/a/one.txt")->nlink, 3u);
            EXPECT_TRUE(b.verify().ok());
        }
    }
}

TEST(PackInodeNumbers, TheReaderFindsEveryInodeByNumberAndKnowsTheLargest) {
    TempDir dir;
    auto source = numbered_tree();
    const fs::path path = dir.path / "kept.pack";
    build(*source, path, true);
    std::map<uint64_t, Stat> by_number;  // the source's inodes
    for (const std::string& p : paths_of(*source)) {
        auto st = source->lstat(p);
        ASSERT_TRUE(st);
        by_number[st->ino] = *st;
    }
    for (PackAccess access : {PackAccess::mmap, PackAccess::pread}) {
        auto reader = open_reader(path, access);
        ASSERT_NE(reader, nullptr);
        const Ctx ctx{"test", "/"};
        EXPECT_TRUE(reader->keeps_inode_numbers());
        EXPECT_EQ(reader->header().inode_count, by_number.size());
        for (const auto& [number, st] : by_number) {
            auto found = reader->by_inode_number(number, ctx);
            ASSERT_TRUE(found) << found.error().message();
            ASSERT_TRUE(found->has_value()) << number;
            EXPECT_EQ(reader->inode_number(**found), number);
            const Stat got = reader->stat_of(**found);
            EXPECT_EQ(got.ino, number);
            EXPECT_EQ(got.type, st.type);
            EXPECT_EQ(got.nlink, st.nlink);
            EXPECT_EQ(got.mode, st.mode);
        }
        // Numbers no inode has: 0, in the gaps, past the largest.
        std::set<uint64_t> absent{0, by_number.rbegin()->first + 1, UINT64_MAX};
        for (uint64_t n = 1; n < by_number.rbegin()->first; ++n)
            if (!by_number.contains(n)) absent.insert(n);
        EXPECT_GT(absent.size(), 3u) << "the tree should have gaps in its numbers";
        for (uint64_t n : absent) {
            auto found = reader->by_inode_number(n, ctx);
            ASSERT_TRUE(found) << found.error().message();
            EXPECT_FALSE(found->has_value()) << n;
        }
        auto max = reader->max_inode_number(ctx);
        ASSERT_TRUE(max) << max.error().message();
        EXPECT_EQ(*max, by_number.rbegin()->first);
    }
}

TEST(PackInodeNumbers, WithoutTheOptionNumbersAreRecordPositions) {
    TempDir dir;
    auto source = numbered_tree();
    const fs::path path = dir.path / "plain.pack";
    const std::string bytes = build(*source, path, false);
    Header h;
    std::memcpy(&h, bytes.data(), sizeof h);
    EXPECT_EQ(h.incompat_features & kIncompatInodeNumbers, 0u);
    for (const SectionEntry& e : h.numbering_sections) {
        EXPECT_EQ(e.offset, 0u);
        EXPECT_EQ(e.length, 0u);
        EXPECT_EQ(e.checksum, 0u);
    }
    auto reader = open_reader(path);
    ASSERT_NE(reader, nullptr);
    const Ctx ctx{"test", "/"};
    EXPECT_FALSE(reader->keeps_inode_numbers());
    EXPECT_FALSE(reader->info().keeps_inode_numbers);
    const uint64_t count = reader->header().inode_count;
    for (uint64_t n = 1; n <= count; ++n) {
        auto found = reader->by_inode_number(n, ctx);
        ASSERT_TRUE(found && found->has_value()) << n;
        EXPECT_EQ((*found)->ino, n);
        EXPECT_EQ(reader->inode_number(**found), n);
    }
    for (uint64_t n : {uint64_t{0}, count + 1}) {
        auto found = reader->by_inode_number(n, ctx);
        ASSERT_TRUE(found);
        EXPECT_FALSE(found->has_value());
    }
    EXPECT_EQ(reader->max_inode_number(ctx), count);
    auto root = reader->inode(kRootIno, ctx);
    ASSERT_TRUE(root);
    EXPECT_EQ(reader->stat_of(*root).ino, kRootIno);
}

TEST(PackInodeNumbers, KeepingNumbersIsReproducibleAndOnlyAddsTheTwoSections) {
    TempDir dir;
    auto source = numbered_tree();
    const std::string a = build(*source, dir.path / "a.pack", true);
    const std::string b = build(*source, dir.path / "b.pack", true);
    EXPECT_EQ(a, b);
    const std::string plain = build(*source, dir.path / "plain.pack", false);
    Header kept, positional;
    std::memcpy(&kept, a.data(), sizeof kept);
    std::memcpy(&positional, plain.data(), sizeof positional);
    EXPECT_EQ(kept.incompat_features, positional.incompat_features | kIncompatInodeNumbers);
    for (std::size_t i = 0; i < kFirstSectionCount; ++i) {
        EXPECT_EQ(kept.sections[i].offset, positional.sections[i].offset) << kSectionNames[i];
        EXPECT_EQ(kept.sections[i].checksum, positional.sections[i].checksum) << kSectionNames[i];
    }
    const SectionEntry& numbers = section(kept, Section::inode_numbers);
    const SectionEntry& order = section(kept, Section::inode_order);
    EXPECT_EQ(numbers.length, 8 * kept.inode_count);
    EXPECT_EQ(order.length, 4 * kept.inode_count);
    EXPECT_EQ(numbers.offset % 8, 0u);
    EXPECT_EQ(order.offset, numbers.offset + numbers.length);
    const SectionEntry& bytes = section(kept, Section::bytes);
    EXPECT_LT(numbers.offset - (bytes.offset + bytes.length), 8u);
}

TEST(PackInodeNumbers, LookupFindsOneComponentInOneDirectory) {
    TempDir dir;
    auto source = numbered_tree();
    const fs::path path = dir.path / "kept.pack";
    build(*source, path, true);
    auto reader = open_reader(path);
    ASSERT_NE(reader, nullptr);
    const Ctx ctx{"lookup", "/a"};
    auto root = reader->root(ctx);
    ASSERT_TRUE(root);
    auto found_a = reader->lookup(*root, "a", ctx);
    ASSERT_TRUE(found_a && found_a->has_value());
    const InodeView* a = &**found_a;
    auto one = reader->lookup(*a, "one.txt", ctx);
    ASSERT_TRUE(one && one->has_value());
    EXPECT_EQ(reader->inode_number(**one), source->lstat("/a/one.txt")->ino);
    auto link = reader->lookup(*a, "to-big", ctx);  // a symlink is not followed
    ASSERT_TRUE(link && link->has_value());
    EXPECT_EQ((*link)->type, FileType::symlink);
    for (std::string_view absent : {"none", "", ".", "..", "b/big.bin", "one.tx", "one.txt2"}) {
        auto r = reader->lookup(*a, absent, ctx);
        ASSERT_TRUE(r) << absent;
        EXPECT_FALSE(r->has_value()) << absent;
    }
    EXPECT_EQ(reader->lookup(*a, std::string(256, 'n'), ctx).error().code(), ENAMETOOLONG);
    EXPECT_EQ(reader->lookup(**one, "x", ctx).error().code(), ENOTDIR);
    // Walking with lookup, one component at a time from the root, meets the source's inode at
    // every path (its numbers are kept).
    for (const std::string& p : paths_of(*source)) {
        InodeView at = *root;
        bool found = true;
        for (std::string_view name : PathComponents(p)) {
            auto step = reader->lookup(at, name, ctx);
            ASSERT_TRUE(step) << p;
            if (!step->has_value()) {
                found = false;
                break;
            }
            at = **step;
        }
        ASSERT_TRUE(found) << p;
        EXPECT_EQ(reader->inode_number(at), source->lstat(p)->ino) << p;
    }
}

// A forwarding Backend that reports chosen st_ino values (given by path, kept by node) for the
// inner backend's entries and takes no snapshot: a source the mem fast path does not read
// directly.
class RenumberedBackend final : public ForwardingBackend {
public:
    RenumberedBackend(std::shared_ptr<Backend> inner, const std::map<std::string, uint64_t>& numbers)
        : ForwardingBackend(std::move(inner)) {
        for (const auto& [path, number] : numbers) {
            auto e = lookup_path(this->inner(), path, Follow::no);
            EXPECT_TRUE(e) << path;
            if (!e) continue;
            numbers_[e->node.id] = number;
            this->inner().forget(e->node, 1);
        }
    }

    Result<Entry> lookup(Node dir, std::string_view name) override {
        auto e = inner().lookup(dir, name);
        if (e) e->stat.ino = number_of(e->node, e->stat.ino);
        return e;
    }
    Result<Stat> getattr(Node node) override {
        auto st = inner().getattr(node);
        if (st) st->ino = number_of(node, st->ino);
        return st;
    }
    Result<std::vector<DirEntry>> list(Node dir) override {
        auto listed = inner().list(dir);
        if (!listed) return listed;
        for (DirEntry& e : *listed) {
            auto child = inner().lookup(dir, e.name);
            if (!child) return std::unexpected(child.error());
            e.ino = number_of(child->node, e.ino);
            inner().forget(child->node, 1);
        }
        return listed;
    }
    Result<std::shared_ptr<Backend>> snapshot() override { return fail(ENOTSUP, "snapshot"); }

private:
    uint64_t number_of(Node node, uint64_t otherwise) const {
        auto found = numbers_.find(node.id);
        return found == numbers_.end() ? otherwise : found->second;
    }
    std::map<uint64_t, uint64_t> numbers_;  // inner node id -> the number to report
};

std::shared_ptr<Backend> small_tree() {
    auto mem = make_mem_backend();
    EXPECT_TRUE(mem->mkdir("/d"));
    EXPECT_TRUE(write_file(*mem, "/d/f", "f"));
    EXPECT_TRUE(write_file(*mem, "/g", "g"));
    return mem;
}

TEST(PackInodeNumbers, AnySourceNumbersAreKeptEvenPast32Bits) {
    TempDir dir;
    const uint64_t big = uint64_t{1} << 40;
    RenumberedBackend source(small_tree(),
                             {{"/", big + 7}, {"/d", 3}, {"/d/f", big}, {"/g", UINT64_MAX}});
    const fs::path path = dir.path / "big.pack";
    build(source, path, true);
    auto pack = open_pack(path.string());
    ASSERT_TRUE(pack);
    EXPECT_EQ((*pack)->lstat("/")->ino, big + 7);
    EXPECT_EQ((*pack)->lstat("/d/f")->ino, big);
    EXPECT_EQ((*pack)->lstat("/g")->ino, UINT64_MAX);
    EXPECT_EQ((*pack)->readdir("/")->front().ino, 3u);
    EXPECT_TRUE((*pack)->verify().ok());
    auto reader = open_reader(path);
    ASSERT_NE(reader, nullptr);
    const Ctx ctx{"test", "/"};
    EXPECT_EQ(reader->max_inode_number(ctx), UINT64_MAX);
    for (uint64_t n : {uint64_t{3}, big, big + 7, UINT64_MAX}) {
        auto found = reader->by_inode_number(n, ctx);
        ASSERT_TRUE(found && found->has_value()) << n;
        EXPECT_EQ(reader->inode_number(**found), n);
    }
    auto none = reader->by_inode_number(big + 1, ctx);
    ASSERT_TRUE(none);
    EXPECT_FALSE(none->has_value());
}

TEST(PackInodeNumbers, ZeroOrSharedSourceNumbersAreRefusedNamingThePath) {
    TempDir dir;
    const fs::path out = dir.path / "refused.pack";
    struct Case {
        const char* name;
        std::map<std::string, uint64_t> numbers;
        const char* path;  // the one the error names
    };
    const Case cases[] = {
        {"a file numbered 0", {{"/d/f", 0}}, "/d/f"},
        {"the root numbered 0", {{"/", 0}}, "/"},
        {"two files, one number", {{"/g", 500}, {"/d/f", 500}}, "/d/f"},
        {"a file with its directory's number", {{"/d", 9}, {"/d/f", 9}}, "/d/f"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.name);
        RenumberedBackend source(small_tree(), c.numbers);
        PackWriteOptions o;
        o.keep_inode_numbers = true;
        auto r = write_pack(source, out.string(), o);
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error().code(), EINVAL);
        EXPECT_EQ(r.error().path(), c.path) << r.error().message();
        EXPECT_FALSE(fs::exists(out));
        // The same source builds without the option: its numbers are not used.
        EXPECT_TRUE(write_pack(source, out.string(), {}));
        fs::remove(out);
    }
    EXPECT_TRUE(fs::is_empty(dir.path)) << "a refused build left a file behind";
}

}  // namespace
}  // namespace packfs::pack
