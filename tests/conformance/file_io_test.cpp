// File I/O through handles (DESIGN §4, §6): sizes around chunk boundaries (mem: 64 KiB),
// holes, reads past the end, overwrites, truncation, open flags.
#include <fcntl.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <thread>

#include "conformance/conformance_suite.hpp"

namespace packfs::conformance {

namespace {

constexpr std::size_t kChunk = 64 * 1024;
constexpr std::size_t kSizes[] = {0,     1,     4095,  4096,           4097,
                                  65535, 65536, 65537, 3 * kChunk + 1, (1u << 20) + 3};

Result<FileHandle> create(Backend& fs, std::string_view path, uint32_t mode = 0644) {
    return fs.open(path, O_RDWR | O_CREAT | O_TRUNC, mode);
}

}  // namespace

TEST_P(FileIo, WholeFileRoundTripsAtChunkBoundarySizes) {
    for (std::size_t size : kSizes) {
        SCOPED_TRACE(fmt::format("size {}", size));
        std::string path = fmt::format("/f{}", size);
        std::string data = pattern_bytes(size, static_cast<uint32_t>(size));
        {
            auto f = create(fs(), path);
            PACKFS_ASSERT_OK(f);
            PACKFS_EXPECT_OK(pwrite_string(**f, data, 0));
            auto st = (*f)->fstat();
            PACKFS_EXPECT_OK(st);
            if (st) {
                EXPECT_EQ(st->size, size);
            }
        }
        auto st = fs().stat(path);
        PACKFS_EXPECT_OK(st);
        if (st) {
            EXPECT_EQ(st->size, size);
        }
        auto f = fs().open(path, O_RDONLY);
        PACKFS_ASSERT_OK(f);
        // One big read, then reads in slices that straddle every chunk boundary.
        auto whole = pread_string(**f, 0, size + 100);
        PACKFS_EXPECT_OK(whole);
        if (whole) {
            PACKFS_EXPECT_BYTES_EQ(*whole, data);
        }
        auto sliced = read_all(**f, 4093);
        PACKFS_EXPECT_OK(sliced);
        if (sliced) {
            PACKFS_EXPECT_BYTES_EQ(*sliced, data);
        }
    }
}

TEST_P(FileIo, SequentialWritesInOddPiecesRoundTrip) {
    std::string data = pattern_bytes(3 * kChunk + 12345, 9);
    auto f = create(fs(), "/f");
    PACKFS_ASSERT_OK(f);
    for (std::size_t off = 0; off < data.size(); off += 4097) {
        std::string_view piece = std::string_view(data).substr(off, 4097);
        PACKFS_ASSERT_OK(pwrite_string(**f, piece, off));
    }
    auto back = read_all(**f);
    PACKFS_ASSERT_OK(back);
    PACKFS_EXPECT_BYTES_EQ(*back, data);
}

TEST_P(FileIo, WritePastEndZeroFillsTheHole) {
    auto f = create(fs(), "/f");
    PACKFS_ASSERT_OK(f);
    PACKFS_ASSERT_OK(pwrite_string(**f, "head", 0));
    const uint64_t far = 2 * kChunk + 5;
    PACKFS_ASSERT_OK(pwrite_string(**f, "tail", far));
    auto st = (*f)->fstat();
    PACKFS_ASSERT_OK(st);
    EXPECT_EQ(st->size, far + 4);
    auto back = read_all(**f);
    PACKFS_ASSERT_OK(back);
    std::string expected = "head" + std::string(far - 4, '\0') + "tail";
    PACKFS_EXPECT_BYTES_EQ(*back, expected);
}

// SEEK_DATA and SEEK_HOLE (File::seek_data) over a file with a 1 MiB gap: whatever a backend
// keeps (real holes, or data everywhere as Linux answers for filesystems without them), the
// answers are lseek's: never before the offset, never past the end; every byte skipped reads
// as zero; the written bytes are always found as data; at or past the end both are ENXIO.
TEST_P(FileIo, SeekDataAndSeekHoleAnswerAsLseekDoes) {
    auto f = create(fs(), "/sparse");
    PACKFS_ASSERT_OK(f);
    const uint64_t far = 1u << 20;
    PACKFS_ASSERT_OK(pwrite_string(**f, "head", 0));
    PACKFS_ASSERT_OK(pwrite_string(**f, "tail", far));
    const uint64_t size = far + 4;
    auto bytes = read_all(**f);
    PACKFS_ASSERT_OK(bytes);
    ASSERT_EQ(bytes->size(), size);
    auto zeros = [&](uint64_t from, uint64_t to) {
        return bytes->find_first_not_of('\0', from) >= to;
    };
    for (uint64_t o : {uint64_t{0}, uint64_t{3}, uint64_t{4}, uint64_t{4096}, uint64_t{kChunk - 1},
                       uint64_t{kChunk}, uint64_t{kChunk + 1}, far - 1, far, far + 3}) {
        SCOPED_TRACE(fmt::format("offset {}", o));
        auto data = (*f)->seek_data(o, true);
        PACKFS_ASSERT_OK(data);
        EXPECT_GE(*data, o);
        EXPECT_LT(*data, size);
        EXPECT_TRUE(zeros(o, *data)) << "SEEK_DATA skipped bytes that are not zero";
        auto hole = (*f)->seek_data(o, false);
        PACKFS_ASSERT_OK(hole);
        EXPECT_GE(*hole, o);
        EXPECT_LE(*hole, size);
        if (*hole < size) {
            auto next = (*f)->seek_data(*hole, true);
            PACKFS_ASSERT_OK(next);  // "tail" is data after any hole
            EXPECT_GT(*next, *hole);
            EXPECT_TRUE(zeros(*hole, *next)) << "a hole holds bytes that are not zero";
        }
    }
    EXPECT_LE(*(*f)->seek_data(4, true), far);  // "tail" is found from anywhere before it
    for (uint64_t o : {size, size + 1, uint64_t{1} << 40}) {
        PACKFS_EXPECT_ERRNO((*f)->seek_data(o, true), ENXIO);
        PACKFS_EXPECT_ERRNO((*f)->seek_data(o, false), ENXIO);
    }
}

// fallocate (File::allocate) in each mode a backend must support, read back: mode 0 grows the
// file over the range (zeros) and keeps what was there; KEEP_SIZE changes nothing visible;
// PUNCH_HOLE | KEEP_SIZE and ZERO_RANGE make the range read as zeros (the first keeps the size,
// the second grows the file without KEEP_SIZE), across chunk boundaries and at odd offsets.
// The errors are fallocate(2)'s.
TEST_P(FileIo, FallocateModesReadBackAsFallocateSays) {
    auto f = create(fs(), "/alloc");
    PACKFS_ASSERT_OK(f);
    std::string model = pattern_bytes(3 * kChunk + 100, 7);
    PACKFS_ASSERT_OK(pwrite_string(**f, model, 0));
    auto expect_model = [&](const char* step) {
        SCOPED_TRACE(step);
        auto st = (*f)->fstat();
        PACKFS_ASSERT_OK(st);
        EXPECT_EQ(st->size, model.size());
        auto back = read_all(**f);
        PACKFS_ASSERT_OK(back);
        PACKFS_EXPECT_BYTES_EQ(*back, model);
    };
    PACKFS_ASSERT_OK((*f)->allocate(0, 10, 20));  // inside: nothing visible changes
    expect_model("mode 0 inside the file");
    PACKFS_ASSERT_OK((*f)->allocate(FALLOC_FL_KEEP_SIZE, model.size(), kChunk));
    expect_model("KEEP_SIZE past the end");
    PACKFS_ASSERT_OK((*f)->allocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 5, 2 * kChunk));
    std::fill(model.begin() + 5, model.begin() + 5 + 2 * kChunk, '\0');
    expect_model("PUNCH_HOLE across two chunk boundaries");
    PACKFS_ASSERT_OK(
        (*f)->allocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 3 * kChunk + 50, kChunk));
    std::fill(model.begin() + 3 * kChunk + 50, model.end(), '\0');
    expect_model("PUNCH_HOLE past the end keeps the size");
    PACKFS_ASSERT_OK(pwrite_string(**f, "again", 2 * kChunk + 3));
    model.replace(2 * kChunk + 3, 5, "again");
    expect_model("a write into a punched range");
    PACKFS_ASSERT_OK((*f)->allocate(FALLOC_FL_ZERO_RANGE, 2 * kChunk, 2 * kChunk));
    model.resize(4 * kChunk, '\0');
    std::fill(model.begin() + 2 * kChunk, model.end(), '\0');
    expect_model("ZERO_RANGE grows the file");
    PACKFS_ASSERT_OK((*f)->allocate(0, model.size() + 1000, 24));
    model.resize(model.size() + 1024, '\0');
    expect_model("mode 0 past the end grows it");
    PACKFS_EXPECT_ERRNO((*f)->allocate(0, 0, 0), EINVAL);
    PACKFS_EXPECT_ERRNO((*f)->allocate(FALLOC_FL_PUNCH_HOLE, 0, 10), EOPNOTSUPP);
    auto reader = fs().open("/alloc", O_RDONLY);
    PACKFS_ASSERT_OK(reader);
    PACKFS_EXPECT_ERRNO((*reader)->allocate(0, 0, 10), EBADF);
    expect_model("after the refusals");
}

namespace {

// copy_range (copy_file_range, FICLONERANGE) against a model: whole chunks (shared on a mem
// tree or volume, by node), partial edges, a source end mid-chunk, unaligned offsets (copied),
// ranges past the source's end; then writes, truncates and punches to either file never show in
// the other (a shared chunk is copied before it changes). `copier` copies between two of the
// files, named by their handles and paths.
using Copier = std::function<Result<uint64_t>(File& from, const std::string& from_path,
                                              uint64_t offset, File& to, const std::string& to_path,
                                              uint64_t to_offset, uint64_t length)>;

void copy_range_scenario(Backend& fs, const Copier& copier) {
    auto a = create(fs, "/copy-a");
    PACKFS_ASSERT_OK(a);
    auto b = create(fs, "/copy-b");
    PACKFS_ASSERT_OK(b);
    std::map<const File*, std::string> paths{{a->get(), "/copy-a"}, {b->get(), "/copy-b"}};
    std::string ma = pattern_bytes(5 * kChunk + 123, 11), mb = pattern_bytes(kChunk / 2, 12);
    PACKFS_ASSERT_OK(pwrite_string(**a, ma, 0));
    PACKFS_ASSERT_OK(pwrite_string(**b, mb, 0));
    auto expect = [&](const std::string& step) {
        SCOPED_TRACE(step);
        for (auto [f, m] : {std::pair{a->get(), &ma}, {b->get(), &mb}}) {
            auto back = read_all(*f);
            PACKFS_ASSERT_OK(back);
            PACKFS_EXPECT_BYTES_EQ(*back, *m);
        }
    };
    auto copy = [&](File& from, std::string& mfrom, uint64_t off, File& to, std::string& mto,
                    uint64_t to_off, uint64_t len, const std::string& step) {
        auto n = copier(from, paths.at(&from), off, to, paths.at(&to), to_off, len);
        PACKFS_ASSERT_OK(n);
        const uint64_t want = off >= mfrom.size() ? 0 : std::min<uint64_t>(len, mfrom.size() - off);
        EXPECT_EQ(*n, want) << step;
        if (want > 0) {
            const std::string bytes = mfrom.substr(off, want);
            if (mto.size() < to_off + want) mto.resize(to_off + want, '\0');
            mto.replace(to_off, want, bytes);
        }
        expect(step);
    };
    {
        // The whole file into a new, empty one (cp): then both change apart.
        auto c = create(fs, "/copy-c");
        PACKFS_ASSERT_OK(c);
        paths[c->get()] = "/copy-c";
        std::string mc;
        copy(**a, ma, 0, **c, mc, 0, UINT64_MAX / 4, "the whole file into an empty one");
        PACKFS_ASSERT_OK(pwrite_string(**c, "in the copy", 2 * kChunk - 3));
        mc.replace(2 * kChunk - 3, 11, "in the copy");
        PACKFS_ASSERT_OK(pwrite_string(**a, "in the source", 3 * kChunk - 6));
        ma.replace(3 * kChunk - 6, 13, "in the source");
        PACKFS_ASSERT_OK(pwrite_string(**c, "end", mc.size() + 10));
        mc.resize(mc.size() + 10, '\0');
        mc += "end";
        PACKFS_ASSERT_OK((*a)->truncate(4 * kChunk + 1));
        ma.resize(4 * kChunk + 1);
        PACKFS_ASSERT_OK((*a)->truncate(5 * kChunk + 123));
        ma.resize(5 * kChunk + 123, '\0');
        PACKFS_ASSERT_OK(pwrite_string(**a, "back", 0));
        ma.replace(0, 4, "back");
        expect("the source and the copy changed apart");
        auto back = read_all(**c);
        PACKFS_ASSERT_OK(back);
        PACKFS_EXPECT_BYTES_EQ(*back, mc);
    }
    copy(**a, ma, 0, **b, mb, 0, ma.size(), "the whole file over a shorter one");
    PACKFS_ASSERT_OK(pwrite_string(**a, "changed", kChunk + 5));
    ma.replace(kChunk + 5, 7, "changed");
    expect("a write to the source after the copy");
    PACKFS_ASSERT_OK(pwrite_string(**b, "other", 2 * kChunk - 2));
    mb.replace(2 * kChunk - 2, 5, "other");
    expect("a write to the copy across a chunk boundary");
    PACKFS_ASSERT_OK(pwrite_string(**a, "tail", ma.size()));
    ma += "tail";
    expect("an append to the source (its last chunk was shared)");
    PACKFS_ASSERT_OK(pwrite_string(**b, "TAIL", mb.size()));
    mb += "TAIL";
    expect("an append to the copy");
    copy(**a, ma, 3 * kChunk, **b, mb, kChunk, kChunk, "one chunk into the middle");
    copy(**a, ma, 100, **b, mb, 100, 2 * kChunk + 7, "partial edges around a shared chunk");
    copy(**a, ma, 5, **b, mb, 9, kChunk + 3, "unaligned offsets");
    copy(**a, ma, 4 * kChunk, **b, mb, 8 * kChunk, 10 * kChunk,
         "past the source's end, with a gap");
    copy(**a, ma, ma.size(), **b, mb, 0, 10, "at the source's end: nothing");
    PACKFS_ASSERT_OK((*b)->truncate(3 * kChunk + 1));
    mb.resize(3 * kChunk + 1);
    PACKFS_ASSERT_OK((*b)->truncate(9 * kChunk));
    mb.resize(9 * kChunk, '\0');
    expect("the copy truncated down and up");
    PACKFS_ASSERT_OK((*a)->truncate(2 * kChunk));
    ma.resize(2 * kChunk);
    expect("the source truncated");
    // Within one file: overlapping ranges are EINVAL (as Linux), apart ones copy.
    PACKFS_EXPECT_ERRNO(copier(**a, "/copy-a", 0, **a, "/copy-a", 100, 1000), EINVAL);
    copy(**a, ma, 0, **a, ma, ma.size() + 10, ma.size(), "the file after its own end");
    expect("after the refusals");
}

}  // namespace

TEST_P(FileIo, CopyRangeCopiesAndTheCopiesChangeApart) {
    copy_range_scenario(fs(), [&](File& from, const std::string&, uint64_t offset, File& to,
                                  const std::string&, uint64_t to_offset, uint64_t length) {
        return copy_bytes(from, offset, to, to_offset, length);
    });
    // Handles answer for their modes; two handles on one file are one file.
    auto a = fs().open("/copy-a", O_RDWR);
    PACKFS_ASSERT_OK(a);
    auto reader = fs().open("/copy-a", O_RDONLY);
    PACKFS_ASSERT_OK(reader);
    PACKFS_EXPECT_ERRNO(copy_bytes(**reader, 0, **a, 50, 100), EINVAL);
    PACKFS_EXPECT_ERRNO(copy_bytes(**a, 0, **reader, 0, 10), EBADF);
    auto writer = fs().open("/copy-b", O_WRONLY);
    PACKFS_ASSERT_OK(writer);
    PACKFS_EXPECT_ERRNO(copy_bytes(**writer, 0, **a, 0, 10), EBADF);
}

// The same by node (Backend::copy_range, what FUSE calls): where the backend shares chunks,
// the scenario shows that shared chunks change apart.
TEST_P(FileIo, CopyRangeByNodeCopiesAndTheCopiesChangeApart) {
    if (!caps().nodes) GTEST_SKIP() << "backend '" << GetParam().name << "' has no node calls";
    auto node_of = [&](const std::string& path) {
        auto e = lookup_path(fs(), path);
        EXPECT_TRUE(e.has_value()) << path;
        return HeldNode(fs(), e ? e->node : Node{});
    };
    copy_range_scenario(fs(), [&](File&, const std::string& from_path, uint64_t offset, File&,
                                  const std::string& to_path, uint64_t to_offset, uint64_t length) {
        const HeldNode from = node_of(from_path), to = node_of(to_path);
        return fs().copy_range(from.get(), offset, to.get(), to_offset, length);
    });
    // Not between regular files: a directory is EISDIR, a symlink or a missing node an error.
    PACKFS_ASSERT_OK(fs().mkdir("/copy-dir"));
    const HeldNode file = node_of("/copy-a"), dir = node_of("/copy-dir");
    PACKFS_EXPECT_ERRNO(fs().copy_range(dir.get(), 0, file.get(), 0, 10), EISDIR);
    PACKFS_EXPECT_ERRNO(fs().copy_range(file.get(), 0, dir.get(), 0, 10), EISDIR);
}

TEST_P(FileIo, ReadAtOrPastEndReturnsZero) {
    auto f = create(fs(), "/f");
    PACKFS_ASSERT_OK(f);
    PACKFS_ASSERT_OK(pwrite_string(**f, "0123456789", 0));
    auto at_end = pread_string(**f, 10, 5);
    PACKFS_EXPECT_OK(at_end);
    if (at_end) {
        EXPECT_EQ(*at_end, "");
    }
    auto past = pread_string(**f, 1u << 30, 5);
    PACKFS_EXPECT_OK(past);
    if (past) {
        EXPECT_EQ(*past, "");
    }
    auto straddle = pread_string(**f, 7, 100);
    PACKFS_EXPECT_OK(straddle);
    if (straddle) {
        EXPECT_EQ(*straddle, "789");
    }
    auto empty_buf = pread_string(**f, 0, 0);
    PACKFS_EXPECT_OK(empty_buf);
    if (empty_buf) {
        EXPECT_EQ(*empty_buf, "");
    }
}

TEST_P(FileIo, OverwriteInTheMiddleAcrossChunkBoundary) {
    std::string data = pattern_bytes(3 * kChunk, 4);
    PACKFS_ASSERT_OK(write_file(fs(), "/f", data));
    auto f = fs().open("/f", O_RDWR);
    PACKFS_ASSERT_OK(f);
    std::string patch = pattern_bytes(100, 5);
    PACKFS_ASSERT_OK(pwrite_string(**f, patch, kChunk - 50));
    data.replace(kChunk - 50, 100, patch);
    PACKFS_ASSERT_OK(pwrite_string(**f, "Z", 2 * kChunk));
    data[2 * kChunk] = 'Z';
    auto st = (*f)->fstat();
    PACKFS_ASSERT_OK(st);
    EXPECT_EQ(st->size, 3 * kChunk);
    auto back = read_file(fs(), "/f");
    PACKFS_ASSERT_OK(back);
    PACKFS_EXPECT_BYTES_EQ(*back, data);
}

TEST_P(FileIo, TruncateDownThenUpReadsZeros) {
    std::string data = pattern_bytes(2 * kChunk + 10, 6);
    PACKFS_ASSERT_OK(write_file(fs(), "/f", data));
    // Through the path.
    PACKFS_ASSERT_OK(fs().truncate("/f", 10));
    auto st = fs().stat("/f");
    PACKFS_ASSERT_OK(st);
    EXPECT_EQ(st->size, 10u);
    PACKFS_ASSERT_OK(fs().truncate("/f", kChunk + 7));
    auto back = read_file(fs(), "/f");
    PACKFS_ASSERT_OK(back);
    PACKFS_EXPECT_BYTES_EQ(*back, data.substr(0, 10) + std::string(kChunk - 3, '\0'));
    // Through a handle: the stale bytes of the old tail must never come back.
    PACKFS_ASSERT_OK(write_file(fs(), "/g", data));
    auto f = fs().open("/g", O_RDWR);
    PACKFS_ASSERT_OK(f);
    PACKFS_ASSERT_OK((*f)->truncate(kChunk + 1));
    PACKFS_ASSERT_OK((*f)->truncate(2 * kChunk + 10));
    auto g = read_all(**f);
    PACKFS_ASSERT_OK(g);
    PACKFS_EXPECT_BYTES_EQ(*g, data.substr(0, kChunk + 1) + std::string(kChunk + 9, '\0'));
}

TEST_P(FileIo, TruncateToZeroAndToSameSize) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "abc"));
    PACKFS_ASSERT_OK(fs().truncate("/f", 3));
    auto same = read_file(fs(), "/f");
    PACKFS_ASSERT_OK(same);
    EXPECT_EQ(*same, "abc");
    PACKFS_ASSERT_OK(fs().truncate("/f", 0));
    auto empty = read_file(fs(), "/f");
    PACKFS_ASSERT_OK(empty);
    EXPECT_EQ(*empty, "");
}

TEST_P(FileIo, TruncateOfDirectoryOrMissingFails) {
    PACKFS_ASSERT_OK(fs().mkdir("/d"));
    PACKFS_EXPECT_ERRNO(fs().truncate("/d", 0), EISDIR);
    PACKFS_EXPECT_ERRNO(fs().truncate("/missing", 0), ENOENT);
}

TEST_P(FileIo, AppendWritesAtEndWhateverTheOffset) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "start"));
    auto f = fs().open("/f", O_WRONLY | O_APPEND);
    PACKFS_ASSERT_OK(f);
    PACKFS_ASSERT_OK(pwrite_string(**f, "-one", 0));
    PACKFS_ASSERT_OK(pwrite_string(**f, "-two", 1));
    auto back = read_file(fs(), "/f");
    PACKFS_ASSERT_OK(back);
    EXPECT_EQ(*back, "start-one-two");
}

TEST_P(FileIo, OpenWithTruncEmptiesExistingFile) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", pattern_bytes(kChunk + 1, 1)));
    {
        auto f = fs().open("/f", O_WRONLY | O_TRUNC);
        PACKFS_ASSERT_OK(f);
        auto st = (*f)->fstat();
        PACKFS_ASSERT_OK(st);
        EXPECT_EQ(st->size, 0u);
    }
    auto back = read_file(fs(), "/f");
    PACKFS_ASSERT_OK(back);
    EXPECT_EQ(*back, "");
}

TEST_P(FileIo, CreateWithoutTruncKeepsExistingContent) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "keep"));
    auto f = fs().open("/f", O_RDWR | O_CREAT, 0600);
    PACKFS_ASSERT_OK(f);
    auto back = read_all(**f);
    PACKFS_ASSERT_OK(back);
    EXPECT_EQ(*back, "keep");
    auto st = fs().stat("/f");
    PACKFS_ASSERT_OK(st);
    EXPECT_EQ(st->mode, 0644u) << "the mode applies only when the file is created";
}

TEST_P(FileIo, CreateAppliesModeAndMakesRegularFile) {
    auto f = fs().open("/f", O_WRONLY | O_CREAT, 0640);
    PACKFS_ASSERT_OK(f);
    auto st = fs().stat("/f");
    PACKFS_ASSERT_OK(st);
    EXPECT_EQ(st->type, FileType::regular);
    EXPECT_EQ(st->mode, 0640u);
    EXPECT_EQ(st->size, 0u);
    EXPECT_EQ(st->nlink, 1u);
}

TEST_P(FileIo, ExclusiveCreateOfExistingFails) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x"));
    PACKFS_ASSERT_OK(fs().mkdir("/d"));
    PACKFS_EXPECT_ERRNO(fs().open("/f", O_WRONLY | O_CREAT | O_EXCL), EEXIST);
    PACKFS_EXPECT_ERRNO(fs().open("/d", O_WRONLY | O_CREAT | O_EXCL), EEXIST);
    auto back = read_file(fs(), "/f");
    PACKFS_ASSERT_OK(back);
    EXPECT_EQ(*back, "x");
    PACKFS_EXPECT_OK(fs().open("/new", O_WRONLY | O_CREAT | O_EXCL));
}

TEST_P(FileIo, OpenDirectoryForWritingIsDir) {
    PACKFS_ASSERT_OK(fs().mkdir("/d"));
    PACKFS_EXPECT_ERRNO(fs().open("/d", O_WRONLY), EISDIR);
    PACKFS_EXPECT_ERRNO(fs().open("/d", O_RDWR), EISDIR);
    PACKFS_EXPECT_ERRNO(fs().open("/d", O_WRONLY | O_CREAT), EISDIR);
    PACKFS_EXPECT_ERRNO(fs().open("/", O_RDWR), EISDIR);
}

TEST_P(FileIo, OpenMissingWithoutCreateIsNotFound) {
    PACKFS_EXPECT_ERRNO(fs().open("/missing", O_RDONLY), ENOENT);
    PACKFS_EXPECT_ERRNO(fs().open("/missing", O_RDWR), ENOENT);
    PACKFS_EXPECT_ERRNO(fs().open("/no/such/parent", O_WRONLY | O_CREAT), ENOENT);
    PACKFS_EXPECT_ERRNO(fs().stat("/missing"), ENOENT);
}

TEST_P(FileIo, OpenWithDirectoryFlagOnFileIsNotDir) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x"));
    PACKFS_EXPECT_ERRNO(fs().open("/f", O_RDONLY | O_DIRECTORY), ENOTDIR);
}

TEST_P(FileIo, WriteOnReadOnlyHandleIsBadFd) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "data"));
    auto f = fs().open("/f", O_RDONLY);
    PACKFS_ASSERT_OK(f);
    PACKFS_EXPECT_ERRNO((*f)->pwrite(as_bytes("x"), 0), EBADF);
    // ftruncate on a read-only descriptor: Linux says EINVAL, POSIX allows EBADF too.
    EXPECT_TRUE(FailsWithOneOf((*f)->truncate(0), {EBADF, EINVAL}));
    auto back = read_file(fs(), "/f");
    PACKFS_ASSERT_OK(back);
    EXPECT_EQ(*back, "data");
}

TEST_P(FileIo, ReadOnWriteOnlyHandleIsBadFd) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "data"));
    auto f = fs().open("/f", O_WRONLY);
    PACKFS_ASSERT_OK(f);
    PACKFS_EXPECT_ERRNO(pread_string(**f, 0, 4), EBADF);
}

TEST_P(FileIo, PathComponentThatIsAFileIsNotDir) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "x"));
    PACKFS_EXPECT_ERRNO(fs().open("/f/x", O_RDONLY), ENOTDIR);
    PACKFS_EXPECT_ERRNO(fs().open("/f/x", O_WRONLY | O_CREAT), ENOTDIR);
    PACKFS_EXPECT_ERRNO(fs().stat("/f/x"), ENOTDIR);
    PACKFS_EXPECT_ERRNO(fs().mkdir("/f/x"), ENOTDIR);
}

TEST_P(FileIo, WritesAreVisibleToOtherHandlesAtOnce) {
    auto w = create(fs(), "/f");
    PACKFS_ASSERT_OK(w);
    auto r = fs().open("/f", O_RDONLY);
    PACKFS_ASSERT_OK(r);
    PACKFS_ASSERT_OK(pwrite_string(**w, "first", 0));
    auto a = read_all(**r);
    PACKFS_ASSERT_OK(a);
    EXPECT_EQ(*a, "first");
    PACKFS_ASSERT_OK(pwrite_string(**w, pattern_bytes(kChunk, 2), 5));
    auto st = (*r)->fstat();
    PACKFS_ASSERT_OK(st);
    EXPECT_EQ(st->size, kChunk + 5);
    auto path_read = read_file(fs(), "/f");
    PACKFS_ASSERT_OK(path_read);
    EXPECT_EQ(path_read->size(), kChunk + 5);
    PACKFS_ASSERT_OK((*w)->truncate(2));
    auto b = read_all(**r);
    PACKFS_ASSERT_OK(b);
    EXPECT_EQ(*b, "fi");
}

TEST_P(FileIo, FstatMatchesStat) {
    PACKFS_ASSERT_OK(write_file(fs(), "/f", "12345", 0604));
    auto f = fs().open("/f", O_RDONLY);
    PACKFS_ASSERT_OK(f);
    auto a = (*f)->fstat();
    auto b = fs().stat("/f");
    PACKFS_ASSERT_OK(a);
    PACKFS_ASSERT_OK(b);
    EXPECT_EQ(a->ino, b->ino);
    EXPECT_EQ(a->type, FileType::regular);
    EXPECT_EQ(a->size, 5u);
    EXPECT_EQ(a->mode, 0604u);
    EXPECT_EQ(a->nlink, b->nlink);
    EXPECT_EQ(a->mtime, b->mtime);
}

TEST_P(FileIo, FsyncSucceeds) {
    auto f = create(fs(), "/f");
    PACKFS_ASSERT_OK(f);
    PACKFS_ASSERT_OK(pwrite_string(**f, "durable", 0));
    PACKFS_EXPECT_OK((*f)->fsync(false));
    PACKFS_EXPECT_OK((*f)->fsync(true));
}

TEST_P(FileIo, HandleStaysUsableAcrossUnrelatedMutations) {
    // A handle stays usable after many unrelated mutations of the tree.
    auto f = create(fs(), "/f");
    PACKFS_ASSERT_OK(f);
    for (int i = 0; i < 100; ++i) {
        PACKFS_ASSERT_OK(write_file(fs(), fmt::format("/other{}", i), "x"));
    }
    PACKFS_ASSERT_OK(pwrite_string(**f, "still", 0));
    auto back = read_file(fs(), "/f");
    PACKFS_ASSERT_OK(back);
    EXPECT_EQ(*back, "still");
}

TEST_P(FileIo, ConcurrentWritersAndReadersStayConsistent) {
    // Every backend is safe for concurrent use (DESIGN §4): writers on their own files, while
    // readers list the shared directory and read a file that is being rewritten.
    constexpr int kWriters = 3;
    constexpr int kRounds = 40;
    PACKFS_ASSERT_OK(fs().mkdir("/shared"));
    const std::string a = pattern_bytes(5000, 1);
    const std::string b = pattern_bytes(5000, 2);
    PACKFS_ASSERT_OK(write_file(fs(), "/shared/hot", a));
    std::atomic<int> errors{0};
    std::atomic<int> torn{0};
    std::vector<std::thread> threads;
    for (int w = 0; w < kWriters; ++w) {
        threads.emplace_back([&, w] {
            for (int i = 0; i < kRounds; ++i) {
                std::string path = fmt::format("/shared/w{}_{}", w, i);
                std::string data = pattern_bytes(1000 + i, static_cast<uint32_t>(w * 100 + i));
                if (!write_file(fs(), path, data)) ++errors;
                auto back = read_file(fs(), path);
                if (!back || *back != data) ++errors;
                if (i % 2 == 1 && !fs().unlink(fmt::format("/shared/w{}_{}", w, i - 1))) ++errors;
            }
        });
    }
    threads.emplace_back([&] {
        auto f = fs().open("/shared/hot", O_RDWR);
        if (!f) {
            ++errors;
            return;
        }
        for (int i = 0; i < kRounds; ++i) {
            if (!pwrite_string(**f, i % 2 ? a : b, 0)) ++errors;
        }
    });
    threads.emplace_back([&] {
        for (int i = 0; i < kRounds; ++i) {
            if (!fs().readdir("/shared")) ++errors;
            auto hot = read_file(fs(), "/shared/hot");
            if (!hot) {
                ++errors;
            } else if (hot->size() != 5000) {
                ++torn;
            }
        }
    });
    for (auto& t : threads) t.join();
    EXPECT_EQ(errors.load(), 0);
    EXPECT_EQ(torn.load(), 0) << "a reader saw a size other than the only size ever written";
    auto names = sorted_names(fs(), "/shared");
    PACKFS_ASSERT_OK(names);
    EXPECT_EQ(names->size(), static_cast<std::size_t>(1 + kWriters * kRounds / 2));
}

}  // namespace packfs::conformance
