// The error type: codes, messages, corruption detail.
#include <gtest/gtest.h>

#include "packfs/error.hpp"

using namespace packfs;

TEST(Error, MessageNamesOperationPathAndCause) {
    Error e(ENOENT, "open", "/a/b");
    EXPECT_EQ(e.code(), ENOENT);
    EXPECT_EQ(e.message(), "open /a/b: No such file or directory");
    EXPECT_EQ(errno_name(e.code()), "ENOENT");
    EXPECT_EQ(Error(EROFS, "statfs").message(), "statfs: Read-only file system");
}

TEST(Error, CorruptionCarriesOffsetExpectedAndFound) {
    Error e = Error::corrupt("open", "/x.pack", {4096, 0xabcd, 0x1234, "header checksum"});
    EXPECT_EQ(e.code(), kErrCorrupt);
    EXPECT_EQ(errno_name(e.code()), "EUCLEAN");
    ASSERT_TRUE(e.corruption());
    EXPECT_EQ(e.corruption()->offset, 4096u);
    EXPECT_NE(e.message().find("header checksum at offset 4096: expected 0xabcd, found 0x1234"),
              std::string::npos)
        << e.message();
}

// A fault with no two values to compare (a rule broken, a text file's syntax) never claims
// "expected 0x0, found 0x0": it says where when it knows, else only what.
TEST(Error, CorruptionWithoutValuesSaysOnlyWhereAndWhat) {
    const std::string placed =
        Error::corrupt("open volume", "MANIFEST", {17, 0, 0, "not valid JSON: x"}).message();
    EXPECT_TRUE(placed.ends_with("(not valid JSON: x at offset 17)")) << placed;
    const std::string bare =
        Error::corrupt("open volume", "MANIFEST", {0, 0, 0, "durability"}).message();
    EXPECT_TRUE(bare.ends_with("(durability)")) << bare;
    EXPECT_EQ(bare.find("0x0"), std::string::npos) << bare;
}

TEST(Error, ResultCarriesErrorsAsValues) {
    auto f = [](bool ok) -> Result<int> {
        if (!ok) return fail(EEXIST, "mkdir", "/d");
        return 7;
    };
    EXPECT_EQ(*f(true), 7);
    EXPECT_EQ(f(false).error().code(), EEXIST);
    EXPECT_EQ(f(false).error().with_path("/e").path(), "/e");
}
