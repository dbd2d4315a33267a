#include "remote/options.hpp"

#include <fmt/format.h>

#include "remote/oci.hpp"

namespace packfs {

std::string remote_option_problem(const RemoteOptions& options) {
    if (options.connections < 1 || options.connections > 64)
        return fmt::format("connections {} (from 1 to 64)", options.connections);
    if (options.timeout.count() <= 0) return "timeout (not above 0)";
    for (const std::string& h : options.headers) {
        // Sent as one line of the request: a line break would smuggle in another header.
        const auto colon = h.find(':');
        // Not echoed: a header is often a secret.
        if (colon == 0 || colon == std::string::npos)
            return "a header not 'Name: value' (e.g. 'Authorization: Bearer TOKEN')";
        if (h.find_first_of("\r\n") != std::string::npos) return "a header holding a line break";
    }
    return {};
}

namespace remote {

Result<void> check_options(std::string_view url, const RemoteOptions& options,
                           std::string_view op) {
    if (auto why = remote_option_problem(options); !why.empty())
        return fail(EINVAL, op, fmt::format("{} ({})", url, why));
    if (is_oci_url(url) && !options.headers.empty())
        return fail(EINVAL, op,
                    fmt::format("{} (request headers are for http(s) URLs; a registry "
                                "authenticates through its token service)",
                                url));
    return {};
}

}  // namespace remote
}  // namespace packfs
