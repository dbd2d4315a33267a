// Opening a SOURCE: the one way the CLI, the Python module and the C API turn what a user
// names (a pack file, a pack's http(s):// URL or oci:// reference, a volume directory, any
// other host directory) into a Backend.
#pragma once

#include <memory>
#include <string_view>

#include "packfs/backend.hpp"
#include "packfs/export.hpp"
#include "packfs/pack.hpp"
#include "packfs/remote.hpp"
#include "packfs/volume.hpp"

namespace packfs {

// What a SOURCE names, decided from its text (a URL) or the host file it points at.
enum class SourceKind { pack, remote, volume, directory };

// The error op of a SOURCE that exists but is neither a regular file nor a directory (a
// device, a socket, a FIFO): EINVAL under this name, so a front end can say so in words.
inline constexpr std::string_view kSourceKindOp = "open source";

// A SOURCE's kind without opening it: ENOENT (and the like) when it is not there, EINVAL with
// op kSourceKindOp when it is something no backend serves.
PACKFS_API Result<SourceKind> source_kind(std::string_view spec);

struct SourceOptions {
    // Open for changes: a volume is then this process's (locked) until closed, a directory is
    // served writable. A pack or a remote pack is immutable: EROFS. Read-only, a volume takes
    // no lock and changes nothing on disk (it can be read beside the process that has it open).
    bool writable = false;
    RemoteOptions remote;  // for remote SOURCEs
    PackOpenOptions pack = {};  // for pack files (their bases: PackOpenOptions::bases)
};

// An opened SOURCE: always a backend; the pack or volume interface where it is one.
struct Source {
    SourceKind kind = SourceKind::pack;
    std::shared_ptr<Backend> backend;
    std::shared_ptr<PackBackend> pack;  // kind pack or remote
    std::shared_ptr<Volume> volume;     // kind volume
};

// Opens SOURCE. A directory is served by the dir backend with its default containment (no
// path and no symlink inside reaches outside it).
PACKFS_API Result<Source> open_source(std::string_view spec, const SourceOptions& options = {});

}  // namespace packfs
