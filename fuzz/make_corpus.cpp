// Writes the seed corpus: fuzz_make_corpus <dir> fills <dir>/pack, <dir>/path and <dir>/journal.
//
// pack/: a few small valid packs, each prefixed with fuzz_pack_reader's mode byte (3: fix the
// checksums and the file size, so mutations reach the parser):
//   mini_raw, mini_zstd, mini_lz4   the conformance fixture tree's shapes (every file type,
//                                   hard links, symlinks incl. loops, xattrs with binary
//                                   values, a 255-byte name, inline and stream contents,
//                                   duplicates, a compressible file) with small contents
//                                   (the real fixture holds 400 KB of random bytes)
//   tiny_raw, tiny_zstd             one file, one directory, one symlink, one xattr
//   empty                           the root alone
//   mini_raw_nofix                  mini_raw with mode 0 (checksums as they are)
//   mini_kept, tiny_kept_zstd       keeping the mem tree's inode numbers (the inode-numbers
//                                   feature: inode_numbers and inode_order sections)
//   mini_v2, tiny_v2, mini_v2_all_zstd   format 2 (the last with all times and kept numbers)
//   mini_v2_cmeta_zstd, tiny_v2_cmeta_lz4   format 2 with its metadata compressed (frames and a
//                                   frame index)
// path/: a few paths for fuzz_path.
// journal/: small valid journals for fuzz_journal_reader, prefixed with its mode byte (3: fix
// the header and frame checksums): empty (the header alone), one (one record), mixed (records
// of 0..300 bytes and odd types, first_seq 41), torn (mixed cut inside its last frame), and
// mixed_nofix (mode 0).
//
// The packs hold the build's timestamps (the mem backend sets ctime), so regenerating gives
// different bytes; the checked-in corpus is one such run.
#include <sys/sysmacros.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "packfs/mem.hpp"
#include "packfs/pack.hpp"
#include "volume/journal_writer.hpp"
#include "volume/records.hpp"

namespace {

using namespace packfs;
namespace fs = std::filesystem;

[[noreturn]] void die(const std::string& what) {
    std::fprintf(stderr, "fuzz_make_corpus: %s\n", what.c_str());
    std::exit(1);
}

template <class T>
T must(Result<T> r, const char* what) {
    if (!r) die(std::string(what) + ": " + r.error().message());
    if constexpr (!std::is_void_v<T>) return std::move(*r);
}

// Random-looking bytes (incompressible), as the fixture's pattern_bytes.
std::string pattern(std::size_t size, uint64_t seed) {
    std::string out(size, '\0');
    uint64_t x = 0x9E3779B97F4A7C15ull ^ (seed * 0xBF58476D1CE4E5B9ull);
    for (std::size_t i = 0; i < size; ++i) {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        out[i] = static_cast<char>((x * 0x2545F4914F6CDD1Dull) >> 56);
    }
    return out;
}

void mini_tree(Backend& b) {
    must(b.mkdir("/empty", 0755), "mkdir");
    must(b.mkdir("/docs", 0755), "mkdir");
    must(write_file(b, "/docs/readme.txt", "PackFS fixture tree\nsecond line\n"), "write");
    must(write_file(b, "/docs/empty.txt", ""), "write");
    must(b.mkdir("/docs/nested", 0755), "mkdir");
    must(b.mkdir("/docs/nested/deep", 0700), "mkdir");
    must(write_file(b, "/docs/nested/deep/leaf.txt", "leaf\n"), "write");
    must(b.mkdir("/data", 0755), "mkdir");
    for (std::size_t size : {1, 64, 65, 4095, 4097, 9000})
        must(write_file(b, "/data/" + std::to_string(size) + ".bin", pattern(size, size)), "write");
    const std::string dup = pattern(3000, 77);
    must(write_file(b, "/data/dup_a.bin", dup), "write");
    must(write_file(b, "/data/dup_b.bin", dup), "write");
    std::string text;
    for (int i = 0; text.size() < 12000; ++i) text += "line " + std::to_string(i) + " of text\n";
    must(write_file(b, "/data/text.txt", text), "write");
    must(write_file(b, "/exec.sh", "#!/bin/sh\necho hi\n", 0755), "write");
    must(b.mkdir("/hard", 0755), "mkdir");
    must(write_file(b, "/hard/a", "shared\n"), "write");
    must(b.link("/hard/a", "/hard/b"), "link");
    must(b.mkdir("/links", 0755), "mkdir");
    must(b.symlink("../docs/readme.txt", "/links/rel"), "symlink");
    must(b.symlink("/docs/readme.txt", "/links/abs"), "symlink");
    must(b.symlink("/docs/nested", "/links/dir"), "symlink");
    must(b.symlink("/nowhere", "/links/dangling"), "symlink");
    must(b.symlink("loop_b", "/links/loop_a"), "symlink");
    must(b.symlink("loop_a", "/links/loop_b"), "symlink");
    must(b.mkdir("/wide", 0755), "mkdir");
    for (int i = 0; i < 20; ++i) {  // 16 or more: a version 2 pack gives it hash buckets
        const std::string name = "entry_" + std::to_string(i);
        must(write_file(b, "/wide/" + name, name), "write");
    }
    must(b.mkdir("/names", 0755), "mkdir");
    for (const std::string& name : {std::string(255, 'L'), std::string("sp ace"),
                                    std::string("\xc3\xbcn\xc3\xaf"), std::string("...")})
        must(write_file(b, "/names/" + name, name), "write");
    must(b.mkdir("/special", 0755), "mkdir");
    must(b.mknod("/special/fifo", FileType::fifo, 0644), "mknod");
    must(b.mknod("/special/sock", FileType::socket, 0755), "mknod");
    must(b.mknod("/special/null", FileType::char_device, 0666, makedev(1, 3)), "mknod");
    must(b.mknod("/special/blk", FileType::block_device, 0660, makedev(7, 0)), "mknod");
    must(write_file(b, "/xattr.txt", "has xattrs"), "write");
    must(b.setxattr("/xattr.txt", "user.text", "value"), "setxattr");
    must(b.setxattr("/xattr.txt", "user.empty", ""), "setxattr");
    std::string binary;
    for (int i = 0; i < 256; ++i) binary.push_back(static_cast<char>(i));
    must(b.setxattr("/xattr.txt", "user.bin", binary), "setxattr");
    must(b.utimens("/docs/readme.txt", TimeUpdate::at({1000000000, 1}),
                   TimeUpdate::at({1234567890, 123456789})),
         "utimens");
}

void tiny_tree(Backend& b) {
    must(b.mkdir("/d", 0755), "mkdir");
    must(write_file(b, "/d/f", std::string(100, 'x') + "tail"), "write");
    must(b.symlink("d/f", "/l"), "symlink");
    must(b.setxattr("/d/f", "user.k", "v"), "setxattr");
}

// A file with a block of zeros between two of data (4 KiB blocks): a pack with holes.
void sparse_tree(Backend& b) {
    must(write_file(b, "/s", std::string(4096, 'a') + std::string(8192, '\0') + "tail"), "write");
    must(write_file(b, "/t", "small"), "write");
}

void write_seed(const fs::path& dir, const std::string& name, Backend& tree, Compression c,
                uint8_t mode, bool keep_inode_numbers = false, uint32_t format = 1,
                PackTimes times = PackTimes::mtime, uint32_t chunk_size = 0) {
    PackWriteOptions o;
    o.chunk_size = chunk_size;
    o.format = format;
    o.times = times;
    o.compression = c;
    o.keep_inode_numbers = keep_inode_numbers;
    o.block_size = 4096;
    o.jobs = 1;
    const fs::path tmp = dir / (name + ".pack.tmp");
    must(write_pack(tree, tmp.string(), o), "write_pack");
    std::ifstream in(tmp, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    fs::remove(tmp);
    std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
    out.put(static_cast<char>(mode));
    out << ss.str();
    std::printf("%s: %zu bytes\n", (dir / name).c_str(), ss.str().size() + 1);
}

// A journal with `sizes.size()` records, written by the real writer, as a seed.
void write_journal(const fs::path& dir, const std::string& name, uint64_t first_seq,
                   std::initializer_list<std::size_t> sizes, uint8_t mode, std::size_t cut = 0) {
    using namespace packfs::volume;
    const fs::path tmp = dir / (name + ".journal.tmp");
    fs::remove(tmp);
    JournalHeaderFields header;
    header.generation = 3;
    header.first_seq = first_seq;
    header.volume_id = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    {
        auto w = must(JournalWriter::create(tmp.string(), header, Durability::explicit_sync),
                      "create journal");
        uint16_t type = 1;
        for (std::size_t size : sizes) {
            const std::string payload = pattern(size, size + type);
            must(w->append(type, std::as_bytes(std::span(payload))), "append");
            type = static_cast<uint16_t>(type * 3 + 1);
        }
        must(w->sync(), "sync");
    }
    std::ifstream in(tmp, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    fs::remove(tmp);
    std::string bytes = ss.str();
    if (cut > 0) bytes.resize(bytes.size() - cut);
    std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
    out.put(static_cast<char>(mode));
    out << bytes;
    std::printf("%s: %zu bytes\n", (dir / name).c_str(), bytes.size() + 1);
}

// One operation record per node type (17-27), encoded by the real encoder, as
// fuzz_journal_records reads them (two bytes of type, then the payload), naming the inodes of
// the target's small tree (/d, /d/f, /link) so a mutation gets past lookup into the call.
void write_node_records(const fs::path& dir) {
    using namespace packfs::volume;
    auto tree = make_mem_backend();
    must(tree->mkdir("/d"), "mkdir");
    must(write_file(*tree, "/d/f", "content"), "write_file");
    must(tree->symlink("d/f", "/link"), "symlink");
    const uint64_t d = must(tree->lstat("/d"), "lstat").ino;
    const uint64_t f = must(tree->lstat("/d/f"), "lstat").ino;
    auto record = [&](RecordType type) {
        OpRecord r;
        r.type = type;
        r.time = Time{1'700'000'000, 5};
        r.next_ino = tree->inode_numbering().limit;
        return r;
    };
    auto put = [&](const std::string& name, const OpRecord& r) {
        const std::vector<std::byte> payload = encode_record(r);
        const auto type = static_cast<uint16_t>(r.type);
        std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
        out.put(static_cast<char>(type & 0xff));
        out.put(static_cast<char>(type >> 8));
        out.write(reinterpret_cast<const char*>(payload.data()),
                  static_cast<std::streamsize>(payload.size()));
    };
    OpRecord r = record(RecordType::create_at);
    r.ino = d, r.name = "new", r.mode = 0644, r.flags = 0101;  // O_WRONLY|O_CREAT
    put("create_at", r);
    r = record(RecordType::mkdir_at);
    r.ino = 1, r.name = "sub", r.mode = 0755, r.has_owner = true, r.uid = 1000, r.gid = 100;
    put("mkdir_at", r);
    r = record(RecordType::mknod_at);
    r.ino = d, r.name = "fifo", r.mode = 0600, r.flags = static_cast<uint32_t>(FileType::fifo);
    put("mknod_at", r);
    r = record(RecordType::symlink_at);
    r.ino = 1, r.name = "l2", r.value = "d/../link";
    put("symlink_at", r);
    r = record(RecordType::link_at);
    r.ino = f, r.ino2 = 1, r.name = "hard";
    put("link_at", r);
    r = record(RecordType::unlink_at);
    r.ino = d, r.name = "f";
    put("unlink_at", r);
    r = record(RecordType::rmdir_at);
    r.ino = 1, r.name = "d";
    put("rmdir_at", r);
    r = record(RecordType::rename_at);
    r.ino = d, r.name = "f", r.ino2 = 1, r.name2 = "moved", r.flags = 0;
    put("rename_at", r);
    r = record(RecordType::setattr);
    r.ino = f, r.mode = 0600, r.uid = 7, r.gid = 8, r.flags = 1, r.offset = 3;
    r.atime = TimeUpdate::now(), r.mtime = TimeUpdate::at(Time{1, 2});
    put("setattr", r);
    r = record(RecordType::setxattr_at);
    r.ino = f, r.name = "user.k", r.value = std::string("v\0w", 3), r.flags = 0;
    put("setxattr_at", r);
    r = record(RecordType::removexattr_at);
    r.ino = f, r.name = "user.k";
    put("removexattr_at", r);
    r = record(RecordType::fallocate);
    r.ino = f, r.flags = 3, r.offset = 1, r.length = 2;  // PUNCH_HOLE | KEEP_SIZE
    put("fallocate", r);
    r = record(RecordType::clone_range);
    r.ino = f, r.offset = 0, r.ino2 = f, r.offset2 = 65536, r.length = 5;
    put("clone_range", r);
    std::printf("%s: 13 node records\n", dir.c_str());
}

void write_path(const fs::path& dir, const std::string& name, const std::string& bytes) {
    std::ofstream(dir / name, std::ios::binary | std::ios::trunc) << bytes;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) die("usage: fuzz_make_corpus <dir>");
    const fs::path root = argv[1];
    fs::create_directories(root / "pack");
    fs::create_directories(root / "path");

    auto mini = make_mem_backend();
    mini_tree(*mini);
    auto tiny = make_mem_backend();
    tiny_tree(*tiny);
    auto empty = make_mem_backend();
    write_seed(root / "pack", "mini_raw", *mini, Compression::none, 3);
    write_seed(root / "pack", "mini_zstd", *mini, Compression::zstd, 3);
    write_seed(root / "pack", "mini_lz4", *mini, Compression::lz4, 3);
    write_seed(root / "pack", "mini_raw_nofix", *mini, Compression::none, 0);
    write_seed(root / "pack", "tiny_raw", *tiny, Compression::none, 3);
    write_seed(root / "pack", "tiny_zstd", *tiny, Compression::zstd, 3);
    write_seed(root / "pack", "empty", *empty, Compression::none, 3);
    write_seed(root / "pack", "mini_kept", *mini, Compression::none, 3, true);
    write_seed(root / "pack", "tiny_kept_zstd", *tiny, Compression::zstd, 3, true);
    write_seed(root / "pack", "mini_v2", *mini, Compression::none, 3, false, 2);
    write_seed(root / "pack", "mini_v2_all_zstd", *mini, Compression::zstd, 3, true, 2,
               PackTimes::all);
    write_seed(root / "pack", "tiny_v2", *tiny, Compression::none, 3, false, 2);
    // Compressed metadata (the default for compressed version 2 packs): frames and their index.
    write_seed(root / "pack", "mini_v2_cmeta_zstd", *mini, Compression::zstd, 3, false, 2);
    write_seed(root / "pack", "tiny_v2_cmeta_lz4", *tiny, Compression::lz4, 3, false, 2);
    // Holes: a block of zeros stored in nothing, raw and compressed.
    auto sparse = make_mem_backend();
    sparse_tree(*sparse);
    write_seed(root / "pack", "holes_v2_raw", *sparse, Compression::none, 3, false, 2);
    write_seed(root / "pack", "holes_v2_zstd", *sparse, Compression::zstd, 3, false, 2);
    // Contents made of extents (chunks of 1 KiB): the extents and bases sections.
    write_seed(root / "pack", "extents_v2_raw", *mini, Compression::none, 3, false, 2,
               PackTimes::mtime, 1024);
    write_seed(root / "pack", "extents_v2_zstd", *mini, Compression::zstd, 3, false, 2,
               PackTimes::mtime, 1024);

    const fs::path j = root / "journal";
    fs::create_directories(j);
    write_journal(j, "empty", 1, {}, 3);
    write_journal(j, "one", 1, {12}, 3);
    write_journal(j, "mixed", 41, {0, 1, 7, 8, 9, 100, 300, 3}, 3);
    write_journal(j, "torn", 41, {0, 1, 7, 8, 9, 100, 300, 3}, 3, 5);
    write_journal(j, "mixed_nofix", 41, {0, 1, 7, 8, 9, 100, 300, 3}, 0);

    const fs::path records = root / "records";
    fs::create_directories(records);
    write_node_records(records);

    const fs::path p = root / "path";
    write_path(p, "root", "/");
    write_path(p, "relative", "a/b/../c/./d");
    write_path(p, "slashes", "//x///y/./z/");
    write_path(p, "dotdot", "/../../a/..");
    write_path(p, "trailing_dot", "/a/b/.");
    write_path(p, "nul", std::string("/a\0b", 4));
    write_path(p, "long_name", "/" + std::string(255, 'n') + "/" + std::string(256, 'm'));
    std::string deep;
    while (deep.size() < 4080) deep += "/abcdefgh";
    write_path(p, "long_path", deep);
    return 0;
}
