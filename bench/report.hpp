// How the figures leave the program: a table for people, JSON for scripts.
#pragma once

#include <cstdio>
#include <span>
#include <string>

#include "bench/harness.hpp"
#include "bench/machine.hpp"
#include "packfs/error.hpp"

namespace packfs::bench {

struct RunContext {
    MachineInfo machine;
    FilesystemInfo tmp_fs;
    std::string tmp_dir;  // where the raw targets lived
    std::string command;  // the command line, as given
    int runs = 0;
    std::string mode;          // "", "--quick", "--full"
    double disk_budget_s = 0;  // a disk-bound arm's time budget per run; 0: none
};

// The header: what ran, where, on what.
void print_header(std::FILE* out, const RunContext& context);
// The table: category | backend | n | median | min | max | per op | ops/s | MB/s | vs raw,
// then one line per ratio taken against something other than raw, and one per figure its
// time budget cut short (marked "*" after n).
void print_table(std::FILE* out, std::span<const Figure> figures);
// A JSON array, one record per figure: {"category","backend","n","runs","median_s",
// "min_s","max_s","ops_per_s","mb_per_s"} (mb_per_s null where it means nothing).
Result<void> write_json(const std::string& path, std::span<const Figure> figures);

// "12.3x faster" / "2.45x slower" from baseline median / this median.
std::string ratio_text(double speedup);
// "843 ns", "12.3 us", "4.56 ms", "1.23 s".
std::string duration_text(double seconds);

}  // namespace packfs::bench
