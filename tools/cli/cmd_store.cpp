// packfs store gc DIR PACK...: a directory of packs built over each other (docs/FORMAT.md
// "Extents") keeps the packs given and every pack they name as a base; the other packs in it
// go (or are only listed, with --dry-run). A pack is a file whose header is a pack's.
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "command.hpp"
#include "format.hpp"
#include "packfs/pack.hpp"
#include "report.hpp"

namespace packfs::cli {
namespace {

namespace fs = std::filesystem;

struct GcArgs {
    std::string dir;
    std::vector<std::string> keep;
    bool dry_run = false;
    bool json = false;
};

// Whether `path` starts with a pack's magic (a file of another kind is never touched).
bool is_pack_file(const fs::path& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    char magic[8] = {};
    const bool ok = ::read(fd, magic, sizeof magic) == sizeof magic &&
                    std::string_view(magic, 8) == std::string_view("PACKFS\r\n", 8);
    ::close(fd);
    return ok;
}

int run_gc(const GcArgs& args) {
    const Output out(args.json);
    std::error_code ec;
    const fs::path dir = fs::canonical(args.dir, ec);
    if (ec) return out.fail(Error(ec.value(), "store gc", args.dir));
    // What stays: the packs given, and each one's bases (a pack names every pack it reads).
    std::set<fs::path> keep;
    for (const std::string& given : args.keep) {
        PackOpenOptions options;
        options.without_bases = true;  // their names alone
        auto pack = open_pack(given, options);
        if (!pack) return out.fail(pack.error());
        const fs::path path = fs::canonical(given, ec);
        if (ec) return out.fail(Error(ec.value(), "store gc", given));
        keep.insert(path);
        for (const auto& [digest, name] : (*pack)->info().bases) {
            const fs::path base = path.parent_path() / name;
            if (!fs::exists(base))
                return out.fail(Error(
                    ENOENT, "store gc",
                    fmt::format("{} (a base of {}, sha256:{})", base.string(), given, digest)));
            keep.insert(fs::canonical(base, ec));
        }
    }
    std::vector<std::pair<fs::path, uint64_t>> gone;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        if (!entry.is_regular_file() || entry.is_symlink()) continue;
        const fs::path path = fs::canonical(entry.path(), ec);
        if (ec || keep.contains(path) || !is_pack_file(path)) continue;
        gone.emplace_back(path, entry.file_size());
    }
    std::sort(gone.begin(), gone.end());
    uint64_t freed = 0;
    Json removed = Json::array();
    for (const auto& [path, bytes] : gone) {
        if (!args.dry_run && ::unlink(path.c_str()) != 0)
            return out.fail(Error(errno, "store gc", path.string()));
        freed += bytes;
        removed.push_back(Json{{"pack", path.string()}, {"bytes", bytes}});
    }
    if (out.json()) {
        Output::emit(Json{{"dir", dir.string()},
                          {"kept", keep.size()},
                          {"removed", removed},
                          {"freed_bytes", freed},
                          {"dry_run", args.dry_run}});
        return kExitOk;
    }
    for (const auto& [path, bytes] : gone)
        fmt::print("{} {} ({})\n", args.dry_run ? "would remove" : "removed", path.string(),
                   human_size(bytes));
    fmt::print("{}: {} packs kept, {} {} ({})\n", dir.string(), keep.size(), gone.size(),
               args.dry_run ? "would go" : "removed", human_size(freed));
    return kExitOk;
}

}  // namespace

Command add_store_command(CLI::App& parent) {
    auto args = std::make_shared<GcArgs>();
    CLI::App* store =
        parent.add_subcommand("store", "A directory of packs built over each other (--base)");
    store->require_subcommand(1);
    CLI::App* gc = store->add_subcommand(
        "gc", "Remove the packs of DIR that no PACK given is or names as a base");
    gc->add_option("DIR", args->dir, "The directory of packs")->required();
    gc->add_option("PACK", args->keep, "The packs to keep, with their bases")->required();
    gc->add_flag("--dry-run,-n", args->dry_run, "Only list what would be removed");
    gc->add_flag("--json", args->json, "Print the result as one JSON object");
    return {store, [args](const std::string&) { return run_gc(*args); }};
}

}  // namespace packfs::cli
