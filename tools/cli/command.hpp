// One subcommand of `packfs`: each lives in its own cmd_<name>.cpp, registers its options on
// the app, and hands back what to run once the command line has been parsed.
#pragma once

#include <functional>
#include <string>

#include <CLI/CLI.hpp>

namespace packfs::cli {

struct Command {
    CLI::App* app = nullptr;      // the subcommand, to ask whether it was given
    // Runs it, given the whole command line as typed (for reports); returns the exit code:
    // 0 ok, 1 an operation failed, 2 usage error.
    std::function<int(const std::string& command_line)> run;
};

Command add_build_command(CLI::App& parent);
Command add_convert_command(CLI::App& parent);
Command add_ls_command(CLI::App& parent);
Command add_stat_command(CLI::App& parent);
Command add_cat_command(CLI::App& parent);
Command add_extract_command(CLI::App& parent);
Command add_verify_command(CLI::App& parent);
Command add_info_command(CLI::App& parent);
Command add_diff_command(CLI::App& parent);
Command add_volume_command(CLI::App& parent);
Command add_mount_command(CLI::App& parent);
Command add_umount_command(CLI::App& parent);
Command add_sync_command(CLI::App& parent);
Command add_cache_command(CLI::App& parent);
Command add_push_command(CLI::App& parent);
Command add_pull_command(CLI::App& parent);
Command add_store_command(CLI::App& parent);

}  // namespace packfs::cli
