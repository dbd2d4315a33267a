#include "report.hpp"

#include <fmt/format.h>

#include <cstdio>

namespace packfs::cli {

Failure Failure::from(const Error& error) {
    Failure out{error.code(), std::string(error.op()), error.path(), error.message()};
    // Error::message() is "<op> <path>: <what>"; keep only <what>, op and path have fields.
    const std::string prefix =
        out.path.empty() ? out.op + ": " : fmt::format("{} {}: ", out.op, out.path);
    if (out.message.starts_with(prefix)) out.message.erase(0, prefix.size());
    return out;
}

std::string Failure::text() const {
    if (op.empty()) return message;
    return path.empty() ? fmt::format("{}: {}", op, message)
                        : fmt::format("{} {}: {}", op, path, message);
}

Json Failure::json() const {
    return Json{
        {"code", std::string(errno_name(code))}, {"op", op}, {"path", path}, {"message", message}};
}

int Output::fail(const Failure& failure) const {
    if (json_) {
        emit(Json{{"error", failure.json()}});
    } else {
        std::fflush(stdout);  // keep what was printed before the error ahead of it
        fmt::print(stderr, "packfs: {}\n", failure.text());
    }
    return kExitFailed;
}

int Output::usage(std::string_view message) const {
    if (json_) emit(Json{{"error", Failure{EINVAL, "usage", "", std::string(message)}.json()}});
    fmt::print(stderr, "packfs: {}\n", message);
    return kExitUsage;
}

void Output::warn(std::string_view message) {
    std::fflush(stdout);
    fmt::print(stderr, "packfs: warning: {}\n", message);
}

void Output::emit(const Json& object) {
    // Names in a tree are bytes, not always UTF-8: replace what is not, never throw.
    fmt::print("{}\n", object.dump(2, ' ', false, Json::error_handler_t::replace));
}

}  // namespace packfs::cli
