// `packfs extract SOURCE DIR`: recreates a SOURCE's tree in a host directory (extractor.hpp
// says how and in which order). DIR must be empty or missing (it is then created), so an
// extraction never mixes with, or overwrites, what was there.
#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>

#include "command.hpp"
#include "extractor.hpp"
#include "format.hpp"
#include "host_io.hpp"
#include "progress.hpp"
#include "report.hpp"
#include "source.hpp"

namespace packfs::cli {

namespace {

struct ExtractArgs {
    std::string source, dir;
    bool json = false;
};

bool directory_is_empty(int fd) {
    // fdopendir takes the fd over: give it a duplicate.
    DIR* dir = ::fdopendir(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
    if (!dir) return false;
    bool empty = true;
    while (const dirent* entry = ::readdir(dir)) {
        if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0) {
            empty = false;
            break;
        }
    }
    ::closedir(dir);
    return empty;
}

// DIR, created if missing, open, and empty; else why not.
std::expected<UniqueFd, Failure> open_destination(const std::string& path) {
    const auto failure = [&path](int code, std::string message = {}) {
        return std::unexpected(
            Failure{code, "extract", path, message.empty() ? std::strerror(code) : message});
    };
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        if (errno != ENOENT) return failure(errno);
        std::error_code ec;
        std::filesystem::create_directories(path, ec);
        if (ec) return failure(ec.value());
    } else if (!S_ISDIR(st.st_mode)) {
        return failure(ENOTDIR);
    }
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd) return failure(errno);
    if (!directory_is_empty(fd.get())) {
        return failure(ENOTEMPTY, "directory is not empty (DIR must be empty or missing)");
    }
    return fd;
}

Json failures_json(const std::vector<Failure>& failures) {
    Json out = Json::array();
    for (const Failure& f : failures) out.push_back(f.json());
    return out;
}

int run_extract(const ExtractArgs& args) {
    const Output out(args.json);
    auto fs = open_source(args.source);
    if (!fs) return out.fail(source_failure(fs.error()));
    auto dest = open_destination(args.dir);
    if (!dest) return out.fail(dest.error());

    ProgressLine progress;
    const auto start = std::chrono::steady_clock::now();
    const ExtractReport report =
        extract_tree(**fs, dest->get(), [&progress](const ExtractReport& so_far) {
            progress.update([&] {
                return fmt::format("extracting: {} entries, {}", so_far.entries(),
                                   human_size(so_far.bytes));
            });
        });
    progress.clear();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    if (out.json()) {
        Output::emit(Json{{"source", args.source},
                          {"dir", args.dir},
                          {"ok", report.errors.empty()},
                          {"directories", report.directories},
                          {"files", report.files},
                          {"symlinks", report.symlinks},
                          {"hard_links", report.hard_links},
                          {"specials", report.specials},
                          {"bytes", report.bytes},
                          {"elapsed_s", seconds},
                          {"warnings", failures_json(report.warnings)},
                          {"errors", failures_json(report.errors)}});
    } else {
        fmt::print("extracted {} to {} in {:.2f} s: {}, {} ({}), {}, {}, {}\n",
                   counted(report.entries(), "entry", "entries"), args.dir, seconds,
                   counted(report.directories, "directory", "directories"),
                   counted(report.files, "file", "files"), human_size(report.bytes),
                   counted(report.symlinks, "symlink", "symlinks"),
                   counted(report.hard_links, "hard link", "hard links"),
                   counted(report.specials, "special file", "special files"));
        for (const Failure& w : report.warnings) Output::warn(w.text());
        if (!report.errors.empty()) {
            Output::warn(fmt::format("extract incomplete, {}:",
                                     counted(report.errors.size(), "problem", "problems")));
            for (const Failure& e : report.errors) out.fail(e);
        }
    }
    return report.errors.empty() ? kExitOk : kExitFailed;
}

}  // namespace

Command add_extract_command(CLI::App& parent) {
    auto args = std::make_shared<ExtractArgs>();
    CLI::App* sub = parent.add_subcommand(
        "extract", "Recreate a SOURCE's tree in a host directory (empty or missing)");
    sub->add_flag("--json", args->json, "Print the report as one JSON object");
    sub->add_option("SOURCE", args->source,
                    "Pack file or URL (http(s)://, oci://), volume or directory")
        ->required();
    sub->add_option("DIR", args->dir, "Host directory to create the tree in")->required();
    return {sub, [args](const std::string&) { return run_extract(*args); }};
}

}  // namespace packfs::cli
