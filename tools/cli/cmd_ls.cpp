// `packfs ls [-l] [-R] SOURCE [PATH]`: lists a directory of a SOURCE as ls(1) does, names in
// byte order; -l adds mode, links, owner, size (or device numbers), mtime and link target.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "command.hpp"
#include "format.hpp"
#include "report.hpp"
#include "source.hpp"
#include "tree.hpp"

namespace packfs::cli {

namespace {

struct LsArgs {
    std::string source;
    std::string path = "/";
    bool long_format = false;
    bool recursive = false;
    bool json = false;
};

struct Listed {
    std::string name;
    EntryDetails details;
};

struct Listing {
    std::string path;  // the directory, or the PATH itself when it is not one
    std::vector<Listed> entries;
};

class Lister {
public:
    Lister(Backend& fs, const LsArgs& args) : fs_(fs), args_(args), out_(args.json) {}

    int run() {
        auto top = entry_details(fs_, args_.path);
        if (!top) return out_.fail(top.error());
        bool is_dir = top->stat.type == FileType::directory;
        // Like ls: a symlink to a directory is listed through, except with -l.
        if (top->stat.type == FileType::symlink && !args_.long_format) {
            auto followed = fs_.stat(args_.path);
            is_dir = followed && followed->type == FileType::directory;
        }
        if (is_dir) {
            list_directory(args_.path, true);
        } else {
            emit(Listing{args_.path, {{args_.path, std::move(*top)}}});
        }
        if (out_.json()) {
            Json errors = Json::array();
            for (const Failure& f : failures_) errors.push_back(f.json());
            Output::emit(Json{{"listings", std::move(listings_)}, {"errors", std::move(errors)}});
        }
        return failures_.empty() ? kExitOk : kExitFailed;
    }

private:
    void failed(const Error& error) {
        failures_.push_back(Failure::from(error));
        if (!out_.json()) out_.fail(error);
    }

    void list_directory(const std::string& dir, bool first) {
        auto names = sorted_entries(fs_, dir);
        if (!names) return failed(names.error());
        Listing listing{dir, {}};
        for (const DirEntry& entry : *names) {
            auto details = entry_details(fs_, child_path(dir, entry.name));
            if (!details) {
                failed(details.error());
                continue;
            }
            listing.entries.push_back({entry.name, std::move(*details)});
        }
        std::vector<std::string> subdirs;
        for (const Listed& e : listing.entries) {
            if (e.details.stat.type == FileType::directory)
                subdirs.push_back(child_path(dir, e.name));
        }
        if (args_.recursive && !out_.json()) fmt::print("{}{}:\n", first ? "" : "\n", dir);
        emit(std::move(listing));
        if (!args_.recursive) return;
        for (const std::string& sub : subdirs) list_directory(sub, false);
    }

    void emit(Listing listing) {
        if (out_.json()) {
            Json entries = Json::array();
            for (const Listed& e : listing.entries)
                entries.push_back(entry_json(e.name, e.details));
            listings_.push_back(Json{{"path", listing.path}, {"entries", std::move(entries)}});
        } else if (args_.long_format) {
            print_long(listing);
        } else {
            for (const Listed& e : listing.entries) fmt::print("{}\n", e.name);
        }
    }

    static std::string size_column(const Stat& st) {
        const bool device = st.type == FileType::char_device || st.type == FileType::block_device;
        return device ? device_numbers(st.rdev) : fmt::format("{}", st.size);
    }

    static void print_long(const Listing& listing) {
        std::size_t links = 0, uid = 0, gid = 0, size = 0;
        for (const Listed& e : listing.entries) {
            const Stat& st = e.details.stat;
            links = std::max(links, fmt::formatted_size("{}", st.nlink));
            uid = std::max(uid, fmt::formatted_size("{}", st.uid));
            gid = std::max(gid, fmt::formatted_size("{}", st.gid));
            size = std::max(size, size_column(st).size());
        }
        for (const Listed& e : listing.entries) {
            const Stat& st = e.details.stat;
            fmt::print("{} {:>{}} {:>{}} {:>{}} {:>{}} {} {}{}\n", mode_string(st.type, st.mode),
                       st.nlink, links, st.uid, uid, st.gid, gid, size_column(st), size,
                       short_time(st.mtime), e.name,
                       st.type == FileType::symlink ? " -> " + e.details.target : "");
        }
    }

    Backend& fs_;
    const LsArgs& args_;
    Output out_;
    Json listings_ = Json::array();
    std::vector<Failure> failures_;
};

}  // namespace

Command add_ls_command(CLI::App& parent) {
    auto args = std::make_shared<LsArgs>();
    CLI::App* sub = parent.add_subcommand("ls", "List a directory of a SOURCE");
    sub->add_flag("-l", args->long_format, "Long format: mode, links, owner, size, mtime");
    sub->add_flag("-R", args->recursive, "List subdirectories recursively");
    sub->add_flag("--json", args->json, "Print the listing as one JSON object");
    sub->add_option("SOURCE", args->source,
                    "Pack file or URL (http(s)://, oci://), volume or directory")
        ->required();
    sub->add_option("PATH", args->path, "Path inside SOURCE (default /)");
    return {sub, [args](const std::string&) {
                const Output out(args->json);
                auto fs = open_source(args->source);
                if (!fs) return out.fail(source_failure(fs.error()));
                return Lister(**fs, *args).run();
            }};
}

}  // namespace packfs::cli
