// What the volume figures' source files share (volume_categories.cpp: journaled create and the
// targets printout; volume_overlay.cpp: the overlay over a pack and copy-up;
// volume_compaction.cpp: compaction while writing and journal replay): the category names,
// seeds, and the volume helpers.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <span>
#include <string>

#include "bench/backend_target.hpp"
#include "bench/volume_categories.hpp"
#include "packfs/volume.hpp"

namespace packfs::bench::volume_bench {

using Clock = std::chrono::steady_clock;

inline constexpr std::size_t kMiB = 1024 * 1024;
inline constexpr std::size_t kSmallReadBuffer = 4096;  // as the "read files" category
inline constexpr uint64_t kCreateSeed = 1;             // the seeds of categories.cpp
inline constexpr uint64_t kAccessSeed = 2;
inline constexpr uint64_t kChangeSeed = 3;             // which files an overlay changes and deletes
inline constexpr uint64_t kChunkBytes = 64 * 1024;     // the overlay's copy-up unit (overlay.hpp)

// The category names, shared by the groups and the targets printout.
inline constexpr const char* kCreatePrefix = "journaled create: ";
inline constexpr const char* kOverlayPrefix = "overlay over a pack: ";
inline constexpr const char* kCopyUpPrefix = "copy-up ";
inline constexpr const char* kCompactPrefix = "compaction while writing: ";
inline constexpr const char* kCompactOne = "compaction while writing: one compaction";
inline constexpr const char* kCompactPause = "compaction while writing: pause (longest)";
inline constexpr const char* kCompactLongest = "compaction while writing: slowest file creation";
inline constexpr const char* kWriterAlone = "volume (writer alone)";
inline constexpr const char* kWriterCompacting = "volume (writer + compactor)";
inline constexpr const char* kCompactAlone = "volume (compaction alone)";
inline constexpr const char* kPackAlone = "pack";
inline constexpr const char* kOverlayEmpty = "overlay (empty upper)";
inline constexpr const char* kOverlayChanged = "overlay (1% written + 1% deleted)";
inline constexpr const char* kRawCopy = "raw copy (as overlayfs)";
inline constexpr const char* kReplayPrefix = "journal replay: volume open, ";
inline constexpr const char* kReplayBackend = "volume (read-only open)";

// Pseudo-random bytes (splitmix64), as pack_categories.cpp's: incompressible, so a pack of
// them is as large as the file.
inline void fill_random(std::span<std::byte> out, uint64_t seed) {
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
    for (std::size_t i = 0; i < out.size(); i += 8) {
        x += 0x9E3779B97F4A7C15ull;
        uint64_t z = x;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        std::memcpy(out.data() + i, &z, std::min<std::size_t>(8, out.size() - i));
    }
}

// A short or wrong read is a failure of the operation, reported like one: the first 8 bytes
// of every file are its index (stamp()).
inline Result<void> check_read(const std::string& path, std::span<const std::byte> got,
                        std::size_t want_bytes, uint64_t want_stamp) {
    if (got.size() != want_bytes) return fail(EIO, "pread (short read)", path);
    uint64_t found = 0;
    std::memcpy(&found, got.data(), std::min(sizeof found, got.size()));
    if (got.size() >= sizeof found && found != want_stamp)
        return fail(EIO, "pread (wrong content)", path);
    return {};
}


inline Result<void> expect_entries(Target& t, const std::string& dir, std::size_t want) {
    auto n = t.list_dir(dir);
    if (!n) return std::unexpected(n.error());
    if (*n != want) {
        return fail(EIO, "readdir (wrong entry count)",
                    fmt::format("{}: {} entries, expected {}", dir, *n, want));
    }
    return {};
}

// A fresh, empty volume in its own directory under `scratch` (removed with the target).
struct VolumeTarget {
    std::shared_ptr<Volume> volume;
    std::unique_ptr<Target> target;
};

inline Result<VolumeTarget> open_volume_target(TempDir dir) {
    auto volume = Volume::open(dir.path());
    if (!volume) return std::unexpected(volume.error());
    VolumeTarget out;
    out.volume = *volume;
    out.target = make_backend_target(*volume, std::move(dir));
    return out;
}

inline Result<VolumeTarget> fresh_volume(const std::string& scratch, Durability durability) {
    auto dir = TempDir::create(scratch, "volume-");
    if (!dir) return std::unexpected(dir.error());
    VolumeInit init;
    init.durability = durability;
    if (auto ok = Volume::create(dir->path(), init); !ok) return std::unexpected(ok.error());
    return open_volume_target(std::move(*dir));
}

// --- volume_overlay.cpp ---
Group overlay_read_group(const Sizes& s, const std::string& scratch);
Group copy_up_group(const Sizes& s, bool with_raw, const std::string& scratch,
                    const std::shared_ptr<VolumeFacts>& facts);

// --- volume_compaction.cpp ---
Group compaction_group(const Sizes& s, const std::string& scratch,
                       const std::shared_ptr<VolumeFacts>& facts);
Group replay_group(const Sizes& s, const std::string& scratch);

}  // namespace packfs::bench::volume_bench
