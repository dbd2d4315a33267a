// packfs-chunk-study: how much of a series of versions of a tree content-defined chunks share,
// with which cutting, before the pack format takes chunks (docs/BENCH.md "Packs that share").
//
//     packfs-chunk-study [--avg 16K,64K] [--level N] V0 V1 ... Vn
//
// Each version's files are read in depth-first name order, identical contents once (as a pack
// stores them), and cut in four ways:
//   fixed     the stream of contents cut every 64 KiB, as a pack's blocks are today;
//   stream    the stream cut by content (src/pack/format/chunker.hpp), chunks across files;
//   files     each file cut by content on its own (a small file is one chunk);
//   hybrid    the stream cut by content, but a file of at least the average chunk size starts
//             and ends a chunk (small files share chunks, large ones are chunked on their own);
//   refs      a pack over the versions before: a content one of them holds whole, and a chunk
//             of a file of at least the average size cut by content, is referenced (stored
//             nothing); the rest is written as a pack writes, in 64 KiB blocks compressed
//             together (so the first version is a self-contained pack as today's).
// Every chunk is named by its SHA-256 and compressed with zstd alone the first time it is met.
// The store is every distinct chunk of all versions; printed per way: the first version's
// chunks compressed (a self-contained pack of it), the store, their ratio, and the mean bytes
// each later version adds.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "pack/format/chunker.hpp"
#include "pack/format/codec.hpp"
#include "pack/format/digest.hpp"

namespace fs = std::filesystem;
using packfs::pack::ChunkParams;
using packfs::pack::Sha256Digest;

namespace {

enum class Way { fixed, stream, files, hybrid, refs };

const char* way_name(Way way) {
    switch (way) {
        case Way::fixed:
            return "fixed 64K";
        case Way::stream:
            return "stream";
        case Way::files:
            return "files";
        case Way::hybrid:
            return "hybrid";
        case Way::refs:
            return "refs";
    }
    return "?";
}

// A file's bytes appended to `out` (a version's files are held in one buffer: tens of thousands of
// mappings would pass the kernel's map count).
bool read_file(const fs::path& path, std::vector<std::byte>& out) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat st {};
    bool ok = ::fstat(fd, &st) == 0;
    const std::size_t at = out.size();
    out.resize(at + static_cast<std::size_t>(st.st_size));
    for (std::size_t done = 0; ok && done < static_cast<std::size_t>(st.st_size);) {
        const ssize_t n = ::read(fd, out.data() + at + done, out.size() - at - done);
        ok = n > 0;
        if (ok) done += static_cast<std::size_t>(n);
    }
    ::close(fd);
    if (!ok) out.resize(at);
    return ok;
}

std::vector<fs::path> files_in_walk_order(const fs::path& root) {
    std::vector<fs::path> out;
    std::vector<fs::path> dirs{root};
    // Depth first, each directory's entries in name order.
    std::function<void(const fs::path&)> walk = [&](const fs::path& dir) {
        std::vector<fs::directory_entry> entries;
        for (const auto& e : fs::directory_iterator(dir)) entries.push_back(e);
        std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
            return a.path().filename() < b.path().filename();
        });
        for (const auto& e : entries) {
            if (e.is_symlink()) continue;
            if (e.is_directory())
                walk(e.path());
            else if (e.is_regular_file())
                out.push_back(e.path());
        }
    };
    walk(root);
    return out;
}

// One way of cutting, over all versions: the store it builds.
struct Study {
    Study(Way w, ChunkParams p, int l) : way(w), params(p), level(l) {}

    Way way;
    ChunkParams params;
    int level;
    std::unordered_map<Sha256Digest, uint64_t, packfs::pack::Sha256DigestHash>
        store;  // name -> compressed size
    uint64_t store_bytes = 0;
    std::vector<uint64_t> version_bytes;  // each version's chunks, compressed, counted once each
    std::vector<uint64_t> added_bytes;    // what each version added to the store
    std::vector<uint64_t> chunks;         // each version's chunk count
    double seconds = 0;

    std::vector<std::byte> compressed;
    std::unordered_map<Sha256Digest, uint64_t, packfs::pack::Sha256DigestHash> this_version;
    std::set<Sha256Digest> known;  // refs: whole contents and chunks of the versions before
    std::vector<std::byte> block;  // refs: the 64 KiB block being filled with new bytes

    // refs: new bytes into the version's own stream, stored in compressed 64 KiB blocks.
    void put_new(std::span<const std::byte> bytes) {
        while (!bytes.empty()) {
            const std::size_t take = std::min(bytes.size(), std::size_t{64 << 10} - block.size());
            block.insert(block.end(), bytes.begin(), bytes.begin() + take);
            bytes = bytes.subspan(take);
            if (block.size() == (64 << 10)) flush_new();
        }
    }
    void flush_new() {
        if (block.empty()) return;
        const uint64_t size =
            packfs::pack::compress_block(packfs::pack::Codec::zstd, level, block, compressed)
                ? compressed.size()
                : block.size();
        store_bytes += size;
        added_bytes.back() += size;
        version_bytes.back() += size;
        ++chunks.back();
        block.clear();
    }

    void chunk(std::span<const std::byte> bytes) {
        const Sha256Digest name = packfs::pack::sha256(bytes);
        auto it = store.find(name);
        uint64_t size;
        if (it == store.end()) {
            size = packfs::pack::compress_block(packfs::pack::Codec::zstd, level, bytes, compressed)
                       ? compressed.size()
                       : bytes.size();
            store.emplace(name, size);
            store_bytes += size;
            added_bytes.back() += size;
        } else {
            size = it->second;
        }
        if (this_version.emplace(name, size).second) version_bytes.back() += size;
        ++chunks.back();
    }

    void version(const std::vector<std::span<const std::byte>>& contents) {
        const auto start = std::chrono::steady_clock::now();
        version_bytes.push_back(0);
        added_bytes.push_back(0);
        chunks.push_back(0);
        this_version.clear();
        auto sink = [&](std::span<const std::byte> c) { chunk(c); };
        switch (way) {
            case Way::fixed: {
                std::vector<std::byte> fixed_block;
                for (auto content : contents) {
                    while (!content.empty()) {
                        const std::size_t take =
                            std::min(content.size(), std::size_t{64 << 10} - fixed_block.size());
                        fixed_block.insert(fixed_block.end(), content.begin(),
                                           content.begin() + take);
                        content = content.subspan(take);
                        if (fixed_block.size() == (64 << 10)) {
                            chunk(fixed_block);
                            fixed_block.clear();
                        }
                    }
                }
                if (!fixed_block.empty()) chunk(fixed_block);
                break;
            }
            case Way::stream: {
                packfs::pack::StreamChunker chunker(params);
                for (auto content : contents) chunker.put(content, sink);
                chunker.finish(sink);
                break;
            }
            case Way::files: {
                const packfs::pack::Chunker chunker(params);
                for (auto content : contents)
                    for (std::size_t at = 0; at < content.size();) {
                        const std::size_t n = chunker.cut(content.subspan(at));
                        chunk(content.subspan(at, n));
                        at += n;
                    }
                break;
            }
            case Way::hybrid: {
                packfs::pack::StreamChunker small(params);
                const packfs::pack::Chunker chunker(params);
                for (auto content : contents) {
                    if (content.size() < params.avg_size) {
                        small.put(content, sink);
                        continue;
                    }
                    small.finish(sink);
                    for (std::size_t at = 0; at < content.size();) {
                        const std::size_t n = chunker.cut(content.subspan(at));
                        chunk(content.subspan(at, n));
                        at += n;
                    }
                }
                small.finish(sink);
                break;
            }
            case Way::refs: {
                const packfs::pack::Chunker chunker(params);
                std::vector<Sha256Digest> met;
                for (auto content : contents) {
                    const Sha256Digest whole = packfs::pack::sha256(content);
                    met.push_back(whole);
                    if (known.contains(whole)) continue;
                    if (content.size() < params.avg_size) {
                        put_new(content);
                        continue;
                    }
                    for (std::size_t at = 0; at < content.size();) {
                        const std::size_t n = chunker.cut(content.subspan(at));
                        const auto piece = content.subspan(at, n);
                        const Sha256Digest name = packfs::pack::sha256(piece);
                        met.push_back(name);
                        if (!known.contains(name)) put_new(piece);
                        at += n;
                    }
                }
                flush_new();
                known.insert(met.begin(), met.end());
                break;
            }
        }
        seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
};

std::string mib(uint64_t bytes) {
    return fmt::format("{:.1f}", static_cast<double>(bytes) / (1 << 20));
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"How much content-defined chunks share across versions of a tree"};
    std::vector<std::string> versions;
    std::string avgs = "16K,32K,64K";
    int level = 0;
    unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
    app.add_option("versions", versions, "version directories, oldest first")->required();
    app.add_option("--avg", avgs, "average chunk sizes to try (K suffix)");
    app.add_option("--level", level, "zstd level (0: the codec's default, as packs)");
    app.add_option("--jobs", jobs, "ways studied at once");
    CLI11_PARSE(app, argc, argv);

    std::vector<Study> studies;
    studies.emplace_back(Way::fixed, ChunkParams{}, level);
    for (std::size_t at = 0; at < avgs.size();) {
        const std::size_t comma = std::min(avgs.find(',', at), avgs.size());
        const uint32_t avg = static_cast<uint32_t>(std::stoul(avgs.substr(at, comma - at))) << 10;
        const ChunkParams params = ChunkParams::around(avg);
        if (const std::string why = params.check(); !why.empty()) {
            fmt::print(stderr, "packfs-chunk-study: --avg: {}\n", why);
            return 2;
        }
        for (Way way : {Way::stream, Way::files, Way::hybrid, Way::refs})
            studies.emplace_back(way, params, level);
        at = comma + 1;
    }

    for (std::size_t v = 0; v < versions.size(); ++v) {
        const auto start = std::chrono::steady_clock::now();
        std::vector<std::byte> all;
        std::vector<std::pair<std::size_t, std::size_t>> extents;  // in `all`
        std::set<Sha256Digest> seen;  // identical contents once, as a pack stores them
        for (const auto& path : files_in_walk_order(versions[v])) {
            const std::size_t at = all.size();
            if (!read_file(path, all) || all.size() == at) continue;
            const auto bytes = std::span(all).subspan(at);
            if (!seen.insert(packfs::pack::sha256(bytes)).second) {
                all.resize(at);
                continue;
            }
            extents.emplace_back(at, bytes.size());
        }
        std::vector<std::span<const std::byte>> contents;
        for (auto [at, n] : extents) contents.push_back(std::span(all).subspan(at, n));
        const uint64_t bytes = all.size();
        // The ways, `jobs` at a time.
        std::atomic<std::size_t> next{0};
        std::vector<std::jthread> workers;
        for (unsigned j = 0; j < jobs; ++j)
            workers.emplace_back([&] {
                for (std::size_t i; (i = next.fetch_add(1)) < studies.size();)
                    studies[i].version(contents);
            });
        workers.clear();
        fmt::print(stderr, "{}: {} distinct contents, {} MiB, {:.1f} s\n", versions[v],
                   contents.size(), mib(bytes),
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }

    fmt::print(
        "| way | avg | chunks (first version) | first version, zstd MiB | store of {} versions, "
        "MiB | "
        "store / first | added per later version, MiB | seconds |\n",
        versions.size());
    fmt::print("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (const Study& s : studies) {
        uint64_t later = 0;
        for (std::size_t v = 1; v < s.added_bytes.size(); ++v) later += s.added_bytes[v];
        const double per_later =
            s.added_bytes.size() > 1 ? static_cast<double>(later) / (s.added_bytes.size() - 1) : 0;
        fmt::print("| {} | {} | {} | {} | {} | {:.3f} | {:.2f} | {:.1f} |\n", way_name(s.way),
                   s.way == Way::fixed ? "-" : fmt::format("{}K", s.params.avg_size >> 10),
                   s.chunks[0], mib(s.version_bytes[0]), mib(s.store_bytes),
                   static_cast<double>(s.store_bytes) / s.version_bytes[0], per_later / (1 << 20),
                   s.seconds);
    }
    return 0;
}
