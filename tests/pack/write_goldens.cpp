// pack_write_goldens <dir>: writes the golden packs of the current format (raw, zstd, lz4, and
// zstd and lz4 with compressed metadata) of
// one tree holding every kind of entry and the format's boundaries, and the tree's description
// (<version>.expected), into <dir>, and prints each pack's SHA-256 as golden_test.cpp pins it.
// For a new format version: run it, check the files into tests/pack/golden/, pin the digests.
// Goldens already checked in are never rewritten.
#include <fcntl.h>
#include <sys/sysmacros.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>

#include "pack/golden_describe.hpp"
#include "packfs/mem.hpp"
#include "packfs/pack.hpp"

namespace {

using namespace packfs;

constexpr uint32_t kVersion = 2;  // the goldens this writes: the current format
namespace fs = std::filesystem;

[[noreturn]] void die(const std::string& what) {
    std::fprintf(stderr, "pack_write_goldens: %s\n", what.c_str());
    std::exit(1);
}

template <class T>
void ok(const Result<T>& r) {
    if (!r) die(r.error().message());
}

// The golden tree: every kind of entry and the boundaries the format has.
std::shared_ptr<Backend> golden_tree() {
    auto m = make_mem_backend();
    std::string pattern;
    for (int i = 0; i < 70000; ++i) pattern += static_cast<char>((i * 7919 + i / 251) & 0xff);
    ok(m->mkdir("/dir"));
    ok(m->mkdir("/dir/sub", 0700));
    ok(m->mkdir("/empty"));
    ok(write_file(*m, "/empty.txt", ""));
    ok(write_file(*m, "/one", "1"));
    ok(write_file(*m, "/dir/inline64", std::string(64, 'i')));
    ok(write_file(*m, "/dir/stream65", std::string(65, 's')));
    ok(write_file(*m, "/dir/page", pattern.substr(0, 4096)));
    ok(write_file(*m, "/dir/sub/big", pattern));
    ok(write_file(*m, "/dir/sub/big-copy", pattern));
    ok(write_file(*m, "/exec", "#!/bin/sh\n", 0755));
    ok(m->link("/one", "/dir/one-link"));
    ok(m->symlink("../one", "/dir/rel"));
    ok(m->symlink("/dir/sub", "/abs"));
    ok(m->symlink("/nowhere", "/dangling"));
    ok(m->mknod("/fifo", FileType::fifo, 0644));
    ok(m->mknod("/null", FileType::char_device, 0666, makedev(1, 3)));
    ok(write_file(*m, std::string("/latin1-\xe9\xff"), "not UTF-8"));
    ok(write_file(*m, "/" + std::string(255, 'L'), "long name"));
    ok(m->setxattr("/one", "user.text", "value"));
    ok(m->setxattr("/one", "user.empty", ""));
    ok(m->setxattr("/dir", "user.bin", std::string("\0\1\2\xff", 4)));
    ok(m->chown("/exec", 1000, 100));
    ok(m->utimens("/one", TimeUpdate::at({1000000000, 1}), TimeUpdate::at({1234567890, 123456789})));
    ok(m->utimens("/dir", TimeUpdate::at({-1, 999999999}), TimeUpdate::at({4102444800, 5})));
    // Since version 2: a directory with hash buckets (16 entries or more).
    ok(m->mkdir("/wide"));
    for (int i = 0; i < 20; ++i)
        ok(write_file(*m, "/wide/entry-" + std::to_string(i), std::to_string(i)));
    return m;
}

std::string slurp(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

struct Kind {
    const char* name;
    Compression compression;
    bool compress_metadata;
    bool block_digests = false;  // the sets from before the feature are written without it
    bool metadata_digests = false;  // likewise
};

// The packs v<version><infix>-<kind>.pack of `tree`, each's digest printed as golden_test.cpp
// pins it, and the tree's description v<version><infix>.expected.
void write_set(Backend& tree, const fs::path& dir, const std::string& infix,
               std::initializer_list<Kind> kinds) {
    const std::string stem = "v" + std::to_string(kVersion) + infix;
    for (const Kind& kind : kinds) {
        PackWriteOptions options;
        options.format = kVersion;
        options.times = PackTimes::all;  // the description records atimes and ctimes
        options.compression = kind.compression;
        options.compress_metadata = kind.compress_metadata;
        options.block_digests = kind.block_digests;
        options.metadata_digests = kind.metadata_digests;
        options.block_size = 16384;  // several blocks for the 70,000-byte file
        // The layout of the goldens' first writer (walk became the default later).
        options.layout = PackWriteOptions::Layout::inodes;
        const std::string name = stem + "-" + kind.name + ".pack";
        ok(write_pack(tree, (dir / name).string(), options));
        std::printf("{\"%s\", \"%s\"},\n", name.c_str(),
                    golden::hex_sha256(slurp(dir / name)).c_str());
    }
    std::ofstream(dir / (stem + ".expected")) << golden::describe_all(tree);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) die("usage: pack_write_goldens <dir>");
    const fs::path dir = argv[1];
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) die(dir.string() + ": " + ec.message());
    auto tree = golden_tree();
    auto snap = tree->snapshot();
    ok(snap);
    // Compressed metadata came later in version 2: the packs without it are what its first
    // writer wrote (and still writes, byte for byte).
    write_set(**snap, dir, "",
              {Kind{"raw", Compression::none, false}, Kind{"zstd", Compression::zstd, false},
               Kind{"lz4", Compression::lz4, false}, Kind{"zstd-cmeta", Compression::zstd, true},
               Kind{"lz4-cmeta", Compression::lz4, true}});

    // Since the holes feature: the same tree with a file that has whole blocks of zeros,
    // one of them never written (a hole in the tree too).
    ok(write_file(*tree, "/sparse", "first"));
    {
        auto f = tree->open("/sparse", O_WRONLY);
        ok(f);
        ok((*f)->pwrite(std::as_bytes(std::span(std::string_view("last"))), 100000));
    }
    auto holes = tree->snapshot();
    ok(holes);
    write_set(**holes, dir, "-holes",
              {Kind{"raw", Compression::none, false}, Kind{"zstd-cmeta", Compression::zstd, true}});
    // Since the block-digests feature: the same tree, each stored block's SHA-256 kept.
    write_set(**holes, dir, "-digests",
              {Kind{"raw", Compression::none, false, true},
               Kind{"zstd-cmeta", Compression::zstd, true, true}});
    // Since the metadata-digests feature: each metadata block's SHA-256 too, the image digest
    // over their table.
    write_set(**holes, dir, "-mdigests",
              {Kind{"raw", Compression::none, false, true, true},
               Kind{"zstd-cmeta", Compression::zstd, true, true, true}});
    return 0;
}
