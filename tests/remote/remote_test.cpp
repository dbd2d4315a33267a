// Remote packs in process, against a real nginx (tests/support/nginx_server.hpp): threads that
// read the same files at once get the right bytes and fetch each block once between them (the
// server's access log shows no byte range asked twice); a pinned digest, given by the option or
// the URL's fragment, is checked, and malformed ones are refused before any request.
#include "packfs/remote.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <sstream>
#include <thread>

#include "packfs/mem.hpp"
#include "packfs/pack.hpp"
#include "support/nginx_server.hpp"

namespace packfs {
namespace {

using test_support::NginxServer;

std::string random_bytes(std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::string s(n, '\0');
    for (auto& c : s) c = static_cast<char>(rng());
    return s;
}

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

// The ranges of `name` the server was asked for, beyond the header.
std::vector<std::pair<uint64_t, uint64_t>> ranges_fetched(const std::string& name) {
    std::vector<std::pair<uint64_t, uint64_t>> out;
    std::istringstream log(NginxServer::shared().access_log());
    std::string method, uri, status, bytes, range;
    while (log >> method >> uri >> status >> bytes >> range) {
        unsigned long long a = 0, b = 0;
        if (uri != "/" + name || std::sscanf(range.c_str(), "\"bytes=%llu-%llu\"", &a, &b) != 2)
            continue;
        if (a == 0 && b == 511) continue;
        out.emplace_back(a, b);
    }
    return out;
}

std::string read_all(Backend& fs, const std::string& path) {
    auto f = fs.open(path, O_RDONLY);
    if (!f) return "open failed: " + f.error().message();
    std::string out;
    std::string buf(7000, '\0');  // not a block multiple: reads straddle blocks
    for (uint64_t at = 0;;) {
        auto n = (*f)->pread(std::as_writable_bytes(std::span(buf)), at);
        if (!n) return "read failed: " + n.error().message();
        if (*n == 0) return out;
        out.append(buf.data(), *n);
        at += *n;
    }
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

}  // namespace
}  // namespace packfs
