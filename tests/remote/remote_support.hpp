// What the remote tests share: the ranges nginx's access log shows were fetched, a file read
// whole through a backend, random bytes.
#pragma once

#include <fcntl.h>

#include <cstdio>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "packfs/backend.hpp"
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
