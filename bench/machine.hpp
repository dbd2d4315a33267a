// What the figures were measured on: printed above the table, because a ratio against the
// host filesystem means little without knowing which filesystem and which machine.
#pragma once

#include <cstddef>
#include <string>

namespace packfs::bench {

struct FilesystemInfo {
    std::string type;         // "ext4", "tmpfs", ... (from /proc/self/mounts, else statfs)
    std::string device;       // "/dev/vda"
    std::string mount_point;  // "/"
    std::string options;      // "rw,relatime"
};

struct MachineInfo {
    unsigned cpus = 0;       // online CPUs
    std::string cpu_model;   // /proc/cpuinfo "model name"
    std::string kernel;      // uname: "Linux 6.1.0 x86_64"
    double mem_gib = 0;      // physical memory
    std::string compiler;    // "GCC 12.2.0"
    std::string build_type;  // CMAKE_BUILD_TYPE the bench was built with
};

MachineInfo describe_machine();
// The filesystem that holds `path`.
FilesystemInfo describe_filesystem(const std::string& path);
// The 1-, 5- and 15-minute load averages, "0.12 0.11 0.04".
std::string load_average();

// What a cache miss costs now: the time of one load that depends on the previous one, over a
// random cycle through `bytes` of memory. On a shared VM it moves from run to run with the
// neighbours' use of the last-level cache, and every per-file figure of a tree larger than
// what is left of that cache moves with it (docs/BENCH.md, "Reading the numbers").
double dependent_load_ns(std::size_t bytes);
// "dependent load 22 ns over 4 MiB, 150 ns over 64 MiB"
std::string memory_latency();

}  // namespace packfs::bench
