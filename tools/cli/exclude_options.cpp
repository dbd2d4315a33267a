#include "exclude_options.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host_io.hpp"

namespace packfs::cli {

namespace {

// A pattern file is small; a larger one is a mistake (a pack or a log given by accident).
constexpr std::size_t kMaxPatternFile = 16 << 20;

// Read, not pread sized by fstat: FILE may be a pipe (--exclude-from <(generate-list)).
Result<std::string> read_pattern_file(const std::string& path) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return fail(errno, "exclude-from", path);
    std::string text;
    char buf[64 * 1024];
    for (;;) {
        const ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return fail(errno, "exclude-from", path);
        if (n == 0) break;
        text.append(buf, static_cast<std::size_t>(n));
        if (text.size() > kMaxPatternFile)
            return fail(EFBIG, "exclude-from", path);  // over kMaxPatternFile
    }
    return text;
}

}  // namespace

void add_exclude_options(CLI::App& sub, ExcludeArgs& args) {
    sub.add_option("--exclude,-e", args.patterns,
                   "Leave out what PATTERN matches (repeatable): gitignore syntax, from SRC's "
                   "root: 'name' at any depth, '/path' or 'a/b' from the root, 'dir/' "
                   "directories only, * ? [..] within a name, ** across names, '!pattern' "
                   "keeps what an earlier one left out")
        ->type_name("PATTERN")
        ->allow_extra_args(false);
    sub.add_option("--exclude-from", args.files,
                   "Read exclude patterns from FILE (repeatable): one a line, # comments and "
                   "blank lines skipped; applied before the --exclude ones")
        ->type_name("FILE")
        ->allow_extra_args(false);
}

Result<ExcludePatterns> exclude_patterns(const ExcludeArgs& args) {
    ExcludePatterns patterns;
    for (const std::string& file : args.files) {
        auto text = read_pattern_file(file);
        if (!text) return std::unexpected(text.error());
        if (auto r = patterns.add_lines(*text, file); !r) return std::unexpected(r.error());
    }
    for (const std::string& pattern : args.patterns) {
        if (auto r = patterns.add(pattern); !r) return std::unexpected(r.error());
    }
    return patterns;
}

}  // namespace packfs::cli
