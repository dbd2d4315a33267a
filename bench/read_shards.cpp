// What Python's Tree.read_concat does, without Python: 1,000 files a call looked up and viewed in
// a pack, then copied into one buffer sized for them; one thread over every file, then two
// threads each over its own half, each thread making all its passes (as bench/python_read.py
// now does). It shows how far the library's own work scales with a second thread on this
// machine, the ceiling for the Python figure (docs/BENCH.md, "Python bindings", seventh table).
// `lookups` times only the lookups, `copies` only the copies (views found beforehand).
// Not part of the build (the pack is the one bench/python_read.py makes):
//     g++ -O2 -std=c++23 -Iinclude bench/read_shards.cpp -o /tmp/read_shards -pthread
//         -Lbuild/src -lpackfs-read -Wl,-rpath,$PWD/build/src     (one line)
//     /tmp/read_shards /var/tmp/packfs-pybench/files.pack [both|lookups|copies]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <packfs/pack.hpp>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr std::size_t kFiles = 100'000;
constexpr std::size_t kBatch = 1'000;
constexpr int kPasses = 20;

using View = std::span<const std::byte>;

}  // namespace

int main(int argc, char** argv) {
    const std::string what = argc > 2 ? argv[2] : "both";
    if (argc < 2 || (what != "both" && what != "lookups" && what != "copies")) {
        std::fprintf(stderr, "usage: read_shards PACK [both|lookups|copies]\n");
        return 2;
    }
    auto pack = packfs::open_pack(argv[1]);
    if (!pack) {
        std::fprintf(stderr, "%s\n", pack.error().message().c_str());
        return 1;
    }
    std::vector<std::string> paths;
    std::vector<View> found;
    std::string held;
    for (std::size_t i = 0; i < kFiles; ++i) {
        char path[32];
        std::snprintf(path, sizeof path, "/d%04zu/f%06zu.bin", i / 1000, i);
        paths.emplace_back(path);
        auto view = (*pack)->read_view(path, 0, SIZE_MAX, held);
        if (!view || !held.empty()) {
            std::fprintf(stderr, "%s: not a file of a raw pack\n", path);
            return 1;
        }
        found.push_back(*view);
    }
    auto shard = [&](std::size_t from, std::size_t to) {
        std::vector<View> views(kBatch);
        std::vector<std::string> scratch(kBatch);
        for (int pass = 0; pass < kPasses; ++pass) {
            for (std::size_t i = from; i < to; i += kBatch) {
                const std::size_t n = std::min(kBatch, to - i);
                std::size_t total = 0;
                for (std::size_t k = 0; k < n; ++k) {
                    views[k] = what == "copies"
                                   ? found[i + k]
                                   : *(*pack)->read_view(paths[i + k], 0, SIZE_MAX, scratch[k]);
                    total += views[k].size();
                }
                if (what == "lookups") continue;
                std::string out;
                out.resize_and_overwrite(total, [&](char* to_bytes, std::size_t) {
                    std::size_t at = 0;
                    for (std::size_t k = 0; k < n; ++k) {
                        std::memcpy(to_bytes + at, views[k].data(), views[k].size());
                        at += views[k].size();
                    }
                    return total;
                });
                asm volatile("" : : "r"(out.data()) : "memory");  // the copy is kept
            }
        }
    };
    using clock = std::chrono::steady_clock;
    auto ms_a_pass = [](clock::time_point a, clock::time_point b) {
        return std::chrono::duration<double, std::milli>(b - a).count() / kPasses;
    };
    for (int round = 0; round < 5; ++round) {
        const auto t0 = clock::now();
        shard(0, kFiles);
        const auto t1 = clock::now();
        std::thread first(shard, 0, kFiles / 2), second(shard, kFiles / 2, kFiles);
        first.join();
        second.join();
        const auto t2 = clock::now();
        const double one = ms_a_pass(t0, t1), two = ms_a_pass(t1, t2);
        std::printf("%s: 1 thread %.1f ms a pass, 2 threads %.1f ms: %.2fx\n", what.c_str(), one,
                    two, one / two);
    }
}
