// packfs: the command line tool. Thin over the library: each subcommand is one
// cmd_<name>.cpp; this file only parses and dispatches.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "command.hpp"
#include "packfs/version.hpp"
#include "source.hpp"

namespace {

// `packfs --version`: what a packager or a bug report needs to know of this build.
std::string version_text() {
    const packfs::FormatVersions formats = packfs::format_versions();
    return fmt::format(
        "packfs {}\n"
        "pack format: reads {}-{}, writes {}-{} ({} by default)\n"
        "journal format: {}\n"
        "features: zstd, lz4, fuse, remote (http, https, oci)",
        packfs::version(), formats.pack_oldest, formats.pack_newest, formats.pack_oldest,
        formats.pack_newest, formats.pack_newest, formats.journal);
}

// Prints the help of the subcommand `topic` names (the program's when empty): 0, or 2 when
// there is no such subcommand.
int show_help(CLI::App& app, const std::vector<std::string>& topic) {
    CLI::App* target = &app;
    std::string path = "packfs";
    for (const std::string& name : topic) {
        CLI::App* next = nullptr;
        for (CLI::App* sub : target->get_subcommands([](CLI::App*) { return true; })) {
            if (sub->get_name() == name) next = sub;
        }
        if (next == nullptr || name == "help") {
            fmt::print(stderr, "packfs: help: {} has no subcommand {} (packfs help lists them)\n",
                       path, name);
            return 2;
        }
        target = next;
        path += " " + name;
    }
    // Through the formatter: App::help() would show the parsed subcommand's (help's own).
    fmt::print("{}", target->get_formatter()->make_help(target, path, CLI::AppFormatMode::Normal));
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"PackFS: packs, overlays and volumes"};
    app.require_subcommand(1);
    app.set_version_flag("-V,--version", version_text());
    packfs::cli::add_remote_options(app);
    std::vector<packfs::cli::Command> commands{
        packfs::cli::add_build_command(app),   packfs::cli::add_ls_command(app),
        packfs::cli::add_stat_command(app),    packfs::cli::add_cat_command(app),
        packfs::cli::add_extract_command(app), packfs::cli::add_verify_command(app),
        packfs::cli::add_info_command(app),    packfs::cli::add_diff_command(app),
        packfs::cli::add_volume_command(app),  packfs::cli::add_mount_command(app),
        packfs::cli::add_umount_command(app),  packfs::cli::add_sync_command(app),
        packfs::cli::add_convert_command(app), packfs::cli::add_cache_command(app),
        packfs::cli::add_push_command(app),    packfs::cli::add_pull_command(app),
        packfs::cli::add_store_command(app),
    };
    // `packfs help [SUBCOMMAND ...]`: the help of packfs or of a (nested) subcommand.
    std::vector<std::string> topic;
    CLI::App* help = app.add_subcommand(
        "help", "Show the help of packfs or of a subcommand (packfs help volume init)");
    help->add_option("SUBCOMMAND", topic, "The subcommand, and a nested one (volume init)");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        // --help exits 0; every other parse error is a usage error: 2 (DESIGN §12).
        return app.exit(e) == 0 ? 0 : 2;
    }
    if (help->parsed()) return show_help(app, topic);
    std::string command_line;
    for (int i = 0; i < argc; ++i) command_line += (i ? " " : "") + std::string(argv[i]);
    for (const auto& command : commands) {
        if (command.app->parsed()) return command.run(command_line);
    }
    return 2;
}
