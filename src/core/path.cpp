#include "packfs/path.hpp"

#include <cstring>

namespace packfs {

bool is_normal_path(std::string_view path) noexcept {
    if (path.empty() || path.front() != '/' || path.size() > kMaxPathLength) return false;
    if (path.size() == 1) return true;
    if (path.back() == '/') return false;
    // One pass (every call of the path API starts here): components of 1..255 bytes, no NUL,
    // no "." or "..".
    std::size_t start = 1;
    for (std::size_t i = 1; i <= path.size(); ++i) {
        const char c = i < path.size() ? path[i] : '/';
        if (c == '\0') return false;
        if (c != '/') continue;
        const std::size_t len = i - start;
        if (len == 0 || len > kMaxNameLength) return false;
        if (path[start] == '.' && (len == 1 || (len == 2 && path[start + 1] == '.'))) return false;
        start = i + 1;
    }
    return true;
}

Result<std::string> normalize_path(std::string_view path, std::string_view op) {
    if (path.empty()) return fail(ENOENT, op, path);
    if (is_normal_path(path)) return std::string(path);
    if (std::memchr(path.data(), '\0', path.size()) != nullptr) return fail(EINVAL, op, "<NUL>");
    if (path.size() > kMaxPathLength) return fail(ENAMETOOLONG, op, path.substr(0, 64));

    std::string out;
    out.reserve(path.size() + 1);
    std::size_t i = 0;
    while (i < path.size()) {
        while (i < path.size() && path[i] == '/') ++i;
        std::size_t end = path.find('/', i);
        if (end == std::string_view::npos) end = path.size();
        std::string_view name = path.substr(i, end - i);
        i = end;
        if (name.empty() || name == ".") continue;
        if (name.size() > kMaxNameLength) return fail(ENAMETOOLONG, op, path);
        if (name == "..") {
            // Lexical: drop the last component; at the root ".." stays at the root.
            std::size_t slash = out.rfind('/');
            out.resize(slash == std::string::npos ? 0 : slash);
            continue;
        }
        out += '/';
        out += name;
    }
    if (out.empty()) out.push_back('/');
    // A relative path gains a leading '/': 4095 bytes in can be 4096 out.
    if (out.size() > kMaxPathLength) return fail(ENAMETOOLONG, op, path.substr(0, 64));
    return out;
}

Result<void> check_symlink_target(std::string_view target, std::string_view link_path) {
    if (target.empty()) return fail(ENOENT, "symlink", link_path);
    if (target.size() > kMaxPathLength) return fail(ENAMETOOLONG, "symlink", link_path);
    if (std::memchr(target.data(), '\0', target.size())) return fail(EINVAL, "symlink", link_path);
    return {};
}

bool has_trailing_slash(std::string_view path) noexcept {
    // "/" alone names the root; "a/", "a/." and "a/.." all demand a directory.
    if (path.size() > 1 && path.back() == '/') {
        return path.find_first_not_of('/') != std::string_view::npos;
    }
    if (path.ends_with("/.") || path.ends_with("/..") || path == "." || path == "..") return true;
    return false;
}

std::string_view path_basename(std::string_view normal_path) noexcept {
    std::size_t slash = normal_path.rfind('/');
    return slash == std::string_view::npos ? normal_path : normal_path.substr(slash + 1);
}

std::string_view path_parent(std::string_view normal_path) noexcept {
    std::size_t slash = normal_path.rfind('/');
    if (slash == std::string_view::npos || slash == 0) return "/";
    return normal_path.substr(0, slash);
}

std::string path_join(std::string_view dir, std::string_view name) {
    std::string out;
    out.reserve(dir.size() + 1 + name.size());
    out += dir;
    if (out.empty() || out.back() != '/') out += '/';
    out += name;
    return out;
}

Result<NormalPath> NormalPath::make(std::string_view raw, std::string_view op) {
    NormalPath p;
    if (is_normal_path(raw)) {
        p.view_ = raw;
        return p;
    }
    auto normal = normalize_path(raw, op);
    if (!normal) return std::unexpected(normal.error());
    p.owned_ = std::move(*normal);
    p.wants_dir_ = has_trailing_slash(raw) && p.owned_ != "/";
    return p;
}

}  // namespace packfs
