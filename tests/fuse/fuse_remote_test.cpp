// A remote pack through a real FUSE mount (tools/fuse), served by the tests' nginx on
// 127.0.0.1: one open of a file counts once, however many READs the kernel sends for it. The
// driver keeps no open handles for a pack, so each READ opens the file again; the walk-ahead
// (src/remote/walk_ahead.hpp) must not take those opens for a walk and fetch the files listed
// after it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include "fuse/fuse_mount.hpp"
#include "remote/remote_support.hpp"

namespace packfs {
namespace {

using namespace remote_test;
using fuse_test::FuseMount;
using fuse_test::ScratchDir;

std::size_t count_entries(const std::string& dir) {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
    return n;
}

TEST(FuseRemote, OneLargeFileReadThroughTheMountCountsAsOneOpen) {
    const std::string name = "fuse-large-file.pack";
    const LargeFile t = serve_large_file(name);
    ASSERT_FALSE(t.url.empty());
    ScratchDir cache("cache");  // outlives the mount: declared first
    FuseMount m(t.url, {"--cache", cache.path(), "--readahead", "8M"});
    PACKFS_REQUIRE_MOUNT(m);
    // Listed as a walk lists: /b/c (big), then /a, whose files come next in the listing order.
    ASSERT_EQ(count_entries(m / "b/c"), 1u);
    ASSERT_EQ(count_entries(m / "a"), 40u);

    const uint64_t before = bytes_fetched(name);
    const int fd = ::open((m / "b/c/big").c_str(), O_RDONLY);
    ASSERT_GE(fd, 0) << std::strerror(errno);
    std::string read;
    std::string buf(128 << 10, '\0');
    int reads = 0;
    for (;;) {
        const ssize_t n = ::read(fd, buf.data(), buf.size());
        ASSERT_GE(n, 0) << std::strerror(errno);
        if (n == 0) break;
        read.append(buf.data(), static_cast<std::size_t>(n));
        ++reads;
    }
    ::close(fd);
    EXPECT_GE(reads, 40);  // many READs
    EXPECT_TRUE(read == t.bytes) << read.size() << " bytes read";
    settle(name);
    // Big's blocks, the first shared with the file before it: /a's 4 MB would show.
    const uint64_t fetched = bytes_fetched(name) - before;
    EXPECT_GE(fetched, t.bytes.size());
    EXPECT_LE(fetched, t.bytes.size() + 2 * kLargeFileBlock);
}

}  // namespace
}  // namespace packfs
