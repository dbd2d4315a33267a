// What the remote tests share: the ranges nginx's access log shows were fetched, waiting for
// background fetches to end, a file read whole through a backend, random bytes, and a served
// pack of one large file with neighbours a mistaken walk-ahead would fetch.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "packfs/backend.hpp"
#include "packfs/mem.hpp"
#include "packfs/pack.hpp"
#include "support/nginx_server.hpp"

namespace packfs::remote_test {

inline std::string random_bytes(std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::string s(n, '\0');
    for (auto& c : s) c = static_cast<char>(rng());
    return s;
}

// The ranges of `name` the server was asked for, beyond the header.
inline std::vector<std::pair<uint64_t, uint64_t>> ranges_fetched(const std::string& name) {
    std::vector<std::pair<uint64_t, uint64_t>> out;
    std::istringstream log(test_support::NginxServer::shared().access_log());
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

// The bytes of `name` fetched, beyond the header.
inline uint64_t bytes_fetched(const std::string& name) {
    uint64_t total = 0;
    for (const auto& [a, b] : ranges_fetched(name)) total += b - a + 1;
    return total;
}

// Waits until no request for `name` has come for a second (the background fetches are done,
// with room for a slow sanitizer build on a loaded machine).
inline void settle(const std::string& name) {
    auto count = ranges_fetched(name).size();
    for (int quiet = 0, i = 0; quiet < 10 && i < 200; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        const auto now = ranges_fetched(name).size();
        quiet = now == count ? quiet + 1 : 0;
        count = now;
    }
}

// A pack served as `name`: /a holds 40 files of 100 KB, /b/c/big kLargeFileBytes, all random
// (raw blocks of kLargeFileBlock). Contents lie in inode order (breadth first), so /a's files
// come before big in the pack and nothing follows it: reading big alone, readahead included,
// fetches big's blocks and nothing else. A walk-ahead that took big's reads for a walk, after
// /b/c then /a were listed, would fetch /a's files, listed after big.
inline constexpr uint64_t kLargeFileBytes = 6 << 20;
inline constexpr uint32_t kLargeFileBlock = 64 << 10;
struct LargeFile {
    std::string url;    // empty when the server did not start (a failure is added)
    std::string bytes;  // /b/c/big's
};
inline LargeFile serve_large_file(const std::string& name) {
    test_support::NginxServer& server = test_support::NginxServer::shared();
    LargeFile out;
    if (server.url(name).empty()) {
        ADD_FAILURE() << server.start_error();
        return out;
    }
    auto mem = make_mem_backend();
    EXPECT_TRUE(mem->mkdir("/a", 0755));
    for (int f = 0; f < 40; ++f)
        EXPECT_TRUE(write_file(*mem, "/a/f" + std::to_string(f), random_bytes(100000, 500 + f)));
    EXPECT_TRUE(mem->mkdir("/b", 0755));
    EXPECT_TRUE(mem->mkdir("/b/c", 0755));
    out.bytes = random_bytes(kLargeFileBytes, 77);
    EXPECT_TRUE(write_file(*mem, "/b/c/big", out.bytes));
    PackWriteOptions options;
    options.block_size = kLargeFileBlock;
    options.compression = Compression::none;
    EXPECT_TRUE(write_pack(*mem, (server.root() / name).string(), options));
    out.url = server.url(name);
    return out;
}

inline std::string read_all(Backend& fs, const std::string& path) {
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

}  // namespace packfs::remote_test
