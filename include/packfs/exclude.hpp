// Which entries a build leaves out: patterns in the syntax of .gitignore, matched against paths
// from the source's root ("/usr/local", with "/" the root). docs/PACK.md, "Excluding paths".
//
//   name        no slash but a trailing one: matches an entry of that name at any depth
//   /a/b, a/b   a slash at the start or in the middle: matches that path from the root
//   dir/        a trailing slash: matches directories only
//   * ? [a-z]   globs within one component (fnmatch(3)); \ escapes the next character
//   **          a whole component: any number of components ("**/x", "a/**/b"; "a/**" is
//               everything inside a, not a itself)
//   !pattern    re-includes what an earlier pattern excluded; the last pattern that matches wins
//
// A directory left out is not read at all, so nothing under it can be re-included (as in git).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "packfs/error.hpp"
#include "packfs/export.hpp"

namespace packfs {

class PACKFS_API ExcludePatterns {
public:
    // Adds one pattern. EINVAL naming it when it is empty, is "!" or "/" alone, ends in an
    // unescaped backslash, holds a NUL, or has a "." or ".." component; ENAMETOOLONG when it
    // is longer than a path can be.
    Result<void> add(std::string_view pattern);

    // Adds a file's worth, as --exclude-from reads one: a pattern a line; blank lines and lines
    // starting with "#" are skipped; trailing spaces are dropped unless escaped ("\ "); a
    // CRLF's CR too. An error names `origin` and the line number.
    Result<void> add_lines(std::string_view text, std::string_view origin);

    bool empty() const { return patterns_.empty(); }
    std::size_t size() const { return patterns_.size(); }

    // Whether the entry at `path` ("/a/b": absolute from the source's root, no trailing slash)
    // is left out by the patterns alone, its ancestors not considered: a build asks only for
    // entries whose parent it kept.
    bool excludes(std::string_view path, bool is_directory) const;

    // Whether a build leaves `path` out: it or one of its ancestors (each a directory) is.
    bool leaves_out(std::string_view path, bool is_directory) const;

private:
    struct Component {
        std::string glob;  // one name's glob, or "**"
        bool literal;      // no glob characters: compared as bytes
    };
    struct Pattern {
        std::vector<Component> components;  // split at "/"
        bool negated = false;
        bool directories_only = false;
        bool anchored = false;  // matched against the whole path, not the last name
    };
    std::vector<Pattern> patterns_;
};

}  // namespace packfs
