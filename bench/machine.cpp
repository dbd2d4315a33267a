#include "bench/machine.hpp"

#include <fmt/format.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>
#include <vector>

#ifndef PACKFS_BUILD_TYPE
#define PACKFS_BUILD_TYPE "unknown"
#endif

namespace packfs::bench {
namespace {

std::string trim(std::string s) {
    const auto b = s.find_first_not_of(" \t");
    const auto e = s.find_last_not_of(" \t\n");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// /proc/self/mounts escapes space, tab, newline and backslash as \ooo.
std::string unescape_mount_field(const std::string& in) {
    std::string out;
    for (std::size_t i = 0; i < in.size(); ++i) {
        if (in[i] == '\\' && i + 3 < in.size()) {
            const std::string oct = in.substr(i + 1, 3);
            if (oct.find_first_not_of("01234567") == std::string::npos) {
                out += static_cast<char>(std::strtol(oct.c_str(), nullptr, 8));
                i += 3;
                continue;
            }
        }
        out += in[i];
    }
    return out;
}

bool is_under(const std::string& path, const std::string& mount_point) {
    if (mount_point == "/") return true;
    return path.compare(0, mount_point.size(), mount_point) == 0 &&
           (path.size() == mount_point.size() || path[mount_point.size()] == '/');
}

std::string statfs_type_name(const std::string& path) {
    struct ::statfs st;
    if (::statfs(path.c_str(), &st) != 0) return "unknown";
    switch (static_cast<unsigned long>(st.f_type)) {
        case 0xEF53: return "ext2/3/4";
        case 0x01021994: return "tmpfs";
        case 0x58465342: return "xfs";
        case 0x9123683E: return "btrfs";
        case 0x794C7630: return "overlay";
        case 0x65735546: return "fuse";
        case 0x2FC12FC1: return "zfs";
        case 0x6969: return "nfs";
        default: return fmt::format("statfs f_type {:#x}", static_cast<unsigned long>(st.f_type));
    }
}

}  // namespace

MachineInfo describe_machine() {
    MachineInfo m;
    const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
    m.cpus = cpus > 0 ? static_cast<unsigned>(cpus) : 0;
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);) {
        if (line.rfind("model name", 0) == 0) {
            m.cpu_model = trim(line.substr(line.find(':') + 1));
            break;
        }
    }
    if (m.cpu_model.empty()) m.cpu_model = "unknown CPU";
    struct ::utsname u;
    if (::uname(&u) == 0) m.kernel = fmt::format("{} {} {}", u.sysname, u.release, u.machine);
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page_size = ::sysconf(_SC_PAGE_SIZE);
    if (pages > 0 && page_size > 0) {
        m.mem_gib = static_cast<double>(pages) * static_cast<double>(page_size) / (1024.0 * 1024 * 1024);
    }
#if defined(__clang__)
    m.compiler = fmt::format("clang {}", __clang_version__);
#elif defined(__GNUC__)
    m.compiler = fmt::format("GCC {}.{}.{}", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__);
#else
    m.compiler = "unknown compiler";
#endif
    m.build_type = PACKFS_BUILD_TYPE;
    return m;
}

FilesystemInfo describe_filesystem(const std::string& path) {
    FilesystemInfo fs;
    char* real = ::realpath(path.c_str(), nullptr);
    const std::string resolved = real ? real : path;
    std::free(real);
    // The last matching line wins: a later mount over the same point hides the earlier one.
    std::ifstream mounts("/proc/self/mounts");
    std::size_t best = 0;
    for (std::string line; std::getline(mounts, line);) {
        std::istringstream fields(line);
        std::string device, point, type, options;
        if (!(fields >> device >> point >> type >> options)) continue;
        point = unescape_mount_field(point);
        if (!is_under(resolved, point) || point.size() < best) continue;
        best = point.size();
        fs = {type, unescape_mount_field(device), point, options};
    }
    if (fs.type.empty()) fs.type = statfs_type_name(resolved);
    return fs;
}

std::string load_average() {
    double load[3] = {0, 0, 0};
    if (::getloadavg(load, 3) != 3) return "unknown";
    return fmt::format("{:.2f} {:.2f} {:.2f}", load[0], load[1], load[2]);
}

double dependent_load_ns(std::size_t bytes) {
    // One index per 64-byte line, linked into a single random cycle (Sattolo's shuffle), so
    // every load waits for the one before and no prefetcher can guess the next line.
    constexpr std::size_t kLine = 64 / sizeof(uint32_t);
    const std::size_t lines = std::max<std::size_t>(bytes / 64, 2);
    std::vector<uint32_t> order(lines);
    std::iota(order.begin(), order.end(), 0u);
    std::mt19937_64 rng(1);
    for (std::size_t i = lines - 1; i > 0; --i) {
        std::swap(order[i], order[std::uniform_int_distribution<std::size_t>(0, i - 1)(rng)]);
    }
    std::vector<uint32_t> next(lines * kLine);
    for (std::size_t i = 0; i < lines; ++i) next[order[i] * kLine] = order[(i + 1) % lines] * kLine;
    uint32_t at = 0;
    for (std::size_t i = 0; i < lines; ++i) at = next[at];  // warm: page faults, TLB
    constexpr std::size_t kLoads = 1u << 20;
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < kLoads; ++i) at = next[at];
    const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
    volatile uint32_t sink = at;  // keeps the chain from being optimised away
    (void)sink;
    return took.count() / kLoads;
}

std::string memory_latency() {
    return fmt::format("dependent load {:.0f} ns over 4 MiB, {:.0f} ns over 64 MiB",
                       dependent_load_ns(4u << 20), dependent_load_ns(64u << 20));
}

}  // namespace packfs::bench
