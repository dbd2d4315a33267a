// capi_bench: stat by path, a 4 KiB pread and a read_view through the C API
// (include/packfs/packfs.h) and through the C++ calls it wraps, on one pack of a small tree,
// in one process. The difference of the medians is what the C API adds per call.
//
// Run: build/bench/capi/capi_bench --benchmark_repetitions=9 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "packfs/mem.hpp"
#include "packfs/pack.hpp"
#include "packfs/packfs.h"

namespace {

constexpr const char* kPath = "/assets/textures/stone.png";

// One pack for every benchmark, built once in a temporary directory.
struct Fixture {
    std::string dir;
    std::string pack;
    std::shared_ptr<packfs::PackBackend> cpp;
    packfs_fs* c = nullptr;

    Fixture() {
        char tmpl[] = "/tmp/capi_bench.XXXXXX";
        dir = ::mkdtemp(tmpl);
        pack = dir + "/bench.pack";
        auto tree = packfs::make_mem_backend();
        (void)tree->mkdir("/assets");
        (void)tree->mkdir("/assets/textures");
        (void)packfs::write_file(*tree, kPath, std::string(4096, 'x'));
        if (!packfs::write_pack(*tree, pack)) std::abort();
        cpp = *packfs::open_pack(pack);
        if (packfs_open_pack(pack.c_str(), &c) != 0) std::abort();
    }
    ~Fixture() {
        packfs_close(c);
        ::unlink(pack.c_str());
        ::rmdir(dir.c_str());
    }
};

Fixture& fixture() {
    static Fixture f;
    return f;
}

void stat_cpp(benchmark::State& state) {
    packfs::Backend& fs = *fixture().cpp;
    for (auto _ : state) benchmark::DoNotOptimize(fs.stat(kPath));
}
void stat_c(benchmark::State& state) {
    packfs_fs* fs = fixture().c;
    packfs_attr st;
    for (auto _ : state) {
        benchmark::DoNotOptimize(packfs_stat(fs, kPath, &st));
        benchmark::DoNotOptimize(st);
    }
}

void pread_cpp(benchmark::State& state) {
    auto file = *fixture().cpp->open(kPath, O_RDONLY);
    std::byte buf[4096];
    for (auto _ : state) benchmark::DoNotOptimize(file->pread(buf, 0));
}
void pread_c(benchmark::State& state) {
    packfs_file* file = nullptr;
    if (packfs_file_open(fixture().c, kPath, O_RDONLY, 0, &file) != 0) std::abort();
    char buf[4096];
    for (auto _ : state) benchmark::DoNotOptimize(packfs_pread(file, buf, sizeof buf, 0));
    packfs_file_close(file);
}

void view_cpp(benchmark::State& state) {
    auto file = *fixture().cpp->open(kPath, O_RDONLY);
    std::string scratch;
    for (auto _ : state) benchmark::DoNotOptimize(file->read_view(0, 4096, scratch));
}
void view_c(benchmark::State& state) {
    packfs_file* file = nullptr;
    if (packfs_file_open(fixture().c, kPath, O_RDONLY, 0, &file) != 0) std::abort();
    const void* data = nullptr;
    size_t length = 0;
    for (auto _ : state) {
        benchmark::DoNotOptimize(packfs_read_view(file, 0, 4096, &data, &length));
        benchmark::DoNotOptimize(data);
    }
    packfs_file_close(file);
}

void missing_cpp(benchmark::State& state) {  // the error path: an Error made, then dropped
    packfs::Backend& fs = *fixture().cpp;
    for (auto _ : state) benchmark::DoNotOptimize(fs.stat("/assets/missing"));
}
void missing_c(benchmark::State& state) {  // ... and its message kept for packfs_errmsg()
    packfs_fs* fs = fixture().c;
    packfs_attr st;
    for (auto _ : state) benchmark::DoNotOptimize(packfs_stat(fs, "/assets/missing", &st));
}

}  // namespace

BENCHMARK(stat_cpp);
BENCHMARK(stat_c);
BENCHMARK(pread_cpp);
BENCHMARK(pread_c);
BENCHMARK(view_cpp);
BENCHMARK(view_c);
BENCHMARK(missing_cpp);
BENCHMARK(missing_c);
BENCHMARK_MAIN();
