// Incremental compaction (DESIGN §10, "Compaction writes about what changed"): a volume whose
// packs are cut into chunks (VolumeOptions::pack.chunk_size) builds each compaction's pack over
// the one before, so after a 1% change it writes about 1% of the volume; the tree reads the same
// before and after, and after a reopen; the chain of packs stays at most 8 long, the next
// compaction then writing its pack whole and the old chain removed; packs of no chain never
// stay behind.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>

#include "packfs/mem.hpp"
#include "packfs/volume.hpp"
#include "support/files.hpp"
#include "volume/volume_test_util.hpp"

namespace packfs::volume_test {
namespace {

using test_support::TempDir;

std::string random_bytes(std::size_t n, std::mt19937_64& rng) {
    std::string s(n, '\0');
    for (auto& c : s) c = static_cast<char>(rng());
    return s;
}

std::vector<std::string> packs_in(const std::string& dir) {
    std::vector<std::string> out;
    for (const std::string& name : dir_names(dir))
        if (name.starts_with("pack.")) out.push_back(name);
    return out;
}

TEST(VolumeIncremental, ACompactionAfterASmallChangeWritesAboutThatMuch) {
    TempDir scratch;
    const std::string dir = (scratch.path / "vol").string();
    ASSERT_TRUE(Volume::create(dir, VolumeInit{}).has_value());
    VolumeOptions options;
    options.pack.compression = Compression::zstd;
    options.pack.chunk_size = 16 << 10;
    auto v = Volume::open(dir, options);
    ASSERT_TRUE(v) << v.error().message();
    auto mem = make_mem_backend();
    std::mt19937_64 rng(39);
    uint64_t volume_bytes = 0;
    // 4 MiB of files that do not compress: 32 of 112 KiB, 256 small ones.
    for (auto* fs : {static_cast<Backend*>(v->get()), mem.get()})
        ASSERT_TRUE(fs->mkdir("/d", 0755));
    auto put = [&](const std::string& path, const std::string& bytes) {
        ASSERT_TRUE(write_file(**v, path, bytes));
        ASSERT_TRUE(write_file(*mem, path, bytes));
    };
    for (int i = 0; i < 32; ++i) {
        put(fmt::format("/d/large{}", i), random_bytes(112 << 10, rng));
        volume_bytes += 112 << 10;
    }
    for (int i = 0; i < 256; ++i) {
        const std::size_t n = 200 + rng() % 3000;
        put(fmt::format("/d/small{}", i), random_bytes(n, rng));
        volume_bytes += n;
    }
    auto first = (*v)->compact();
    ASSERT_TRUE(first) << first.error().message();
    EXPECT_GT(first->pack.pack_bytes, volume_bytes);  // all of it, written once

    // 1%: bytes inserted in the middle of one large file, two small files rewritten.
    auto change = [&](int round) {
        auto large = read_file(*mem, fmt::format("/d/large{}", round % 32));
        ASSERT_TRUE(large);
        large->insert(large->size() / 2, random_bytes(100, rng));
        put(fmt::format("/d/large{}", round % 32), *large);
        for (int k = 0; k < 2; ++k)
            put(fmt::format("/d/small{}", (round * 7 + k) % 256), random_bytes(1000, rng));
    };
    change(1);
    auto second = (*v)->compact();
    ASSERT_TRUE(second) << second.error().message();
    EXPECT_TRUE(second->incremental);
    // Written: the changed chunks (16 KiB each), two small files, and the metadata.
    EXPECT_LT(second->pack.pack_bytes, volume_bytes / 20)
        << second->pack.pack_bytes << " of " << volume_bytes;
    EXPECT_GT(second->pack.base_bytes, volume_bytes * 9 / 10);
    EXPECT_EQ(diff(*capture(*mem), *capture(**v)), "");

    // Reopened: the same tree over the chain; its packs stay, nothing else does.
    v->reset();
    v = Volume::open(dir, options);
    ASSERT_TRUE(v) << v.error().message();
    EXPECT_EQ(diff(*capture(*mem), *capture(**v)), "");
    EXPECT_EQ(packs_in(dir).size(), 3u);  // the empty first pack, the whole one, this one

    // More rounds: the chain never passes 8 packs; at 8 one compaction writes its pack whole
    // and the old chain goes.
    bool whole_again = false;
    for (int round = 2; round < 12; ++round) {
        change(round);
        auto c = (*v)->compact();
        ASSERT_TRUE(c) << c.error().message();
        EXPECT_LE(packs_in(dir).size(), 8u) << "round " << round;
        if (!c->incremental) {
            whole_again = true;
            EXPECT_EQ(packs_in(dir).size(), 1u) << "round " << round;
        }
        EXPECT_EQ(diff(*capture(*mem), *capture(**v)), "") << "round " << round;
    }
    EXPECT_TRUE(whole_again);
    v->reset();
    v = Volume::open(dir, options);
    ASSERT_TRUE(v) << v.error().message();
    EXPECT_EQ(diff(*capture(*mem), *capture(**v)), "");
}

}  // namespace
}  // namespace packfs::volume_test
