// A fresh host directory that is removed, with everything in it, when the object goes.
#pragma once

#include <string>

#include "packfs/error.hpp"

namespace packfs::bench {

class TempDir {
public:
    // mkdtemp("<parent>/<prefix>XXXXXX").
    static Result<TempDir> create(const std::string& parent, const std::string& prefix);

    TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
    TempDir& operator=(TempDir&& other) noexcept;
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    ~TempDir();

    const std::string& path() const noexcept { return path_; }

private:
    explicit TempDir(std::string path) : path_(std::move(path)) {}
    void remove() noexcept;
    std::string path_;
};

}  // namespace packfs::bench
