// Content-defined chunking (src/pack/format/chunker.hpp): every cut within the bounds, the same
// cuts whatever pieces the stream comes in, chunk sizes around the average, and the property the
// chunking is for: an insertion or a deletion changes the chunks near it and keeps the others,
// on random bytes and on text, for many seeds and places. The gear table and the cuts of a fixed
// stream are pinned: a pack records its chunk parameters, so they must cut alike forever.
#include "pack/format/chunker.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "pack/format/digest.hpp"

namespace packfs::pack {
namespace {

std::vector<std::byte> random_bytes(std::size_t n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<std::byte> out(n);
    for (auto& b : out) b = static_cast<std::byte>(rng() >> 56);
    return out;
}

// Source-code-like text: lines of a few hundred words, some lines repeated (as headers and
// boilerplate are), so the bytes have low entropy and long repeats.
std::vector<std::byte> text_bytes(std::size_t n, uint64_t seed) {
    static const char* const words[] = {
        "static", "int", "return", "struct", "if",       "else", "for",  "(", ")", "{",  "}",
        ";",      "0",   "1",      "const",  "unsigned", "long", "void", "*", "=", "->", "\t"};
    std::mt19937_64 rng(seed);
    std::vector<std::string> lines;
    std::string out;
    while (out.size() < n) {
        std::string line;
        if (!lines.empty() && rng() % 4 == 0) {
            line = lines[rng() % lines.size()];
        } else {
            for (int w = 0, count = static_cast<int>(rng() % 12); w < count; ++w)
                line += std::string(words[rng() % std::size(words)]) + " ";
            line += std::to_string(rng() % 1000) + "\n";
            lines.push_back(line);
        }
        out += line;
    }
    out.resize(n);
    return {reinterpret_cast<const std::byte*>(out.data()),
            reinterpret_cast<const std::byte*>(out.data()) + n};
}

std::vector<std::size_t> cuts(const Chunker& chunker, std::span<const std::byte> data) {
    std::vector<std::size_t> lengths;
    for (std::size_t at = 0; at < data.size();) {
        const std::size_t n = chunker.cut(data.subspan(at));
        lengths.push_back(n);
        at += n;
    }
    return lengths;
}

// The chunks' SHA-256s, each with how many times it occurs.
std::map<Sha256Digest, int> chunk_names(const Chunker& chunker, std::span<const std::byte> data) {
    std::map<Sha256Digest, int> names;
    std::size_t at = 0;
    for (std::size_t n : cuts(chunker, data)) {
        ++names[sha256(data.subspan(at, n))];
        at += n;
    }
    return names;
}

// How many chunks of `before` are not among `after`'s (with their counts).
int lost(const std::map<Sha256Digest, int>& before, const std::map<Sha256Digest, int>& after) {
    int count = 0;
    for (const auto& [name, n] : before) {
        const auto it = after.find(name);
        count += std::max(0, n - (it == after.end() ? 0 : it->second));
    }
    return count;
}

TEST(ChunkParams, AreChecked) {
    EXPECT_EQ(ChunkParams{}.check(), "");
    EXPECT_EQ(ChunkParams::around(1 << 10).check(), "");
    EXPECT_EQ(ChunkParams::around(4 << 20).check(), "");
    EXPECT_NE(ChunkParams::around(3 << 10).check(), "");  // not a power of two
    EXPECT_NE(ChunkParams::around(512).check(), "");
    EXPECT_NE(ChunkParams::around(8 << 20).check(), "");
    EXPECT_NE((ChunkParams{63, 4096, 16384}.check()), "");
    EXPECT_NE((ChunkParams{4096, 4096, 16384}.check()), "");
    EXPECT_NE((ChunkParams{1024, 4096, 4096}.check()), "");
    EXPECT_NE((ChunkParams{1024, 4096, (16 << 20) + 1}.check()), "");
    EXPECT_NE(ChunkParams::around(3 << 10).check().find("power of two"), std::string::npos);
}

TEST(Chunker, CutsWithinTheBounds) {
    for (uint32_t avg : {1u << 10, 8u << 10, 64u << 10}) {
        const Chunker chunker(ChunkParams::around(avg));
        const auto data = random_bytes(avg * 64 + 12345, avg);
        const auto lengths = cuts(chunker, data);
        ASSERT_FALSE(lengths.empty());
        for (std::size_t i = 0; i < lengths.size(); ++i) {
            EXPECT_LE(lengths[i], avg * 4) << i;
            if (i + 1 < lengths.size()) {  // all but the last
                EXPECT_GE(lengths[i], avg / 4) << i;
            }
            EXPECT_GT(lengths[i], 0u);
        }
        // Shorter than the smallest chunk: one chunk of all of it; empty: nothing to cut.
        EXPECT_EQ(chunker.cut(std::span(data).first(avg / 8)), avg / 8);
        EXPECT_EQ(chunker.cut(std::span(data).first(1)), 1u);
    }
}

TEST(Chunker, ChunksAverageAboutTheAverage) {
    for (uint32_t avg : {4u << 10, 16u << 10, 64u << 10}) {
        const Chunker chunker(ChunkParams::around(avg));
        for (const auto& data :
             {random_bytes(avg * 400, avg + 1), text_bytes(avg * 400, avg + 2)}) {
            const auto lengths = cuts(chunker, data);
            const double mean = static_cast<double>(data.size()) / lengths.size();
            // Normalized chunking with min = avg / 4 gathers them around avg (a little above).
            EXPECT_GT(mean, avg * 0.75) << avg;
            EXPECT_LT(mean, avg * 1.5) << avg;
        }
    }
}

TEST(Chunker, AllZerosCutAtTheLargestSize) {
    const Chunker chunker(ChunkParams::around(8 << 10));
    const std::vector<std::byte> zeros(100 << 10);
    const auto lengths = cuts(chunker, zeros);
    ASSERT_EQ(lengths.size(), 4u);
    EXPECT_EQ(lengths[0], 32u << 10);
    EXPECT_EQ(lengths[3], 4u << 10);
}

TEST(StreamChunker, CutsAlikeWhateverThePieces) {
    const ChunkParams params = ChunkParams::around(4 << 10);
    const Chunker chunker(params);
    std::mt19937_64 rng(7);
    for (int round = 0; round < 20; ++round) {
        const auto data = round % 2 ? text_bytes(300'000 + rng() % 100'000, rng())
                                    : random_bytes(300'000 + rng() % 100'000, rng());
        const auto whole = cuts(chunker, data);
        StreamChunker stream(params);
        std::vector<std::size_t> pieces;
        std::size_t bytes_out = 0;
        auto sink = [&](std::span<const std::byte> chunk) {
            ASSERT_TRUE(std::equal(chunk.begin(), chunk.end(), data.begin() + bytes_out));
            pieces.push_back(chunk.size());
            bytes_out += chunk.size();
        };
        for (std::size_t at = 0; at < data.size();) {
            // Pieces of 0 bytes to twice the largest chunk, and single bytes now and then.
            const std::size_t n =
                std::min(data.size() - at, rng() % 5 == 0 ? std::size_t{1} : rng() % 40'000);
            stream.put(std::span(data).subspan(at, n), sink);
            at += n;
        }
        stream.finish(sink);
        EXPECT_EQ(bytes_out, data.size());
        EXPECT_EQ(pieces, whole) << round;
    }
}

// The property chunking is for, on random bytes and text, at random places, for many seeds:
// after one byte inserted at the start, or a run inserted or deleted in the middle, all but a
// few chunks are found again.
TEST(Chunker, EditsKeepAllButTheChunksAroundThem) {
    const Chunker chunker(ChunkParams::around(4 << 10));
    std::mt19937_64 rng(2026);
    int total_lost = 0, total_chunks = 0;
    for (int round = 0; round < 60; ++round) {
        const auto data = round % 2 ? text_bytes(1 << 20, rng()) : random_bytes(1 << 20, rng());
        const auto before = chunk_names(chunker, data);
        int chunks = 0;
        for (const auto& [name, n] : before) chunks += n;

        std::vector<std::byte> edited = data;
        const int kind = round % 3;
        if (kind == 0) {  // one byte at the start
            edited.insert(edited.begin(), std::byte{0x42});
        } else {
            const std::size_t at = rng() % data.size();
            const std::size_t n = 1 + rng() % 300;
            if (kind == 1) {
                const auto insert = random_bytes(n, rng());
                edited.insert(edited.begin() + static_cast<std::ptrdiff_t>(at), insert.begin(),
                              insert.end());
            } else {
                edited.erase(
                    edited.begin() + static_cast<std::ptrdiff_t>(at),
                    edited.begin() + static_cast<std::ptrdiff_t>(std::min(data.size(), at + n)));
            }
        }
        const int n_lost = lost(before, chunk_names(chunker, edited));
        // The chunk the edit falls in, and now and then the one after it (a cut the edit moved
        // past the next one); a delete may span two.
        EXPECT_LE(n_lost, 3) << "round " << round << " kind " << kind << " of " << chunks;
        EXPECT_GE(n_lost, kind == 0 ? 1 : 0);
        total_lost += n_lost;
        total_chunks += chunks;
    }
    // Over all rounds about 1-2 chunks of ~250 each.
    EXPECT_LT(total_lost, 60 * 2.5);
    EXPECT_GT(total_chunks, 60 * 150);
}

// The table and the cuts of a fixed stream, pinned: chunk boundaries are part of the format.
TEST(Chunker, GoldenCuts) {
    const auto& gear = gear_table();
    EXPECT_EQ(gear[0], 0x246dc99625af08bbULL);
    EXPECT_EQ(gear[1], 0x1a02300121e0e4f3ULL);
    EXPECT_EQ(gear[255], 0xd1f3c5084daaa980ULL);
    const Chunker chunker(ChunkParams::around(4 << 10));
    const auto lengths = cuts(chunker, random_bytes(64 << 10, 1));
    const std::vector<std::size_t> expected = {4360, 4188, 5942, 4366, 5345, 4678, 6079, 4743,
                                               5678, 5142, 4222, 2522, 4521, 2979, 771};
    EXPECT_EQ(lengths, expected);
    const auto text_lengths = cuts(chunker, text_bytes(64 << 10, 1));
    const std::vector<std::size_t> text_expected = {1218, 4352, 1284, 5392, 4951, 4788,
                                                    1651, 5035, 6349, 4708, 2431, 5304,
                                                    4280, 4212, 2996, 4262, 2323};
    EXPECT_EQ(text_lengths, text_expected);
}

}  // namespace
}  // namespace packfs::pack
