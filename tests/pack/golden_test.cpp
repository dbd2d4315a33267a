// Compatibility: small packs written by earlier versions, checked in under tests/pack/golden/
// with their SHA-256 pinned here. Every later reader must still read each one and find
// exactly the tree recorded beside it (<name>.expected, made from the source tree when the
// pack was written, not by the reader). A format change adds new goldens, never rewrites old
// ones: the pinned digests make an accidental rewrite fail.
//
// To add goldens for a new format version: `pack_write_goldens <dir>` (write_goldens.cpp)
// writes them and their .expected into <dir>; check them in and pin their digests below.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "pack/golden_describe.hpp"
#include "packfs/pack.hpp"
#include "support/files.hpp"

namespace packfs {
namespace {

namespace fs = std::filesystem;
using golden::describe_all;
using golden::hex_sha256;
using test_support::slurp;

struct Golden {
    const char* file;
    const char* sha256;
    const char* expected;  // the tree it holds, described
    uint32_t version;
};

constexpr Golden kGoldens[] = {
    // Format v1, written by the first pack writer.
    {"v1-raw.pack", "bf241b4adbfee454cc82a8ebc3ee13bc3fc2e6717c4b1f672968498b6f57c23d",
     "v1.expected", 1},
    {"v1-zstd.pack", "268dd89089146d1382dd679881f1be6e7509b46f34e5e17f4001f5d367f7386b",
     "v1.expected", 1},
    {"v1-lz4.pack", "d8cffd454b850201d2fea1eaca60a6f7c6b525d91d3a2516be7935c4bce54b70",
     "v1.expected", 1},
    // Format v2 (all times recorded), written by its first writer.
    {"v2-raw.pack", "c34c8c70f24881b138a848159fe2f377ab5a791b516edf8e05e1801dd1f09353",
     "v2.expected", 2},
    {"v2-zstd.pack", "ca7d4d454ad78b48341dc147c08577ee2f02a8726598344be8f6217b0e101ceb",
     "v2.expected", 2},
    {"v2-lz4.pack", "fd4670e3ee2424efde82cca8a740f45c1444ede1e2b1dd66ac622b684478fe3f",
     "v2.expected", 2},
    // Format v2 with compressed metadata (the compressed-metadata feature), its first writer.
    {"v2-zstd-cmeta.pack", "ac627cfdb607b06368972130514e3e38a0542b30f407eaa16c1fdb771afd1f69",
     "v2-cmeta.expected", 2},
    {"v2-lz4-cmeta.pack", "298743379caf079764adf0a31e01a8930b824d125cecb31f515c77be33919bb1",
     "v2-cmeta.expected", 2},
    // Format v2 with holes (blocks of zeros stored in nothing), its first writer.
    {"v2-holes-raw.pack", "d45f612cd12055296c31085e2413fe16f6f01c3c9ad319bd2c11f2642fb3004b",
     "v2-holes.expected", 2},
    {"v2-holes-zstd-cmeta.pack", "177b691eacc46727c15c8114c3e5c3fe7d51f61cf9cc6e71250a43caf7c322b4",
     "v2-holes.expected", 2},
    // Format v2 with block digests (each stored block's SHA-256), its first writer.
    {"v2-digests-raw.pack", "bfa5eca54b1b5a69ac1a8c7e27af647e19ca611bde7e61f43adac25449988b99",
     "v2-digests.expected", 2},
    {"v2-digests-zstd-cmeta.pack",
     "eafa9f69f8f72ce01c0935f04a42df1771bc986a584c81228cc922c0b63ce79d", "v2-digests.expected", 2},
    // Format v2 with metadata digests too (the image digest over their table), its first writer.
    {"v2-mdigests-raw.pack", "2e39018d9b225df24fd207c3d94ff515c39b714300db4d1caf89b22f5062cd75",
     "v2-mdigests.expected", 2},
    {"v2-mdigests-zstd-cmeta.pack",
     "34112925fe11a9abd10a30aaaac1b7fae149419908963bdbf6ea3171fdfae64e", "v2-mdigests.expected", 2},
};

fs::path golden_dir() { return fs::path(PACKFS_SOURCE_DIR) / "tests" / "pack" / "golden"; }

TEST(PackGolden, EveryGoldenIsPinnedAndReadsAsRecorded) {
    for (const Golden& golden : kGoldens) {
        SCOPED_TRACE(golden.file);
        const std::string expected = slurp(golden_dir() / golden.expected);
        ASSERT_FALSE(expected.empty()) << "missing " << (golden_dir() / golden.expected);
        fs::path path = golden_dir() / golden.file;
        EXPECT_EQ(hex_sha256(slurp(path)), golden.sha256)
            << "a golden pack was rewritten; add a new one instead";
        for (PackAccess access : {PackAccess::mmap, PackAccess::pread}) {
            auto pack = open_pack(path.string(), {.access = access});
            ASSERT_TRUE(pack) << pack.error().message();
            EXPECT_EQ((*pack)->info().version, golden.version);
            EXPECT_EQ((*pack)->info().compressed_metadata,
                      std::string_view(golden.file).find("cmeta") != std::string_view::npos);
            const std::string_view name(golden.file);
            const bool digests = name.find("digests") != std::string_view::npos;
            EXPECT_EQ((*pack)->info().has_holes,
                      digests || name.find("holes") != std::string_view::npos);
            EXPECT_EQ((*pack)->info().has_block_digests, digests);
            EXPECT_EQ((*pack)->info().has_metadata_digests,
                      name.find("mdigests") != std::string_view::npos);
            EXPECT_EQ(describe_all(**pack), expected);
            EXPECT_TRUE((*pack)->verify().ok());
        }
    }
}

}  // namespace
}  // namespace packfs
