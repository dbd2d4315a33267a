// `packfs build --exclude PATTERN --exclude-from FILE`: the patterns a build leaves out
// (gitignore syntax, include/packfs/exclude.hpp), from the command line and from files.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "packfs/error.hpp"
#include "packfs/exclude.hpp"

namespace packfs::cli {

struct ExcludeArgs {
    std::vector<std::string> patterns;  // --exclude, in order
    std::vector<std::string> files;     // --exclude-from, in order
};

void add_exclude_options(CLI::App& sub, ExcludeArgs& args);

// The files' patterns first, then the command line's (so a -e '!keep' can re-include what a
// file excludes). Errors name the pattern, and for a file its path and line.
Result<ExcludePatterns> exclude_patterns(const ExcludeArgs& args);

}  // namespace packfs::cli
