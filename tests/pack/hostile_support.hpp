// What the hostile-pack tests share (hostile_test.cpp: every version; hostile_v2_test.cpp:
// version 2's own records): PackParts (a pack taken apart, edited, and put back with every
// checksum right), the packs under test, a bounded walk of a tree, and check_hostile with
// its probes.
#pragma once

#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "conformance/conformance_suite.hpp"
#include "pack/format/codec.hpp"
#include "pack/format/digest.hpp"
#include "pack/format/format.hpp"
#include "pack/reader/reader.hpp"
#include "packfs/mem.hpp"
#include "packfs/pack.hpp"
#include "packfs/path.hpp"
#include "support/files.hpp"

namespace packfs::pack::hostile {

namespace fs = std::filesystem;
using test_support::slurp;
using test_support::TempDir;

inline bool sanitizer_run() {
    const char* v = std::getenv("PACKFS_SANITIZER_RUN");
    return v != nullptr && *v != '\0' && std::string_view(v) != "0";
}

inline void spit(const fs::path& p, std::string_view bytes) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

constexpr std::size_t idx(Section s) {
    return static_cast<std::size_t>(s);
}
constexpr uint64_t align8(uint64_t v) {
    return (v + 7) / 8 * 8;
}

inline std::string escaped(std::string_view s) {
    std::string out;
    for (char c : s)
        out += c >= 0x20 && c < 0x7f
                   ? std::string(1, c)
                   : fmt::format("\\x{:02x}", static_cast<unsigned>(static_cast<unsigned char>(c)));
    return out;
}

inline uint64_t xxh3_of(std::string_view s) {
    return xxh3_64(std::as_bytes(std::span(s.data(), s.size())));
}

// seal_header (digest.hpp) over a region held as a string.
inline void seal_header(Header& h, std::string_view region) {
    pack::seal_header(h, std::as_bytes(std::span(region.data(), region.size())));
}

// --- PackParts: a pack taken apart, edited, and put back with every checksum right ---------
//
// parse() splits a well-formed pack into its header, data region and six sections; build()
// lays them out as the writer does (data at 4096, sections 8-aligned, region padded to 8) and
// recomputes the section checksums, the metadata block sums, the sums checksum, the metadata
// digests (with their feature), the file size, the image digest and the header checksum. An edited
// record, a resized data region or a header field changed by `tamper` therefore passes every
// checksum and reaches the parser.
struct PackParts {
    Header h{};
    std::string data;
    std::array<std::string, kSectionCount> sec;

    static PackParts parse(const std::string& file) {
        PackParts p;
        std::memcpy(&p.h, file.data(), sizeof(Header));
        p.data = file.substr(p.h.data_offset, p.h.data_length);
        const std::string region =
            p.framed() ? inflate_region(file, p.h) : file.substr(p.h.meta_offset, p.h.meta_length);
        for (std::size_t i = 0; i < kSectionCount; ++i) {
            const SectionEntry& e = section(p.h, i);
            p.sec[i] =
                e.length == 0 ? std::string() : region.substr(e.offset - p.h.meta_offset, e.length);
        }
        return p;
    }

    // Whether the metadata is stored as compressed frames (build() keeps it so; setting or
    // clearing the feature bit in `h` before build() changes it).
    bool framed() const { return (h.incompat_features & kIncompatCompressedMeta) != 0; }

    // The metadata region of a pack whose metadata is stored as frames, inflated (a well-formed
    // pack: this is for taking clean packs apart).
    static std::string inflate_region(const std::string& file, const Header& h) {
        std::string region(h.meta_length, '\0');
        const uint64_t index = frame_index_offset(h);
        for (uint64_t b = 0; b * kMetaBlockSize < h.meta_length; ++b) {
            uint64_t begin = 0, end = 0;
            std::memcpy(&begin, file.data() + index + 8 * b, 8);
            std::memcpy(&end, file.data() + index + 8 * (b + 1), 8);
            const uint64_t n =
                std::min<uint64_t>(kMetaBlockSize, h.meta_length - b * kMetaBlockSize);
            auto out = std::as_writable_bytes(std::span(region.data() + b * kMetaBlockSize, n));
            const auto stored =
                std::as_bytes(std::span(file.data() + h.meta_offset + begin, end - begin));
            if (stored.size() == n)
                std::memcpy(out.data(), stored.data(), n);
            else
                EXPECT_TRUE(decompress_block(static_cast<Codec>(h.codec), stored, out)) << b;
        }
        return region;
    }

    template <class T>
    uint64_t count(Section s) const {
        return sec[idx(s)].size() / sizeof(T);
    }
    template <class T>
    T get(Section s, uint64_t i) const {
        EXPECT_LE((i + 1) * sizeof(T), sec[idx(s)].size());
        T v;
        std::memcpy(&v, sec[idx(s)].data() + i * sizeof(T), sizeof(T));
        return v;
    }
    template <class T>
    void set(Section s, uint64_t i, const T& v) {
        ASSERT_LE((i + 1) * sizeof(T), sec[idx(s)].size());
        std::memcpy(sec[idx(s)].data() + i * sizeof(T), &v, sizeof(T));
    }
    template <class T, class F>
    void edit(Section s, uint64_t i, F&& f) {
        T v = get<T>(s, i);
        f(v);
        set(s, i, v);
    }
    Inode inode(uint64_t ino) const { return get<Inode>(Section::inodes, ino - 1); }
    template <class F>
    void edit_inode(uint64_t ino, F&& f) {
        edit<Inode>(Section::inodes, ino - 1, f);
    }
    std::string_view bytes(uint64_t offset, uint64_t length) const {
        return std::string_view(sec[idx(Section::bytes)]).substr(offset, length);
    }

    InodeV2 inode_v2(uint64_t ino) const { return get<InodeV2>(Section::inodes, ino - 1); }
    template <class F>
    void edit_inode_v2(uint64_t ino, F&& f) {
        edit<InodeV2>(Section::inodes, ino - 1, f);
    }

    // The index of the dirent `name` in directory inode `dir` (either version).
    uint64_t dirent_index(uint64_t dir, std::string_view name) const {
        uint64_t ref = 0, size = 0;
        if (h.version >= 2) {
            ref = inode_v2(dir).ref;
            size = inode_v2(dir).size;
        } else {
            ref = inode(dir).ref;
            size = inode(dir).size;
        }
        for (uint64_t i = ref; i < ref + size; ++i) {
            const Dirent e = get<Dirent>(Section::dirents, i);
            if (bytes(e.name_offset, e.name_length) == name) return i;
        }
        ADD_FAILURE() << "no entry " << name << " in inode " << dir;
        return 0;
    }

    std::string build(const std::function<void(Header&)>& tamper = {}) const {
        Header out = h;
        out.data_offset = kDataOffset;
        out.data_length = data.size();
        const bool v2 = h.version >= 2;
        const uint64_t align = v2 ? 64 : 8;  // v2: the inodes start a cache line
        const uint64_t meta_offset = (kDataOffset + data.size() + align - 1) / align * align;
        out.meta_offset = meta_offset;
        std::string region;
        // The optional sections are laid out when the parts' header has their feature (or
        // they hold something, to test a pack that has them without the bit); else their
        // entries stay zero, as the writer leaves them.
        const bool numbered = (h.incompat_features & kIncompatInodeNumbers) != 0;
        auto present = [&](std::size_t i) {
            switch (static_cast<Section>(i)) {
                case Section::inode_numbers:
                case Section::inode_order:
                    return numbered || !sec[i].empty();
                case Section::buckets:
                    return v2 || !sec[i].empty();
                case Section::times:
                    return (v2 && (h.compat_features & kCompatAllTimes) != 0) || !sec[i].empty();
                case Section::block_digests:
                    return (v2 && (h.compat_features & kCompatBlockDigests) != 0) ||
                           !sec[i].empty();
                case Section::extents:
                case Section::bases:
                    return (h.incompat_features & kIncompatExtents) != 0 || !sec[i].empty();
                default:
                    return true;
            }
        };
        for (std::size_t i = 0; i < kSectionCount; ++i) {
            SectionEntry& entry = section(out, i);
            if (!present(i)) {
                entry = SectionEntry{0, 0, 0};
                continue;
            }
            region.resize(align8(region.size()), '\0');
            entry.offset = meta_offset + region.size();
            entry.length = sec[i].size();
            entry.checksum = xxh3_of(sec[i]);
            region += sec[i];
        }
        region.resize(align8(region.size()), '\0');
        out.meta_length = region.size();
        std::string sums;
        for (uint64_t at = 0; at < region.size(); at += kMetaBlockSize) {
            const uint64_t sum = xxh3_of(std::string_view(region).substr(at, kMetaBlockSize));
            sums.append(reinterpret_cast<const char*>(&sum), 8);
        }
        out.sums_offset = meta_offset + region.size();
        out.sums_length = sums.size();
        out.sums_checksum = xxh3_of(sums);
        // Stored as frames: each block compressed on its own (raw when that is no smaller),
        // then the index, then the sums.
        std::string stored = region;
        out.meta_frames_length = 0;
        out.meta_index_checksum = 0;
        if (framed()) {
            stored.clear();
            std::string index(8, '\0');  // index[0] = 0
            std::vector<std::byte> frame;
            for (uint64_t at = 0; at < region.size(); at += kMetaBlockSize) {
                const std::string_view block = std::string_view(region).substr(at, kMetaBlockSize);
                if (compress_block(static_cast<Codec>(h.codec), 0,
                                   std::as_bytes(std::span(block.data(), block.size())), frame))
                    stored.append(reinterpret_cast<const char*>(frame.data()), frame.size());
                else
                    stored += block;
                const uint64_t end = stored.size();
                index.append(reinterpret_cast<const char*>(&end), 8);
            }
            out.meta_frames_length = stored.size();
            out.meta_index_checksum = xxh3_of(index);
            stored.resize(align8(stored.size()), '\0');
            stored += index;
            out.sums_offset = meta_offset + stored.size();
        }
        // The metadata digests, when the parts' header has the feature (the digest covers
        // them instead of the region).
        std::string digests;
        if ((h.incompat_features & kIncompatMetaDigests) != 0) {
            for (uint64_t at = 0; at < region.size(); at += kMetaBlockSize) {
                const std::string_view block = std::string_view(region).substr(at, kMetaBlockSize);
                const Sha256Digest d = sha256(std::as_bytes(std::span(block.data(), block.size())));
                digests.append(reinterpret_cast<const char*>(d.data()), d.size());
            }
        }
        out.file_size = out.sums_offset + out.sums_length + digests.size();
        if (tamper) tamper(out);
        // The digest and the header checksum after the tampering, so both still match.
        seal_header(out, digests.empty() ? std::string_view(region) : std::string_view(digests));

        std::string file(kDataOffset, '\0');
        std::memcpy(file.data(), &out, sizeof out);
        file += data;
        file.resize(meta_offset, '\0');
        file += stored;
        file += sums;
        file += digests;
        return file;
    }
};

// --- the packs under test ----------------------------------------------------------------

// The conformance fixture tree, plus compressible files so that compressed packs hold real
// compressed blocks (the fixture's own contents are random bytes, stored raw).
inline std::shared_ptr<Backend> make_tree() {
    auto mem = make_mem_backend();
    conformance::Capabilities caps;
    EXPECT_TRUE(conformance::build_fixture_tree(*mem, caps));
    EXPECT_TRUE(mem->mkdir("/text"));
    std::string text;
    for (int i = 0; text.size() < 150000; ++i)
        text += fmt::format("line {} of a compressible file\n", i);
    EXPECT_TRUE(write_file(*mem, "/text/lines.txt", text));
    EXPECT_TRUE(write_file(*mem, "/text/zeros.bin", std::string(70000, '\0')));
    EXPECT_TRUE(write_file(*mem, "/text/small.txt", text.substr(0, 5000)));
    // A directory large enough for v2's hash buckets (40 entries: 8 buckets).
    EXPECT_TRUE(mem->mkdir("/many"));
    for (int i = 0; i < 40; ++i)
        EXPECT_TRUE(write_file(*mem, fmt::format("/many/entry-{:02}", i), fmt::format("{}\n", i)));
    return mem;
}

struct Packs {
    std::string raw, zstd, lz4;
    std::string kept;    // raw, keeping the mem tree's inode numbers
    std::string v2;      // format 2, raw, mtime only
    std::string v2_all;  // format 2, zstd, all times, keeping inode numbers (metadata compressed)
    std::string v2_lz4;  // format 2, lz4, metadata compressed
};

inline const Packs& packs() {
    static const Packs p = [] {
        TempDir dir;
        auto tree = make_tree();
        Packs out;
        auto build = [&](Compression c, bool keep = false, uint32_t format = 1,
                         PackTimes times = PackTimes::mtime) {
            PackWriteOptions o;
            o.format = format;
            o.times = times;
            o.compression = c;
            o.keep_inode_numbers = keep;
            o.block_size = 16384;
            const fs::path path = dir.path / "p.pack";
            auto stats = write_pack(*tree, path.string(), o);
            EXPECT_TRUE(stats) << stats.error().message();
            return slurp(path);
        };
        out.raw = build(Compression::none);
        out.zstd = build(Compression::zstd);
        out.lz4 = build(Compression::lz4);
        out.kept = build(Compression::none, true);
        out.v2 = build(Compression::none, false, 2);
        out.v2_all = build(Compression::zstd, true, 2, PackTimes::all);
        out.v2_lz4 = build(Compression::lz4, false, 2);
        return out;
    }();
    return p;
}

inline const char* access_name(PackAccess a) {
    return a == PackAccess::mmap ? "mmap" : "pread";
}
inline constexpr PackAccess kAccesses[] = {PackAccess::mmap, PackAccess::pread};

inline Result<std::shared_ptr<PackBackend>> open_file(const fs::path& p, PackAccess access) {
    PackOpenOptions o;
    o.access = access;
    o.block_cache_bytes = 1 << 20;
    return open_pack(p.string(), o);
}

inline std::string describe(const Error& e) {
    std::string s = std::string(errno_name(e.code())) + ": " + e.message();
    return s;
}

// A failed open must say why: EUCLEAN with the corruption detail, or ENOTSUP.
inline ::testing::AssertionResult clear_failure(const Result<std::shared_ptr<PackBackend>>& r,
                                                std::initializer_list<int> codes = {EUCLEAN}) {
    if (r) return ::testing::AssertionFailure() << "opened";
    const Error& e = r.error();
    if (std::find(codes.begin(), codes.end(), e.code()) == codes.end())
        return ::testing::AssertionFailure() << "unexpected " << describe(e);
    if (e.code() == EUCLEAN && (!e.corruption() || e.corruption()->what.empty()))
        return ::testing::AssertionFailure() << "EUCLEAN without saying what: " << e.message();
    if (e.message().empty()) return ::testing::AssertionFailure() << "empty message";
    return ::testing::AssertionSuccess();
}

// --- walking a tree ------------------------------------------------------------------------

inline std::string err(const Error& e) {
    return "E:" + std::string(errno_name(e.code()));
}

inline std::string show(const Stat& s) {
    return fmt::format(
        "ino={} type={} mode={:o} uid={} gid={} nlink={} size={} rdev={} blocks={} "
        "a={}.{} m={}.{} c={}.{}",
        s.ino, file_type_name(s.type), s.mode, s.uid, s.gid, s.nlink, s.size, s.rdev, s.blocks,
        s.atime.sec, s.atime.nsec, s.mtime.sec, s.mtime.nsec, s.ctime.sec, s.ctime.nsec);
}

// Reads a whole regular file (up to `limit` bytes) through a handle and through read_view;
// each gives "<size> bytes <xxh3-128>" or "E:<errno>".
inline std::pair<std::string, std::string> read_both(PackBackend& b, const std::string& path,
                                                     uint64_t limit) {
    thread_local std::vector<std::byte> buf(65536);
    std::string via_handle, via_view;
    auto h = b.open(path, O_RDONLY);
    if (!h) {
        via_handle = err(h.error());
    } else {
        Xxh3_128 hash;
        uint64_t size = 0;
        for (;;) {
            auto n = (*h)->pread(buf, size);
            if (!n) {
                via_handle = err(n.error());
                break;
            }
            if (*n == 0 || size >= limit) break;
            hash.update(std::span(buf).first(*n));
            size += *n;
        }
        if (via_handle.empty()) {
            const auto d = hash.finish();
            via_handle = fmt::format("{} bytes {:016x}{:016x}", size, d[0], d[1]);
        }
    }
    std::string scratch;
    auto v = b.read_view(path, 0, static_cast<std::size_t>(limit), scratch);
    if (!v) {
        via_view = err(v.error());
    } else {
        const auto d = xxh3_128(*v);
        via_view = fmt::format("{} bytes {:016x}{:016x}", v->size(), d[0], d[1]);
    }
    return {via_handle, via_view};
}

// What to ask about one path: every query, getxattr of the names the clean pack lists, and
// the content when the clean pack says it is a regular file.
struct PathSpec {
    std::string path;
    std::vector<std::string> xattrs;
    bool regular = false;
};

// The answers to every query on one path ("E:<errno>" for an error), appended to `out` in a
// fixed order; `labels` (may be null) gets their names, `content` whether each one is a read.
inline void observe(PackBackend& b, const PathSpec& spec, std::vector<std::string>& out,
                    std::vector<std::string>* labels = nullptr,
                    std::vector<bool>* content = nullptr) {
    const std::string& path = spec.path;
    auto add = [&](std::string_view op, std::string value, bool is_content = false) {
        out.push_back(std::move(value));
        if (labels) labels->push_back(path + " " + std::string(op));
        if (content) content->push_back(is_content);
    };
    auto l = b.lstat(path);
    add("lstat", l ? show(*l) : err(l.error()));
    auto s = b.stat(path);
    add("stat", s ? show(*s) : err(s.error()));
    auto link = b.readlink(path);
    add("readlink", link ? *link : err(link.error()));
    auto list = b.readdir(path);
    std::string joined;
    if (!list) {
        joined = err(list.error());
    } else {
        for (const DirEntry& e : *list)
            joined += fmt::format("{}:{}:{} ", e.name, e.ino, file_type_name(e.type));
    }
    add("readdir", std::move(joined));
    auto names = b.listxattr(path);
    joined.clear();
    if (!names) {
        joined = err(names.error());
    } else {
        for (const std::string& n : *names) joined += n + " ";
    }
    add("listxattr", std::move(joined));
    for (const std::string& n : spec.xattrs) {
        auto v = b.getxattr(path, n);
        add("getxattr " + n, v ? *v : err(v.error()));
    }
    if (spec.regular) {
        auto [handle, view] = read_both(b, path, 1 << 22);
        add("content", std::move(handle), true);
        add("read_view", std::move(view), true);
    }
}

// Every path of a (sane) pack, by readdir from the root, not following symlinks.
inline std::vector<std::string> all_paths(PackBackend& b) {
    std::vector<std::string> paths{"/"};
    for (std::size_t i = 0; i < paths.size(); ++i) {
        auto list = b.readdir(paths[i]);
        if (!list) continue;
        for (const DirEntry& e : *list) paths.push_back(path_join(paths[i], e.name));
    }
    return paths;
}

// A bounded walk of whatever the pack claims (it may hold cycles): no expectation but that
// it ends and nothing crashes. Returns the number of entries visited.
inline std::size_t hostile_walk(PackBackend& b, const std::string& dir, int depth,
                                std::size_t& budget) {
    if (depth > 12 || budget == 0) return 0;
    auto list = b.readdir(dir);
    if (!list) return 0;
    std::size_t visited = 0;
    for (const DirEntry& e : *list) {
        if (budget == 0) break;
        --budget;
        ++visited;
        const std::string path = path_join(dir, e.name);
        auto l = b.lstat(path);
        (void)b.stat(path);
        (void)b.readlink(path);
        if (auto names = b.listxattr(path)) {
            for (const std::string& n : *names) (void)b.getxattr(path, n);
        }
        if (l && l->type == FileType::regular) (void)read_both(b, path, 1 << 20);
        if (l && l->type == FileType::directory)
            visited += hostile_walk(b, path, depth + 1, budget);
    }
    return visited;
}

inline std::size_t hostile_walk(PackBackend& b) {
    std::size_t budget = 20000;
    (void)b.lstat("/");
    (void)b.statfs("/");
    return hostile_walk(b, "/", 0, budget);
}

// --- (c) hand-crafted hostile packs --------------------------------------------------------

// One query that must fail with `code` once the pack is open.
struct Probe {
    enum class Op { lstat, stat, readdir, readlink, read, listxattr, getxattr };
    Probe(Op o, std::string p, int c = EUCLEAN, std::string a = {})
        : op(o), path(std::move(p)), code(c), arg(std::move(a)) {}
    Op op;
    std::string path;
    int code;
    std::string arg;  // getxattr: the name
};

inline Result<void> run_probe(PackBackend& b, const Probe& p) {
    auto as_void = [](auto&& r) -> Result<void> {
        if (!r) return std::unexpected(r.error());
        return {};
    };
    switch (p.op) {
        case Probe::Op::lstat:
            return as_void(b.lstat(p.path));
        case Probe::Op::stat:
            return as_void(b.stat(p.path));
        case Probe::Op::readdir:
            return as_void(b.readdir(p.path));
        case Probe::Op::readlink:
            return as_void(b.readlink(p.path));
        case Probe::Op::listxattr:
            return as_void(b.listxattr(p.path));
        case Probe::Op::getxattr:
            return as_void(b.getxattr(p.path, p.arg));
        case Probe::Op::read: {
            auto h = b.open(p.path, O_RDONLY);
            if (!h) return std::unexpected(h.error());
            std::vector<std::byte> buf(1 << 16);
            for (uint64_t at = 0; at < (uint64_t{64} << 20);) {
                auto n = (*h)->pread(buf, at);
                if (!n) return std::unexpected(n.error());
                if (*n == 0) return {};
                at += *n;
            }
            return {};
        }
    }
    return {};
}

inline const char* op_name(Probe::Op op) {
    constexpr const char* kNames[] = {"lstat", "stat",      "readdir", "readlink",
                                      "read",  "listxattr", "getxattr"};
    return kNames[static_cast<int>(op)];
}

struct Expect {
    int open_code = 0;           // 0: it opens
    std::vector<Probe> probes;   // each fails with its code
    bool verify_problem = true;  // verify reports something
    bool open_may_fail = false;  // or open fails with EUCLEAN (either is right)
};

inline Expect fails_open(int code) {
    return Expect{code, {}, false, false};
}
inline Expect opens(std::vector<Probe> probes, bool verify_problem = true) {
    return Expect{0, std::move(probes), verify_problem, false};
}
// Fails at open, or opens and fails at first use: both are right for this damage.
inline Expect fails_at_open_or_use(std::vector<Probe> probes) {
    return Expect{0, std::move(probes), true, true};
}

// Opens `file` both ways and checks `expect`; when it opens, also walks it (bounded) and
// verifies it, which must end without a crash.
inline void check_hostile(const std::string& file, const Expect& expect, const std::string& label) {
    SCOPED_TRACE(label);
    TempDir dir;
    const fs::path path = dir.path / "hostile.pack";
    spit(path, file);
    for (PackAccess a : kAccesses) {
        SCOPED_TRACE(access_name(a));
        auto r = open_file(path, a);
        if (expect.open_code != 0 || (expect.open_may_fail && !r)) {
            EXPECT_TRUE(clear_failure(r, {expect.open_code != 0 ? expect.open_code : EUCLEAN}));
            continue;
        }
        ASSERT_TRUE(r) << describe(r.error());
        PackBackend& b = **r;
        for (const Probe& p : expect.probes) {
            auto got = run_probe(b, p);
            EXPECT_TRUE(!got && got.error().code() == p.code)
                << op_name(p.op) << " " << p.path << ": expected " << errno_name(p.code) << ", got "
                << (got ? std::string("success") : describe(got.error()));
            if (!got && got.error().code() == EUCLEAN) {
                EXPECT_TRUE(got.error().corruption().has_value()) << got.error().message();
            }
        }
        (void)hostile_walk(b);
        const VerifyReport report = b.verify();
        if (expect.verify_problem) {
            EXPECT_FALSE(report.ok()) << "verify found nothing wrong";
        } else {
            EXPECT_TRUE(report.ok())
                << report.problems.front().where << ": " << report.problems.front().what;
        }
    }
}

using Op = Probe::Op;

class Hostile : public ::testing::Test {
protected:
    void SetUp() override {
        raw = PackParts::parse(packs().raw);
        zstd = PackParts::parse(packs().zstd);
        lz4 = PackParts::parse(packs().lz4);
        kept = PackParts::parse(packs().kept);
        spit(dir.path / "clean.pack", packs().raw);
        auto b = open_file(dir.path / "clean.pack", PackAccess::mmap);
        ASSERT_TRUE(b);
        clean = *b;
    }
    uint64_t ino(std::string_view path) {
        auto st = clean->lstat(path);
        EXPECT_TRUE(st) << path;
        return st ? st->ino : 0;
    }
    // The dirent naming `path` (in the raw pack; the same in every pack of the same tree).
    uint64_t dirent_of(std::string_view path) {
        return raw.dirent_index(ino(path_parent(path)), path_basename(path));
    }
    std::string header_case(const PackParts& p, const std::function<void(Header&)>& tamper) {
        return p.build(tamper);
    }

    TempDir dir;
    PackParts raw, zstd, lz4, kept;
    std::shared_ptr<PackBackend> clean;
};

}  // namespace packfs::pack::hostile
