// The copy a 4 KiB read ends in, without Python or PackFS: memcpy of every 4 KiB piece of a
// file in the page cache (mmap'd) into a 4 MiB buffer, by one thread and by two, the pieces
// either dealt out alternately or each thread taking its own half. It shows what a second
// thread can give a memory-bound copy on this machine (docs/BENCH.md, "Tree.read_concat").
// Not part of the build:
//     g++ -O2 -std=c++20 -pthread bench/copy_shards.cpp -o /tmp/copy_shards
//     /tmp/copy_shards /var/tmp/packfs-pybench/files.pack
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: copy_shards FILE\n");
        return 2;
    }
    const int fd = open(argv[1], O_RDONLY);
    const off_t size = fd < 0 ? -1 : lseek(fd, 0, SEEK_END);
    constexpr std::size_t kPiece = 4096, kBatch = 1000;
    if (size < static_cast<off_t>(kPiece)) {
        std::perror(argv[1]);
        return 1;
    }
    void* mapped =
        mmap(nullptr, static_cast<std::size_t>(size), PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (mapped == MAP_FAILED) {
        std::perror("mmap");
        return 1;
    }
    const auto* src = static_cast<const char*>(mapped);
    const std::size_t pieces = static_cast<std::size_t>(size) / kPiece;
    constexpr int kPasses = 5;
    // Thread `me` of `n` copies pieces first, first + step, ... below end.
    auto copy = [&](std::size_t first, std::size_t step, std::size_t end) {
        std::vector<char> to(kBatch * kPiece);
        for (int pass = 0; pass < kPasses; ++pass)
            for (std::size_t i = first, k = 0; i < end; i += step, k = (k + 1) % kBatch)
                std::memcpy(to.data() + k * kPiece, src + i * kPiece, kPiece);
    };
    auto median_seconds = [&](int threads, bool sharded) {
        std::vector<double> runs;
        for (int run = 0; run < 7; ++run) {
            const auto start = std::chrono::steady_clock::now();
            std::vector<std::jthread> workers;
            for (int t = 0; t < threads; ++t) {
                const std::size_t half = pieces / static_cast<std::size_t>(threads);
                if (sharded)
                    workers.emplace_back(copy, t * half, 1, (t + 1) * half);
                else
                    workers.emplace_back(copy, t, threads, pieces);
            }
            workers.clear();  // joins
            runs.push_back(
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        }
        std::sort(runs.begin(), runs.end());
        return runs[runs.size() / 2];
    };
    const double one = median_seconds(1, true);
    const double dealt = median_seconds(2, false), sharded = median_seconds(2, true);
    const double bytes = static_cast<double>(pieces * kPiece) * kPasses;
    std::printf("1 thread:              %.3f s  %5.1f GB/s\n", one, bytes / one / 1e9);
    std::printf("2 threads, dealt out:  %.3f s  %5.1f GB/s  %.2fx\n", dealt, bytes / dealt / 1e9,
                one / dealt);
    std::printf("2 threads, sharded:    %.3f s  %5.1f GB/s  %.2fx\n", sharded,
                bytes / sharded / 1e9, one / sharded);
}
