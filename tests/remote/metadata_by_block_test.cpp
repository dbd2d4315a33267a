// A remote pack whose metadata is fetched by block as it is used (RemoteOptions::
// metadata_whole_bytes 0; docs/REMOTE.md, "Latency"), against a real nginx: opening fetches the
// header and what follows the frames, not the frames; a lookup fetches a window of frames;
// reading everything fetches each frame once; a second opener with the digest pinned finds
// the frames in the cache and asks the server for nothing; frames the server alters are refused
// (EIO), never kept in the cache, and read right once the server is fixed; a cache filled by
// block in part serves later opens by block and whole alike, without a false alarm in the log.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>

#include "pack/format/format.hpp"
#include "packfs/mem.hpp"
#include "packfs/pack.hpp"
#include "packfs/remote.hpp"
#include "remote/frame_windows.hpp"
#include "remote/remote_support.hpp"
#include "support/files.hpp"
#include "support/nginx_server.hpp"

namespace packfs {
namespace {

using namespace remote_test;
using test_support::NginxServer;

constexpr uint64_t kWindow = remote::FrameWindows::kFirst;  // frames fetched per request

struct ManyFiles {
    std::string name, url, digest, path;  // path: the served file
    std::map<std::string, std::string> files;
    pack::Header header{};
};

// 2,400 small files in 24 directories (their random contents inline in the metadata, which
// then takes about 1.2 MiB stored), zstd, served by nginx.
ManyFiles serve_many(const std::string& name) {
    NginxServer& server = NginxServer::shared();
    ManyFiles out;
    out.name = name;
    out.url = server.url(name);
    if (out.url.empty()) {
        ADD_FAILURE() << server.start_error();
        return out;
    }
    auto mem = make_mem_backend();
    for (int d = 0; d < 24; ++d) {
        const std::string dir = "/dir-" + std::to_string(d);
        EXPECT_TRUE(mem->mkdir(dir));
        for (int f = 0; f < 100; ++f) {
            const std::string path = dir + "/file-" + std::to_string(f) + ".bin";
            out.files[path] = random_bytes(100 + (f * 37) % 700, d * 100 + f);
            EXPECT_TRUE(write_file(*mem, path, out.files[path]));
        }
    }
    PackWriteOptions options;
    options.compression = Compression::zstd;
    options.inline_max = 4096;  // the contents in the metadata, random: about 1 MiB of frames
    out.path = (server.root() / name).string();
    auto stats = write_pack(*mem, out.path, options);
    EXPECT_TRUE(stats);
    if (stats) out.digest = stats->digest;
    const std::string bytes = test_support::slurp(out.path);
    if (bytes.size() >= sizeof out.header)
        std::memcpy(&out.header, bytes.data(), sizeof out.header);
    return out;
}

// The served file's bytes replaced in place (nginx opens it for each request).
void put(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
    ASSERT_TRUE(out.flush()) << path;
}

RemoteOptions by_block(const std::string& cache) {
    RemoteOptions options;
    options.cache_dir = cache;
    options.metadata_whole_bytes = 0;
    options.timeout = std::chrono::seconds(10);
    return options;
}

// The fetched ranges of `name` that lie in the metadata frames.
std::vector<std::pair<uint64_t, uint64_t>> frame_ranges(const ManyFiles& m) {
    std::vector<std::pair<uint64_t, uint64_t>> out;
    const uint64_t begin = m.header.meta_offset, end = begin + m.header.meta_frames_length;
    for (const auto& [a, b] : ranges_fetched(m.name)) {
        if (b >= begin && a < end) out.emplace_back(a, b);
    }
    return out;
}

TEST(RemoteMetadata, OpeningFetchesNoFramesAndReadingFetchesEachFrameOnce) {
    const ManyFiles m = serve_many("by-block.pack");
    ASSERT_FALSE(m.url.empty());
    ASSERT_NE(m.header.incompat_features & pack::kIncompatMetaDigests, 0u);
    ASSERT_GT(m.header.meta_frames_length, 4 * kWindow) << "too little metadata to tell";
    test_support::TempDir cache;
    auto pack = open_remote_pack(m.url, by_block(cache.path.string()));
    ASSERT_TRUE(pack) << pack.error().message();
    EXPECT_TRUE((*pack)->info().has_metadata_digests);
    // The open: what follows the frames (index, sums, digests), and a window or two of frames
    // (the root's inode, the data blocks' table it hands to the fetcher).
    const uint64_t tail = m.header.file_size - m.header.meta_offset - m.header.meta_frames_length;
    const uint64_t at_open = bytes_fetched(m.name);
    EXPECT_LE(at_open, tail + 2 * kWindow)
        << "the open fetched " << at_open << " of " << m.header.meta_frames_length;

    // One lookup: the frames of the blocks it touches, a window or so.
    auto st = (*pack)->stat("/dir-17/file-42.bin");
    ASSERT_TRUE(st) << st.error().message();
    EXPECT_EQ(st->size, m.files.at("/dir-17/file-42.bin").size());
    EXPECT_LE(bytes_fetched(m.name) - at_open, 3 * kWindow);

    // Everything: right, and no frame fetched twice.
    for (const auto& [path, bytes] : m.files) ASSERT_TRUE(read_all(**pack, path) == bytes) << path;
    auto frames = frame_ranges(m);
    std::sort(frames.begin(), frames.end());
    uint64_t covered = 0;
    for (std::size_t i = 0; i < frames.size(); ++i) {
        if (i > 0) {
            EXPECT_GT(frames[i].first, frames[i - 1].second) << "fetched twice";
        }
        covered += frames[i].second - frames[i].first + 1;
    }
    EXPECT_LE(covered, m.header.meta_frames_length);

    // A second opener of the same cache, the digest pinned: no request at all.
    const uint64_t before = bytes_fetched(m.name);
    RemoteOptions warm = by_block(cache.path.string());
    warm.digest = m.digest;
    auto again = open_remote_pack(m.url, warm);
    ASSERT_TRUE(again) << again.error().message();
    for (const auto& [path, bytes] : m.files) ASSERT_TRUE(read_all(**again, path) == bytes) << path;
    EXPECT_EQ(bytes_fetched(m.name), before);
}

TEST(RemoteMetadata, FramesTheServerAltersAreRefusedNeverCachedAndReadOnceFixed) {
    const ManyFiles m = serve_many("altered-meta.pack");
    ASSERT_FALSE(m.url.empty());
    const std::string original = test_support::slurp(m.path);
    test_support::TempDir cache;
    auto pack = open_remote_pack(m.url, by_block(cache.path.string()));
    ASSERT_TRUE(pack) << pack.error().message();

    // The server's copy changes under the open pack: a byte in every 512 of the frames.
    std::string altered = original;
    const uint64_t frames = m.header.meta_offset, frames_end = frames + m.header.meta_frames_length;
    for (uint64_t at = frames + 100; at < frames_end; at += 512) altered[at] ^= 0x5a;
    ASSERT_LT(bytes_fetched(m.name), m.header.meta_frames_length / 4);  // most frames not here
    put(m.path, altered);
    int refused = 0, wrong = 0;
    for (const auto& [path, bytes] : m.files) {
        auto st = (*pack)->stat(path);
        if (!st) {
            EXPECT_EQ(st.error().code(), EIO) << path << ": " << st.error().message();
            ++refused;
            continue;
        }
        if (read_all(**pack, path) != bytes) ++wrong;
    }
    EXPECT_GT(refused, 0);
    EXPECT_EQ(wrong, 0);

    // Nothing the server altered is in the cache file: no altered byte of the frames is there
    // (pages it wrote hold zeros where no frame was kept).
    auto cached = list_remote_cache(cache.path.string());
    ASSERT_TRUE(cached && cached->size() == 1);
    const std::string kept = test_support::slurp(cached->front().path);
    const int fd = ::open(cached->front().path.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    uint64_t checked = 0;
    for (off_t at = static_cast<off_t>(frames); at < static_cast<off_t>(frames_end);) {
        const off_t data = ::lseek(fd, at, SEEK_DATA);
        if (data < 0 || data >= static_cast<off_t>(frames_end)) break;
        const off_t hole = std::min<off_t>(::lseek(fd, data, SEEK_HOLE), frames_end);
        for (off_t i = data; i < hole; ++i) {
            // (An altered byte that is zero reads like the zeros around a kept frame: about
            // one in 256 of them, so a frame kept altered is told by its other altered bytes.)
            if (altered[i] != original[i] && altered[i] != 0 && kept[i] == altered[i]) {
                ADD_FAILURE() << "an altered byte was kept at " << i;
                break;
            }
        }
        checked += hole - data;
        at = hole;
    }
    ::close(fd);
    EXPECT_GT(checked, 0u);

    // The server fixed: the same pack reads everything right.
    put(m.path, original);
    for (const auto& [path, bytes] : m.files) EXPECT_TRUE(read_all(**pack, path) == bytes) << path;
}

TEST(RemoteMetadata, ACacheFilledInPartServesLaterOpensOfEitherKindQuietly) {
    const ManyFiles m = serve_many("partly-cached.pack");
    ASSERT_FALSE(m.url.empty());
    test_support::TempDir cache;
    auto lines = std::make_shared<std::vector<std::string>>();
    auto options = [&](uint64_t whole) {
        RemoteOptions o = by_block(cache.path.string());
        o.digest = m.digest;
        o.metadata_whole_bytes = whole;
        o.log = [lines](std::string_view line) { lines->emplace_back(line); };
        return o;
    };
    // By block, one directory of 24 read: windows of frames kept, with holes between them.
    {
        auto pack = open_remote_pack(m.url, options(0));
        ASSERT_TRUE(pack) << pack.error().message();
        for (int f = 0; f < 100; ++f) {
            const std::string path = "/dir-5/file-" + std::to_string(f) + ".bin";
            ASSERT_TRUE(read_all(**pack, path) == m.files.at(path)) << path;
        }
    }
    const uint64_t first = bytes_fetched(m.name);
    ASSERT_LT(first, m.header.meta_frames_length / 2) << "the first open fetched most frames";
    // By block again, everything: what the cache holds comes from there, the rest from the
    // server; a frame at the edge of a kept window (its page half zeros in the file) is
    // fetched again without a word.
    {
        auto pack = open_remote_pack(m.url, options(0));
        ASSERT_TRUE(pack) << pack.error().message();
        for (const auto& [path, bytes] : m.files)
            ASSERT_TRUE(read_all(**pack, path) == bytes) << path;
    }
    const uint64_t second = bytes_fetched(m.name) - first;
    // Whole: the frames no read used are still holes in the file, so the region comes from the
    // server, in one request (it used to be read from the file, holes as zeros, fail its check
    // and log that the cached copy was unusable).
    {
        auto pack = open_remote_pack(m.url, options(uint64_t{1} << 40));
        ASSERT_TRUE(pack) << pack.error().message();
        for (const auto& [path, bytes] : m.files)
            ASSERT_TRUE(read_all(**pack, path) == bytes) << path;
    }
    const auto ranges = ranges_fetched(m.name);
    ASSERT_FALSE(ranges.empty());
    EXPECT_EQ(ranges.back(), std::make_pair(m.header.meta_offset, m.header.file_size - 1));
    EXPECT_EQ(bytes_fetched(m.name) - first - second, m.header.file_size - m.header.meta_offset);
    for (const std::string& line : *lines) ADD_FAILURE() << "logged: " << line;
}

TEST(RemoteMetadata, FrameWindowsDoubleForFetchesThatContinueOneAndStartOverElsewhere) {
    remote::FrameWindows w;
    constexpr uint64_t k = remote::FrameWindows::kFirst;
    EXPECT_EQ(w.next(1000), k);
    // Starting within the last window (where the reader's claims stopped): doubled, up to kMax.
    EXPECT_EQ(w.next(1000 + k), 2 * k);
    EXPECT_EQ(w.next(1000 + 3 * k), 4 * k);
    uint64_t at = 1000 + 7 * k, window = 4 * k;
    for (int i = 0; i < 10; ++i) {
        window = w.next(at);
        at += window;
    }
    EXPECT_EQ(window, remote::FrameWindows::kMax);
    // A fetch far from every recent one (a lookup elsewhere) starts over; the walk's stream is
    // still there for its next fetch.
    EXPECT_EQ(w.next(at + 100 * k), k);
    EXPECT_EQ(w.next(at), remote::FrameWindows::kMax);
    // Nor does a fetch at the very start of a window continue it (the same frame again).
    EXPECT_EQ(w.next(500 * k), k);
    EXPECT_EQ(w.next(500 * k), k);
}

}  // namespace
}  // namespace packfs
