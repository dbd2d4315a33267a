// The one place a command turns a SOURCE argument into a Backend. A SOURCE is a pack file, a
// pack's http(s) URL (docs/REMOTE.md), a volume directory (one holding a MANIFEST: opened
// read-only, journal replayed), or any other host directory (served by the dir backend,
// read-only, contained beneath it).
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <memory>
#include <optional>
#include <string_view>

#include "packfs/backend.hpp"
#include "packfs/pack.hpp"
#include "packfs/remote.hpp"
#include "packfs/source.hpp"
#include "report.hpp"

namespace packfs::cli {

// The tool's options for remote SOURCEs (--cache, --cache-size, --timeout, ...), given before or
// after the subcommand's name.
void add_remote_options(CLI::App& app);
// What those options said (after parsing).
const RemoteOptions& remote_options();
// What they said of local packs (--base).
const PackOpenOptions& pack_options();
// Where remote packs opened from now on report failed fetches (default: standard error).
void set_remote_log(std::function<void(std::string_view)> log);

// Opens SOURCE read-only (packfs::open_source with the remote options above): a regular file
// as a pack, a directory with the dir backend (default containment: a ".." or a symlink
// pointing out is EXDEV, a magic link ELOOP).
Result<std::shared_ptr<Backend>> open_source(std::string_view spec);

// For the commands that take a PACK only (verify, info, mount); `block_cache_bytes`, when set,
// bounds its cache of decompressed blocks instead of the default.
Result<std::shared_ptr<PackBackend>> open_pack_file(
    std::string_view spec, std::optional<std::size_t> block_cache_bytes = std::nullopt);

// The failure to show for an error of open_source/open_pack_file: the error itself, with a
// sentence instead of strerror where the code alone would mislead (a SOURCE that is neither
// a file nor a directory, a file that is not a pack).
Failure source_failure(const Error& error);

}  // namespace packfs::cli
