// Exclude patterns (include/packfs/exclude.hpp): the matcher on its own, malformed patterns and
// pattern files, builds that leave entries out (counted, hard links, an excluded directory never
// listed), and random trees and patterns checked against git's own matcher
// (`git ls-files --others --exclude-from`), which is what "gitignore syntax" promises.
#include "packfs/exclude.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "pack/writer/tree_scan.hpp"
#include "packfs/mem.hpp"
#include "packfs/pack.hpp"
#include "support/files.hpp"

namespace packfs {
namespace {

using test_support::TempDir;

ExcludePatterns patterns_of(std::initializer_list<std::string_view> list) {
    ExcludePatterns p;
    for (auto text : list) EXPECT_TRUE(p.add(text)) << text;
    return p;
}

TEST(ExcludePatterns, NameWithoutSlashMatchesAtAnyDepth) {
    auto p = patterns_of({"*.o"});
    EXPECT_TRUE(p.excludes("/a.o", false));
    EXPECT_TRUE(p.excludes("/x/y/b.o", false));
    EXPECT_TRUE(p.excludes("/dir.o", true));
    EXPECT_FALSE(p.excludes("/a.oo", false));
    EXPECT_FALSE(p.excludes("/a.o/b", false));   // its parent's name, not its own
    EXPECT_TRUE(p.leaves_out("/a.o/b", false));  // but the build never reaches it
    auto dot = patterns_of({"*"});
    EXPECT_TRUE(dot.excludes("/.hidden", false));  // * matches a leading dot, as in git
}

TEST(ExcludePatterns, SlashAnchorsAtTheRoot) {
    auto p = patterns_of({"/local", "share/doc"});
    EXPECT_TRUE(p.excludes("/local", true));
    EXPECT_FALSE(p.excludes("/usr/local", true));
    EXPECT_TRUE(p.excludes("/share/doc", true));
    EXPECT_FALSE(p.excludes("/usr/share/doc", true));
    EXPECT_FALSE(p.excludes("/share", true));
}

TEST(ExcludePatterns, TrailingSlashMatchesDirectoriesOnly) {
    auto p = patterns_of({"cache/"});
    EXPECT_TRUE(p.excludes("/a/cache", true));
    EXPECT_FALSE(p.excludes("/a/cache", false));
}

TEST(ExcludePatterns, DoubleStarSpansComponents) {
    auto p = patterns_of({"**/tmp", "a/**/z", "out/**"});
    EXPECT_TRUE(p.excludes("/tmp", true));
    EXPECT_TRUE(p.excludes("/x/y/tmp", false));
    EXPECT_TRUE(p.excludes("/a/z", false));
    EXPECT_TRUE(p.excludes("/a/b/c/z", false));
    EXPECT_FALSE(p.excludes("/b/a/z", false));
    EXPECT_TRUE(p.excludes("/out/f", false));
    EXPECT_TRUE(p.excludes("/out/d/f", false));
    EXPECT_FALSE(p.excludes("/out", true));  // "out/**" is what is inside, not out itself
}

TEST(ExcludePatterns, LastMatchWinsAndNegationReincludes) {
    auto p = patterns_of({"*.log", "!keep.log", "keep*"});
    EXPECT_TRUE(p.excludes("/a.log", false));
    EXPECT_TRUE(p.excludes("/keep.log", false));  // "keep*" is last
    auto q = patterns_of({"*.log", "!keep.log"});
    EXPECT_FALSE(q.excludes("/keep.log", false));
    EXPECT_TRUE(q.excludes("/other.log", false));
    // Under an excluded directory nothing comes back.
    auto r = patterns_of({"build/", "!build/keep"});
    EXPECT_TRUE(r.leaves_out("/build/keep", false));
}

TEST(ExcludePatterns, GlobsAndEscapes) {
    auto p = patterns_of({"[ab]?", "\\!bang", "\\#hash", "lit\\*"});
    EXPECT_TRUE(p.excludes("/ax", false));
    EXPECT_TRUE(p.excludes("/bz", false));
    EXPECT_FALSE(p.excludes("/cx", false));
    EXPECT_FALSE(p.excludes("/a", false));
    EXPECT_TRUE(p.excludes("/!bang", false));
    EXPECT_TRUE(p.excludes("/#hash", false));
    EXPECT_TRUE(p.excludes("/lit*", false));
    EXPECT_FALSE(p.excludes("/litx", false));
}

TEST(ExcludePatterns, TheRootIsNeverExcluded) {
    auto p = patterns_of({"**", "*"});
    EXPECT_FALSE(p.excludes("/", true));
    EXPECT_TRUE(p.excludes("/a", true));
}

TEST(ExcludePatterns, MalformedPatternsAreRefusedByName) {
    for (std::string_view bad : {"", "!", "/", "//", "!/", "a/../b", "./a", "a\\", "x/y\\"}) {
        ExcludePatterns p;
        auto r = p.add(bad);
        ASSERT_FALSE(r) << "'" << bad << "'";
        EXPECT_EQ(r.error().code(), EINVAL) << bad;
        EXPECT_EQ(r.error().path(), bad);
    }
    ExcludePatterns p;
    EXPECT_EQ(p.add(std::string(5000, 'a')).error().code(), ENAMETOOLONG);
    EXPECT_EQ(p.add(std::string_view("a\0b", 3)).error().code(), EINVAL);
    EXPECT_TRUE(p.empty());
}

TEST(ExcludePatterns, LinesSkipCommentsBlanksAndTrailingSpaces) {
    ExcludePatterns p;
    ASSERT_TRUE(p.add_lines("# a comment\n\n*.o   \r\nspace\\ \n  lead\nlast", "ignore.txt"));
    EXPECT_EQ(p.size(), 4u);
    EXPECT_TRUE(p.excludes("/x.o", false));
    EXPECT_TRUE(p.excludes("/space ", false));  // the escaped space is kept
    EXPECT_TRUE(p.excludes("/  lead", false));  // leading spaces are part of the pattern
    EXPECT_TRUE(p.excludes("/last", false));    // no newline at the end
    auto bad = p.add_lines("ok\n\nbad\\\n", "list");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().code(), EINVAL);
    EXPECT_EQ(bad.error().path(), "list:3: bad\\");
}

// A tree in memory with names the patterns below hit.
std::shared_ptr<Backend> sample_tree() {
    auto mem = make_mem_backend();
    EXPECT_TRUE(mem->mkdir("/src", 0755));
    EXPECT_TRUE(mem->mkdir("/build", 0755));
    EXPECT_TRUE(mem->mkdir("/build/sub", 0755));
    EXPECT_TRUE(write_file(*mem, "/src/a.c", "int a;"));
    EXPECT_TRUE(write_file(*mem, "/src/a.o", "object"));
    EXPECT_TRUE(write_file(*mem, "/build/sub/x", "x"));
    EXPECT_TRUE(write_file(*mem, "/README", "read me"));
    EXPECT_TRUE(mem->link("/src/a.o", "/src/kept-link"));  // a hard link whose first name goes
    return mem;
}

std::set<std::string> paths_in(Backend& fs, const std::string& dir = "/") {
    std::set<std::string> out;
    auto entries = fs.readdir(dir);
    EXPECT_TRUE(entries) << dir;
    if (!entries) return out;
    for (const DirEntry& e : *entries) {
        const std::string path = (dir == "/" ? "" : dir) + "/" + e.name;
        out.insert(path);
        if (e.type == FileType::directory) out.merge(paths_in(fs, path));
    }
    return out;
}

TEST(ExcludeBuild, LeavesOutWhatThePatternsName) {
    auto mem = sample_tree();
    TempDir tmp;
    const std::string out = (tmp.path / "t.pack").string();
    PackWriteOptions options;
    ASSERT_TRUE(options.exclude.add("/build"));
    ASSERT_TRUE(options.exclude.add("*.o"));
    auto stats = write_pack(*mem, out, options);
    ASSERT_TRUE(stats) << stats.error().message();
    EXPECT_EQ(stats->excluded, 2u);  // /build (once) and /src/a.o
    auto pack = open_pack(out);
    ASSERT_TRUE(pack);
    EXPECT_EQ(paths_in(**pack),
              (std::set<std::string>{"/README", "/src", "/src/a.c", "/src/kept-link"}));
    // The hard link kept is a file of its own now: one name, the content intact.
    auto st = (*pack)->stat("/src/kept-link");
    ASSERT_TRUE(st);
    EXPECT_EQ(st->nlink, 1u);
    EXPECT_EQ(*read_file(**pack, "/src/kept-link"), "object");
    EXPECT_EQ(stats->hard_links, 0u);
}

TEST(ExcludeBuild, NoPatternsIsTheSamePackAsBefore) {
    auto mem = sample_tree();
    TempDir tmp;
    const std::string a = (tmp.path / "a.pack").string(), b = (tmp.path / "b.pack").string();
    PackWriteOptions with;
    ASSERT_TRUE(with.exclude.add("no-such-name"));
    auto plain = write_pack(*mem, a);
    auto excluded = write_pack(*mem, b, with);
    ASSERT_TRUE(plain && excluded);
    EXPECT_EQ(plain->digest, excluded->digest);
    EXPECT_EQ(excluded->excluded, 0u);
}

// A source whose one directory cannot be listed: excluding it must mean not listing it.
class FailingListSource : public pack::TreeSource {
public:
    Result<pack::SourceNode> root() override { return node("", FileType::directory, 1); }
    Result<std::vector<pack::SourceNode>> list(pack::SourceRef dir) override {
        if (dir.path == "/") {
            std::vector<pack::SourceNode> out;
            out.push_back(node("broken", FileType::directory, 2));
            out.push_back(node("fine", FileType::directory, 3));
            return out;
        }
        if (dir.path == "/broken") return fail(EIO, "list", dir.path);
        return std::vector<pack::SourceNode>{};
    }
    Result<std::string> readlink(pack::SourceRef) override { return fail(EINVAL, "readlink"); }
    Result<pack::Xattrs> xattrs(pack::SourceRef) override { return pack::Xattrs{}; }
    Result<std::unique_ptr<pack::ContentReader>> open(pack::SourceRef e) override {
        return fail(EISDIR, "open", e.path);
    }

private:
    static pack::SourceNode node(std::string name, FileType type, uint64_t ino) {
        Stat st;
        st.type = type;
        st.mode = 0755;
        st.nlink = 2;
        st.ino = ino;
        return pack::source_node(std::move(name), st, {0, ino});
    }
};

TEST(ExcludeBuild, AnExcludedDirectoryIsNeverListed) {
    FailingListSource source;
    auto broken = pack::scan_tree(source, ExcludePatterns{}, {});
    ASSERT_FALSE(broken);
    EXPECT_EQ(broken.error().code(), EIO);
    ExcludePatterns skip;
    ASSERT_TRUE(skip.add("broken/"));
    auto tree = pack::scan_tree(source, skip, {});
    ASSERT_TRUE(tree) << tree.error().message();
    EXPECT_EQ(tree->inodes.size(), 2u);  // the root and /fine
    EXPECT_EQ(tree->excluded, 1u);
}

// --- against git ---------------------------------------------------------------------------

std::string run(const std::string& command) {
    std::string out;
    FILE* pipe = ::popen(command.c_str(), "r");
    if (!pipe) return out;
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
    const int status = ::pclose(pipe);
    EXPECT_EQ(status, 0) << command;
    return out;
}

// Random names from a small alphabet, so random patterns hit them often.
const std::vector<std::string> kNames = {"a", "b", "ab", "a.o", "b.log", ".hid", "x1", "cache"};
const std::vector<std::string> kGlobs = {"a",    "b",  "ab",    "*.o",  "*.log", "*",  "?",
                                         "[ab]", "x*", "cache", ".hid", "**",    "a*", "*b"};

void random_tree(const std::filesystem::path& dir, std::mt19937& rng, int depth) {
    std::uniform_int_distribution<int> count(1, 5), coin(0, 2);
    std::set<std::string> used;
    for (int i = count(rng); i > 0; --i) {
        const std::string& name = kNames[rng() % kNames.size()];
        if (!used.insert(name).second) continue;
        if (depth < 3 && coin(rng) == 0) {
            std::filesystem::create_directory(dir / name);
            random_tree(dir / name, rng, depth + 1);
        } else {
            std::ofstream(dir / name) << name;
        }
    }
}

std::string random_pattern(std::mt19937& rng) {
    std::string p;
    if (rng() % 5 == 0) p += '!';
    if (rng() % 3 == 0) p += '/';
    const int components = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < components; ++i) {
        if (i > 0) p += '/';
        p += kGlobs[rng() % kGlobs.size()];
    }
    if (rng() % 4 == 0) p += '/';
    return p;
}

TEST(ExcludeAgainstGit, RandomTreesAndPatternsLeaveTheSameFiles) {
    ASSERT_EQ(std::system("git --version > /dev/null 2>&1"), 0)
        << "git is needed (scripts/install-deps.sh installs it)";
    std::mt19937 rng(20261205);
    const int rounds = 150;
    int rounds_excluding = 0, rounds_keeping = 0;  // so the comparison can fail both ways
    for (int round = 0; round < rounds; ++round) {
        TempDir tmp;
        const auto tree = tmp.path / "tree";
        std::filesystem::create_directory(tree);
        random_tree(tree, rng, 0);
        std::string lines;
        ExcludePatterns patterns;
        for (int i = 1 + static_cast<int>(rng() % 4); i > 0; --i) {
            std::string pattern = random_pattern(rng);
            if (!patterns.add(pattern)) continue;  // git would ignore what we refuse
            lines += pattern + "\n";
        }
        std::ofstream(tmp.path / "patterns") << lines;

        // git: the untracked files its patterns leave, with no configuration of the user's.
        const std::string git = "cd '" + tree.string() + "' && HOME='" + tmp.path.string() +
                                "' GIT_CONFIG_NOSYSTEM=1 git --git-dir='" +
                                (tmp.path / "repo.git").string() +
                                "' --work-tree=. ls-files -z --others --exclude-from='" +
                                (tmp.path / "patterns").string() + "'";
        run("git init -q --bare '" + (tmp.path / "repo.git").string() + "'");
        std::set<std::string> by_git;
        const std::string listed = run(git);
        for (std::size_t at = 0; at < listed.size();) {
            const std::size_t end = listed.find('\0', at);
            by_git.insert("/" + listed.substr(at, end - at));
            at = end + 1;
        }

        PackWriteOptions options;
        options.exclude = patterns;
        const std::string out = (tmp.path / "t.pack").string();
        auto stats = write_pack_from_host(tree.string(), out, options);
        ASSERT_TRUE(stats) << stats.error().message();
        auto pack = open_pack(out);
        ASSERT_TRUE(pack);
        std::set<std::string> by_us;
        for (const std::string& path : paths_in(**pack)) {
            if ((*pack)->stat(path)->type != FileType::directory) by_us.insert(path);
        }
        ASSERT_EQ(by_us, by_git) << "round " << round << ", patterns:\n" << lines;
        rounds_excluding += stats->excluded > 0;
        rounds_keeping += !by_git.empty();
    }
    EXPECT_GT(rounds_excluding, rounds / 4);
    EXPECT_GT(rounds_keeping, rounds / 3);
    std::printf("%d of %d rounds left something out, %d kept files\n", rounds_excluding, rounds,
                rounds_keeping);
}

}  // namespace
}  // namespace packfs
