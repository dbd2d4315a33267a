// A walk's prefetch (src/remote/walk_ahead.hpp, docs/REMOTE.md "Prefetch"): first the bookkeeping
// alone, against the files a scheduler is handed; then a remote pack behind nginx, where the
// files a walk opens next must be in the cache before they are read (the pack is taken off
// the server, and they still read), while a listing alone, or opens that jump about, fetch
// nothing more than what is read.
#include "remote/walk_ahead.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <numeric>
#include <thread>

#include "packfs/mem.hpp"
#include "packfs/pack.hpp"
#include "packfs/remote.hpp"
#include "remote/remote_support.hpp"
#include "support/files.hpp"
#include "support/nginx_server.hpp"

namespace packfs {
namespace {

using remote::WalkAhead;
using test_support::NginxServer;
using namespace remote_test;

// Records 1..n listed in order; every file costs `bytes`. Returns what each open scheduled.
struct Walk {
    WalkAhead walk;
    uint64_t bytes = 10;
    std::vector<uint64_t> open(uint64_t record, uint64_t budget) {
        std::vector<uint64_t> scheduled;
        walk.opened(record, budget, [&](uint64_t r) {
            scheduled.push_back(r);
            return bytes;
        });
        return scheduled;
    }
    void list(uint64_t first, uint64_t last) {
        std::vector<uint64_t> files(last - first + 1);
        std::iota(files.begin(), files.end(), first);
        walk.listed(files);
    }
};

using V = std::vector<uint64_t>;

TEST(WalkAhead, OpensInListingOrderScheduleWhatFollowsUpToTheBudget) {
    Walk w;
    w.list(1, 100);
    EXPECT_EQ(w.open(1, 50), V{});
    EXPECT_EQ(w.open(2, 50), V{});
    // The third open makes a walk: 50 bytes after it, five files of 10.
    EXPECT_EQ(w.open(3, 50), (V{4, 5, 6, 7, 8}));
    // Each open moves the walk on by one file; while half the budget or more is still ahead,
    // nothing more is scheduled (a batch of files, not a file an open, is fetched together).
    EXPECT_EQ(w.open(4, 50), V{});
    EXPECT_EQ(w.open(5, 50), V{});
    // Below half: topped up to the whole budget.
    EXPECT_EQ(w.open(6, 50), (V{9, 10, 11}));
    // Skipping ahead (another reader took 7 and 8) counts what was passed as read.
    EXPECT_EQ(w.open(9, 50), (V{12, 13, 14}));
    // An open behind the furthest one schedules nothing new.
    EXPECT_EQ(w.open(7, 50), V{});
}

TEST(WalkAhead, NothingPastTheLastFileListedAndMoreOnceMoreIsListed) {
    Walk w;
    w.list(1, 6);
    w.open(1, 1000);
    w.open(2, 1000);
    EXPECT_EQ(w.open(3, 1000), (V{4, 5, 6}));
    w.list(7, 8);  // the next directory the walk lists
    EXPECT_EQ(w.open(4, 1000), (V{7, 8}));
}

TEST(WalkAhead, OpensThatJumpAboutScheduleNothing) {
    Walk w;
    w.list(1, 2000);
    for (uint64_t r : {1, 500, 1000, 1500, 250, 750, 1250, 1750, 100, 900})
        EXPECT_EQ(w.open(r, 1000), V{}) << r;
    EXPECT_EQ(w.open(5000, 1000), V{});  // never listed: opened by name
}

TEST(WalkAhead, InterleavedReadersEachMakeTheirOwnStream) {
    Walk w;
    w.list(1, 1000);
    // Two readers, each on its own run of files, their opens alternating.
    EXPECT_EQ(w.open(1, 20), V{});
    EXPECT_EQ(w.open(501, 20), V{});
    EXPECT_EQ(w.open(2, 20), V{});
    EXPECT_EQ(w.open(502, 20), V{});
    EXPECT_EQ(w.open(3, 20), (V{4, 5}));
    EXPECT_EQ(w.open(503, 20), (V{504, 505}));
    EXPECT_EQ(w.open(4, 20), V{});  // half the budget still ahead
    EXPECT_EQ(w.open(5, 20), (V{6, 7}));
}

TEST(WalkAhead, FilesListedTooLongAgoAreForgotten) {
    Walk w;
    w.list(1, WalkAhead::kCapacity + 10);  // records 1..10 have left the ring
    EXPECT_EQ(w.open(1, 100), V{});
    EXPECT_EQ(w.open(2, 100), V{});
    EXPECT_EQ(w.open(3, 100), V{});
    const uint64_t last = WalkAhead::kCapacity + 10;
    w.open(last - 5, 100);
    w.open(last - 4, 100);
    EXPECT_EQ(w.open(last - 3, 100), (V{last - 2, last - 1, last}));
}

TEST(WalkAhead, OpeningOneFileAgainAndAgainIsNoWalk) {
    // A FUSE mount without open handles opens a file for each READ it serves.
    Walk w;
    w.list(1, 100);
    for (int read = 0; read < 10; ++read) EXPECT_EQ(w.open(5, 50), V{}) << read;
    // A walk is still found after it, each file counted once however often it was opened.
    EXPECT_EQ(w.open(6, 50), V{});
    EXPECT_EQ(w.open(6, 50), V{});
    EXPECT_EQ(w.open(7, 50), (V{8, 9, 10, 11, 12}));
}

// --- against nginx --------------------------------------------------------------------------

using Files = std::vector<std::pair<std::string, std::string>>;  // path, bytes

struct Tree {
    std::string url;
    std::filesystem::path served;  // the pack in nginx's root
    Files all;                     // every file
};

// /d0, /d1, /d2 of 30 files each, 20 KB of random bytes (two or three raw blocks of 16 KiB
// each), and /many, 400 files of 5000 bytes.
Tree serve_tree(const std::string& name, Compression compression = Compression::none) {
    NginxServer& server = NginxServer::shared();
    Tree t;
    t.url = server.url(name);
    if (t.url.empty()) {
        ADD_FAILURE() << server.start_error();
        return t;
    }
    auto mem = make_mem_backend();
    auto add = [&](const std::string& path, std::string bytes) {
        t.all.emplace_back(path, std::move(bytes));
        EXPECT_TRUE(write_file(*mem, path, t.all.back().second));
    };
    for (int d = 0; d < 3; ++d) {
        EXPECT_TRUE(mem->mkdir("/d" + std::to_string(d), 0755));
        for (int f = 0; f < 30; ++f)
            add("/d" + std::to_string(d) + "/f" + std::to_string(f),
                random_bytes(20000 + 13 * f, 100 * d + f));
    }
    EXPECT_TRUE(mem->mkdir("/many", 0755));
    for (int f = 0; f < 400; ++f) add("/many/f" + std::to_string(f), random_bytes(5000, 1000 + f));
    PackWriteOptions options;
    options.block_size = 16384;
    options.compression = compression;  // zstd: compressed metadata, which can come by block
    t.served = server.root() / name;
    EXPECT_TRUE(write_pack(*mem, t.served.string(), options));
    return t;
}

RemoteOptions options_for(const test_support::TempDir& cache, uint64_t readahead) {
    RemoteOptions options;
    options.cache_dir = cache.path.string();
    options.readahead_bytes = readahead;
    return options;
}

// Lists every directory of the tree (checking that this fetches nothing, when the metadata
// came whole) and returns the files of `dir` in their listing order.
Files list_all(const Tree& t, PackBackend& pack, const std::string& name, const std::string& dir,
               bool metadata_whole = true) {
    const uint64_t before = bytes_fetched(name);
    Files out;
    for (const char* d : {"/d0", "/d1", "/d2", "/many"}) {
        auto entries = pack.readdir(d);
        EXPECT_TRUE(entries);
        if (!entries || d != dir) continue;
        for (const DirEntry& e : *entries) {
            const std::string path = dir + "/" + e.name;
            for (const auto& f : t.all)
                if (f.first == path) out.push_back(f);
        }
    }
    if (metadata_whole) {
        EXPECT_EQ(bytes_fetched(name), before) << "a listing fetched data";
    }
    return out;
}

// Reads the first ten files of /d0 in listing order with `readahead`, then takes the pack off
// the server: how many of the next three still read (from the cache), and whether a file far
// beyond them does (one of /d2, listed after /d1 and 400 KB further in the pack).
std::pair<int, bool> walk_then_take_away(const std::string& name, uint64_t readahead,
                                         bool metadata_by_block = false) {
    const Tree t = serve_tree(name, metadata_by_block ? Compression::zstd : Compression::none);
    if (t.url.empty()) return {-1, false};
    test_support::TempDir cache;
    RemoteOptions options = options_for(cache, readahead);
    if (metadata_by_block) options.metadata_whole_bytes = 0;
    auto pack = open_remote_pack(t.url, options);
    EXPECT_TRUE(pack) << pack.error().message();
    if (!pack) return {-1, false};
    const Files d0 = list_all(t, **pack, name, "/d0", !metadata_by_block);
    EXPECT_EQ(d0.size(), 30u);
    if (d0.size() != 30) return {-1, false};
    for (int i = 0; i < 10; ++i) EXPECT_EQ(read_all(**pack, d0[i].first), d0[i].second) << i;
    settle(name);
    const auto moved = t.served.string() + ".away";
    std::filesystem::rename(t.served, moved);
    int here = 0;
    for (int i = 10; i < 13; ++i) here += read_all(**pack, d0[i].first) == d0[i].second ? 1 : 0;
    const auto& far = *std::find_if(t.all.begin(), t.all.end(),
                                    [](const auto& f) { return f.first == "/d2/f5"; });
    const bool far_here = read_all(**pack, far.first) == far.second;
    std::filesystem::rename(moved, t.served);
    return {here, far_here};
}

TEST(RemoteWalk, TheFilesAWalkOpensNextAreFetchedBeforeItReadsThem) {
    // 128 KiB ahead: three or four files of two or three blocks each.
    const auto [here, far_here] = walk_then_take_away("walk-ahead.pack", 128 * 1024);
    EXPECT_EQ(here, 3);
    EXPECT_FALSE(far_here);
}

TEST(RemoteWalk, WithMetadataFetchedByBlockTheWalkUsesWhatIsHere) {
    // Scheduling reads only metadata already fetched (an open never waits on the server for
    // another file's sake); the files after those read have theirs fetched with them.
    const auto [here, far_here] = walk_then_take_away("walk-ahead-by-block.pack", 128 * 1024, true);
    EXPECT_EQ(here, 3);
    EXPECT_FALSE(far_here);
}

TEST(RemoteWalk, TheFilesAheadAreFetchedInPackOrderInFewRequests) {
    // A walk meets a directory's files in listing (name hash) order, while they lie next to
    // each other in the pack: a batch scheduled ahead is fetched in pack order, in requests of
    // up to 512 KiB, not a request a file. /many: 400 files of 5000 bytes; 1 MiB ahead.
    const std::string name = "walk-ahead-few.pack";
    const Tree t = serve_tree(name);
    ASSERT_FALSE(t.url.empty());
    test_support::TempDir cache;
    auto pack = open_remote_pack(t.url, options_for(cache, 1 << 20));
    ASSERT_TRUE(pack) << pack.error().message();
    const Files many = list_all(t, **pack, name, "/many");
    ASSERT_EQ(many.size(), 400u);
    const auto before = ranges_fetched(name).size();
    for (int i = 0; i < 3; ++i) EXPECT_EQ(read_all(**pack, many[i].first), many[i].second) << i;
    settle(name);
    const auto after = ranges_fetched(name);
    uint64_t bytes = 0;
    for (std::size_t i = before; i < after.size(); ++i)
        bytes += after[i].second - after[i].first + 1;
    EXPECT_GE(bytes, 1u << 20);  // the batch was fetched
    // Three reads, then the rest of the directory (its files between those scheduled come
    // along) in requests of up to 512 KiB, some cut where a read claimed a block first: 10
    // here, against 92-102 for ranges fetched as they were scheduled.
    EXPECT_LE(after.size() - before, 16u) << bytes << " bytes";
}

TEST(RemoteWalk, WithMetadataFetchedByBlockAWideDirectoryIsFetchedAhead) {
    // 5,000 files in one directory: its listing order (by name hash) visits their inodes at
    // random, so the inodes of the files ahead of a walk are in frames fetched (with the
    // frames around the ones used) but not inflated. Scheduling inflates them from what was
    // fetched, without the server, and fetches the files ahead.
    NginxServer& server = NginxServer::shared();
    const std::string name = "walk-ahead-wide.pack";
    ASSERT_FALSE(server.url(name).empty()) << server.start_error();
    auto mem = make_mem_backend();
    ASSERT_TRUE(mem->mkdir("/wide", 0755));
    std::map<std::string, std::string> bytes;
    for (int f = 0; f < 5000; ++f) {
        const std::string path = "/wide/f" + std::to_string(f);
        bytes[path] = random_bytes(200, 7000 + f);
        ASSERT_TRUE(write_file(*mem, path, bytes[path]));
    }
    PackWriteOptions write;
    write.block_size = 16384;
    write.compression = Compression::zstd;
    const auto served = server.root() / name;
    ASSERT_TRUE(write_pack(*mem, served.string(), write));

    test_support::TempDir cache;
    RemoteOptions options = options_for(cache, 64 * 1024);
    options.metadata_whole_bytes = 0;
    auto pack = open_remote_pack(server.url(name), options);
    ASSERT_TRUE(pack) << pack.error().message();
    auto listed = (*pack)->readdir("/wide");
    ASSERT_TRUE(listed);
    std::vector<std::string> walk;
    for (const DirEntry& e : *listed) walk.push_back("/wide/" + e.name);
    for (int i = 0; i < 10; ++i) EXPECT_EQ(read_all(**pack, walk[i]), bytes[walk[i]]) << i;
    settle(name);
    const auto moved = served.string() + ".away";
    std::filesystem::rename(served, moved);
    int here = 0;
    for (int i = 10; i < 13; ++i) here += read_all(**pack, walk[i]) == bytes[walk[i]] ? 1 : 0;
    std::filesystem::rename(moved, served);
    EXPECT_EQ(here, 3);
}

TEST(RemoteWalk, AStalledServerNeverHoldsUpTheOpenOfAFileInTheCache) {
    // With the metadata fetched by block, each open of a walk schedules the files listed after
    // it, and their inodes may not be here yet: scheduling must skip them, not fetch them.
    // Otherwise, with the server stalled, the open of a file in the cache would wait for the
    // timeout. /z-walk: 40 files read before the stall; /a-wide: 60,000 files listed after them,
    // whose inodes (random in their name-hash listing order, numbered before /z-walk's, about
    // 4 MB of them) were mostly never fetched.
    constexpr int kWide = 60000;
    NginxServer& server = NginxServer::shared();
    const std::string name = "walk-ahead-stall.pack";
    ASSERT_FALSE(server.url(name).empty()) << server.start_error();
    auto mem = make_mem_backend();
    std::map<std::string, std::string> bytes;
    auto add_dir = [&](const std::string& dir, int files) {
        ASSERT_TRUE(mem->mkdir(dir, 0755));
        for (int f = 0; f < files; ++f) {
            const std::string path = dir + "/f" + std::to_string(f);
            const auto seed = static_cast<unsigned>(bytes.size());
            bytes[path] = random_bytes(100 + seed * 7919 % 200, seed);  // sizes vary: inodes too
            ASSERT_TRUE(write_file(*mem, path, bytes[path]));
        }
    };
    add_dir("/a-wide", kWide);
    add_dir("/z-walk", 40);
    PackWriteOptions write;
    write.block_size = 16384;
    write.compression = Compression::zstd;
    ASSERT_TRUE(write_pack(*mem, (server.root() / name).string(), write));

    test_support::TempDir cache;
    RemoteOptions options = options_for(cache, 64 * 1024);
    options.metadata_whole_bytes = 0;
    options.timeout = std::chrono::seconds(4);
    auto pack = open_remote_pack(server.url(name), options);
    ASSERT_TRUE(pack) << pack.error().message();
    std::vector<std::string> walk;
    for (int f = 0; f < 40; ++f) walk.push_back("/z-walk/f" + std::to_string(f));
    // Read by name, not listed: no walk yet. /a-wide listed: its entries here from now on.
    for (const std::string& path : walk) EXPECT_EQ(read_all(**pack, path), bytes[path]) << path;
    ASSERT_TRUE((*pack)->readdir("/a-wide"));
    settle(name);

    server.stall(true);
    struct Unstall {  // the server is shared by the tests after this one, whatever happens here
        NginxServer& server;
        ~Unstall() { server.stall(false); }
    } unstall{server};
    ASSERT_TRUE((*pack)->readdir("/z-walk"));
    ASSERT_TRUE((*pack)->readdir("/a-wide"));  // listed after /z-walk: where the walk goes next
    for (const std::string& path : walk) {
        const auto start = std::chrono::steady_clock::now();
        EXPECT_EQ(read_all(**pack, path), bytes[path]) << path;
        const auto took = std::chrono::steady_clock::now() - start;
        // Far below the 4 s timeout, with room for a sanitizer build on a loaded machine.
        EXPECT_LT(took, std::chrono::milliseconds(1500)) << "the open of " << path << " waited";
    }
    // And the stall is real: a file never read fails, at the timeout.
    const auto start = std::chrono::steady_clock::now();
    EXPECT_NE(read_all(**pack, "/a-wide/f12345"), bytes["/a-wide/f12345"]);
    EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
}

TEST(RemoteWalk, WithoutTheWalkPrefetchTheSameFilesAreNotHere) {
    // The control: readahead 0 turns the walk's prefetch off. A file may still be whole in the
    // cache when the files read before and after it in the pack share its blocks.
    const auto [here, far_here] = walk_then_take_away("walk-ahead-off.pack", 0);
    EXPECT_GE(here, 0);
    EXPECT_LT(here, 3);
    EXPECT_FALSE(far_here);
}

TEST(RemoteWalk, OpensThatJumpAboutAfterAListingFetchOnlyWhatTheyRead) {
    // The same reads twice, each from an empty cache: once after listing everything, once
    // with no listing (no walk can be seen): the bytes fetched must be the same. The files are
    // more than WalkAhead::kNear apart in the listing.
    const std::string name = "walk-ahead-jumps.pack";
    const Tree t = serve_tree(name);
    ASSERT_FALSE(t.url.empty());
    uint64_t fetched[2] = {0, 0};
    Files picks;
    for (int listed = 1; listed >= 0; --listed) {
        test_support::TempDir cache;
        auto pack = open_remote_pack(t.url, options_for(cache, 128 * 1024));
        ASSERT_TRUE(pack) << pack.error().message();
        if (listed) {
            const Files many = list_all(t, **pack, name, "/many");
            ASSERT_EQ(many.size(), 400u);
            for (std::size_t at : {0, 100, 200, 300, 399}) picks.push_back(many[at]);
        }
        const uint64_t before = bytes_fetched(name);
        for (const auto& [path, bytes] : picks) EXPECT_EQ(read_all(**pack, path), bytes);
        settle(name);
        fetched[listed] = bytes_fetched(name) - before;
    }
    EXPECT_GT(fetched[0], 0u);
    EXPECT_EQ(fetched[1], fetched[0]);
}

TEST(RemoteWalk, OneFileReadByManyOpensFetchesOnlyItself) {
    // A mount without open handles opens a file for each READ: one file read in pieces, each
    // by its own open, must fetch what it does with no listing before it (no walk is seen).
    const std::string name = "walk-ahead-one-file.pack";
    const Tree t = serve_tree(name);
    ASSERT_FALSE(t.url.empty());
    uint64_t fetched[2] = {0, 0};
    std::pair<std::string, std::string> file;
    for (int listed = 1; listed >= 0; --listed) {
        test_support::TempDir cache;
        auto pack = open_remote_pack(t.url, options_for(cache, 128 * 1024));
        ASSERT_TRUE(pack) << pack.error().message();
        if (listed) file = list_all(t, **pack, name, "/d1").at(3);
        const uint64_t before = bytes_fetched(name);
        std::string read;
        for (uint64_t at = 0; at < file.second.size(); at += 4096) {  // one open a piece
            auto f = (*pack)->open(file.first, O_RDONLY);
            ASSERT_TRUE(f) << f.error().message();
            std::string piece(4096, '\0');
            auto n = (*f)->pread(std::as_writable_bytes(std::span(piece)), at);
            ASSERT_TRUE(n) << n.error().message();
            read += piece.substr(0, *n);
        }
        EXPECT_EQ(read, file.second);
        settle(name);
        fetched[listed] = bytes_fetched(name) - before;
    }
    EXPECT_GT(fetched[0], 0u);
    EXPECT_EQ(fetched[1], fetched[0]);
}

TEST(RemoteWalk, OneLargeFileReadByNodeCountsAsOneOpen) {
    // By node, as the FUSE driver reads: after a listing of /b/c (big) then /a (its neighbours,
    // next in the listing order), big read in 128 KiB pieces, the first half through one handle,
    // the second with an open of the node for each piece (a mount without open handles). However
    // many reads and opens, that is one file opened: nothing of /a may be fetched.
    const std::string name = "walk-ahead-large-by-node.pack";
    const LargeFile t = serve_large_file(name);
    ASSERT_FALSE(t.url.empty());
    test_support::TempDir cache;
    auto pack = open_remote_pack(t.url, options_for(cache, 8 << 20));
    ASSERT_TRUE(pack) << pack.error().message();
    Backend& fs = **pack;
    auto b = fs.lookup(kRootNode, "b");
    ASSERT_TRUE(b) << b.error().message();
    auto c = fs.lookup(b->node, "c");
    ASSERT_TRUE(c) << c.error().message();
    ASSERT_TRUE(fs.list(c->node));
    auto a = fs.lookup(kRootNode, "a");
    ASSERT_TRUE(a) << a.error().message();
    auto listed = fs.list(a->node);
    ASSERT_TRUE(listed);
    ASSERT_EQ(listed->size(), 40u);
    auto big = fs.lookup(c->node, "big");
    ASSERT_TRUE(big) << big.error().message();

    const uint64_t before = bytes_fetched(name);
    constexpr std::size_t kPiece = 128 << 10;
    std::string read(t.bytes.size(), '\0');
    auto piece = [&](File& f, uint64_t at) {
        auto out = std::as_writable_bytes(
            std::span(read.data() + at, std::min<uint64_t>(kPiece, read.size() - at)));
        auto n = f.pread(out, at);
        ASSERT_TRUE(n) << n.error().message();
        ASSERT_EQ(*n, out.size());
    };
    const uint64_t half = read.size() / 2;
    {
        auto f = fs.open(big->node, O_RDONLY);
        ASSERT_TRUE(f) << f.error().message();
        for (uint64_t at = 0; at < half; at += kPiece) piece(**f, at);
    }
    for (uint64_t at = half; at < read.size(); at += kPiece) {
        auto f = fs.open(big->node, O_RDONLY);
        ASSERT_TRUE(f) << f.error().message();
        piece(**f, at);
    }
    EXPECT_TRUE(read == t.bytes);
    settle(name);
    // Big's blocks, the first shared with the file before it: /a's 4 MB would show.
    const uint64_t fetched = bytes_fetched(name) - before;
    EXPECT_GE(fetched, t.bytes.size());
    EXPECT_LE(fetched, t.bytes.size() + 2 * kLargeFileBlock);
}

}  // namespace
}  // namespace packfs
