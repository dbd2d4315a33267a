// A volume's manifest (docs/VOLUME.md): the one file that says which pack and which journal
// generation make up the volume. It is only ever replaced whole: written to MANIFEST.tmp,
// fsynced, renamed over MANIFEST, and the directory fsynced (through core/io, so tests can
// fail each step). A crash at any point leaves the old manifest or the new one, never a mix.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "packfs/error.hpp"
#include "packfs/volume.hpp"

namespace packfs::volume {

inline constexpr uint32_t kManifestVersion = 1;
inline constexpr const char* kManifestName = "MANIFEST";

struct Manifest {
    std::array<uint8_t, 16> volume_id{};
    uint64_t generation = 1;
    std::string pack;     // file name inside the volume directory
    std::string journal;  // file name inside the volume directory
    uint64_t first_seq = 1;  // the journal's first record
    uint64_t next_ino = 2;   // the overlay numbers new inodes from here
    Durability durability = Durability::batch;
    std::string pack_digest;  // hex SHA-256 of the pack (its image digest)
    std::string created;
    std::string last_compaction;
    double last_compaction_seconds = 0;
};

std::string pack_file_name(uint64_t generation);
std::string journal_file_name(uint64_t generation);

Result<Manifest> read_manifest(const std::string& dir);
Result<void> write_manifest(const std::string& dir, const Manifest& manifest);

// "2026-12-01T18:33:17Z"
std::string utc_now_iso8601();

}  // namespace packfs::volume
