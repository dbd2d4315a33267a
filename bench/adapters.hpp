// The backends `packfs-bench` knows, as a table: adding one (dir, pack, overlay, volume,
// fuse) is one entry in adapters.cpp that says how to make a fresh, empty, writable one.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "bench/target.hpp"

namespace packfs::bench {

enum class AdapterRole {
    baseline,  // "raw": the host filesystem through plain syscalls; every ratio is against it
    durable,   // "raw+fsync": only in the categories where durability costs (create, writes)
    subject,   // a PackFS backend through the Backend contract
};

struct BackendAdapter {
    std::string_view name;  // as printed and in --json: "mem", "raw", "raw+fsync", ...
    AdapterRole role;
    bool snapshots;  // snapshot() is meant to be O(1); the snapshot category times it
    // A fresh, empty target; `scratch` is a host directory it may make its own dirs under.
    std::function<Result<std::unique_ptr<Target>>(const std::string& scratch)> make;
    // Its operations reach the host's disk: its runs may be bounded by time (Sizes::disk_budget_s).
    bool on_disk = false;
};

std::span<const BackendAdapter> backend_adapters();

}  // namespace packfs::bench
