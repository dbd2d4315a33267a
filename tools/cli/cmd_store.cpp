// packfs store gc DIR PACK...: a directory of packs built over each other (docs/FORMAT.md
// "Extents") keeps the packs given and every pack they name as a base; the other packs in it
// go (or are only listed, with --dry-run). packfs store verify DIR: every pack in it opens with
// its bases (found in DIR) and verifies. A pack is a file whose header is a pack's.
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
#include "progress.hpp"
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

// The pack files of `dir` (canonical paths, sorted): regular files with a pack's header.
std::vector<std::pair<fs::path, uint64_t>> packs_in(const fs::path& dir, std::error_code& ec) {
    std::vector<std::pair<fs::path, uint64_t>> out;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        if (!entry.is_regular_file() || entry.is_symlink()) continue;
        std::error_code skip;
        const fs::path path = fs::canonical(entry.path(), skip);
        if (skip || !is_pack_file(path)) continue;
        out.emplace_back(path, entry.file_size(skip));
    }
    std::sort(out.begin(), out.end());
    return out;
}

struct VerifyArgs {
    std::string dir;
    bool json = false;
};

int run_store_verify(const VerifyArgs& args) {
    const Output out(args.json);
    std::error_code ec;
    const fs::path dir = fs::canonical(args.dir, ec);
    if (ec) return out.fail(Error(ec.value(), "store verify", args.dir));
    const auto packs = packs_in(dir, ec);
    if (ec) return out.fail(Error(ec.value(), "store verify", dir.string()));
    ProgressLine progress;
    Json results = Json::array();
    std::size_t failed = 0;
    for (std::size_t i = 0; i < packs.size(); ++i) {
        const std::string path = packs[i].first.string();
        std::vector<std::string> problems;
        std::string digest;
        if (auto pack = open_pack(path); !pack) {
            problems.push_back(pack.error().message());
        } else {
            digest = (*pack)->info().digest;
            std::function<void(uint64_t, uint64_t)> on_progress;
            if (progress.enabled()) {
                on_progress = [&](uint64_t done, uint64_t total) {
                    progress.update([&] {
                        return fmt::format("verifying {} ({} of {}): {} / {}",
                                           packs[i].first.filename().string(), i + 1,
                                           packs.size(), human_size(done), human_size(total));
                    });
                };
            }
            for (const VerifyProblem& p : (*pack)->verify(on_progress).problems)
                problems.push_back(fmt::format("{}: {}", p.where, p.what));
        }
        progress.clear();
        failed += !problems.empty();
        if (out.json()) {
            results.push_back(Json{
                {"pack", path}, {"ok", problems.empty()}, {"digest", digest}, {"problems", problems}});
        } else if (problems.empty()) {
            fmt::print("OK {} {}\n", path, digest);
        } else {
            fmt::print("FAILED {}: {} problem{}\n", path, problems.size(),
                       problems.size() == 1 ? "" : "s");
            for (const std::string& p : problems) fmt::print("  {}\n", p);
        }
    }
    if (out.json()) {
        Output::emit(Json{{"dir", dir.string()}, {"packs", results}, {"failed", failed}});
    } else {
        fmt::print("{}: {} packs, {} verified, {} failed\n", dir.string(), packs.size(),
                   packs.size() - failed, failed);
    }
    return failed == 0 ? kExitOk : kExitFailed;
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
    std::vector<std::pair<fs::path, uint64_t>> gone = packs_in(dir, ec);
    if (ec) return out.fail(Error(ec.value(), "store gc", dir.string()));
    std::erase_if(gone, [&](const auto& pack) { return keep.contains(pack.first); });
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
    auto verify_args = std::make_shared<VerifyArgs>();
    CLI::App* verify = store->add_subcommand(
        "verify", "Verify every pack of DIR, each with its bases (found in DIR)");
    verify->add_option("DIR", verify_args->dir, "The directory of packs")->required();
    verify->add_flag("--json", verify_args->json, "Print the results as one JSON object");
    return {store, [args, gc, verify_args](const std::string&) {
                return gc->parsed() ? run_gc(*args) : run_store_verify(*verify_args);
            }};
}

}  // namespace packfs::cli
