// Virtual paths (DESIGN §3). A path is a byte string; '/' separates components; the root is
// "/". Paths are normalised once, at the API edge: "//" collapses, "." is dropped, ".." is
// resolved lexically and never climbs above "/". A relative path is taken from the root.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "packfs/error.hpp"
#include "packfs/export.hpp"

namespace packfs {

inline constexpr std::size_t kMaxNameLength = 255;   // bytes in one component
inline constexpr std::size_t kMaxPathLength = 4095;  // bytes in a whole path, without the NUL

// The normal form of `path`, or ENOENT (empty), EINVAL (holds a NUL byte), ENAMETOOLONG (a
// component over 255 bytes or a path over 4095). `op` names the operation for the error.
PACKFS_API Result<std::string> normalize_path(std::string_view path, std::string_view op = "path");

// True when `path` is already in normal form (absolute, no "//", ".", "..", or trailing
// '/', within the limits), so callers on a hot path can skip the copy.
PACKFS_API bool is_normal_path(std::string_view path) noexcept;

// True when the caller wrote a trailing '/' after a component ("a/b/"), which POSIX takes
// to require a directory.
PACKFS_API bool has_trailing_slash(std::string_view path) noexcept;

// The last component of a normal path ("" for "/"), and everything before it ("/" for a
// top-level entry).
PACKFS_API std::string_view path_basename(std::string_view normal_path) noexcept;
PACKFS_API std::string_view path_parent(std::string_view normal_path) noexcept;

// Checks the target a symlink would hold, before anything about where it goes: ENOENT when
// empty, ENAMETOOLONG over 4095 bytes, EINVAL with a NUL byte (as symlink(2) does, so every
// backend, read-only or not, answers these first). The error names `link_path`.
PACKFS_API Result<void> check_symlink_target(std::string_view target, std::string_view link_path);

// Joins a normal directory path and one component.
PACKFS_API std::string path_join(std::string_view dir, std::string_view name);

// A path checked and put in normal form. When the caller's string already was normal it is
// kept by reference, so a NormalPath must not outlive the string it was made from.
class PACKFS_API NormalPath {
public:
    static Result<NormalPath> make(std::string_view raw, std::string_view op);
    std::string_view view() const noexcept { return owned_.empty() ? view_ : owned_; }
    // The caller wrote a trailing '/': the final component must be a directory.
    bool wants_dir() const noexcept { return wants_dir_; }
    bool is_root() const noexcept { return view() == "/"; }

private:
    std::string_view view_;
    std::string owned_;
    bool wants_dir_ = false;
};

// Iterates over the components of a normal path: for (auto c : PathComponents("/a/b")).
class PACKFS_API PathComponents {
public:
    explicit PathComponents(std::string_view normal_path) noexcept : path_(normal_path) {}

    class iterator {
    public:
        iterator(std::string_view rest) noexcept : rest_(rest) { advance(); }
        std::string_view operator*() const noexcept { return current_; }
        iterator& operator++() noexcept {
            advance();
            return *this;
        }
        bool operator==(const iterator& o) const noexcept {
            return current_.data() == o.current_.data() && current_.size() == o.current_.size();
        }

    private:
        void advance() noexcept {
            while (!rest_.empty() && rest_.front() == '/') rest_.remove_prefix(1);
            std::size_t end = rest_.find('/');
            if (end == std::string_view::npos) end = rest_.size();
            current_ = rest_.substr(0, end);
            rest_.remove_prefix(end);
        }
        std::string_view rest_;
        std::string_view current_;
    };

    iterator begin() const noexcept { return iterator(path_); }
    iterator end() const noexcept { return iterator(path_.substr(path_.size())); }

private:
    std::string_view path_;
};

}  // namespace packfs
