// packfs cache ls|prune|clear: the block cache remote packs share (docs/REMOTE.md, "The cache"),
// in the directory the tool's --cache option names (default $XDG_CACHE_HOME/packfs). Packs a
// process has open are listed as in use and never removed.
#include <fmt/format.h>

#include <ctime>
#include <memory>
#include <string>

#include "command.hpp"
#include "format.hpp"
#include "packfs/remote.hpp"
#include "report.hpp"
#include "source.hpp"

namespace packfs::cli {
namespace {

struct CacheArgs {
    bool json = false;
};

std::string cache_dir() {
    const std::string& dir = remote_options().cache_dir;
    return dir.empty() ? remote_cache_dir() : dir;
}

std::string when(int64_t seconds) {
    const std::time_t t = seconds;
    std::tm tm{};
    ::localtime_r(&t, &tm);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%d %H:%M", &tm);
    return text;
}

int run_ls(const CacheArgs& args) {
    const Output out(args.json);
    const std::string dir = cache_dir();
    auto packs = list_remote_cache(dir);
    if (!packs) return out.fail(packs.error());
    uint64_t total = 0;
    Json list = Json::array();
    for (const CachedPack& p : *packs) {
        total += p.on_disk;
        list.push_back(Json{{"digest", p.digest},
                            {"size", p.size},
                            {"cached_bytes", p.on_disk},
                            {"last_used", p.last_used},
                            {"in_use", p.in_use}});
    }
    if (out.json()) {
        Output::emit(Json{{"cache", dir}, {"packs", list}, {"cached_bytes", total}});
        return kExitOk;
    }
    fmt::print("{}: {} packs, {} cached\n", dir, packs->size(), human_size(total));
    for (const CachedPack& p : *packs) {
        fmt::print("  {}  {:>9} of {:>9}  last used {}{}\n", p.digest, human_size(p.on_disk),
                   human_size(p.size), when(p.last_used), p.in_use ? "  (in use)" : "");
    }
    return kExitOk;
}

int run_prune(const CacheArgs& args, bool everything) {
    const Output out(args.json);
    const std::string dir = cache_dir();
    const uint64_t bound = everything ? 0 : remote_options().cache_bytes;
    if (!everything && bound == 0)
        return out.usage("cache prune wants --cache-size (the bound to prune to)");
    auto freed = prune_remote_cache(dir, bound);
    if (!freed) return out.fail(freed.error());
    auto left = list_remote_cache(dir);
    if (!left) return out.fail(left.error());
    uint64_t kept = 0, in_use = 0;
    for (const CachedPack& p : *left) {
        kept += p.on_disk;
        in_use += p.in_use ? 1 : 0;
    }
    if (out.json()) {
        Output::emit(Json{{"cache", dir},
                          {"freed_bytes", *freed},
                          {"cached_bytes", kept},
                          {"packs_in_use", in_use}});
        return kExitOk;
    }
    fmt::print("{}: freed {}, {} left in {} packs", dir, human_size(*freed), human_size(kept),
               left->size());
    if (in_use != 0) fmt::print(" ({} in use, kept)", in_use);
    fmt::print("\n");
    return kExitOk;
}

}  // namespace

Command add_cache_command(CLI::App& parent) {
    auto args = std::make_shared<CacheArgs>();
    CLI::App* sub = parent.add_subcommand(
        "cache", "List or empty the block cache remote packs share (the --cache directory)");
    sub->require_subcommand(1);
    CLI::App* ls = sub->add_subcommand("ls", "List the cached packs, least recently used first");
    CLI::App* prune = sub->add_subcommand(
        "prune", "Remove packs not in use, least recently used first, down to --cache-size");
    CLI::App* clear = sub->add_subcommand("clear", "Remove every pack not in use");
    for (CLI::App* s : {ls, prune, clear}) {
        s->add_flag("--json", args->json, "Print the result as one JSON object");
        s->fallthrough();
    }
    sub->fallthrough();
    return {sub, [args, ls, clear](const std::string&) {
                if (ls->parsed()) return run_ls(*args);
                return run_prune(*args, clear->parsed());
            }};
}

}  // namespace packfs::cli
