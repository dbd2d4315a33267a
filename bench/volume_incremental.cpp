// packfs-volume-incremental: what a volume's compaction writes after a small change, whole and
// incremental (docs/BENCH.md "Packs that share").
//
//     packfs-volume-incremental TREE WORK [PERCENT]
//
// Makes a volume from TREE (a host directory) in WORK/whole and WORK/incremental (zstd; the
// second with 64 KiB chunks, so its compactions are built over the pack before), compacts each
// once, then changes PERCENT (default 1) of the files the same way in both (bytes inserted in
// the middle of each), compacts again and prints the bytes each compaction wrote (its pack
// file), its seconds, and the volume's bytes.
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "packfs/volume.hpp"

namespace fs = std::filesystem;
using namespace packfs;

namespace {

int die(const std::string& what, const Error& e) {
    fmt::print(stderr, "packfs-volume-incremental: {}: {}\n", what, e.message());
    return 1;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        fmt::print(stderr, "usage: packfs-volume-incremental TREE WORK [PERCENT]\n");
        return 2;
    }
    const std::string tree = argv[1], work = argv[2];
    const double percent = argc > 3 ? std::atof(argv[3]) : 1.0;
    std::vector<std::string> files;  // paths from the tree's root, regular files
    uint64_t tree_bytes = 0;
    for (const auto& e : fs::recursive_directory_iterator(tree)) {
        if (!e.is_regular_file() || e.is_symlink()) continue;
        files.push_back("/" + fs::relative(e.path(), tree).string());
        tree_bytes += e.file_size();
    }
    std::sort(files.begin(), files.end());
    std::mt19937_64 rng(1);
    std::shuffle(files.begin(), files.end(), rng);
    files.resize(static_cast<std::size_t>(static_cast<double>(files.size()) * percent / 100));

    fmt::print(
        "| compaction after changing {}% of the files ({}) of a {:.2f} GB volume | "
        "written, MB | of the volume | seconds |\n| --- | --- | --- | --- |\n",
        percent, files.size(), static_cast<double>(tree_bytes) / 1e9);
    for (const bool incremental : {false, true}) {
        const std::string dir = work + (incremental ? "/incremental" : "/whole");
        fs::remove_all(dir);
        PackWriteOptions pack;
        pack.compression = Compression::zstd;
        if (incremental) pack.chunk_size = 64 << 10;
        VolumeInit init;
        init.from_dir = tree;
        init.pack = pack;
        if (auto ok = Volume::create(dir, init); !ok) return die("create " + dir, ok.error());
        VolumeOptions options;
        options.pack = pack;
        auto v = Volume::open(dir, options);
        if (!v) return die("open " + dir, v.error());
        if (auto c = (*v)->compact(); !c) return die("compact", c.error());
        std::mt19937_64 edit_rng(2);
        for (const std::string& path : files) {
            auto bytes = read_file(**v, path);
            if (!bytes) return die("read " + path, bytes.error());
            std::string insert(64 + edit_rng() % 256, 'x');
            for (auto& ch : insert) ch = static_cast<char>('a' + edit_rng() % 26);
            bytes->insert(bytes->size() / 2, insert);
            if (auto ok = write_file(**v, path, *bytes); !ok)
                return die("write " + path, ok.error());
        }
        const auto start = std::chrono::steady_clock::now();
        auto c = (*v)->compact();
        if (!c) return die("compact", c.error());
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        fmt::print(
            "| {} | {:.1f} | {:.2f}% | {:.2f} |\n",
            c->incremental ? "incremental (64 KiB chunks)" : "whole", c->pack.pack_bytes / 1e6,
            100.0 * static_cast<double>(c->pack.pack_bytes) / static_cast<double>(tree_bytes),
            seconds);
    }
    return 0;
}
