// `packfs diff A B`: compares two SOURCEs tree by tree. "+ /p" is only in B, "- /p" only in A,
// "M /p (what)" differs in content, mode, owner, type, target, xattrs or times (mtime: atimes
// move on reads and ctimes cannot be restored, so neither says anything about the tree).
// Exit codes as diff(1): 0 identical, 1 different, 2 trouble (usage, or a SOURCE that cannot
// be read), so a script can tell "different" from "could not compare".
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>
#include <vector>

#include "command.hpp"
#include "content.hpp"
#include "format.hpp"
#include "report.hpp"
#include "source.hpp"
#include "tree.hpp"

namespace packfs::cli {

namespace {

struct DiffArgs {
    std::string a, b;
    bool json = false;
};

struct Change {
    char kind;  // '+', '-', 'M'
    std::string path;
    std::vector<std::string> what;
};

class TreeDiff {
public:
    TreeDiff(Backend& a, Backend& b) : a_(a), b_(b) {}

    // Compares the trees from the root; the first error that stops the comparison, if any.
    Result<std::vector<Change>> run() {
        if (auto ok = compare("/"); !ok) return std::unexpected(ok.error());
        return std::move(changes_);
    }

private:
    Result<void> compare(const std::string& path) {
        auto a = entry_details(a_, path);
        if (!a) return std::unexpected(a.error());
        auto b = entry_details(b_, path);
        if (!b) return std::unexpected(b.error());
        std::vector<std::string> what;
        if (a->stat.type != b->stat.type) {
            changes_.push_back({'M', path, {"type"}});
            return {};  // different kinds of thing: nothing else compares
        }
        auto content = same_bytes(path, a->stat, b->stat);
        if (!content) return std::unexpected(content.error());
        if (!*content) what.push_back("content");
        if (a->stat.mode != b->stat.mode) what.push_back("mode");
        if (a->stat.uid != b->stat.uid || a->stat.gid != b->stat.gid) what.push_back("owner");
        if (a->target != b->target) what.push_back("target");
        auto xattrs = same_xattrs(path, a->xattrs, b->xattrs);
        if (!xattrs) return std::unexpected(xattrs.error());
        if (!*xattrs) what.push_back("xattrs");
        if (a->stat.mtime != b->stat.mtime) what.push_back("times");
        if (!what.empty()) changes_.push_back({'M', path, std::move(what)});
        if (a->stat.type == FileType::directory) return compare_children(path);
        return {};
    }

    // Regular files by size then bytes; devices by device number; nothing else has content.
    Result<bool> same_bytes(const std::string& path, const Stat& a, const Stat& b) {
        if (a.type == FileType::char_device || a.type == FileType::block_device) {
            return a.rdev == b.rdev;
        }
        if (a.type != FileType::regular) return true;
        if (a.size != b.size) return false;
        return same_content(a_, path, b_, path);
    }

    Result<bool> same_xattrs(const std::string& path, const std::vector<std::string>& a,
                             const std::vector<std::string>& b) {
        if (a != b) return false;
        for (const std::string& name : a) {
            auto value_a = a_.getxattr(path, name);
            if (!value_a) return std::unexpected(value_a.error());
            auto value_b = b_.getxattr(path, name);
            if (!value_b) return std::unexpected(value_b.error());
            if (*value_a != *value_b) return false;
        }
        return true;
    }

    // Both listings are in byte order: one merge pass pairs the names.
    Result<void> compare_children(const std::string& dir) {
        auto a = sorted_entries(a_, dir);
        if (!a) return std::unexpected(a.error());
        auto b = sorted_entries(b_, dir);
        if (!b) return std::unexpected(b.error());
        std::size_t i = 0, j = 0;
        while (i < a->size() || j < b->size()) {
            if (j == b->size() || (i < a->size() && (*a)[i].name < (*b)[j].name)) {
                changes_.push_back({'-', child_path(dir, (*a)[i++].name), {}});
            } else if (i == a->size() || (*b)[j].name < (*a)[i].name) {
                changes_.push_back({'+', child_path(dir, (*b)[j++].name), {}});
            } else {
                if (auto ok = compare(child_path(dir, (*a)[i].name)); !ok) return ok;
                ++i;
                ++j;
            }
        }
        return {};
    }

    Backend& a_;
    Backend& b_;
    std::vector<Change> changes_;
};

// diff(1)'s "trouble": the same code as a usage error.
constexpr int kExitTrouble = kExitUsage;

int run_diff(const DiffArgs& args) {
    const Output out(args.json);
    const auto trouble = [&out](const Failure& failure) {
        out.fail(failure);
        return kExitTrouble;
    };
    auto a = open_source(args.a);
    if (!a) return trouble(source_failure(a.error()));
    auto b = open_source(args.b);
    if (!b) return trouble(source_failure(b.error()));
    auto changes = TreeDiff(**a, **b).run();
    if (!changes) return trouble(Failure::from(changes.error()));
    if (out.json()) {
        Json list = Json::array();
        for (const Change& c : *changes) {
            Json change{{"change", std::string(1, c.kind)}, {"path", c.path}};
            if (c.kind == 'M') change["what"] = c.what;
            list.push_back(std::move(change));
        }
        Output::emit(Json{{"identical", changes->empty()}, {"changes", std::move(list)}});
    } else {
        for (const Change& c : *changes) {
            if (c.kind == 'M') {
                fmt::print("M {} ({})\n", c.path, fmt::join(c.what, ", "));
            } else {
                fmt::print("{} {}\n", c.kind, c.path);
            }
        }
    }
    return changes->empty() ? kExitOk : kExitFailed;
}

}  // namespace

Command add_diff_command(CLI::App& parent) {
    auto args = std::make_shared<DiffArgs>();
    CLI::App* sub = parent.add_subcommand(
        "diff", "Compare two SOURCEs; exit 0 if identical, 1 if they differ, 2 on trouble");
    sub->add_flag("--json", args->json, "Print the differences as one JSON object");
    sub->add_option("A", args->a, "First SOURCE: pack file or URL, volume or directory")
        ->required();
    sub->add_option("B", args->b, "Second SOURCE: pack file or URL, volume or directory")
        ->required();
    return {sub, [args](const std::string&) { return run_diff(*args); }};
}

}  // namespace packfs::cli
