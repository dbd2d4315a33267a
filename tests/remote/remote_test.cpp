// Remote packs in process, against a real nginx (tests/support/nginx_server.hpp): threads that
// read the same files at once get the right bytes and fetch each block once between them (the
// server's access log shows no byte range asked twice); a pack over the cache's bound evicts
// blocks, and one opener's evictions never show another reader a hole; a pinned digest, given
// by the option or the URL's fragment, is checked, and malformed ones are refused before any
// request; a pack whose every block is cached is walked and read whole with no request pinned,
// one unpinned, and a damaged cached block is fetched again alone.
#include "packfs/remote.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "packfs/mem.hpp"
#include "packfs/pack.hpp"
#include "remote/remote_support.hpp"
#include "support/files.hpp"
#include "support/nginx_server.hpp"

namespace packfs {
namespace {

using test_support::NginxServer;
using namespace remote_test;

struct Served {
    std::string url, digest;
    std::vector<std::pair<std::string, std::string>> files;
};

Served serve_pack(const std::string& name, Compression compression) {
    NginxServer& server = NginxServer::shared();
    Served out;
    out.url = server.url(name);
    if (out.url.empty()) {
        ADD_FAILURE() << server.start_error();
        return out;
    }
    auto mem = make_mem_backend();
    for (int i = 0; i < 48; ++i) {
        const std::string path = "/f" + std::to_string(i);
        out.files.emplace_back(path, random_bytes(20000 + 7919 * i, i));
        EXPECT_TRUE(write_file(*mem, path, out.files.back().second));
    }
    PackWriteOptions options;
    options.compression = compression;
    options.block_size = 16384;
    auto stats = write_pack(*mem, (server.root() / name).string(), options);
    EXPECT_TRUE(stats);
    if (stats) out.digest = stats->digest;
    return out;
}

class RemoteThreads : public ::testing::TestWithParam<Compression> {};

TEST_P(RemoteThreads, ReadersAtOnceGetTheirBytesAndEachBlockIsFetchedOnce) {
    const std::string name =
        std::string("threads-") + (GetParam() == Compression::none ? "raw" : "zstd") + ".pack";
    const Served served = serve_pack(name, GetParam());
    ASSERT_FALSE(served.url.empty());
    RemoteOptions options;
    options.cache_dir = "none";
    options.connections = 4;
    options.readahead_bytes = 64 * 1024;
    auto pack = open_remote_pack(served.url, options);
    ASSERT_TRUE(pack) << pack.error().message();
    std::vector<std::thread> readers;
    std::atomic<int> wrong{0};
    for (unsigned t = 0; t < 8; ++t) {
        readers.emplace_back([&, t] {
            std::vector<std::size_t> order(served.files.size());
            std::iota(order.begin(), order.end(), 0);
            std::shuffle(order.begin(), order.end(), std::mt19937(t));
            for (std::size_t i : order) {
                if (read_all(**pack, served.files[i].first) != served.files[i].second) ++wrong;
            }
        });
    }
    for (auto& r : readers) r.join();
    EXPECT_EQ(wrong.load(), 0);
    auto ranges = ranges_fetched(name);
    ASSERT_FALSE(ranges.empty());
    std::sort(ranges.begin(), ranges.end());
    for (std::size_t i = 1; i < ranges.size(); ++i)
        EXPECT_GT(ranges[i].first, ranges[i - 1].second)
            << "bytes " << ranges[i].first << "-" << ranges[i - 1].second << " fetched twice";
}

INSTANTIATE_TEST_SUITE_P(Codecs, RemoteThreads,
                         ::testing::Values(Compression::none, Compression::zstd),
                         [](const auto& p) {
                             return std::string(p.param == Compression::none ? "raw" : "zstd");
                         });

// --- the cache's bound while a pack is open: blocks evicted (docs/REMOTE.md, "The cache") ----

// What `dir` holds on disk for the one pack in it.
uint64_t cached_on_disk(const std::string& dir) {
    auto packs = list_remote_cache(dir);
    if (!packs || packs->size() != 1) return 0;
    return packs->front().on_disk;
}

// The eviction epoch in the trailer of the one pack in `dir` (each eviction adds 2).
uint64_t eviction_epoch(const std::string& dir) {
    auto packs = list_remote_cache(dir);
    if (!packs || packs->size() != 1) return 0;
    const int fd = ::open(packs->front().path.c_str(), O_RDONLY | O_CLOEXEC);
    uint64_t epoch = 0;
    if (fd >= 0 && ::pread(fd, &epoch, 8, ::lseek(fd, 0, SEEK_END) - 4096 + 64) != 8) epoch = 0;
    if (fd >= 0) ::close(fd);
    return epoch;
}

TEST(RemoteCache, APackOverTheBoundEvictsItsLeastRecentlyReadBlocks) {
    const Served served = serve_pack("bounded.pack", Compression::none);
    ASSERT_FALSE(served.url.empty());
    test_support::TempDir cache;
    constexpr uint64_t kBound = 2 << 20;  // the pack's data is about 10 MiB
    RemoteOptions options;
    options.cache_dir = cache.path.string();
    options.cache_bytes = kBound;
    options.readahead_bytes = 64 * 1024;
    auto pack = open_remote_pack(served.url, options);
    ASSERT_TRUE(pack) << pack.error().message();
    uint64_t data = 0;
    for (int pass = 0; pass < 2; ++pass) {
        for (const auto& [path, bytes] : served.files) {
            ASSERT_TRUE(read_all(**pack, path) == bytes) << path << " in pass " << pass;
            // Between two checks the pack may grow by a sixteenth of the bound, plus one
            // fetch's readahead, over three quarters of it.
            EXPECT_LE(cached_on_disk(options.cache_dir), kBound + kBound / 8) << path;
            if (pass == 0) data += bytes.size();
        }
    }
    EXPECT_GE(eviction_epoch(options.cache_dir), 2u);
    // The second pass found the first's early files evicted and fetched them again.
    EXPECT_GT(bytes_fetched("bounded.pack"), data + data / 2);
}

TEST(RemoteCache, BlocksAnotherOpenerEvictsAreFetchedAgainNeverReadAsHoles) {
    const Served served = serve_pack("shared-bound.pack", Compression::zstd);
    ASSERT_FALSE(served.url.empty());
    test_support::TempDir cache;
    RemoteOptions roomy;  // checks every block once and then reads it from the file
    roomy.cache_dir = cache.path.string();
    roomy.cache_bytes = 1ull << 40;
    roomy.readahead_bytes = 64 * 1024;
    roomy.block_cache_bytes = 0;  // every read goes down to the remote bytes
    RemoteOptions tight = roomy;  // the same cache file, which it keeps evicting
    tight.cache_bytes = 1 << 20;
    auto a = open_remote_pack(served.url, roomy);
    ASSERT_TRUE(a) << a.error().message();
    for (const auto& [path, bytes] : served.files)
        ASSERT_TRUE(read_all(**a, path) == bytes) << path;
    auto b = open_remote_pack(served.url, tight);
    ASSERT_TRUE(b) << b.error().message();
    // Readers of both at once: each of b's evictions may punch blocks a checked and is reading.
    std::atomic<int> wrong{0};
    std::vector<std::thread> readers;
    for (unsigned t = 0; t < 4; ++t) {
        readers.emplace_back([&, t] {
            Backend& fs = t % 2 == 0 ? **a : **b;
            std::vector<std::size_t> order(served.files.size());
            std::iota(order.begin(), order.end(), 0);
            std::shuffle(order.begin(), order.end(), std::mt19937(t));
            for (std::size_t i : order)
                if (read_all(fs, served.files[i].first) != served.files[i].second) ++wrong;
        });
    }
    for (auto& r : readers) r.join();
    EXPECT_EQ(wrong.load(), 0);
    EXPECT_GE(eviction_epoch(roomy.cache_dir), 4u) << "b evicted at least twice";
    for (const auto& [path, bytes] : served.files)
        EXPECT_TRUE(read_all(**a, path) == bytes) << path;
}

TEST(RemoteCache, AnEvictionWhoseProcessDiedIsFinishedByTheNextReader) {
    const Served served = serve_pack("died.pack", Compression::none);
    ASSERT_FALSE(served.url.empty());
    test_support::TempDir cache;
    RemoteOptions options;
    options.cache_dir = cache.path.string();
    options.block_cache_bytes = 0;
    auto pack = open_remote_pack(served.url, options);
    ASSERT_TRUE(pack) << pack.error().message();
    for (const auto& [path, bytes] : served.files)
        ASSERT_TRUE(read_all(**pack, path) == bytes) << path;
    // What a process killed between its two steps leaves: the epoch odd, a block punched.
    auto packs = list_remote_cache(options.cache_dir);
    ASSERT_TRUE(packs && packs->size() == 1);
    const int fd = ::open(packs->front().path.c_str(), O_RDWR | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    const off_t trailer = ::lseek(fd, 0, SEEK_END) - 4096;
    uint64_t epoch = 0;
    ASSERT_EQ(::pread(fd, &epoch, 8, trailer + 64), 8);
    EXPECT_EQ(epoch % 2, 0u);
    ++epoch;
    ASSERT_EQ(::pwrite(fd, &epoch, 8, trailer + 64), 8);
    ASSERT_EQ(::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0 + 8192, 4 << 20), 0);
    for (const auto& [path, bytes] : served.files)
        EXPECT_TRUE(read_all(**pack, path) == bytes) << path;
    uint64_t after = 0;
    ASSERT_EQ(::pread(fd, &after, 8, trailer + 64), 8);
    EXPECT_EQ(after, epoch + 1) << "the next reader made the epoch even again";
    ::close(fd);
}

TEST(RemoteDigest, APinnedDigestIsCheckedAndMalformedOnesAreRefused) {
    const Served served = serve_pack("pinned.pack", Compression::none);
    ASSERT_FALSE(served.url.empty());
    RemoteOptions options;
    options.cache_dir = "none";
    options.digest = "sha256:" + served.digest;
    EXPECT_TRUE(open_remote_pack(served.url, options));
    options.digest = {};
    EXPECT_TRUE(open_remote_pack(served.url + "#sha256:" + served.digest, options));

    std::string wrong = served.digest;
    wrong[0] = wrong[0] == '0' ? '1' : '0';
    auto refused = open_remote_pack(served.url + "#sha256:" + wrong, options);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code(), kErrCorrupt);

    for (const std::string& bad : {std::string("sha256:abc"), std::string(64, 'g')}) {
        options.digest = bad;
        auto r = open_remote_pack(served.url, options);
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error().code(), EINVAL) << bad;
    }
    options.digest = served.digest;
    auto twice = open_remote_pack(served.url + "#sha256:" + wrong, options);
    ASSERT_FALSE(twice);
    EXPECT_EQ(twice.error().code(), EINVAL);
    auto fragment = open_remote_pack(served.url + "#md5:00", {});
    ASSERT_FALSE(fragment);
    EXPECT_EQ(fragment.error().code(), EINVAL);
    auto not_url = open_remote_pack("ftp://x/y.pack", {});
    ASSERT_FALSE(not_url);
    EXPECT_EQ(not_url.error().code(), EINVAL);
    EXPECT_FALSE(is_remote_url("/srv/x.pack"));
    EXPECT_TRUE(is_remote_url("https://cdn/x.pack"));
}

TEST(RemoteOptionsCheck, BadOptionsAreRefusedBeforeAnyRequestWithoutEchoingAHeader) {
    // Every caller (the CLI, Python, C) gets these from open_remote_pack and pull_pack.
    const std::string url = NginxServer::shared().url("never-asked.pack");
    ASSERT_FALSE(url.empty()) << NginxServer::shared().start_error();
    std::vector<std::pair<std::string, RemoteOptions>> bad;
    auto add = [&](std::string what, auto&& change) {
        RemoteOptions o;
        o.cache_dir = "none";
        change(o);
        bad.emplace_back(std::move(what), std::move(o));
    };
    add("connections 0", [](RemoteOptions& o) { o.connections = 0; });
    add("connections 65", [](RemoteOptions& o) { o.connections = 65; });
    add("timeout 0", [](RemoteOptions& o) { o.timeout = std::chrono::milliseconds(0); });
    add("no colon", [](RemoteOptions& o) { o.headers = {"Bearer s3cret"}; });
    add("a name only", [](RemoteOptions& o) { o.headers = {": s3cret"}; });
    add("two lines", [](RemoteOptions& o) { o.headers = {"A: s3cret\r\nB: c"}; });
    for (const auto& [what, options] : bad) {
        EXPECT_NE(remote_option_problem(options), "") << what;
        auto opened = open_remote_pack(url, options);
        ASSERT_FALSE(opened) << what;
        EXPECT_EQ(opened.error().code(), EINVAL) << what;
        EXPECT_EQ(opened.error().message().find("s3cret"), std::string::npos) << what;
        test_support::TempDir dir;
        auto pulled = pull_pack(url, (dir.path / "p.pack").string(), options);
        ASSERT_FALSE(pulled) << what;
        EXPECT_EQ(pulled.error().code(), EINVAL) << what;
    }
    RemoteOptions fine;
    fine.headers = {"Authorization: Bearer s3cret"};
    EXPECT_EQ(remote_option_problem(fine), "");
    auto oci = open_remote_pack("oci://127.0.0.1:1/r/p:t", fine);  // headers: http(s) only
    ASSERT_FALSE(oci);
    EXPECT_EQ(oci.error().code(), EINVAL);
    EXPECT_EQ(NginxServer::shared().access_log().find("never-asked"), std::string::npos);
}

TEST(RemoteErrors, AFailedReadIsEIOCarryingTheURLTheBytesAndTheCause) {
    const std::string name = "errors-carry.pack";
    const Served served = serve_pack(name, Compression::none);
    ASSERT_FALSE(served.url.empty());
    RemoteOptions options;
    options.cache_dir = "none";
    options.readahead_bytes = 0;
    options.timeout = std::chrono::seconds(3);
    auto pack = open_remote_pack(served.url, options);
    ASSERT_TRUE(pack) << pack.error().message();
    const auto path = NginxServer::shared().root() / name;
    const std::string original = test_support::slurp(path);
    auto read_file = [&](const std::string& file) -> Result<std::size_t> {
        auto f = (*pack)->open(file, O_RDONLY);
        if (!f) return std::unexpected(f.error());
        std::string buffer(64 * 1024, '\0');
        return (*f)->pread(std::as_writable_bytes(std::span(buffer)), 0);
    };

    // Every byte of the data changed on the server: the block fails its digest.
    std::string altered = original;
    for (std::size_t at = 8192; at < original.size() / 2; ++at) altered[at] ^= 0x5a;
    {
        std::ofstream(path, std::ios::binary | std::ios::trunc) << altered;
    }
    auto bad = read_file("/f1");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().code(), EIO);
    EXPECT_NE(bad.error().detail().find(served.url), std::string::npos) << bad.error().message();
    EXPECT_NE(bad.error().detail().find("does not match its digest"), std::string::npos)
        << bad.error().message();
    EXPECT_NE(bad.error().message().find("bytes "), std::string::npos) << bad.error().message();

    // The pack gone from the server: EIO still, its cause the server's answer.
    std::filesystem::remove(path);
    auto gone = read_file("/f2");
    ASSERT_FALSE(gone);
    EXPECT_EQ(gone.error().code(), EIO);
    EXPECT_NE(gone.error().detail().find("HTTP 404"), std::string::npos) << gone.error().message();
    EXPECT_NE(gone.error().detail().find(served.url + ": bytes "), std::string::npos)
        << gone.error().message();
    std::ofstream(path, std::ios::binary | std::ios::trunc) << original;
}

TEST(RemoteDigest, ConnectionRefusedFailsAtOnce) {
    RemoteOptions options;
    options.cache_dir = "none";
    options.timeout = std::chrono::seconds(20);
    const auto start = std::chrono::steady_clock::now();
    // Port 1 on loopback: nothing listens there.
    auto r = open_remote_pack("http://127.0.0.1:1/x.pack", options);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), ECONNREFUSED);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

// The requests the server got for `name`, the header's included.
std::size_t requests_for(const std::string& name) {
    std::istringstream log(NginxServer::shared().access_log());
    std::size_t n = 0;
    for (std::string line; std::getline(log, line);) {
        std::istringstream words(line);
        std::string method, uri;
        words >> method >> uri;
        n += uri == "/" + name ? 1 : 0;
    }
    return n;
}

// Lists / and reads every file in the listing's order (a walk, which a remote pack follows to
// fetch ahead of it), checking their bytes.
void walk_and_read(PackBackend& pack, const Served& served) {
    auto entries = pack.readdir("/");
    ASSERT_TRUE(entries) << entries.error().message();
    ASSERT_EQ(entries->size(), served.files.size());
    for (const DirEntry& e : *entries) {
        const std::string path = "/" + e.name;
        auto it = std::find_if(served.files.begin(), served.files.end(),
                               [&](const auto& f) { return f.first == path; });
        ASSERT_NE(it, served.files.end()) << path;
        EXPECT_TRUE(read_all(pack, path) == it->second) << path;
    }
}

TEST(RemoteCache, AFullyCachedPackIsReadWithNoRequest) {
    const std::string name = "all-cached.pack";
    const Served served = serve_pack(name, Compression::zstd);
    ASSERT_FALSE(served.url.empty());
    test_support::TempDir cache;
    RemoteOptions options;
    options.cache_dir = cache.path.string();
    {
        auto pack = open_remote_pack(served.url, options);
        ASSERT_TRUE(pack) << pack.error().message();
        walk_and_read(**pack, served);
        settle(name);
    }
    const std::size_t cold = requests_for(name);
    EXPECT_GT(cold, 2u);
    {  // Pinned: nothing asked of the server, the walk followed or not.
        auto pack = open_remote_pack(served.url + "#sha256:" + served.digest, options);
        ASSERT_TRUE(pack) << pack.error().message();
        walk_and_read(**pack, served);
        settle(name);
        EXPECT_EQ(requests_for(name), cold);
    }
    {  // Unpinned: the header alone, which names the pack cached.
        auto pack = open_remote_pack(served.url, options);
        ASSERT_TRUE(pack) << pack.error().message();
        walk_and_read(**pack, served);
        settle(name);
        EXPECT_EQ(requests_for(name), cold + 1);
    }
    // A cached block damaged on disk: its first reader's check fails, and it alone is fetched.
    const std::string file = (cache.path / (served.digest + ".pack")).string();
    const int fd = ::open(file.c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0) << file;
    ASSERT_EQ(::pwrite(fd, "damage", 6, 4096 + 10), 6);
    ::close(fd);
    const std::size_t ranges = ranges_fetched(name).size();
    {
        auto pack = open_remote_pack(served.url + "#sha256:" + served.digest, options);
        ASSERT_TRUE(pack) << pack.error().message();
        walk_and_read(**pack, served);
        settle(name);
        EXPECT_EQ(ranges_fetched(name).size(), ranges + 1);
    }
}

}  // namespace
}  // namespace packfs
