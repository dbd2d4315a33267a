// The volume journal (DESIGN §10, docs/JOURNAL.md): what the writer acknowledges as durable
// is in the file, the reader gives back exactly the longest valid prefix and never half a
// record, and every injected I/O failure (core/io.hpp's hook) ends in the documented state.
//
// PACKFS_SANITIZER_RUN=1 (the ASan+UBSan and TSan runs) cuts the random trial counts.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/io.hpp"
#include "support/files.hpp"
#include "volume/journal_format.hpp"
#include "volume/journal_reader.hpp"
#include "volume/journal_writer.hpp"

namespace packfs::volume {
namespace {

using test_support::TempDir;

bool sanitizer_run() {
    const char* v = std::getenv("PACKFS_SANITIZER_RUN");
    return v && *v && std::string(v) != "0";
}

// Deterministic bytes for record `seq` of `size` bytes.
std::vector<std::byte> payload_of(std::size_t size, uint64_t seed) {
    std::vector<std::byte> out(size);
    uint64_t x = 0x9E3779B97F4A7C15ull ^ (seed * 0xBF58476D1CE4E5B9ull);
    for (auto& b : out) {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        b = static_cast<std::byte>((x * 0x2545F4914F6CDD1Dull) >> 56);
    }
    return out;
}

struct Rec {
    uint64_t seq;
    uint16_t type;
    std::vector<std::byte> payload;
    uint64_t offset = 0;
    bool operator==(const Rec& o) const {
        return seq == o.seq && type == o.type && payload == o.payload;
    }
};

struct Scanned {
    JournalScan scan;
    std::vector<Rec> records;
};

Result<Scanned> scan_all(const std::string& path) {
    Scanned out;
    auto scan = scan_journal(path, [&](const JournalRecordView& r) -> Result<void> {
        out.records.push_back(
            Rec{r.seq, r.type, std::vector<std::byte>(r.payload.begin(), r.payload.end()), r.offset});
        return {};
    });
    if (!scan) return std::unexpected(scan.error());
    out.scan = *scan;
    return out;
}

JournalHeaderFields header_fields(uint64_t first_seq = 1) {
    JournalHeaderFields h;
    h.generation = 7;
    h.first_seq = first_seq;
    for (std::size_t i = 0; i < h.volume_id.size(); ++i) h.volume_id[i] = static_cast<uint8_t>(0xA0 + i);
    return h;
}

std::string read_bytes(const std::string& path) { return test_support::slurp(path); }

void write_bytes(const std::string& path, std::string_view bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Installs a fault hook for the scope of a test.
struct HookGuard {
    explicit HookGuard(io::FaultHook hook) { io::set_fault_hook(std::move(hook)); }
    ~HookGuard() { io::set_fault_hook({}); }
    HookGuard(const HookGuard&) = delete;
    HookGuard& operator=(const HookGuard&) = delete;
};

// A hook that fails the k-th (1-based) call of `op` on `what` with `answer`, and only that one.
io::FaultHook fail_nth(io::IoOp op, int k, int answer, std::shared_ptr<std::atomic<int>> seen = {}) {
    if (!seen) seen = std::make_shared<std::atomic<int>>(0);
    return [=](io::IoOp o, std::string_view) { return o == op && ++*seen == k ? answer : 0; };
}

// Appends and, in batch mode, waits; returns the record as the journal must hold it.
Rec append_one(JournalWriter& w, uint16_t type, std::vector<std::byte> payload) {
    auto t = w.append(type, payload);
    EXPECT_TRUE(t) << t.error().message();
    if (!t) return {};
    auto d = w.wait_durable(*t);
    EXPECT_TRUE(d) << d.error().message();
    return Rec{t->seq, type, std::move(payload)};
}

const char* mode_name(Durability d) {
    switch (d) {
        case Durability::always: return "always";
        case Durability::batch: return "batch";
        case Durability::explicit_sync: return "explicit";
    }
    return "?";
}

class JournalModes : public ::testing::TestWithParam<Durability> {};

INSTANTIATE_TEST_SUITE_P(Modes, JournalModes,
                         ::testing::Values(Durability::always, Durability::batch,
                                           Durability::explicit_sync),
                         [](const auto& param_info) { return std::string(mode_name(param_info.param)); });

// --- round trips -------------------------------------------------------------------------

TEST_P(JournalModes, RecordsOfEverySizeRoundTripAndAppendAfterReopen) {
    TempDir dir;
    const std::string path = (dir.path / "journal").string();
    const std::size_t sizes[] = {0, 1, 7, 8, 9, 15, 16, 4095, 4096, 1 << 20, 3, 0};
    std::vector<Rec> expect;
    {
        auto w = JournalWriter::create(path, header_fields(), GetParam());
        ASSERT_TRUE(w) << w.error().message();
        uint16_t type = 0;
        for (std::size_t size : sizes) expect.push_back(append_one(**w, type++, payload_of(size, expect.size())));
        ASSERT_TRUE((*w)->sync());
        EXPECT_EQ((*w)->last_seq(), expect.size());
        EXPECT_EQ((*w)->durable_seq(), expect.size());
        EXPECT_EQ((*w)->file_bytes(), std::filesystem::file_size(path));
    }
    auto s = scan_all(path);
    ASSERT_TRUE(s) << s.error().message();
    EXPECT_TRUE(s->scan.clean()) << s->scan.reason;
    EXPECT_EQ(s->scan.header, header_fields());
    EXPECT_EQ(s->scan.version, 1u);
    EXPECT_EQ(s->records, expect);
    EXPECT_EQ(s->scan.valid_end, std::filesystem::file_size(path));
    EXPECT_EQ(s->scan.last_seq, expect.size());
    EXPECT_EQ(s->records.front().offset, kJournalHeaderSize);

    {
        auto w = JournalWriter::open_append(path, s->scan, GetParam());
        ASSERT_TRUE(w) << w.error().message();
        for (std::size_t size : sizes) expect.push_back(append_one(**w, 0xFFFF, payload_of(size, expect.size())));
        ASSERT_TRUE((*w)->sync());
    }
    auto again = scan_all(path);
    ASSERT_TRUE(again) << again.error().message();
    EXPECT_TRUE(again->scan.clean()) << again->scan.reason;
    ASSERT_EQ(again->records.size(), expect.size());
    EXPECT_EQ(again->records, expect);
}

TEST(Journal, FirstSeqFromTheHeaderNumbersTheRecords) {
    TempDir dir;
    const std::string path = (dir.path / "journal").string();
    auto w = JournalWriter::create(path, header_fields(1000), Durability::always);
    ASSERT_TRUE(w);
    EXPECT_EQ(append_one(**w, 1, payload_of(5, 1)).seq, 1000u);
    EXPECT_EQ(append_one(**w, 1, payload_of(5, 2)).seq, 1001u);
    auto s = scan_all(path);
    ASSERT_TRUE(s);
    ASSERT_EQ(s->records.size(), 2u);
    EXPECT_EQ(s->records[0].seq, 1000u);
    EXPECT_EQ(s->scan.last_seq, 1001u);
}

TEST(Journal, CreateRefusesAnExistingFileAndOpenAppendATornFile) {
    TempDir dir;
    const std::string path = (dir.path / "journal").string();
    ASSERT_TRUE(JournalWriter::create(path, header_fields(), Durability::always));
    auto again = JournalWriter::create(path, header_fields(), Durability::always);
    ASSERT_FALSE(again);
    EXPECT_EQ(again.error().code(), EEXIST);
    EXPECT_EQ(JournalWriter::create((dir.path / "zero").string(), header_fields(0), Durability::always).error().code(), EINVAL);

    auto s = scan_all(path);
    ASSERT_TRUE(s);
    std::string bytes = read_bytes(path);
    write_bytes(path, bytes + "torn");
    auto torn = scan_all(path);
    ASSERT_TRUE(torn);
    EXPECT_EQ(torn->scan.dropped_bytes, 4u);
    // Appending after a torn tail would bury new records behind it.
    auto w = JournalWriter::open_append(path, torn->scan, Durability::always);
    ASSERT_FALSE(w);
    EXPECT_EQ(w.error().code(), EINVAL);
}

TEST(Journal, OnRecordErrorStopsTheScan) {
    TempDir dir;
    const std::string path = (dir.path / "journal").string();
    auto w = JournalWriter::create(path, header_fields(), Durability::always);
    ASSERT_TRUE(w);
    for (int i = 0; i < 5; ++i) append_one(**w, 1, payload_of(10, i));
    int calls = 0;
    auto s = scan_journal(path, [&](const JournalRecordView&) -> Result<void> {
        if (++calls == 3) return fail(ENOMEM, "replay", "/x");
        return {};
    });
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code(), ENOMEM);
    EXPECT_EQ(calls, 3);
}

// --- torn tails ----------------------------------------------------------------------------

TEST(Journal, TornTailAtEveryByteOfTheLastThreeFrames) {
    TempDir dir;
    const std::string path = (dir.path / "journal").string();
    std::vector<Rec> expect;
    {
        auto w = JournalWriter::create(path, header_fields(), Durability::batch);
        ASSERT_TRUE(w);
        const std::size_t sizes[] = {3, 100, 0, 17, 64, 5, 41, 0, 130, 9};
        for (std::size_t size : sizes) expect.push_back(append_one(**w, 2, payload_of(size, expect.size())));
    }
    auto full = scan_all(path);
    ASSERT_TRUE(full);
    ASSERT_EQ(full->records, expect);
    const std::string bytes = read_bytes(path);
    const std::size_t n = expect.size();
    const std::string cut_path = (dir.path / "cut").string();
    int cuts = 0;
    for (std::size_t k = n - 3; k < n; ++k) {
        const uint64_t start = full->records[k].offset;
        const uint64_t end = k + 1 < n ? full->records[k + 1].offset : bytes.size();
        for (uint64_t cut = start; cut < end; ++cut) {
            SCOPED_TRACE(fmt::format("frame {} [{}, {}), cut at {}", k, start, end, cut));
            write_bytes(cut_path, std::string_view(bytes).substr(0, cut));
            auto s = scan_all(cut_path);
            ASSERT_TRUE(s) << s.error().message();
            ASSERT_EQ(s->records.size(), k);
            EXPECT_TRUE(std::equal(s->records.begin(), s->records.end(), expect.begin()));
            EXPECT_EQ(s->scan.valid_end, start);
            EXPECT_EQ(s->scan.last_seq, k);
            EXPECT_EQ(s->scan.dropped_bytes, cut - start);
            EXPECT_EQ(s->scan.dropped_offset, cut > start ? start : 0);
            EXPECT_EQ(s->scan.dropped_records, cut > start ? 1u : 0u);
            EXPECT_EQ(s->scan.reason.empty(), cut == start) << s->scan.reason;
            if (cut > start) {
                EXPECT_NE(s->scan.reason.find("truncated frame at offset " + std::to_string(start)),
                          std::string::npos)
                    << s->scan.reason;
            }

            // Recovery: cut the tail, append after it, scan clean.
            ASSERT_TRUE(truncate_journal(cut_path, s->scan.valid_end));
            auto w = JournalWriter::open_append(cut_path, s->scan, Durability::always);
            ASSERT_TRUE(w) << w.error().message();
            const Rec added = append_one(**w, 9, payload_of(33, 1000 + cut));
            EXPECT_EQ(added.seq, k + 1);
            auto after = scan_all(cut_path);
            ASSERT_TRUE(after);
            EXPECT_TRUE(after->scan.clean()) << after->scan.reason;
            ASSERT_EQ(after->records.size(), k + 1);
            EXPECT_EQ(after->records.back(), added);
            ++cuts;
        }
    }
    EXPECT_GT(cuts, 100);
}

TEST(Journal, DroppedRecordsCountsFramesAfterABadOne) {
    TempDir dir;
    const std::string path = (dir.path / "journal").string();
    {
        auto w = JournalWriter::create(path, header_fields(), Durability::always);
        ASSERT_TRUE(w);
        for (int i = 0; i < 6; ++i) append_one(**w, 1, payload_of(20, i));
    }
    auto full = scan_all(path);
    ASSERT_TRUE(full);
    std::string bytes = read_bytes(path);
    // Damage record 3's payload: it and the 3 after it are dropped, plus a fragment at the end.
    bytes[full->records[2].offset + kFrameHeaderSize + 1] ^= 0x10;
    bytes += "frag";
    write_bytes(path, bytes);
    auto s = scan_all(path);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->records.size(), 2u);
    EXPECT_EQ(s->scan.dropped_offset, full->records[2].offset);
    EXPECT_EQ(s->scan.dropped_records, 5u);
    EXPECT_EQ(s->scan.reason, fmt::format("checksum mismatch at offset {}", full->records[2].offset));
}

// --- hostile bytes ----------------------------------------------------------------------------

TEST(Journal, RandomBitFlipsGiveAPrefixAndStopAtTheFlippedFrame) {
    TempDir dir;
    const std::string path = (dir.path / "journal").string();
    std::vector<Rec> expect;
    {
        auto w = JournalWriter::create(path, header_fields(), Durability::explicit_sync);
        ASSERT_TRUE(w);
        std::mt19937_64 rng(42);
        for (int i = 0; i < 40; ++i)
            expect.push_back(append_one(**w, static_cast<uint16_t>(rng()), payload_of(rng() % 300, i)));
        ASSERT_TRUE((*w)->sync());
    }
    auto full = scan_all(path);
    ASSERT_TRUE(full);
    const std::string bytes = read_bytes(path);
    const std::string flip_path = (dir.path / "flipped").string();
    std::mt19937_64 rng(20240611);
    const int trials = sanitizer_run() ? 150 : 600;
    for (int t = 0; t < trials; ++t) {
        const uint64_t at = kJournalHeaderSize + rng() % (bytes.size() - kJournalHeaderSize);
        const int bit = static_cast<int>(rng() % 8);
        std::string flipped = bytes;
        flipped[at] = static_cast<char>(flipped[at] ^ (1 << bit));
        write_bytes(flip_path, flipped);
        // The frame holding the flipped byte.
        std::size_t k = 0;
        while (k + 1 < full->records.size() && full->records[k + 1].offset <= at) ++k;
        SCOPED_TRACE(fmt::format("flip of bit {} at {} (frame {})", bit, at, k));
        auto s = scan_all(flip_path);
        ASSERT_TRUE(s) << s.error().message();
        ASSERT_EQ(s->records.size(), k);
        EXPECT_TRUE(std::equal(s->records.begin(), s->records.end(), expect.begin()));
        EXPECT_EQ(s->scan.valid_end, full->records[k].offset);
        EXPECT_GE(s->scan.dropped_records, 1u);
        EXPECT_FALSE(s->scan.reason.empty());
    }
}

TEST(Journal, EveryHeaderBitFlipIsCorruption) {
    TempDir dir;
    const std::string path = (dir.path / "journal").string();
    {
        auto w = JournalWriter::create(path, header_fields(), Durability::always);
        ASSERT_TRUE(w);
        append_one(**w, 1, payload_of(10, 1));
    }
    const std::string bytes = read_bytes(path);
    const std::string flip_path = (dir.path / "flipped").string();
    for (std::size_t at = 0; at < kJournalHeaderSize; ++at) {
        for (int bit = 0; bit < 8; ++bit) {
            std::string flipped = bytes;
            flipped[at] = static_cast<char>(flipped[at] ^ (1 << bit));
            write_bytes(flip_path, flipped);
            auto s = scan_all(flip_path);
            ASSERT_FALSE(s) << "flip of bit " << bit << " at " << at;
            ASSERT_EQ(s.error().code(), kErrCorrupt) << "flip at " << at << ": " << s.error().message();
            ASSERT_TRUE(s.error().corruption());
            EXPECT_FALSE(s.error().corruption()->what.empty());
            EXPECT_EQ(s.error().path(), flip_path);
        }
    }
    // Too short for a header; not a journal at all.
    write_bytes(flip_path, bytes.substr(0, 40));
    EXPECT_EQ(scan_all(flip_path).error().code(), kErrCorrupt);
    write_bytes(flip_path, "");
    EXPECT_EQ(scan_all(flip_path).error().code(), kErrCorrupt);
    write_bytes(flip_path, std::string(200, 'x'));
    auto magic = scan_all(flip_path);
    ASSERT_FALSE(magic);
    EXPECT_NE(magic.error().message().find("magic"), std::string::npos) << magic.error().message();
    EXPECT_EQ(scan_all((dir.path / "missing").string()).error().code(), ENOENT);
}

TEST(Journal, NewerVersionIsNotSupportedAndNamesBothVersions) {
    TempDir dir;
    const std::string path = (dir.path / "journal").string();
    const auto header = encode_journal_header(header_fields(), 2);  // re-checksummed
    write_bytes(path, std::string_view(reinterpret_cast<const char*>(header.data()), header.size()));
    auto s = scan_all(path);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code(), ENOTSUP);
    EXPECT_NE(s.error().message().find("journal format version 2 is newer than this PackFS reads (1)"),
              std::string::npos)
        << s.error().message();
    // Version 0 (re-checksummed) is corruption, not a newer format.
    const auto zero = encode_journal_header(header_fields(), 0);
    write_bytes(path, std::string_view(reinterpret_cast<const char*>(zero.data()), zero.size()));
    EXPECT_EQ(scan_all(path).error().code(), kErrCorrupt);
}

// --- group commit -------------------------------------------------------------------------------

// The records of `threads` threads, each numbering its own from 0 (payload: thread, number):
// every thread's records appear in the order it appended them.
void expect_each_thread_in_order(const std::vector<Rec>& records, int threads) {
    std::vector<int> next(static_cast<std::size_t>(threads), 0);
    for (std::size_t i = 0; i < records.size(); ++i) {
        const Rec& r = records[i];
        ASSERT_EQ(r.seq, i + 1);
        ASSERT_EQ(r.payload.size(), 8u);
        uint32_t id[2];
        std::memcpy(id, r.payload.data(), 8);
        ASSERT_LT(id[0], static_cast<uint32_t>(threads));
        EXPECT_EQ(r.type, id[0]);
        EXPECT_EQ(static_cast<int>(id[1]), next[id[0]]++);
    }
}

// 8 threads, each appending `per_thread` records under one lock (as the volume does) and then
// waiting for each to be durable: wait_durable (batch) or sync (explicit, an fsync each as
// writers through a mount make). Every wait returns with its record durable, the threads share
// fdatasyncs, and the file holds every record, each thread's in its order.
void check_group_commit(Durability mode, int per_thread) {
    TempDir dir;
    const std::string path = (dir.path / "journal").string();
    auto created = JournalWriter::create(path, header_fields(), mode);
    ASSERT_TRUE(created);
    JournalWriter& w = **created;
    constexpr int kThreads = 8;
    std::mutex volume_lock;  // the volume appends under its lock, waits outside it
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < per_thread; ++i) {
                uint32_t id[2] = {static_cast<uint32_t>(t), static_cast<uint32_t>(i)};
                Result<JournalTicket> ticket = [&] {
                    std::lock_guard lock(volume_lock);
                    return w.append(static_cast<uint16_t>(t), std::as_bytes(std::span(id)));
                }();
                const Result<void> durable =
                    !ticket ? Result<void>(std::unexpected(ticket.error()))
                            : mode == Durability::batch ? w.wait_durable(*ticket) : w.sync();
                if (!durable || w.durable_seq() < ticket->seq) ++failures;
            }
        });
    }
    for (auto& th : threads) th.join();
    const uint64_t total = uint64_t{kThreads} * per_thread;
    EXPECT_EQ(failures.load(), 0);
    EXPECT_EQ(w.durable_seq(), total);
    std::printf("%s group commit: %d threads x %d records, each waited for: %llu fdatasyncs\n",
                mode_name(mode), kThreads, per_thread,
                static_cast<unsigned long long>(w.fsync_count()));
    EXPECT_LT(w.fsync_count(), total / 2);
    auto s = scan_all(path);
    ASSERT_TRUE(s) << s.error().message();
    EXPECT_TRUE(s->scan.clean()) << s->scan.reason;
    ASSERT_EQ(s->records.size(), total);
    expect_each_thread_in_order(s->records, kThreads);
}

TEST(Journal, GroupCommitSharesFsyncsAcrossThreads) {
    check_group_commit(Durability::batch, sanitizer_run() ? 100 : 300);
}

TEST(Journal, ExplicitSyncsOfManyThreadsShareFdatasyncs) {
    check_group_commit(Durability::explicit_sync, sanitizer_run() ? 60 : 200);
}

// Explicit mode: while a sync waits for the disk, appends go on (the volume's mutations are not
// held up behind an fdatasync), and a second sync meanwhile waits for that flush, then makes
// what was appended since durable with one more.
TEST(Journal, ExplicitAppendsGoOnWhileASyncWaitsForTheDisk) {
    TempDir dir;
    const std::string path = (dir.path / "journal").string();
    auto created = JournalWriter::create(path, header_fields(), Durability::explicit_sync);
    ASSERT_TRUE(created);
    JournalWriter& w = **created;
    ASSERT_TRUE(w.append(1, payload_of(100, 1)));
    std::mutex m;
    std::condition_variable cv;
    bool in_fsync = false, release = false;
    HookGuard hook([&](io::IoOp op, std::string_view) {
        if (op != io::IoOp::fsync) return 0;
        std::unique_lock lock(m);
        if (!in_fsync) {  // only the first fdatasync waits
            in_fsync = true;
            cv.notify_all();
            cv.wait(lock, [&] { return release; });
        }
        return 0;
    });
    std::thread first([&] { EXPECT_TRUE(w.sync()); });
    {
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return in_fsync; });
    }
    auto appended = std::async(std::launch::async, [&] { return w.append(2, payload_of(50, 2)); });
    ASSERT_EQ(appended.wait_for(std::chrono::seconds(5)), std::future_status::ready)
        << "an append waited for another thread's fdatasync";
    ASSERT_TRUE(appended.get());
    std::thread second([&] { EXPECT_TRUE(w.sync()); });
    {
        std::lock_guard lock(m);
        release = true;
    }
    cv.notify_all();
    first.join();
    second.join();
    EXPECT_EQ(w.durable_seq(), 2u);
    EXPECT_EQ(w.fsync_count(), 2u);
    auto s = scan_all(path);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->records.size(), 2u);
}

// Explicit mode with someone to ask (the volume's commit thread): past kSyncBytes written the
// writer asks, once until the next flush, and does not sync by itself under the caller's lock.
TEST(Journal, ExplicitModeAsksForASyncInsteadOfSyncingInline) {
    TempDir dir;
    const std::string path = (dir.path / "journal").string();
    auto created = JournalWriter::create(path, header_fields(), Durability::explicit_sync);
    ASSERT_TRUE(created);
    JournalWriter& w = **created;
    int asked = 0;
    w.set_sync_due([&] { ++asked; });
    const auto chunk = payload_of(256 << 10, 1);
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(w.append(1, chunk));
    EXPECT_EQ(w.fsync_count(), 0u);
    EXPECT_EQ(asked, 1);  // once, however much more is appended before the sync
    EXPECT_GE(w.file_bytes(), JournalWriter::kSyncBytes);  // written out meanwhile
    ASSERT_TRUE(w.sync());
    EXPECT_EQ(w.fsync_count(), 1u);
    EXPECT_EQ(w.durable_seq(), 100u);
    for (int i = 0; i < 80; ++i) ASSERT_TRUE(w.append(1, chunk));
    EXPECT_EQ(asked, 2);  // asked again after that flush
    auto s = scan_all(path);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->records.size(), 180u);  // written out (not yet synced): whole frames
}

// Explicit mode: a flush that fails while other threads append and sync keeps every record
// pending, in order; the syncs that ran into the fault say so, and a later sync makes them all
// durable (the file then holds them all, in order, and nothing torn).
TEST(Journal, ExplicitFlushFailingUnderConcurrencyKeepsEveryRecordInOrder) {
    TempDir dir;
    const std::string path = (dir.path / "journal").string();
    auto created = JournalWriter::create(path, header_fields(), Durability::explicit_sync);
    ASSERT_TRUE(created);
    JournalWriter& w = **created;
    constexpr int kThreads = 4;
    const int per_thread = sanitizer_run() ? 40 : 150;
    std::atomic<int> faults{0};
    std::atomic<int> syncs_failed{0};
    std::mutex volume_lock;
    {
        HookGuard hook([&](io::IoOp op, std::string_view) {
            if (op != io::IoOp::fsync && op != io::IoOp::write) return 0;
            const int n = faults.fetch_add(1);
            return n % 7 == 3 ? (op == io::IoOp::write ? io::kShortWrite : EIO) : 0;
        });
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t) {
            threads.emplace_back([&, t] {
                for (int i = 0; i < per_thread; ++i) {
                    uint32_t id[2] = {static_cast<uint32_t>(t), static_cast<uint32_t>(i)};
                    {
                        std::lock_guard lock(volume_lock);
                        ASSERT_TRUE(w.append(static_cast<uint16_t>(t), std::as_bytes(std::span(id))));
                    }
                    if (i % 3 == 0 && !w.sync()) ++syncs_failed;
                }
            });
        }
        for (auto& th : threads) th.join();
    }
    EXPECT_GT(syncs_failed.load(), 0);
    ASSERT_TRUE(w.sync());
    const uint64_t total = uint64_t{kThreads} * per_thread;
    EXPECT_EQ(w.durable_seq(), total);
    auto s = scan_all(path);
    ASSERT_TRUE(s);
    EXPECT_TRUE(s->scan.clean()) << s->scan.reason;
    ASSERT_EQ(s->records.size(), total);
    expect_each_thread_in_order(s->records, kThreads);
}

// --- faults ---------------------------------------------------------------------------------------

class JournalFaults : public ::testing::TestWithParam<Durability> {};

INSTANTIATE_TEST_SUITE_P(Modes, JournalFaults,
                         ::testing::Values(Durability::always, Durability::batch),
                         [](const auto& param_info) { return std::string(mode_name(param_info.param)); });

// One fault during record 4's write or sync: it is discarded, the file holds exactly 1..3,
// resume() continues at 4.
void check_single_fault(Durability mode, io::IoOp op, int answer, int expect_errno) {
    TempDir dir;
    const std::string path = (dir.path / "journal").string();
    auto created = JournalWriter::create(path, header_fields(), mode);
    ASSERT_TRUE(created);
    JournalWriter& w = **created;
    std::vector<Rec> expect;
    for (int i = 0; i < 3; ++i) expect.push_back(append_one(w, 1, payload_of(100 + i, i)));
    {
        HookGuard hook(fail_nth(op, 1, answer));
        auto t = w.append(1, payload_of(500, 99));
        Result<void> outcome = t ? w.wait_durable(*t) : Result<void>(std::unexpected(t.error()));
        ASSERT_FALSE(outcome);
        EXPECT_EQ(outcome.error().code(), expect_errno) << outcome.error().message();
        EXPECT_EQ(outcome.error().path(), path);
    }
    EXPECT_EQ(w.first_discarded_seq(), 4u);
    EXPECT_EQ(w.durable_seq(), 3u);
    auto refused = w.append(1, payload_of(1, 1));
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code(), expect_errno);

    auto s = scan_all(path);
    ASSERT_TRUE(s);
    EXPECT_TRUE(s->scan.clean()) << s->scan.reason;  // the torn write was cut off
    EXPECT_EQ(s->records, expect);

    ASSERT_TRUE(w.resume());
    for (int i = 0; i < 3; ++i) expect.push_back(append_one(w, 2, payload_of(7 * i, 50 + i)));
    EXPECT_EQ(expect[3].seq, 4u);
    auto after = scan_all(path);
    ASSERT_TRUE(after);
    EXPECT_TRUE(after->scan.clean()) << after->scan.reason;
    EXPECT_EQ(after->records, expect);
}

TEST_P(JournalFaults, EnospcOnWriteDiscardsTheRecord) {
    check_single_fault(GetParam(), io::IoOp::write, ENOSPC, ENOSPC);
}

TEST_P(JournalFaults, TornShortWriteIsCutOff) {
    check_single_fault(GetParam(), io::IoOp::write, io::kShortWrite, ENOSPC);
}

TEST_P(JournalFaults, EioOnFdatasyncDiscardsTheRecord) {
    check_single_fault(GetParam(), io::IoOp::fsync, EIO, EIO);
}

TEST(JournalFailure, BatchFailureReachesEveryWaiterOfTheDiscardedRange) {
    TempDir dir;
    const std::string path = (dir.path / "journal").string();
    auto created = JournalWriter::create(path, header_fields(), Durability::batch);
    ASSERT_TRUE(created);
    JournalWriter& w = **created;
    std::vector<Rec> expect;
    for (int i = 0; i < 5; ++i) expect.push_back(append_one(w, 1, payload_of(10, i)));
    const JournalTicket old{0, 3};

    std::vector<JournalTicket> pending;
    for (int i = 0; i < 3; ++i) pending.push_back(*w.append(1, payload_of(10, 100 + i)));
    {
        HookGuard hook(fail_nth(io::IoOp::fsync, 1, EIO));
        auto r = w.wait_durable(pending[0]);
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error().code(), EIO);
    }
    for (const JournalTicket& t : pending) EXPECT_EQ(w.wait_durable(t).error().code(), EIO);
    EXPECT_TRUE(w.wait_durable(old));  // durable before the failure
    EXPECT_EQ(w.first_discarded_seq(), 6u);
    EXPECT_EQ(w.sync().error().code(), EIO);

    ASSERT_TRUE(w.resume());
    auto t6 = w.append(3, payload_of(4, 600));
    ASSERT_TRUE(t6);
    EXPECT_EQ(t6->seq, 6u);
    EXPECT_NE(t6->epoch, pending[0].epoch);
    // The old ticket for seq 6 still names the discarded record, never the new one.
    EXPECT_EQ(w.wait_durable(pending[0]).error().code(), EIO);
    ASSERT_TRUE(w.wait_durable(*t6));
    expect.push_back(Rec{6, 3, payload_of(4, 600)});
    auto s = scan_all(path);
    ASSERT_TRUE(s);
    EXPECT_TRUE(s->scan.clean());
    EXPECT_EQ(s->records, expect);
}

TEST(JournalFailure, BatchFaultUnderConcurrencyKeepsExactlyTheAcknowledged) {
    TempDir dir;
    const std::string path = (dir.path / "journal").string();
    auto created = JournalWriter::create(path, header_fields(), Durability::batch);
    ASSERT_TRUE(created);
    JournalWriter& w = **created;
    constexpr int kThreads = 6;
    std::mutex volume_lock;
    std::mutex acked_mu;
    std::vector<uint64_t> acked;
    std::atomic<int> errors{0};
    {
        HookGuard hook(fail_nth(io::IoOp::fsync, 5, EIO));
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t) {
            threads.emplace_back([&, t] {
                for (int i = 0; i < 100; ++i) {
                    Result<JournalTicket> ticket = [&] {
                        std::lock_guard lock(volume_lock);
                        return w.append(1, payload_of(24, static_cast<uint64_t>(t * 1000 + i)));
                    }();
                    if (!ticket) {
                        ++errors;
                        return;
                    }
                    if (auto r = w.wait_durable(*ticket); !r) {
                        EXPECT_EQ(r.error().code(), EIO);
                        ++errors;
                        return;
                    }
                    std::lock_guard lock(acked_mu);
                    acked.push_back(ticket->seq);
                }
            });
        }
        for (auto& th : threads) th.join();
    }
    EXPECT_GT(errors.load(), 0);
    auto s = scan_all(path);
    ASSERT_TRUE(s);
    EXPECT_TRUE(s->scan.clean()) << s->scan.reason;
    const uint64_t durable = w.durable_seq();
    EXPECT_EQ(s->scan.last_seq, durable);
    EXPECT_EQ(w.first_discarded_seq(), durable + 1);
    // Every acknowledged record is in the file; nothing in the file was refused.
    std::sort(acked.begin(), acked.end());
    ASSERT_FALSE(acked.empty());
    EXPECT_LE(acked.back(), durable);
    EXPECT_EQ(acked.size(), durable);  // every record up to durable was waited on by someone
    ASSERT_TRUE(w.resume());
    auto t = w.append(1, payload_of(3, 3));
    ASSERT_TRUE(t);
    EXPECT_EQ(t->seq, durable + 1);
    ASSERT_TRUE(w.wait_durable(*t));
    auto after = scan_all(path);
    ASSERT_TRUE(after);
    EXPECT_TRUE(after->scan.clean());
    EXPECT_EQ(after->scan.last_seq, durable + 1);
}

TEST(JournalFailure, FailedTruncateAfterAFaultBreaksTheWriterForGood) {
    TempDir dir;
    const std::string path = (dir.path / "journal").string();
    auto created = JournalWriter::create(path, header_fields(), Durability::always);
    ASSERT_TRUE(created);
    JournalWriter& w = **created;
    append_one(w, 1, payload_of(10, 1));
    {
        HookGuard hook([](io::IoOp op, std::string_view) {
            return op == io::IoOp::write ? io::kShortWrite : op == io::IoOp::truncate ? EIO : 0;
        });
        EXPECT_EQ(w.append(1, payload_of(100, 2)).error().code(), ENOSPC);
    }
    EXPECT_EQ(w.append(1, payload_of(1, 3)).error().code(), EIO);
    EXPECT_EQ(w.resume().error().code(), EIO);
    EXPECT_EQ(w.append(1, payload_of(1, 3)).error().code(), EIO);
    // Recovery decides from the file: the good record, then the torn one dropped.
    auto s = scan_all(path);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->records.size(), 1u);
    EXPECT_EQ(s->scan.dropped_records, 1u);
}

TEST(JournalFailure, ExplicitFailedWriteKeepsRecordsPendingUntilASyncSucceeds) {
    for (auto [op, answer] : {std::pair{io::IoOp::write, ENOSPC}, std::pair{io::IoOp::write, io::kShortWrite},
                              std::pair{io::IoOp::fsync, EIO}}) {
        SCOPED_TRACE(fmt::format("op {} answer {}", static_cast<int>(op), answer));
        TempDir dir;
        const std::string path = (dir.path / "journal").string();
        auto created = JournalWriter::create(path, header_fields(), Durability::explicit_sync);
        ASSERT_TRUE(created);
        JournalWriter& w = **created;
        std::vector<Rec> expect;
        for (int i = 0; i < 4; ++i) expect.push_back(append_one(w, 1, payload_of(50, i)));
        ASSERT_TRUE(w.sync());
        for (int i = 0; i < 6; ++i) expect.push_back(append_one(w, 2, payload_of(3000, 10 + i)));
        {
            HookGuard hook([op, answer](io::IoOp o, std::string_view) { return o == op ? answer : 0; });
            auto r = w.sync();
            ASSERT_FALSE(r);
            EXPECT_EQ(r.error().code(), answer == io::kShortWrite ? ENOSPC : answer);
            EXPECT_EQ(w.sync().error().code(), answer == io::kShortWrite ? ENOSPC : answer);
            // Still accepted while pending.
            expect.push_back(append_one(w, 3, payload_of(10, 77)));
            EXPECT_EQ(w.durable_seq(), 4u);
            auto mid = scan_all(path);
            ASSERT_TRUE(mid);
            EXPECT_TRUE(mid->scan.clean()) << mid->scan.reason;  // no torn frame left behind
            EXPECT_EQ(mid->records.size(), 4u);
        }
        ASSERT_TRUE(w.sync());
        EXPECT_EQ(w.durable_seq(), expect.size());
        auto s = scan_all(path);
        ASSERT_TRUE(s);
        EXPECT_TRUE(s->scan.clean()) << s->scan.reason;
        EXPECT_EQ(s->records, expect);
    }
}

TEST(JournalFailure, ExplicitModeBoundsPendingMemoryWhileTheDiskFails) {
    TempDir dir;
    const std::string path = (dir.path / "journal").string();
    auto created = JournalWriter::create(path, header_fields(), Durability::explicit_sync);
    ASSERT_TRUE(created);
    JournalWriter& w = **created;
    std::vector<Rec> expect;
    const auto big = payload_of(1 << 20, 5);
    {
        HookGuard hook([](io::IoOp o, std::string_view) { return o == io::IoOp::write ? ENOSPC : 0; });
        for (int i = 0; i < 100; ++i) {
            auto t = w.append(1, big);
            if (!t) {
                EXPECT_EQ(t.error().code(), ENOSPC);
                break;
            }
            expect.push_back(Rec{t->seq, 1, big});
        }
        EXPECT_GE(expect.size(), 60u);
        EXPECT_LE(expect.size(), 64u);
    }
    ASSERT_TRUE(w.sync());
    auto s = scan_all(path);
    ASSERT_TRUE(s);
    EXPECT_TRUE(s->scan.clean());
    EXPECT_EQ(s->records, expect);
    EXPECT_TRUE(w.append(1, big));  // room again
}

TEST(JournalFailure, ExplicitModeWritesOutAndSyncsByItselfPastItsBounds) {
    TempDir dir;
    const std::string path = (dir.path / "journal").string();
    auto created = JournalWriter::create(path, header_fields(), Durability::explicit_sync);
    ASSERT_TRUE(created);
    JournalWriter& w = **created;
    const auto chunk = payload_of(256 << 10, 1);
    for (int i = 0; i < 8; ++i) ASSERT_TRUE(w.append(1, chunk));
    EXPECT_GE(w.file_bytes(), JournalWriter::kFlushBytes);  // written out, not synced
    EXPECT_EQ(w.fsync_count(), 0u);
    for (int i = 0; i < 72; ++i) ASSERT_TRUE(w.append(1, chunk));
    EXPECT_GE(w.fsync_count(), 1u);  // past kSyncBytes of unsynced bytes
    EXPECT_GT(w.durable_seq(), 0u);
}

// A commit thread that lags (asked to sync, not yet running: a fast writer on a busy machine)
// never makes a writer refuse: past the pending bound the appender flushes itself.
TEST(JournalFailure, ExplicitModePastItsBoundFlushesWhenTheCommitThreadLags) {
    TempDir dir;
    const std::string path = (dir.path / "journal").string();
    auto created = JournalWriter::create(path, header_fields(), Durability::explicit_sync);
    ASSERT_TRUE(created);
    JournalWriter& w = **created;
    uint64_t asked = 0;
    w.set_sync_due([&] { ++asked; });  // asked, and never does it
    const auto big = payload_of(1 << 20, 7);
    std::vector<Rec> expect;
    for (int i = 0; i < 200; ++i) {
        auto t = w.append(1, big);
        ASSERT_TRUE(t.has_value()) << "append " << i << ": " << t.error().message();
        expect.push_back(Rec{t->seq, 1, big});
    }
    EXPECT_GE(asked, 1u);
    EXPECT_GE(w.fsync_count(), 2u);  // the appender's own flushes
    ASSERT_TRUE(w.sync());
    auto s = scan_all(path);
    ASSERT_TRUE(s);
    EXPECT_TRUE(s->scan.clean());
    EXPECT_EQ(s->records, expect);
}

// --- io primitives ----------------------------------------------------------------------------

TEST(Io, HookSeesEveryCallAndShortWriteWritesHalf) {
    TempDir dir;
    const std::string path = (dir.path / "f").string();
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    std::vector<std::pair<io::IoOp, std::string>> calls;
    const auto data = payload_of(1000, 1);
    {
        HookGuard hook([&](io::IoOp op, std::string_view what) {
            calls.emplace_back(op, std::string(what));
            return op == io::IoOp::write ? io::kShortWrite : 0;
        });
        auto r = io::pwrite_all(fd, data, 0, "the file");
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error().code(), ENOSPC);
        EXPECT_EQ(r.error().path(), "the file");
        EXPECT_TRUE(io::fdatasync(fd, "the file"));
        EXPECT_TRUE(io::ftruncate(fd, 300, "the file"));
        EXPECT_TRUE(io::step("protocol.step"));
    }
    EXPECT_EQ(std::filesystem::file_size(path), 300u);
    ASSERT_EQ(calls.size(), 4u);
    EXPECT_EQ(calls[0].first, io::IoOp::write);
    EXPECT_EQ(calls[3].first, io::IoOp::step);
    EXPECT_EQ(calls[3].second, "protocol.step");
    ::close(fd);
    EXPECT_TRUE(std::filesystem::exists(path));
    {
        HookGuard hook([](io::IoOp op, std::string_view) { return op == io::IoOp::write ? 0 : EACCES; });
        EXPECT_EQ(io::step("x").error().code(), EACCES);
        EXPECT_EQ(io::rename(path, path + ".2", "r").error().code(), EACCES);
        EXPECT_EQ(io::fsync_dir(dir.path.string(), "d").error().code(), EACCES);
    }
    EXPECT_TRUE(std::filesystem::exists(path));  // the refused rename did nothing
}

TEST(Io, PrimitivesWithoutAHookDoTheIo) {
    TempDir dir;
    const std::string path = (dir.path / "f").string();
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    const auto data = payload_of(5000, 2);
    ASSERT_TRUE(io::write_all(fd, data, "f"));
    ASSERT_TRUE(io::pwrite_all(fd, std::span(data).first(10), 4995, "f"));
    ASSERT_TRUE(io::fsync(fd, "f"));
    EXPECT_EQ(std::filesystem::file_size(path), 5005u);
    ::close(fd);
    ASSERT_TRUE(io::rename(path, path + ".2", "f"));
    ASSERT_TRUE(io::fsync_dir(dir.path.string(), "dir"));
    EXPECT_TRUE(std::filesystem::exists(path + ".2"));
    EXPECT_EQ(io::rename(path, path + ".3", "f").error().code(), ENOENT);
    EXPECT_EQ(io::fsync_dir((dir.path / "nope").string(), "dir").error().code(), ENOENT);
    EXPECT_EQ(io::write_all(-1, data, "f").error().code(), EBADF);
}

}  // namespace
}  // namespace packfs::volume
