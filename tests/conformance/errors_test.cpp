// Errors (DESIGN §3): every operation answers the same situation with the same errno, and
// the error names the operation and the virtual path it was given.
#include <fmt/format.h>

#include <functional>

#include "conformance/conformance_suite.hpp"

namespace packfs::conformance {

namespace {

// One path-taking operation of the contract, applied to a path.
struct PathOp {
    const char* name;
    std::function<Result<void>(Backend&, const std::string&)> run;
};

template <class T>
Result<void> drop(Result<T> r) {
    if (!r) return std::unexpected(r.error());
    return {};
}

std::vector<PathOp> path_ops() {
    return {
        {"stat", [](Backend& fs, const std::string& p) { return drop(fs.stat(p)); }},
        {"lstat", [](Backend& fs, const std::string& p) { return drop(fs.lstat(p)); }},
        {"readdir", [](Backend& fs, const std::string& p) { return drop(fs.readdir(p)); }},
        {"readlink", [](Backend& fs, const std::string& p) { return drop(fs.readlink(p)); }},
        {"open", [](Backend& fs, const std::string& p) { return drop(fs.open(p, O_RDONLY)); }},
        {"create",
         [](Backend& fs, const std::string& p) { return drop(fs.open(p, O_WRONLY | O_CREAT)); }},
        {"truncate", [](Backend& fs, const std::string& p) { return fs.truncate(p, 0); }},
        {"mkdir", [](Backend& fs, const std::string& p) { return fs.mkdir(p); }},
        {"rmdir", [](Backend& fs, const std::string& p) { return fs.rmdir(p); }},
        {"unlink", [](Backend& fs, const std::string& p) { return fs.unlink(p); }},
        {"rename from", [](Backend& fs, const std::string& p) { return fs.rename(p, "/to"); }},
        {"rename to", [](Backend& fs, const std::string& p) { return fs.rename("/src", p); }},
        {"symlink", [](Backend& fs, const std::string& p) { return fs.symlink("/src", p); }},
        {"link from", [](Backend& fs, const std::string& p) { return fs.link(p, "/to"); }},
        {"link to", [](Backend& fs, const std::string& p) { return fs.link("/src", p); }},
        {"chmod", [](Backend& fs, const std::string& p) { return fs.chmod(p, 0644); }},
        {"utimens",
         [](Backend& fs, const std::string& p) {
             return fs.utimens(p, TimeUpdate::now(), TimeUpdate::now());
         }},
        {"getxattr", [](Backend& fs, const std::string& p) { return drop(fs.getxattr(p, "user.k")); }},
        {"listxattr", [](Backend& fs, const std::string& p) { return drop(fs.listxattr(p)); }},
        {"statfs", [](Backend& fs, const std::string& p) { return drop(fs.statfs(p)); }},
    };
}

}  // namespace

TEST_P(Errors, MissingParentIsNotFoundForEveryOperation) {
    PACKFS_ASSERT_OK(write_file(fs(), "/src", "s"));
    for (const PathOp& op : path_ops()) {
        EXPECT_TRUE(FailsWith(op.run(fs(), "/missing/x"), ENOENT)) << op.name;
    }
}

TEST_P(Errors, FileAsDirectoryIsNotDirForEveryOperation) {
    PACKFS_ASSERT_OK(write_file(fs(), "/src", "s"));
    PACKFS_ASSERT_OK(write_file(fs(), "/file", "f"));
    for (const PathOp& op : path_ops()) {
        EXPECT_TRUE(FailsWith(op.run(fs(), "/file/x"), ENOTDIR)) << op.name;
    }
}

TEST_P(Errors, LongNameIsTooLongForEveryOperation) {
    PACKFS_ASSERT_OK(write_file(fs(), "/src", "s"));
    const std::string long_name = "/" + std::string(256, 'x');
    for (const PathOp& op : path_ops()) {
        EXPECT_TRUE(FailsWith(op.run(fs(), long_name), ENAMETOOLONG)) << op.name;
    }
}

TEST_P(Errors, NulByteIsInvalidForEveryOperation) {
    PACKFS_ASSERT_OK(write_file(fs(), "/src", "s"));
    const std::string with_nul("/sr\0c", 5);
    for (const PathOp& op : path_ops()) {
        EXPECT_TRUE(FailsWith(op.run(fs(), with_nul), EINVAL)) << op.name;
    }
}

TEST_P(Errors, SymlinkLoopInPathIsLoopForEveryOperation) {
    PACKFS_ASSERT_OK(write_file(fs(), "/src", "s"));
    PACKFS_ASSERT_OK(fs().symlink("/loop", "/loop"));
    PACKFS_ASSERT_OK(fs().symlink("rloop", "/rloop"));  // a loop every mode meets as one
    for (const PathOp& op : path_ops()) {
        EXPECT_TRUE(Follows(op.run(fs(), "/loop/x"), caps(), Via::absolute, ELOOP)) << op.name;
        EXPECT_TRUE(Follows(op.run(fs(), "/rloop/x"), caps(), Via::relative, ELOOP)) << op.name;
    }
}

TEST_P(Errors, ErrorNamesOperationAndVirtualPath) {
    auto st = fs().stat("/missing_entry");
    ASSERT_FALSE(st.has_value());
    EXPECT_EQ(st.error().code(), ENOENT);
    EXPECT_FALSE(st.error().op().empty());
    EXPECT_NE(st.error().path().find("missing_entry"), std::string::npos)
        << "path: " << st.error().path();
    EXPECT_EQ(st.error().path().rfind("/tmp", 0), std::string::npos)
        << "a host path leaked: " << st.error().path();
    auto mk = fs().mkdir("/a/b/c");
    ASSERT_FALSE(mk.has_value());
    EXPECT_NE(mk.error().path().find("/a"), std::string::npos) << "path: " << mk.error().path();
    EXPECT_NE(mk.error().message().find(std::string(mk.error().op())), std::string::npos);
}

TEST_P(Errors, FailedOperationChangesNothing) {
    PACKFS_ASSERT_OK(fs().mkdir("/d"));
    PACKFS_ASSERT_OK(write_file(fs(), "/d/f", "content"));
    PACKFS_ASSERT_OK(write_file(fs(), "/g", "other"));
    auto before = describe_tree(fs(), false);
    PACKFS_ASSERT_OK(before);
    EXPECT_FALSE(fs().rmdir("/d").has_value());
    EXPECT_FALSE(fs().rename("/g", "/d").has_value());
    EXPECT_FALSE(fs().rename("/d", "/d/f/x").has_value());
    EXPECT_FALSE(fs().rename("/g", "/d/f", RenameFlags::noreplace).has_value());
    EXPECT_FALSE(fs().link("/d", "/e").has_value());
    EXPECT_FALSE(fs().mkdir("/g").has_value());
    EXPECT_FALSE(fs().open("/g", O_WRONLY | O_CREAT | O_EXCL).has_value());
    EXPECT_FALSE(fs().symlink("x", "/d/f").has_value());
    EXPECT_FALSE(fs().unlink("/d").has_value());
    auto after = describe_tree(fs(), false);
    PACKFS_ASSERT_OK(after);
    EXPECT_TRUE(*before == *after) << "a failed operation changed the tree";
}

}  // namespace packfs::conformance
