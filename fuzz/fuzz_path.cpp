// libFuzzer target: path normalisation on arbitrary bytes (DESIGN §3, §14).
//
// Invariants checked on every input:
// - normalize_path either fails with ENOENT (empty), EINVAL (a NUL byte) or ENAMETOOLONG, or
//   returns a path that is_normal_path accepts, within kMaxPathLength;
// - normalising is idempotent: the result normalises to itself;
// - is_normal_path(x) implies normalize_path(x) == x;
// - NormalPath::make agrees with normalize_path (same success, same code, same view), and
//   wants_dir() is set exactly for a non-root result of an input with a trailing '/', "/." or
//   "/..";
// - the components of the result rebuild it (PathComponents), each 1..255 bytes, none "." or
//   ".."; path_parent / path_basename / path_join round-trip.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "packfs/path.hpp"

namespace {

[[noreturn]] void die(const char* what, std::string_view input) {
    std::fprintf(stderr, "fuzz_path: invariant broken: %s (input %zu bytes)\n", what, input.size());
    std::abort();
}

#define CHECK(cond, input)              \
    do {                                \
        if (!(cond)) die(#cond, input); \
    } while (0)

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    using namespace packfs;
    const std::string raw(reinterpret_cast<const char*>(data), size);
    const std::string_view in(raw);

    auto normal = normalize_path(in, "fuzz");
    auto made = NormalPath::make(in, "fuzz");
    CHECK(normal.has_value() == made.has_value(), in);

    if (!normal) {
        const int code = normal.error().code();
        CHECK(code == ENOENT || code == EINVAL || code == ENAMETOOLONG, in);
        CHECK(made.error().code() == code, in);
        CHECK(code != ENOENT || in.empty(), in);
        CHECK(!is_normal_path(in), in);
        return 0;
    }

    const std::string& out = *normal;
    CHECK(is_normal_path(out), in);
    CHECK(out.size() <= kMaxPathLength, in);
    CHECK(made->view() == out, in);
    CHECK(made->is_root() == (out == "/"), in);
    if (is_normal_path(in)) {
        CHECK(out == in, in);
        CHECK(!made->wants_dir(), in);
    } else {
        CHECK(made->wants_dir() == (has_trailing_slash(in) && out != "/"), in);
    }

    // Idempotent.
    auto again = normalize_path(out, "fuzz");
    CHECK(again.has_value(), in);
    CHECK(*again == out, in);

    // Components rebuild the path.
    std::string rebuilt;
    for (std::string_view c : PathComponents(out)) {
        CHECK(!c.empty() && c.size() <= kMaxNameLength, in);
        CHECK(c != "." && c != "..", in);
        CHECK(c.find('/') == std::string_view::npos, in);
        rebuilt += '/';
        rebuilt += c;
    }
    if (rebuilt.empty()) rebuilt = "/";
    CHECK(rebuilt == out, in);

    // Parent and basename.
    if (out != "/") {
        std::string_view parent = path_parent(out);
        std::string_view base = path_basename(out);
        CHECK(is_normal_path(parent), in);
        CHECK(!base.empty(), in);
        CHECK(path_join(parent, base) == out, in);
    } else {
        CHECK(path_basename(out).empty(), in);
    }
    return 0;
}
