// libFuzzer target: the pack reader on arbitrary files (DESIGN §8, §14).
//
// Input: one mode byte, then the pack file's bytes.
//   mode bit 0: fix the checksums first (pack_fixup.hpp), so mutations get past the header
//               checksum and the block sums and reach the record checks;
//   mode bit 1: also write the real file size into the header (a truncated or extended input
//               then reaches the region checks instead of failing on file_size).
// The seed corpus (fuzz/corpus/pack, written by fuzz_make_corpus) uses mode 3 on valid packs.
//
// A custom mutator makes two of three mutations structure-aware: it sets one header field, or
// one field of one record of one section (found through the header), to a boundary value
// (0, 1, max, the old value +-1, another field's value, ...); the fix-up then makes the result
// pass its checksums, so each such mutation tests one hostile number. The third is libFuzzer's
// own byte-level mutation.
//
// The file goes into a memfd (no disk I/O) opened through /proc/self/fd, with each PackAccess
// mode. When it opens: a walk of the tree bounded in depth and entries (a hostile pack may
// hold cycles), every query on every entry, reads of every regular file (bounded), then
// verify(); and through the PackReader itself, the inode-number members and lookup(). The only expectation is the reader's contract: errors are values, nothing crashes,
// hangs or trips ASan/UBSan; and an EUCLEAN error says what was wrong.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "pack/reader/reader.hpp"
#include "pack_fixup.hpp"
#include "packfs/pack.hpp"
#include "packfs/path.hpp"

namespace {

using namespace packfs;

constexpr int kMaxDepth = 8;
constexpr std::size_t kMaxEntries = 2000;
constexpr uint64_t kMaxReadPerFile = 256 * 1024;
constexpr uint64_t kMaxReadTotal = 4 << 20;

[[noreturn]] void die(const char* what) {
    std::fprintf(stderr, "fuzz_pack_reader: %s\n", what);
    std::abort();
}

// An error must be a real errno value, and EUCLEAN must carry what it found.
template <class T>
void check_error(const Result<T>& r) {
    if (r) return;
    const Error& e = r.error();
    if (e.code() <= 0) die("error with a non-positive code");
    if (e.code() == EUCLEAN && (!e.corruption() || e.corruption()->what.empty()))
        die("EUCLEAN without a corruption detail");
    (void)e.message();
}

struct Budget {
    std::size_t entries = kMaxEntries;
    uint64_t bytes = kMaxReadTotal;
};

void read_entry(PackBackend& b, const std::string& path, Budget& budget) {
    auto h = b.open(path, O_RDONLY);
    check_error(h);
    if (h) {
        std::vector<std::byte> buf(16384);
        uint64_t at = 0;
        while (at < kMaxReadPerFile && budget.bytes > 0) {
            auto n = (*h)->pread(buf, at);
            check_error(n);
            if (!n || *n == 0) break;
            if (*n > buf.size()) die("pread returned more than asked");
            at += *n;
            budget.bytes -= std::min<uint64_t>(budget.bytes, *n);
        }
        check_error((*h)->fstat());
        // Reads past the end and at odd offsets.
        check_error((*h)->pread(buf, UINT64_MAX - 5));
        if (auto st = (*h)->fstat(); st && st->size > 0)
            check_error((*h)->pread(buf, st->size - 1));
    }
    std::string scratch;
    auto v = b.read_view(path, 0, 65536, scratch);
    check_error(v);
    if (v && v->size() > 65536) die("read_view returned more than asked");
    check_error(b.read_view(path, UINT64_MAX, 10, scratch));
}

void walk(PackBackend& b, const std::string& dir, int depth, Budget& budget) {
    if (depth > kMaxDepth) return;
    auto list = b.readdir(dir);
    check_error(list);
    if (!list) return;
    for (const DirEntry& e : *list) {
        if (budget.entries == 0) return;
        --budget.entries;
        if (e.name.empty() || e.name.size() > kMaxNameLength) die("readdir gave a bad name");
        const std::string path = path_join(dir, e.name);
        auto l = b.lstat(path);
        check_error(l);
        check_error(b.stat(path));
        check_error(b.readlink(path));
        auto names = b.listxattr(path);
        check_error(names);
        if (names) {
            for (const std::string& n : *names) check_error(b.getxattr(path, n));
        }
        check_error(b.getxattr(path, "user.none"));
        if (l && l->type == FileType::regular) read_entry(b, path, budget);
        if (l && l->type == FileType::directory) walk(b, path, depth + 1, budget);
    }
}

void exercise(PackBackend& b) {
    (void)b.info();
    check_error(b.statfs("/"));
    check_error(b.lstat("/"));
    check_error(b.stat("/a/../b/./c"));
    check_error(b.open("/", O_RDONLY));
    Budget budget;
    walk(b, "/", 0, budget);
    const VerifyReport report = b.verify();
    for (const VerifyProblem& p : report.problems) {
        if (p.what.empty()) die("verify problem without a description");
    }
}

// The reader's inode-number and lookup members, which the overlay uses and PackBackend does
// not: the largest number, and each root entry found by lookup() and again by its number.
void exercise_numbers(const packfs::pack::PackReader& r) {
    using namespace packfs::pack;
    const Ctx ctx{"fuzz", "/"};
    auto max = r.max_inode_number(ctx);
    check_error(max);
    for (uint64_t n : {uint64_t{0}, uint64_t{1}, max ? *max : 2, max ? *max + 1 : 3, ~uint64_t{0}})
        check_error(r.by_inode_number(n, ctx));
    auto root = r.inode(kRootIno, ctx);
    check_error(root);
    if (!root || root->type != FileType::directory) return;
    auto entries = r.list(*root, ctx);
    check_error(entries);
    if (!entries) return;
    std::size_t budget = 64;
    for (const DirEntry& e : *entries) {
        if (budget-- == 0) break;
        check_error(r.lookup(*root, e.name, ctx));  // may miss in unsorted dirents, never crash
        auto by_number = r.by_inode_number(e.ino, ctx);
        check_error(by_number);
        if (by_number && by_number->has_value() && r.inode_number(**by_number) != e.ino)
            die("by_inode_number gave an inode with another number");
    }
    check_error(r.lookup(*root, "..", ctx));
}

int memfd() {
    static const int fd = [] {
        const int f = ::memfd_create("fuzz-pack", MFD_CLOEXEC);
        if (f < 0) die("memfd_create");
        return f;
    }();
    return fd;
}

// --- the structure-aware mutator ---------------------------------------------------------

struct Field {
    uint16_t offset;
    uint8_t width;  // bytes: 1, 2, 4 or 8
};

constexpr Field kHeaderFields[] = {
    {8, 4},   {12, 4},  {16, 8},  {24, 8},  {32, 8},  {40, 8},  {48, 8},  {56, 8},
    {64, 8},  {72, 8},  {80, 8},  {88, 8},  {96, 8},  {104, 8}, {112, 8}, {120, 4},
    {124, 4}, {128, 4}, {132, 4}, {408, 8}, {416, 8},  // compressed metadata: frames length, frame
                                                       // index checksum
};
static_assert(offsetof(packfs::pack::Header, version) == 8);
static_assert(offsetof(packfs::pack::Header, meta_index_checksum) == 416);
static_assert(offsetof(packfs::pack::Header, codec) == 120);
static_assert(offsetof(packfs::pack::Header, meta_block_size) == 132);
constexpr Field kInodeFields[] = {
    {0, 4},  {4, 4},  {8, 4},  {12, 4}, {16, 8}, {24, 8}, {32, 4}, {36, 4},
    {40, 8}, {48, 8}, {56, 8}, {64, 4}, {68, 4}, {72, 4}, {76, 4},
};
constexpr Field kInodeV2Fields[] = {
    {0, 4},  {4, 4},  {8, 4},  {12, 4}, {16, 8}, {24, 8},
    {32, 4}, {36, 4}, {40, 8}, {48, 4}, {52, 4}, {56, 8},
};
constexpr Field kTimesFields[] = {{0, 8}, {8, 8}, {16, 4}, {20, 4}};
constexpr Field kDirentFields[] = {{0, 4}, {4, 4}, {8, 2}, {10, 1}, {11, 1}, {12, 4}};
constexpr Field kContentFields[] = {{0, 8}, {8, 8}, {16, 8}};
constexpr Field kXattrFields[] = {{0, 4}, {4, 4}, {8, 4}, {12, 2}, {14, 2}};
constexpr Field kBlockFields[] = {{0, 8}};
constexpr Field kOrderFields[] = {{0, 4}};
constexpr Field kByteFields[] = {{0, 1}};

uint64_t get_field(const uint8_t* at, unsigned width) {
    uint64_t v = 0;
    std::memcpy(&v, at, width);
    return v;
}

void set_field(uint8_t* at, unsigned width, uint64_t v) {
    std::memcpy(at, &v, width);
}

uint64_t boundary_value(std::mt19937_64& rng, uint64_t old, unsigned width, uint64_t file_size,
                        uint64_t other) {
    const uint64_t max = width == 8 ? UINT64_MAX : (uint64_t{1} << (8 * width)) - 1;
    const uint64_t choices[] = {
        0,           1,       2,       7,       8,       16,         255,           256,
        4095,        4096,    16384,   65535,   65536,   1000000000, max,           max - 1,
        max / 2 + 1, old + 1, old - 1, old * 2, old / 2, file_size,  file_size + 1, other,
        old + 4096};
    return choices[rng() % std::size(choices)] & max;
}

}  // namespace

extern "C" std::size_t LLVMFuzzerMutate(uint8_t* data, std::size_t size, std::size_t max_size);

extern "C" std::size_t LLVMFuzzerCustomMutator(uint8_t* data, std::size_t size,
                                               std::size_t max_size, unsigned int seed) {
    using namespace packfs::pack;
    std::mt19937_64 rng(seed);
    if (size < 1 + sizeof(Header) || rng() % 3 == 0) return LLVMFuzzerMutate(data, size, max_size);
    uint8_t* file = data + 1;
    const uint64_t file_size = size - 1;
    Header h;
    std::memcpy(&h, file, sizeof h);
    // Another field's value, for "this equals that" boundaries.
    const Field& any = kHeaderFields[rng() % std::size(kHeaderFields)];
    const uint64_t other = get_field(file + any.offset, any.width);

    if (rng() % 4 == 0) {  // a header field (or a section entry's offset or length)
        Field f = kHeaderFields[rng() % std::size(kHeaderFields)];
        if (rng() % 2 == 0) {
            f = Field{static_cast<uint16_t>(section_entry_offset(rng() % kSectionCount) +
                                            (rng() % 2) * 8),
                      8};
        }
        set_field(
            file + f.offset, f.width,
            boundary_value(rng, get_field(file + f.offset, f.width), f.width, file_size, other));
        return size;
    }
    // A record field: the section and record through the header's own numbers.
    const std::size_t s = rng() % kSectionCount;
    const SectionEntry& e = section(h, s);
    const bool v2 = h.version >= 2;
    const uint64_t record = section_record_size(h.version, s);
    if (e.offset > file_size || e.length > file_size - e.offset || e.length < record)
        return LLVMFuzzerMutate(data, size, max_size);
    const uint64_t index = rng() % (e.length / record);
    uint8_t* at = file + e.offset + index * record;
    Field f{};
    switch (static_cast<Section>(s)) {
        case Section::inodes:
            f = v2 ? kInodeV2Fields[rng() % std::size(kInodeV2Fields)]
                   : kInodeFields[rng() % std::size(kInodeFields)];
            break;
        case Section::dirents:
            f = kDirentFields[rng() % std::size(kDirentFields)];
            break;
        case Section::contents:  // v2: digests, bytes
            f = v2 ? kBlockFields[0] : kContentFields[rng() % std::size(kContentFields)];
            break;
        case Section::buckets:
            f = kOrderFields[0];  // one u32
            break;
        case Section::times:
            f = kTimesFields[rng() % std::size(kTimesFields)];
            break;
        case Section::xattrs:
            f = kXattrFields[rng() % std::size(kXattrFields)];
            break;
        case Section::blocks:
        case Section::inode_numbers:
            f = kBlockFields[0];  // one u64
            break;
        case Section::inode_order:
            f = kOrderFields[0];
            break;
        default:
            f = kByteFields[0];
            break;
    }
    set_field(at + f.offset, f.width,
              boundary_value(rng, get_field(at + f.offset, f.width), f.width, file_size, other));
    return size;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const uint8_t mode = data[0];
    std::string file(reinterpret_cast<const char*>(data + 1), size - 1);
    if (mode & 1) packfs::fuzz::fix_checksums(file, (mode & 2) != 0);

    const int fd = memfd();
    if (::ftruncate(fd, 0) != 0) die("ftruncate");
    if (!file.empty() &&
        ::pwrite(fd, file.data(), file.size(), 0) != static_cast<ssize_t>(file.size()))
        die("pwrite");
    const std::string path = "/proc/self/fd/" + std::to_string(fd);

    for (PackAccess access : {PackAccess::mmap, PackAccess::pread}) {
        PackOpenOptions options;
        options.access = access;
        options.block_cache_bytes = 1 << 20;
        auto pack = open_pack(path, options);
        check_error(pack);
        if (pack) exercise(**pack);
        auto reader = packfs::pack::PackReader::open(path, options);
        check_error(reader);
        if (reader) exercise_numbers(**reader);
    }
    return 0;
}
