// `packfs stat SOURCE PATH`: one entry's metadata, laid out like stat(1), plus xattr names.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>

#include "command.hpp"
#include "format.hpp"
#include "report.hpp"
#include "source.hpp"
#include "tree.hpp"

namespace packfs::cli {

namespace {

struct StatArgs {
    std::string source, path;
    bool json = false;
};

void print_stat(const std::string& path, const EntryDetails& details) {
    const Stat& st = details.stat;
    const bool device = st.type == FileType::char_device || st.type == FileType::block_device;
    fmt::print("  File: {}{}\n", path, st.type == FileType::symlink ? " -> " + details.target : "");
    fmt::print("  Size: {:<15} Blocks: {:<10} {}\n", st.size, st.blocks,
               type_description(st.type, st.size));
    fmt::print(" Inode: {:<15} Links: {}\n", st.ino,
               device ? fmt::format("{:<10} Device type: {}", st.nlink, device_numbers(st.rdev))
                      : fmt::format("{}", st.nlink));
    fmt::print("Access: ({:04o}/{})  Uid: {}  Gid: {}\n", st.mode, mode_string(st.type, st.mode),
               st.uid, st.gid);
    fmt::print("Access: {}\n", full_time(st.atime));
    fmt::print("Modify: {}\n", full_time(st.mtime));
    fmt::print("Change: {}\n", full_time(st.ctime));
    fmt::print("Xattrs: {}\n",
               details.xattrs.empty() ? "-" : fmt::format("{}", fmt::join(details.xattrs, ", ")));
}

int run_stat(const StatArgs& args) {
    const Output out(args.json);
    auto fs = open_source(args.source);
    if (!fs) return out.fail(source_failure(fs.error()));
    auto details = entry_details(**fs, args.path);
    if (!details) return out.fail(details.error());
    if (out.json()) {
        Json entry = entry_json(args.path, *details);
        entry.erase("name");
        Json object{{"path", args.path}};
        object.update(entry);
        Output::emit(object);
    } else {
        print_stat(args.path, *details);
    }
    return kExitOk;
}

}  // namespace

Command add_stat_command(CLI::App& parent) {
    auto args = std::make_shared<StatArgs>();
    CLI::App* sub = parent.add_subcommand("stat", "Show one entry's metadata (like stat(1))");
    sub->add_flag("--json", args->json, "Print the metadata as one JSON object");
    sub->add_option("SOURCE", args->source,
                    "Pack file or URL (http(s)://, oci://), volume or directory")
        ->required();
    sub->add_option("PATH", args->path, "Path inside SOURCE")->required();
    return {sub, [args](const std::string&) { return run_stat(*args); }};
}

}  // namespace packfs::cli
