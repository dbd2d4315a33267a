// The pack writer, checked by decoding its output with format.hpp alone (not through the
// reader): structure and checksums, reproducibility whatever the listing order, dedup that a
// forced hash collision cannot fool, compression, and a failed build leaving nothing behind.
#include "pack/writer/writer.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>

#include "conformance/conformance_suite.hpp"
#include "pack/format/codec.hpp"
#include "pack/format/digest.hpp"
#include "pack/format/format.hpp"
#include "pack/test_hooks.hpp"
#include "pack/writer/tree_source.hpp"
#include "packfs/mem.hpp"
#include "packfs/pack.hpp"
#include "support/files.hpp"

namespace packfs::pack {
namespace {

namespace fs = std::filesystem;
using test_support::slurp;
using test_support::TempDir;

// The decoder below reads version 1 (format 2's layout is checked by v2_test.cpp).
Result<PackStats> write_v1(Backend& source, const std::string& path, PackWriteOptions o = {}) {
    o.format = 1;
    return write_pack(source, path, o);
}

std::span<const std::byte> bytes_of(const std::string& s, uint64_t offset, uint64_t length) {
    EXPECT_LE(offset + length, s.size());
    return std::as_bytes(std::span(s.data() + offset, length));
}

// A minimal decoder: checks every checksum and gives the records back.
struct Decoded {
    Header header{};
    std::vector<Inode> inodes;
    std::vector<Dirent> dirents;
    std::vector<Content> contents;
    std::string bytes;
    std::string stream;  // decompressed
};

template <class T>
std::vector<T> records(const std::string& file, const SectionEntry& e) {
    std::vector<T> out(e.length / sizeof(T));
    std::memcpy(out.data(), file.data() + e.offset, out.size() * sizeof(T));
    return out;
}

Decoded decode(const std::string& file) {
    Decoded d;
    EXPECT_GE(file.size(), kDataOffset);
    std::memcpy(&d.header, file.data(), sizeof(Header));
    const Header& h = d.header;
    EXPECT_EQ(std::memcmp(h.magic, kMagic.data(), 8), 0);
    EXPECT_EQ(h.version, 1u);  // this decoder reads version 1 (write_v1)
    EXPECT_EQ(h.file_size, file.size());
    Header zeroed = h;
    zeroed.header_checksum = 0;
    EXPECT_EQ(xxh3_64(std::as_bytes(std::span(&zeroed, 1))), h.header_checksum);
    EXPECT_EQ(h.sums_offset, h.meta_offset + h.meta_length);
    EXPECT_EQ(xxh3_64(bytes_of(file, h.sums_offset, h.sums_length)), h.sums_checksum);
    for (uint64_t at = 0, i = 0; at < h.meta_length; at += kMetaBlockSize, ++i) {
        uint64_t sum;
        std::memcpy(&sum, file.data() + h.sums_offset + 8 * i, 8);
        uint64_t n = std::min<uint64_t>(kMetaBlockSize, h.meta_length - at);
        EXPECT_EQ(xxh3_64(bytes_of(file, h.meta_offset + at, n)), sum) << "meta block " << i;
    }
    for (const SectionEntry& e : h.sections) {
        EXPECT_EQ(e.offset % 8, 0u);
        EXPECT_GE(e.offset, h.meta_offset);
        EXPECT_LE(e.offset + e.length, h.meta_offset + h.meta_length);
        EXPECT_EQ(xxh3_64(bytes_of(file, e.offset, e.length)), e.checksum);
    }
    d.inodes = records<Inode>(file, h.sections[0]);
    d.dirents = records<Dirent>(file, h.sections[1]);
    d.contents = records<Content>(file, h.sections[2]);
    const SectionEntry& b = h.sections[static_cast<int>(Section::bytes)];
    d.bytes = file.substr(b.offset, b.length);
    EXPECT_EQ(d.inodes.size(), h.inode_count);
    if (h.codec == 0) {
        EXPECT_EQ(h.data_length, h.stream_size);
        d.stream = file.substr(h.data_offset, h.data_length);
    } else {
        auto offsets = records<uint64_t>(file, h.sections[static_cast<int>(Section::blocks)]);
        uint64_t count = (h.stream_size + h.block_size - 1) / h.block_size;
        EXPECT_EQ(offsets.size(), count + 1);
        for (uint64_t i = 0; i + 1 < offsets.size(); ++i) {
            uint64_t len = std::min<uint64_t>(h.block_size, h.stream_size - i * h.block_size);
            auto stored = bytes_of(file, h.data_offset + offsets[i], offsets[i + 1] - offsets[i]);
            std::string out(len, '\0');
            if (stored.size() == len) {
                std::memcpy(out.data(), stored.data(), len);
            } else {
                EXPECT_TRUE(decompress_block(static_cast<Codec>(h.codec), stored,
                                             std::as_writable_bytes(std::span(out))));
            }
            d.stream += out;
        }
    }
    // The image digest: SHA-256 of the header (digest, checksum zero) and the metadata.
    Header for_digest = h;
    for_digest.header_checksum = 0;
    std::memset(for_digest.image_digest, 0, 32);
    Sha256 sha;
    sha.update(std::as_bytes(std::span(&for_digest, 1)));
    sha.update(bytes_of(file, h.meta_offset, h.meta_length));
    auto digest = sha.finish();
    EXPECT_EQ(std::memcmp(digest.data(), h.image_digest, 32), 0);
    return d;
}

std::string content_of(const Decoded& d, const Content& c) {
    if (c.size <= d.header.inline_max) return d.bytes.substr(c.offset, c.size);
    return d.stream.substr(c.offset, c.size);
}

// Resolves a path by walking dirents (names sorted, so a linear scan checks the order too).
const Inode* lookup(const Decoded& d, std::string_view path) {
    const Inode* at = &d.inodes[0];
    std::stringstream ss{std::string(path)};
    std::string part;
    while (std::getline(ss, part, '/')) {
        if (part.empty()) continue;
        if ((at->mode & S_IFMT) != S_IFDIR) return nullptr;
        const Inode* next = nullptr;
        for (uint64_t i = at->ref; i < at->ref + at->size; ++i) {
            const Dirent& e = d.dirents[i];
            if (d.bytes.compare(e.name_offset, e.name_length, part) == 0) next = &d.inodes[e.ino - 1];
        }
        if (!next) return nullptr;
        at = next;
    }
    return at;
}

std::string file_content(const Decoded& d, std::string_view path) {
    const Inode* inode = lookup(d, path);
    if (!inode) return "<missing>";
    if (inode->ref == 0) return "";
    return content_of(d, d.contents[inode->ref - 1]);
}

std::shared_ptr<Backend> fixture_backend() {
    auto mem = make_mem_backend();
    conformance::Capabilities caps;
    EXPECT_TRUE(conformance::build_fixture_tree(*mem, caps));
    return mem;
}

// A source that lists every directory in a shuffled order (or reversed).
class ShuffledSource final : public TreeSource {
public:
    ShuffledSource(std::unique_ptr<TreeSource> inner, uint32_t seed)
        : inner_(std::move(inner)), rng_(seed) {}
    Result<SourceNode> root() override { return inner_->root(); }
    Result<std::vector<SourceNode>> list(SourceRef dir) override {
        auto nodes = inner_->list(dir);
        if (nodes) std::shuffle(nodes->begin(), nodes->end(), rng_);
        return nodes;
    }
    Result<std::string> readlink(SourceRef p) override { return inner_->readlink(p); }
    Result<Xattrs> xattrs(SourceRef p) override {
        auto x = inner_->xattrs(p);
        if (x) std::shuffle(x->begin(), x->end(), rng_);
        return x;
    }
    Result<std::unique_ptr<ContentReader>> open(SourceRef p) override {
        return inner_->open(p);
    }

private:
    std::unique_ptr<TreeSource> inner_;
    std::mt19937 rng_;
};

TEST(PackWriter, FixtureTreeDecodesWithEveryChecksumRight) {
    TempDir dir;
    auto mem = fixture_backend();
    auto stats = write_v1(*mem, (dir.path / "a.pack").string());
    ASSERT_TRUE(stats) << stats.error().message();
    std::string file = slurp(dir.path / "a.pack");
    EXPECT_EQ(stats->pack_bytes, file.size());
    Decoded d = decode(file);
    EXPECT_EQ(file_content(d, "/docs/readme.txt"), conformance::kReadme);
    EXPECT_EQ(file_content(d, "/docs/nested/deep/leaf.txt"), "leaf\n");
    EXPECT_EQ(file_content(d, "/docs/empty.txt"), "");
    for (std::size_t size : conformance::kFixtureSizes) {
        std::string path = "/data/" + std::to_string(size) + ".bin";
        EXPECT_EQ(file_content(d, path), conformance::pattern_bytes(size, size % 251)) << path;
    }
    // Hard links: one inode, nlink 2.
    const Inode* a = lookup(d, "/hard/a");
    ASSERT_TRUE(a);
    EXPECT_EQ(a, lookup(d, "/hard/b"));
    EXPECT_EQ(a->nlink, 2u);
    // A symlink's target lives in the bytes section.
    const Inode* rel = lookup(d, "/links/rel");
    ASSERT_TRUE(rel);
    EXPECT_EQ((rel->mode & S_IFMT), static_cast<uint32_t>(S_IFLNK));
    EXPECT_EQ(d.bytes.substr(rel->ref, rel->size), "../docs/readme.txt");
    // Dirents of each directory are sorted, and their types agree with the inodes.
    for (const Inode& inode : d.inodes) {
        if ((inode.mode & S_IFMT) != S_IFDIR) continue;
        for (uint64_t i = inode.ref; i < inode.ref + inode.size; ++i) {
            const Dirent& e = d.dirents[i];
            EXPECT_EQ(e.type, d.inodes[e.ino - 1].mode >> 12);
            std::string name = d.bytes.substr(e.name_offset, e.name_length);
            EXPECT_EQ(e.name_prefix, name_prefix(name.data(), name.size()));
            if (i > inode.ref) {
                const Dirent& p = d.dirents[i - 1];
                EXPECT_LT(d.bytes.substr(p.name_offset, p.name_length), name);
            }
        }
    }
    // SHA-256 of each content.
    for (const Content& c : d.contents) {
        std::string content = content_of(d, c);
        auto sha = sha256(std::as_bytes(std::span(content)));
        EXPECT_EQ(std::memcmp(sha.data(), c.sha256, 32), 0);
    }
    EXPECT_EQ(stats->digest, to_hex(d.header.image_digest));
}

TEST(PackWriter, SameTreeGivesTheSameBytesWhateverTheListingOrder) {
    TempDir dir;
    auto mem = fixture_backend();
    using Layout = PackWriteOptions::Layout;
    struct Case {
        Compression c;
        uint32_t format;
        Layout layout;
    };
    for (auto [c, format, layout] : {Case{Compression::none, 1u, Layout::inodes},
                                     Case{Compression::zstd, 1u, Layout::inodes},
                                     Case{Compression::none, 2u, Layout::walk},
                                     Case{Compression::zstd, 2u, Layout::walk},
                                     Case{Compression::none, 2u, Layout::inodes},
                                     Case{Compression::zstd, 2u, Layout::inodes}}) {
        PackWriteOptions options;
        options.compression = c;
        options.format = format;
        options.layout = layout;
        ASSERT_TRUE(write_pack(*mem, (dir.path / "1.pack").string(), options));
        ASSERT_TRUE(write_pack(*mem, (dir.path / "2.pack").string(), options));
        auto source = make_backend_source(*mem, "/");
        ASSERT_TRUE(source);
        ShuffledSource shuffled(std::move(*source), 42);
        options.jobs = 1;  // and with another thread count
        ASSERT_TRUE(write_pack_from_source(shuffled, (dir.path / "3.pack").string(), options));
        std::string one = slurp(dir.path / "1.pack");
        EXPECT_EQ(one, slurp(dir.path / "2.pack"));
        EXPECT_EQ(one, slurp(dir.path / "3.pack"));
    }
}

// What a pack records of a tree's times: mtime alone by default (a copy of the tree, or a
// read of it, changes the other two), all three when asked, and a clamp caps them.
TEST(PackWriter, RecordsMtimeAloneUnlessAskedAndClampsOnRequest) {
    TempDir dir;
    auto mem = make_mem_backend();
    ASSERT_TRUE(write_file(*mem, "/old", "a"));
    ASSERT_TRUE(write_file(*mem, "/future", "b"));
    const Time atime{1'000'000'000, 7}, mtime{1'234'567'890, 123'456'789}, future{4'102'444'800, 5};
    ASSERT_TRUE(mem->utimens("/old", TimeUpdate::at(atime), TimeUpdate::at(mtime)));
    ASSERT_TRUE(mem->utimens("/future", TimeUpdate::at(atime), TimeUpdate::at(future)));
    const Time ctime = mem->lstat("/old")->ctime;
    ASSERT_NE(ctime, mtime);
    auto times_of = [&](const PackWriteOptions& options, const std::string& path) {
        const std::string pack = (dir.path / "t.pack").string();
        EXPECT_TRUE(write_v1(*mem, pack, options));
        Decoded d = decode(slurp(pack));
        const Inode* n = lookup(d, path);
        EXPECT_TRUE(n) << path;
        if (!n) return std::array<Time, 3>{};
        return std::array<Time, 3>{Time{n->atime_sec, n->atime_nsec},
                                   Time{n->mtime_sec, n->mtime_nsec},
                                   Time{n->ctime_sec, n->ctime_nsec}};
    };
    PackWriteOptions options;
    EXPECT_EQ(times_of(options, "/old"), (std::array<Time, 3>{mtime, mtime, mtime}));
    options.times = PackTimes::all;
    EXPECT_EQ(times_of(options, "/old"), (std::array<Time, 3>{atime, mtime, ctime}));
    const Time clamp{1'700'000'000, 0};
    options.clamp_time = clamp;
    EXPECT_EQ(times_of(options, "/future"),
              (std::array<Time, 3>{atime, clamp, std::min(ctime, clamp)}));
    EXPECT_EQ(times_of(options, "/old"),
              (std::array<Time, 3>{atime, mtime, std::min(ctime, clamp)}));
    options.times = PackTimes::mtime;
    EXPECT_EQ(times_of(options, "/future"), (std::array<Time, 3>{clamp, clamp, clamp}));
    options.clamp_time = Time{0, 1'000'000'000};
    auto refused = write_v1(*mem, (dir.path / "bad.pack").string(), options);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code(), EINVAL);
    EXPECT_FALSE(fs::exists(dir.path / "bad.pack"));
}

TEST(PackWriter, DuplicatesShareOneContentAndDifferentContentsDoNot) {
    TempDir dir;
    auto mem = make_mem_backend();
    std::string big = conformance::pattern_bytes(100000, 7);
    std::string other = big;
    other[50000] ^= 1;  // same size, same everything but one byte
    ASSERT_TRUE(write_file(*mem, "/a", big));
    ASSERT_TRUE(write_file(*mem, "/b", big));
    ASSERT_TRUE(write_file(*mem, "/c", other));
    ASSERT_TRUE(write_file(*mem, "/tiny1", "same"));
    ASSERT_TRUE(write_file(*mem, "/tiny2", "same"));
    auto stats = write_v1(*mem, (dir.path / "d.pack").string());
    ASSERT_TRUE(stats);
    Decoded d = decode(slurp(dir.path / "d.pack"));
    EXPECT_EQ(d.contents.size(), 3u);
    EXPECT_EQ(lookup(d, "/a")->ref, lookup(d, "/b")->ref);
    EXPECT_NE(lookup(d, "/a")->ref, lookup(d, "/c")->ref);
    EXPECT_EQ(file_content(d, "/c"), other);
    EXPECT_EQ(stats->file_bytes, 300008u);
    EXPECT_EQ(stats->unique_bytes, 200004u);

    // Without dedup every file has its own content.
    PackWriteOptions no_dedup;
    no_dedup.dedup = false;
    ASSERT_TRUE(write_v1(*mem, (dir.path / "n.pack").string(), no_dedup));
    EXPECT_EQ(decode(slurp(dir.path / "n.pack")).contents.size(), 5u);
}

TEST(PackWriter, ForcedHashCollisionKeepsBothContents) {
    TempDir dir;
    auto mem = make_mem_backend();
    for (int i = 0; i < 20; ++i)
        ASSERT_TRUE(write_file(*mem, "/f" + std::to_string(i), conformance::pattern_bytes(5000, i % 10)));
    PackWriteOptions options;
    options.format = 1;  // what the decoder below reads
    WriteHooks hooks;
    hooks.dedup_hash = [](std::span<const std::byte>) { return std::array<uint64_t, 2>{42, 42}; };
    ASSERT_TRUE(write_pack_with_hooks(*mem, (dir.path / "c.pack").string(), options, hooks));
    Decoded d = decode(slurp(dir.path / "c.pack"));
    EXPECT_EQ(d.contents.size(), 10u);  // ten distinct patterns, each stored once
    for (int i = 0; i < 20; ++i)
        EXPECT_EQ(file_content(d, "/f" + std::to_string(i)), conformance::pattern_bytes(5000, i % 10));
}

TEST(PackWriter, CompressedStreamsDecodeToTheSameContents) {
    TempDir dir;
    auto mem = fixture_backend();
    std::string raw_stream;
    for (auto [c, level] : {std::pair{Compression::none, 0}, {Compression::zstd, 0},
                            {Compression::zstd, 19}, {Compression::lz4, 0}, {Compression::lz4, 9}}) {
        PackWriteOptions options;
        options.compression = c;
        options.level = level;
        options.block_size = 4096;
        auto stats = write_v1(*mem, (dir.path / "z.pack").string(), options);
        ASSERT_TRUE(stats);
        Decoded d = decode(slurp(dir.path / "z.pack"));
        if (c == Compression::none) raw_stream = d.stream;
        EXPECT_EQ(file_content(d, "/data/196609.bin"), conformance::pattern_bytes(196609, 196609 % 251));
        EXPECT_EQ(file_content(d, "/docs/readme.txt"), conformance::kReadme);
    }
}

TEST(PackWriter, FromHostDirectoryKeepsLinksAndModes) {
    TempDir dir;
    fs::path src = dir.path / "src";
    fs::create_directories(src / "sub");
    { std::ofstream(src / "sub" / "f.txt") << "hello host"; }
    fs::create_hard_link(src / "sub" / "f.txt", src / "g.txt");
    fs::create_symlink("sub/f.txt", src / "l");
    ::chmod((src / "g.txt").c_str(), 0640);
    PackWriteOptions v1;
    v1.format = 1;
    auto stats = write_pack_from_host(src.string(), (dir.path / "h.pack").string(), v1);
    ASSERT_TRUE(stats) << stats.error().message();
    Decoded d = decode(slurp(dir.path / "h.pack"));
    EXPECT_EQ(file_content(d, "/sub/f.txt"), "hello host");
    EXPECT_EQ(lookup(d, "/g.txt"), lookup(d, "/sub/f.txt"));
    EXPECT_EQ(lookup(d, "/g.txt")->mode & 07777, 0640u);
    EXPECT_EQ(lookup(d, "/g.txt")->nlink, 2u);
    const Inode* l = lookup(d, "/l");
    EXPECT_EQ(d.bytes.substr(l->ref, l->size), "sub/f.txt");
    EXPECT_EQ(stats->hard_links, 1u);
}

// A source whose files cannot be opened: every one, or only `path`.
class OpenFails final : public TreeSource {
public:
    explicit OpenFails(std::unique_ptr<TreeSource> s, std::string path = {})
        : s_(std::move(s)), path_(std::move(path)) {}
    Result<SourceNode> root() override { return s_->root(); }
    Result<std::vector<SourceNode>> list(SourceRef d) override { return s_->list(d); }
    Result<std::string> readlink(SourceRef p) override { return s_->readlink(p); }
    Result<Xattrs> xattrs(SourceRef p) override { return s_->xattrs(p); }
    Result<std::unique_ptr<ContentReader>> open(SourceRef p) override {
        if (path_.empty() || p.path == path_) return fail(EIO, "open", p.path);
        return s_->open(p);
    }

private:
    std::unique_ptr<TreeSource> s_;
    std::string path_;
};

TEST(PackWriter, AFailedBuildLeavesNothingBehind) {
    TempDir dir;
    auto missing = write_pack_from_host((dir.path / "nope").string(), (dir.path / "x.pack").string());
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().code(), ENOENT);
    auto mem = fixture_backend();
    PackWriteOptions bad;
    bad.block_size = 1000;
    auto r = write_v1(*mem, (dir.path / "x.pack").string(), bad);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), EINVAL);
    // An unreadable file in the source: the build fails and leaves no temporary file.
    fs::create_directories(dir.path / "out");
    auto unreadable = make_mem_backend();
    ASSERT_TRUE(write_file(*unreadable, "/a", "x"));
    auto source = make_backend_source(*unreadable, "/");
    ASSERT_TRUE(source);
    OpenFails failing(std::move(*source));
    auto failed = write_pack_from_source(failing, (dir.path / "out" / "y.pack").string(), {});
    ASSERT_FALSE(failed);
    EXPECT_EQ(failed.error().code(), EIO);
    EXPECT_EQ(failed.error().path(), "/a");
    EXPECT_TRUE(fs::is_empty(dir.path / "out"));
}

// More held bytes than the hashing may hold at once (16 files of 1 MiB against a 4 MiB
// budget, the test hook's; the default is 64 MiB), every fourth a duplicate: the workers wait
// for room and the writer still gets every file in order; any number of jobs gives the same
// bytes, and every file reads back.
TEST(PackWriter, HashingAheadPastItsBudgetKeepsOrderAndBytes) {
    TempDir dir;
    auto mem = make_mem_backend();
    constexpr std::size_t kMiB = 1 << 20;
    constexpr int kFiles = 16;
    std::vector<std::string> contents;  // made once: a MiB of pattern is slow under TSan
    for (int i = 0; i < kFiles; ++i) {
        const int seed = i % 4 == 3 ? i - 1 : i;  // every fourth file the one before it again
        contents.push_back(conformance::pattern_bytes(kMiB - static_cast<std::size_t>(seed % 3),
                                                      static_cast<uint8_t>(seed)));
    }
    auto content_of = [&contents](int i) -> const std::string& { return contents[i]; };
    for (int i = 0; i < kFiles; ++i)
        ASSERT_TRUE(write_file(*mem, fmt::format("/f{:02}", i), content_of(i)));
    std::string first;
    for (unsigned jobs : {1u, 4u}) {
        PackWriteOptions options;
        options.jobs = jobs;
        WriteHooks hooks;
        hooks.hold_budget = 4 * kMiB;
        const std::string path = (dir.path / fmt::format("j{}.pack", jobs)).string();
        auto stats = write_pack_with_hooks(*mem, path, options, hooks);
        ASSERT_TRUE(stats) << stats.error().message();
        uint64_t unique = 0;  // the twins are stored once
        for (int i = 0; i < kFiles; ++i) unique += i % 4 == 3 ? 0 : content_of(i).size();
        EXPECT_EQ(stats->unique_bytes, unique);
        if (first.empty()) first = slurp(path);
        EXPECT_EQ(slurp(path), first) << jobs << " jobs";
        auto pack = open_pack(path);
        ASSERT_TRUE(pack);
        for (int i = 0; i < kFiles; ++i)
            EXPECT_EQ(read_file(**pack, fmt::format("/f{:02}", i)).value_or("?"), content_of(i));
    }
}

// Several workers waiting for room in the budget at once: when one claims the file they all
// wait for, the others start over from the next one (a second claim hashed a file twice while
// the writer read it, and counted its bytes twice in the budget, which then never drained).
TEST(PackWriter, WorkersWaitingForRoomTogetherNeverClaimAFileTwice) {
    TempDir dir;
    auto mem = make_mem_backend();
    constexpr std::size_t kMiB = 1 << 20;
    constexpr int kFiles = 24;
    std::vector<std::string> contents;  // made once: a MiB of pattern is slow under TSan
    for (int i = 0; i < kFiles; ++i)
        contents.push_back(conformance::pattern_bytes(kMiB - static_cast<std::size_t>(i % 5),
                                                      static_cast<uint8_t>(i)));
    auto content_of = [&contents](int i) -> const std::string& { return contents[i]; };
    for (int i = 0; i < kFiles; ++i)
        ASSERT_TRUE(write_file(*mem, fmt::format("/f{:03}", i), content_of(i)));
    for (unsigned jobs : {3u, 8u}) {
        PackWriteOptions options;
        options.jobs = jobs;
        options.compression = Compression::zstd;  // a slower writer: the workers wait for room
        WriteHooks hooks;
        hooks.hold_budget = 4 * kMiB;  // room for 4 of the 24 files at once
        // The hook runs once per file hashed: a file claimed twice is counted twice.
        std::atomic<int> hashed{0};
        hooks.dedup_hash = [&hashed](std::span<const std::byte> bytes) {
            hashed.fetch_add(1, std::memory_order_relaxed);
            return xxh3_128(bytes);
        };
        const std::string path = (dir.path / fmt::format("j{}.pack", jobs)).string();
        auto stats = write_pack_with_hooks(*mem, path, options, hooks);
        ASSERT_TRUE(stats) << stats.error().message();
        auto pack = open_pack(path);
        ASSERT_TRUE(pack);
        for (int i = 0; i < kFiles; ++i)
            EXPECT_TRUE(read_file(**pack, fmt::format("/f{:03}", i)).value_or("?") == content_of(i))
                << "/f" << i << " holds other bytes (" << jobs << " jobs)";
        EXPECT_TRUE((*pack)->verify().ok());
        EXPECT_EQ(hashed.load(), kFiles) << jobs << " jobs: every file hashed once";
    }
}

// A read that fails while compressed blocks are in flight on the workers: the build fails with
// the read's error, the workers stop, and nothing is left behind.
TEST(PackWriter, AFailureWhileBlocksCompressLeavesNothingBehind) {
    TempDir dir;
    fs::create_directories(dir.path / "out");
    auto mem = make_mem_backend();
    // Files are hashed ahead of the writer: /f40's read fails on a worker while the writer is
    // still writing the files before it and their blocks are on the compressing workers.
    for (int i = 0; i < 48; ++i)
        ASSERT_TRUE(write_file(*mem, fmt::format("/f{:02}", i),
                               conformance::pattern_bytes(300'000, static_cast<uint8_t>(i))));
    for (Compression c : {Compression::zstd, Compression::lz4}) {
        auto source = make_backend_source(*mem, "/");
        ASSERT_TRUE(source);
        OpenFails failing(std::move(*source), "/f40");
        PackWriteOptions options;
        options.compression = c;
        options.block_size = 4096;  // many small blocks: the window is full when it fails
        options.jobs = 4;
        auto failed =
            write_pack_from_source(failing, (dir.path / "out" / "z.pack").string(), options);
        ASSERT_FALSE(failed);
        EXPECT_EQ(failed.error().code(), EIO);
        EXPECT_EQ(failed.error().path(), "/f40");
        EXPECT_TRUE(fs::is_empty(dir.path / "out"));
    }
}

// Many small files, hashed in batches (up to 64 files of at most 64 KiB together), with files
// too large for a batch and duplicates among them: 1, 2 and 4 jobs give the same bytes, every
// file reads back, and a file that fails to open in the middle of a batch fails the build with
// its own path.
TEST(PackWriter, SmallFilesHashedInBatchesKeepOrderAndBytes) {
    TempDir dir;
    auto mem = make_mem_backend();
    auto content_of = [](int i) {
        if (i % 97 == 5) return conformance::pattern_bytes(70'000, static_cast<uint8_t>(i));
        const int seed = i % 10 == 9 ? i - 3 : i;  // every tenth a copy of an earlier file
        return conformance::pattern_bytes(static_cast<std::size_t>(seed % 300),
                                          static_cast<uint8_t>(seed));
    };
    for (int i = 0; i < 1000; ++i)
        ASSERT_TRUE(write_file(*mem, fmt::format("/s{:04}", i), content_of(i)));
    std::string first;
    for (unsigned jobs : {1u, 2u, 4u}) {
        PackWriteOptions options;
        options.jobs = jobs;
        const std::string path = (dir.path / fmt::format("j{}.pack", jobs)).string();
        auto stats = write_pack(*mem, path, options);
        ASSERT_TRUE(stats) << stats.error().message();
        if (first.empty()) first = slurp(path);
        EXPECT_EQ(slurp(path), first) << jobs << " jobs";
        auto pack = open_pack(path);
        ASSERT_TRUE(pack);
        for (int i = 0; i < 1000; ++i)
            ASSERT_EQ(read_file(**pack, fmt::format("/s{:04}", i)).value_or("?"), content_of(i))
                << i;
    }
    fs::create_directories(dir.path / "out");
    for (unsigned jobs : {1u, 3u}) {
        auto source = make_backend_source(*mem, "/");
        ASSERT_TRUE(source);
        OpenFails failing(std::move(*source), "/s0533");
        PackWriteOptions options;
        options.jobs = jobs;
        auto failed =
            write_pack_from_source(failing, (dir.path / "out" / "b.pack").string(), options);
        ASSERT_FALSE(failed);
        EXPECT_EQ(failed.error().code(), EIO);
        EXPECT_EQ(failed.error().path(), "/s0533");
        EXPECT_TRUE(fs::is_empty(dir.path / "out"));
    }
}

}  // namespace
}  // namespace packfs::pack
