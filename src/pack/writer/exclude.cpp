// Exclude patterns: parsed into components once, matched one name at a time with fnmatch(3)
// (components hold no "/", so no FNM_PATHNAME is needed, and without FNM_PERIOD "*" matches a
// leading dot, as in git), "**" by trying each split of the path.
#include "packfs/exclude.hpp"

#include <fmt/format.h>
#include <fnmatch.h>

#include <span>

#include "packfs/path.hpp"

namespace packfs {

namespace {

// The glob characters fnmatch gives a meaning to; a component without them is compared as bytes.
bool is_literal(std::string_view glob) {
    return glob.find_first_of("*?[\\") == std::string_view::npos;
}

// Whether `glob` ends in a backslash that escapes nothing.
bool ends_in_lone_backslash(std::string_view glob) {
    std::size_t run = 0;
    while (run < glob.size() && glob[glob.size() - 1 - run] == '\\') ++run;
    return run % 2 == 1;
}

bool glob_matches(std::string_view glob, bool literal, std::string_view name) {
    if (literal) return glob == name;
    // fnmatch wants NUL-terminated strings; a name is at most kMaxNameLength bytes.
    char buf[kMaxNameLength + 1];
    if (name.size() > kMaxNameLength) return false;
    name.copy(buf, name.size());
    buf[name.size()] = '\0';
    return ::fnmatch(glob.data(), buf, 0) == 0;
}

// "a/b/c" -> "a" and "b/c"; "a" -> "a" and "".
std::pair<std::string_view, std::string_view> first_component(std::string_view path) {
    const std::size_t slash = path.find('/');
    if (slash == std::string_view::npos) return {path, {}};
    return {path.substr(0, slash), path.substr(slash + 1)};
}

template <class Component>
bool components_match(std::span<const Component> pattern, std::string_view path) {
    if (pattern.empty()) return path.empty();
    if (pattern.front().glob == "**") {
        // Trailing: everything inside (one or more components); elsewhere zero or more.
        if (pattern.size() == 1) return !path.empty();
        for (std::string_view rest = path;; rest = first_component(rest).second) {
            if (components_match(pattern.subspan(1), rest)) return true;
            if (rest.empty()) return false;
        }
    }
    if (path.empty()) return false;
    auto [name, rest] = first_component(path);
    return glob_matches(pattern.front().glob, pattern.front().literal, name) &&
           components_match(pattern.subspan(1), rest);
}

}  // namespace

Result<void> ExcludePatterns::add(std::string_view text) {
    const std::string_view original = text;
    if (text.size() > kMaxPathLength) return fail(ENAMETOOLONG, "exclude: pattern", original);
    if (text.find('\0') != std::string_view::npos)
        return fail(EINVAL, "exclude: a NUL in pattern", original);
    Pattern pattern;
    if (text.starts_with('!')) {
        pattern.negated = true;
        text.remove_prefix(1);
    }
    if (text.ends_with('/')) {
        pattern.directories_only = true;
        while (text.ends_with('/')) text.remove_suffix(1);
    }
    // A slash anywhere but at the end anchors the pattern at the root.
    pattern.anchored = text.find('/') != std::string_view::npos;
    while (!text.empty()) {
        auto [glob, rest] = first_component(text);
        text = rest;
        if (glob.empty()) continue;  // "/a", "a//b"
        if (glob == "." || glob == "..")
            return fail(EINVAL, "exclude: a '.' or '..' component in pattern", original);
        if (ends_in_lone_backslash(glob))
            return fail(EINVAL, "exclude: a backslash escaping nothing in pattern", original);
        if (glob == "**" && !pattern.components.empty() && pattern.components.back().glob == "**")
            continue;  // "**/**" is "**"
        pattern.components.push_back({std::string(glob), is_literal(glob)});
    }
    if (pattern.components.empty())
        return fail(EINVAL, "exclude: a pattern that names no entry", original);
    patterns_.push_back(std::move(pattern));
    return {};
}

Result<void> ExcludePatterns::add_lines(std::string_view text, std::string_view origin) {
    std::size_t line_number = 0;
    while (!text.empty()) {
        ++line_number;
        const std::size_t end = text.find('\n');
        std::string_view line = text.substr(0, end);
        text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
        if (line.ends_with('\r')) line.remove_suffix(1);
        // Trailing spaces go unless the last one is escaped.
        while (line.ends_with(' ') && !ends_in_lone_backslash(line.substr(0, line.size() - 1)))
            line.remove_suffix(1);
        if (line.empty() || line.starts_with('#')) continue;
        if (auto r = add(line); !r) {
            return std::unexpected(
                r.error().with_path(fmt::format("{}:{}: {}", origin, line_number, line)));
        }
    }
    return {};
}

bool ExcludePatterns::excludes(std::string_view path, bool is_directory) const {
    if (path.starts_with('/')) path.remove_prefix(1);
    if (path.empty()) return false;  // the root is always kept
    const std::string_view name = path.substr(path.rfind('/') + 1);
    // The last pattern that matches decides.
    for (auto it = patterns_.rbegin(); it != patterns_.rend(); ++it) {
        const Pattern& p = *it;
        if (p.directories_only && !is_directory) continue;
        const bool matched =
            p.anchored ? components_match(std::span(p.components), path)
                       : glob_matches(p.components[0].glob, p.components[0].literal, name);
        if (matched) return !p.negated;
    }
    return false;
}

bool ExcludePatterns::leaves_out(std::string_view path, bool is_directory) const {
    for (std::size_t slash = path.find('/', 1); slash != std::string_view::npos;
         slash = path.find('/', slash + 1)) {
        if (excludes(path.substr(0, slash), true)) return true;
    }
    return excludes(path, is_directory);
}

}  // namespace packfs
