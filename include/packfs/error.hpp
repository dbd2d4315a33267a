// Errors are values: an errno-compatible code, the operation, the virtual path, and for
// corruption the offset with what was expected and what was found. Nothing in the public
// API throws; every fallible call returns Result<T> = std::expected<T, Error>.
#pragma once

#include <cerrno>
#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>

#include "packfs/export.hpp"

namespace packfs {

// Corruption of a pack or journal has its own code, distinct from I/O errors: the data was
// read fine, but it is not what the format says it must be.
inline constexpr int kErrCorrupt = EUCLEAN;

// What a corruption error found: where, what the format requires there, what was there.
struct Corruption {
    uint64_t offset = 0;
    uint64_t expected = 0;
    uint64_t actual = 0;
    std::string what;  // the structure or field, e.g. "header checksum"
};

class PACKFS_API Error {
public:
    Error(int code, std::string_view op, std::string_view path = {})
        : code_(code), op_(op), path_(path) {}

    static Error corrupt(std::string_view op, std::string_view path, Corruption detail) {
        Error e(kErrCorrupt, op, path);
        e.corruption_ = std::move(detail);
        return e;
    }

    int code() const noexcept { return code_; }
    // The operation that failed, e.g. "open", "rename".
    std::string_view op() const noexcept { return op_; }
    // The virtual path the operation was given (never a host path).
    const std::string& path() const noexcept { return path_; }
    const std::optional<Corruption>& corruption() const noexcept { return corruption_; }
    // Where and why, below the call that failed, when a layer knows more than the code says:
    // a remote pack's failed fetch names its URL, byte range and cause ("Timeout was
    // reached"). Empty otherwise.
    const std::string& detail() const noexcept { return detail_; }

    // "rename /a/b: No such file or directory" (plus the corruption detail or the detail, if
    // any, in parentheses).
    std::string message() const;

    // The same error, reported for another path (used where a layer rewrites paths).
    Error with_path(std::string_view path) const {
        Error e = *this;
        e.path_ = path;
        return e;
    }
    // The same error, with what the layer below knows (see detail()).
    Error with_detail(std::string detail) const {
        Error e = *this;
        e.detail_ = std::move(detail);
        return e;
    }
    // The same error (code, corruption and detail) told as another call's.
    Error relabeled(std::string_view op, std::string_view path) const {
        Error e = *this;
        e.op_ = op;
        e.path_ = path;
        return e;
    }

    friend bool operator==(const Error& a, const Error& b) { return a.code_ == b.code_; }

private:
    int code_;
    std::string op_;  // owned: a layer may name its operation from a string it built
    std::string path_;
    std::optional<Corruption> corruption_;
    std::string detail_;
};

template <class T>
using Result = std::expected<T, Error>;

// Shorthand for `return fail(ENOENT, "stat", path);` in functions returning Result<T>.
inline std::unexpected<Error> fail(int code, std::string_view op, std::string_view path = {}) {
    return std::unexpected<Error>(std::in_place, code, op, path);
}

// Name of an errno value as a symbol ("ENOENT"), for test output and --json.
PACKFS_API std::string_view errno_name(int code) noexcept;

}  // namespace packfs
