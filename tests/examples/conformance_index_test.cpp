// The conformance suite on the example index backend (examples/index_backend.hpp): the fixture
// tree built in a mem backend, indexed through its path calls (examples/index_builder.hpp), and
// served by the index's node calls alone, every path call derived by the library's walker.
// Read-only, so only the fixture-tree topics run (ReadOnlyTree, NodesOfTree); the writable ones
// skip. A held node trivially outlives its names: a read-only tree never removes one.
#include <algorithm>

#include "conformance/conformance_suite.hpp"
#include "examples/index_builder.hpp"
#include "packfs/mem.hpp"

namespace {

using packfs::conformance::BackendFactory;
using packfs::conformance::Capabilities;

Capabilities index_caps() {
    Capabilities caps;
    caps.read_only = true;
    caps.snapshots = true;
    caps.nodes = true;
    caps.held_nodes_outlive_names = true;
    caps.xattrs = true;
    return caps;
}

std::shared_ptr<packfs::example::IndexBackend> make_index() {
    auto mem = packfs::make_mem_backend();
    if (!packfs::conformance::build_fixture_tree(*mem, index_caps())) return nullptr;
    auto index = packfs::example::build_index(*mem);
    if (!index) return nullptr;
    return packfs::example::make_index_backend(std::move(*index));
}

// What the suite does not reach: inode numbers, by number and by name.
TEST(IndexBackend, LookupInoFindsEveryEntryByItsNumber) {
    auto fs = make_index();
    ASSERT_TRUE(fs);
    const auto numbering = fs->inode_numbering();
    EXPECT_TRUE(numbering.unique);
    for (uint64_t ino = 1; ino < numbering.limit; ++ino) {
        auto e = fs->lookup_ino(ino);
        ASSERT_TRUE(packfs::conformance::IsOk(e)) << ino;
        EXPECT_EQ(e->node.id, ino);
        EXPECT_EQ(e->stat.ino, ino);
    }
    EXPECT_TRUE(packfs::conformance::FailsWith(fs->lookup_ino(0), ESTALE));
    EXPECT_TRUE(packfs::conformance::FailsWith(fs->lookup_ino(numbering.limit), ESTALE));
    EXPECT_EQ(fs->lstat("/")->ino, packfs::kRootNode.id);
    auto hard = fs->lstat("/hard/b");
    ASSERT_TRUE(packfs::conformance::IsOk(hard));
    auto by_number = fs->lookup_ino(hard->ino);
    ASSERT_TRUE(packfs::conformance::IsOk(by_number));
    EXPECT_EQ(by_number->stat.nlink, 2u);
    EXPECT_EQ(packfs::read_file(*fs, "/hard/a").value_or(""), "shared\n");
}

// The node calls' own errors, which the suite checks only on writable backends (Nodes).
TEST(IndexBackend, NodeCallsAnswerTheContractsErrors) {
    using packfs::FileType;
    using packfs::conformance::FailsWith;
    auto fs = make_index();
    ASSERT_TRUE(fs);
    const std::string_view bad_names[] = {"", ".", "..", "a/b", std::string_view("a\0b", 3)};
    for (std::string_view bad : bad_names)
        EXPECT_TRUE(FailsWith(fs->lookup(packfs::kRootNode, bad), EINVAL)) << bad;
    EXPECT_TRUE(FailsWith(fs->lookup(packfs::kRootNode, std::string(256, 'n')), ENAMETOOLONG));
    EXPECT_TRUE(FailsWith(fs->lookup(packfs::kRootNode, "missing"), ENOENT));
    EXPECT_TRUE(FailsWith(fs->getattr(packfs::Node{0}), ESTALE));
    EXPECT_TRUE(FailsWith(fs->list(packfs::Node{1u << 30}), ESTALE));
    auto node = [&](const char* path) {
        return packfs::lookup_path(*fs, path, packfs::Follow::no).value().node;
    };
    const packfs::Node file = node("/docs/readme.txt"), dir = node("/docs");
    EXPECT_TRUE(FailsWith(fs->lookup(file, "x"), ENOTDIR));
    EXPECT_TRUE(FailsWith(fs->list(file), ENOTDIR));
    EXPECT_TRUE(FailsWith(fs->readlink(file), EINVAL));
    EXPECT_TRUE(FailsWith(fs->open(file, O_RDWR), EROFS));
    EXPECT_TRUE(FailsWith(fs->open(file, O_RDONLY | O_TRUNC), EROFS));
    EXPECT_TRUE(FailsWith(fs->open(file, O_RDONLY | O_DIRECTORY), ENOTDIR));
    EXPECT_TRUE(FailsWith(fs->open(dir, O_WRONLY), EISDIR));
    EXPECT_TRUE(FailsWith(fs->open(node("/links/rel"), O_RDONLY), ELOOP));
    EXPECT_TRUE(FailsWith(fs->open(node("/special/fifo"), O_RDONLY), ENOTSUP));
    EXPECT_TRUE(FailsWith(fs->open(node("/special/null"), O_RDONLY), ENOTSUP));
    EXPECT_TRUE(FailsWith(fs->getxattr(file, "user.none"), ENODATA));
    auto dir_handle = fs->open(dir, O_RDONLY | O_DIRECTORY);
    ASSERT_TRUE(packfs::conformance::IsOk(dir_handle));
    std::byte buf[8];
    EXPECT_TRUE(FailsWith((*dir_handle)->pread(buf, 0), EISDIR));
    EXPECT_EQ((*dir_handle)->fstat()->type, FileType::directory);
    auto snap = fs->snapshot();
    ASSERT_TRUE(packfs::conformance::IsOk(snap));
    EXPECT_EQ(snap->get(), fs.get());
}

}  // namespace

PACKFS_INSTANTIATE_CONFORMANCE(Index, BackendFactory{"index", make_index, index_caps()});
