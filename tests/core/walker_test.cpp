// The walker's fast try (src/core/walker.hpp) against its contract, on a toy tree: it answers a
// plain path to an entry that is there exactly as the rules do, hands the tree's fast_lookup
// only plain names (so a tree may skip checking them), and leaves every other path (NUL, empty
// or dot components, trailing '/', symlinks to follow, over-long names) to the rules.
#include "core/walker.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace packfs::walk {
namespace {

// Nodes are indexes into `nodes`; node 0 is the root.
struct ToyTree {
    struct Node {
        FileType type;
        std::map<std::string, int, std::less<>> entries;
        std::string target;  // symlinks
    };
    std::vector<Node> nodes{Node{FileType::directory, {}, {}}};

    int add(int dir, const std::string& name, FileType type, std::string target = {}) {
        nodes.push_back(Node{type, {}, std::move(target)});
        const int id = static_cast<int>(nodes.size()) - 1;
        nodes[dir].entries[name] = id;
        return id;
    }
};

struct ToyOps {
    using NodeT = int;
    const ToyTree& tree;
    std::vector<std::string>* fast_names;  // every name fast_lookup was given

    Result<int> root() const { return 0; }
    Result<std::optional<Step<int>>> lookup(const int& dir, std::string_view name) const {
        const auto& entries = tree.nodes[dir].entries;
        auto it = entries.find(name);
        if (it == entries.end()) return std::nullopt;
        return Step<int>{it->second, tree.nodes[it->second].type};
    }
    bool fast_lookup(const int& dir, std::string_view name, Step<int>& out) const {
        fast_names->emplace_back(name);
        auto found = lookup(dir, name);
        if (!*found) return false;
        out = **found;
        return true;
    }
    Result<std::string> readlink(const int& link) const { return tree.nodes[link].target; }
    void release(const int&) const noexcept {}
};

class WalkerFastTry : public ::testing::Test {
protected:
    WalkerFastTry() {
        const int a = tree.add(0, "a", FileType::directory);
        file = tree.add(a, "file", FileType::regular);
        tree.add(a, "link", FileType::symlink, "file");
        tree.add(0, std::string("f\0x", 3), FileType::regular);  // a name no real tree holds
    }
    std::optional<Step<int>> fast(std::string_view path, bool follow_last = true) {
        ToyOps ops{tree, &names};
        Walker<ToyOps> w(ops, "stat", path);
        return w.try_fast(path, follow_last);
    }
    ToyTree tree;
    int file = 0;
    std::vector<std::string> names;
};

TEST_F(WalkerFastTry, AnswersAPlainPathToAnEntryThatIsThere) {
    auto found = fast("/a/file");
    ASSERT_TRUE(found);
    EXPECT_EQ(found->node, file);
    EXPECT_EQ(found->type, FileType::regular);
    EXPECT_EQ(names, (std::vector<std::string>{"a", "file"}));
    auto link = fast("/a/link", false);  // a final symlink not followed is simply there
    ASSERT_TRUE(link);
    EXPECT_EQ(link->type, FileType::symlink);
    auto root = fast("/");
    ASSERT_TRUE(root);
    EXPECT_EQ(root->node, 0);
}

TEST_F(WalkerFastTry, LeavesEveryOtherPathToTheRulesAndOnlyEverLooksUpPlainNames) {
    const std::string long_name(kMaxNameLength + 1, 'n');
    const std::vector<std::string> others = {std::string("/f\0x", 4),
                                             std::string("/a\0/file", 8),
                                             std::string("/a/file\0", 8),
                                             "/a//file",
                                             "/a/./file",
                                             "/a/../a/file",
                                             "/a/file/",
                                             "/a/",
                                             "a/file",
                                             "",
                                             "/a/link",
                                             "/a/link/x",
                                             "/a/file/x",
                                             "/a/missing",
                                             "/" + long_name,
                                             "/a/" + long_name};
    for (const std::string& path : others) {
        names.clear();
        EXPECT_FALSE(fast(path)) << path;
        for (const std::string& name : names) {
            EXPECT_TRUE(!name.empty() && name.size() <= kMaxNameLength && name != "." &&
                        name != ".." && name.find('/') == std::string::npos &&
                        name.find('\0') == std::string::npos)
                << "fast_lookup was given \"" << name << "\" for " << path;
        }
    }
}

}  // namespace
}  // namespace packfs::walk
