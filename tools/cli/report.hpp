// How a command reports: results as text for people or as one JSON object (--json), and
// failures as "packfs: <op> <path>: <message>" on stderr or {"error": {...}} on stdout.
// Exit codes (DESIGN §12): 0 ok, 1 an operation failed, 2 usage.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "packfs/error.hpp"

namespace packfs::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;

using Json = nlohmann::ordered_json;

// What went wrong, in the words a user reads: an errno-style code, the operation, the path
// (virtual, or the host path the user typed) and the message without those two.
struct Failure {
    int code = 0;
    std::string op;
    std::string path;
    std::string message;

    static Failure from(const Error& error);
    // "<op> <path>: <message>", or without the path where there is none.
    std::string text() const;
    Json json() const;  // {"code": "ENOENT", "op": ..., "path": ..., "message": ...}
};

class Output {
public:
    explicit Output(bool json) : json_(json) {}
    bool json() const noexcept { return json_; }

    // Prints the failure (stderr, or the JSON error object on stdout) and returns kExitFailed.
    int fail(const Failure& failure) const;
    int fail(const Error& error) const { return fail(Failure::from(error)); }
    // A usage error found after parsing (a value CLI11 could not check): returns kExitUsage.
    int usage(std::string_view message) const;
    // One line on stderr, "packfs: warning: ...", whatever the output mode.
    static void warn(std::string_view message);
    // The command's one JSON object, on stdout.
    static void emit(const Json& object);

private:
    bool json_;
};

}  // namespace packfs::cli
