// What reading a pack built over bases from a server and pushing or pulling one share: where a
// base is beside a pack, and which recorded names may be used as file names at all.
#pragma once

#include <string>
#include <string_view>

namespace packfs::remote {

// A base's recorded name used as a file name beside its pack: one component, not "." or ".."
// (a hostile pack may record any bytes).
inline bool plain_file_name(std::string_view name) noexcept {
    return !name.empty() && name.find('/') == std::string_view::npos && name != "." &&
           name != "..";
}

// The URL of `name` in the directory of `url` (its query, a presigned URL's signature, dropped:
// it signs the one file).
inline std::string beside_url(std::string_view url, std::string_view name) {
    const std::string_view path = url.substr(0, url.find('?'));
    return std::string(path.substr(0, path.rfind('/') + 1)) + std::string(name);
}

// The directory part of a host path, with its slash ("" for a bare file name).
inline std::string dir_of(std::string_view path) {
    const auto slash = path.rfind('/');
    return slash == std::string_view::npos ? std::string() : std::string(path.substr(0, slash + 1));
}

}  // namespace packfs::remote
