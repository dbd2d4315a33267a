// Concurrency of the mem backend (DESIGN §4, §5): one writer mutates while four readers walk
// the live tree and snapshots they take, checking invariants that every consistent version of
// the tree keeps. Runs under ThreadSanitizer (label tsan), so a data race fails it too.
//
// What the writer does, round after round (round r writes generation r):
// - /gen/f0../gen/f3: 150,000-byte self-checking files (gen, id, payload, checksum) spanning
//   three 64 KiB chunks. Even ones are overwritten in place by one pwrite; odd ones are
//   replaced by writing /stage/fN and renaming it over. Always in order f0, f1, f2, f3.
// - /log: fixed 64-byte self-checking records appended by one pwrite each (record k holds
//   (epoch, k)); now and then truncated to 0 and a new epoch started.
// - /p1/mover <-> /p2/mover: a directory (holding a self-checking file) renamed between two
//   parents; /x/a and /x/b swapped with RENAME_EXCHANGE.
// - /churn: self-checking files created (staged and renamed in) and unlinked.
//
// The invariants, exact for every consistent version:
// - Every file read whole in one pread (or from a snapshot) checks out: no torn write.
// - In a snapshot the generations g0..g3 of f0..f3 are g,...,g,g-1,...,g-1: non-increasing
//   with g0 - g3 <= 1. Live, reading f3 first and f0 last, they are non-increasing (each file
//   only moves forward and f(i) is always at least f(i+1)).
// - A reader's successive snapshots never go back: sum of generations does not decrease.
// - /log read in one pread holds whole records of one epoch, numbered 0..n-1.
// - In a snapshot the mover is in exactly one of /p1, /p2, with its file; /x holds exactly a
//   and b, with contents "A" and "B" in some order. Live, /x/a and /x/b never vanish (an
//   exchange or a rename over is atomic), and neither do /gen/f1, /gen/f3.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <expected>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "packfs/mem.hpp"
#include "packfs/path.hpp"

namespace packfs {
namespace {

constexpr std::size_t kGenFiles = 4;
// 150,000 bytes span three 64 KiB chunks; under a sanitizer 70,000 still cross a boundary.
std::size_t kGenFileSize = 150'000;
std::size_t kChurnMaxSize = 70'000;
constexpr std::size_t kLogRecord = 64;
constexpr uint64_t kLogMaxRecords = 4096;
constexpr uint32_t kMagic = 0x50465343;  // "PFSC"

uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

uint64_t checksum(std::string_view data) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (unsigned char c : data) h = (h ^ c) * 0x100000001b3ULL;
    return h;
}

template <class T>
void put(std::string& s, std::size_t at, T v) {
    std::memcpy(s.data() + at, &v, sizeof v);
}
template <class T>
T get(std::string_view s, std::size_t at) {
    T v;
    std::memcpy(&v, s.data() + at, sizeof v);
    return v;
}

// [magic u32][gen u32][id u32][size u32][payload from (gen,id)][checksum u64 of all before]
std::string make_content(uint32_t gen, uint32_t id, std::size_t size) {
    std::string s(size, '\0');
    put<uint32_t>(s, 0, kMagic);
    put<uint32_t>(s, 4, gen);
    put<uint32_t>(s, 8, id);
    put<uint32_t>(s, 12, static_cast<uint32_t>(size));
    uint64_t x = (static_cast<uint64_t>(gen) << 32) | id;
    for (std::size_t i = 16; i + 8 < size; i += 8) {
        x = mix(x);
        std::memcpy(s.data() + i, &x, std::min<std::size_t>(8, size - 8 - i));
    }
    put<uint64_t>(s, size - 8, checksum(std::string_view(s).substr(0, size - 8)));
    return s;
}

struct Decoded {
    uint32_t gen = 0;
    uint32_t id = 0;
};

// The generation and id of a self-checking file, or an error naming what is wrong.
std::expected<Decoded, std::string> decode(std::string_view s) {
    if (s.size() < 24) return std::unexpected(fmt::format("short file ({} bytes)", s.size()));
    if (get<uint32_t>(s, 0) != kMagic) return std::unexpected("bad magic");
    if (get<uint32_t>(s, 12) != s.size()) {
        return std::unexpected(fmt::format("size field {} but {} bytes read",
                                           get<uint32_t>(s, 12), s.size()));
    }
    if (get<uint64_t>(s, s.size() - 8) != checksum(s.substr(0, s.size() - 8))) {
        return std::unexpected(fmt::format("checksum mismatch (gen field {})",
                                           get<uint32_t>(s, 4)));
    }
    return Decoded{get<uint32_t>(s, 4), get<uint32_t>(s, 8)};
}

std::string log_record(uint32_t epoch, uint32_t seq) {
    std::string s(kLogRecord, '\0');
    put<uint32_t>(s, 0, epoch);
    put<uint32_t>(s, 4, seq);
    for (std::size_t i = 8; i < kLogRecord - 8; ++i) s[i] = static_cast<char>(mix(epoch * 7919 + seq + i));
    put<uint64_t>(s, kLogRecord - 8, checksum(std::string_view(s).substr(0, kLogRecord - 8)));
    return s;
}

std::span<const std::byte> bytes_of(std::string_view s) {
    return std::as_bytes(std::span(s.data(), s.size()));
}

// Reads a whole file with a single pread (one consistent version on a live backend).
Result<std::string> read_once(Backend& fs, std::string_view path, std::size_t max = 300'000) {
    auto f = fs.open(path, O_RDONLY);
    if (!f) return std::unexpected(f.error());
    std::string buf(max, '\0');
    auto n = (*f)->pread(std::as_writable_bytes(std::span(buf.data(), buf.size())), 0);
    if (!n) return std::unexpected(n.error());
    buf.resize(*n);
    return buf;
}

class Checker {
public:
    void fail(std::string what) {
        std::lock_guard lock(mu_);
        if (errors_.size() < 20) errors_.push_back(std::move(what));
        failed_.store(true);
    }
    bool failed() const { return failed_.load(); }
    std::vector<std::string> errors() {
        std::lock_guard lock(mu_);
        return errors_;
    }

private:
    std::mutex mu_;
    std::vector<std::string> errors_;
    std::atomic<bool> failed_{false};
};

void must(Checker& c, const Result<void>& r, std::string_view what) {
    if (!r) c.fail(fmt::format("writer: {} failed: {}", what, r.error().message()));
}

class Writer {
public:
    Writer(Backend& fs, Checker& check) : fs_(fs), check_(check) {}

    void setup() {
        for (const char* d : {"/gen", "/stage", "/p1", "/p2", "/x", "/churn"}) {
            must(check_, fs_.mkdir(d), d);
        }
        for (uint32_t i = 0; i < kGenFiles; ++i) {
            must(check_, write_file(fs_, fmt::format("/gen/f{}", i), make_content(0, i, kGenFileSize)),
                 "gen file");
        }
        must(check_, fs_.mkdir("/p1/mover"), "mover");
        must(check_, write_file(fs_, "/p1/mover/inside", make_content(0, 100, 1000)), "inside");
        must(check_, write_file(fs_, "/x/a", "A"), "x/a");
        must(check_, write_file(fs_, "/x/b", "B"), "x/b");
        must(check_, write_file(fs_, "/log", ""), "log");
        auto f = fs_.open("/log", O_RDWR);
        if (!f) return check_.fail("writer: open /log");
        log_ = std::move(*f);
        for (uint32_t i = 0; i < kGenFiles; i += 2) {
            auto g = fs_.open(fmt::format("/gen/f{}", i), O_RDWR);
            if (!g) return check_.fail("writer: open gen file");
            in_place_.push_back(std::move(*g));
        }
    }

    void round() {
        const uint32_t gen = ++gen_;
        for (uint32_t i = 0; i < kGenFiles; ++i) {
            std::string content = make_content(gen, i, kGenFileSize);
            if (i % 2 == 0) {
                auto n = in_place_[i / 2]->pwrite(bytes_of(content), 0);
                if (!n) check_.fail("writer: pwrite gen file: " + n.error().message());
            } else {
                std::string stage = fmt::format("/stage/f{}", i);
                must(check_, write_file(fs_, stage, content), "stage");
                must(check_, fs_.rename(stage, fmt::format("/gen/f{}", i)), "rename over");
            }
        }
        // The log: one record per round, a new epoch now and then.
        if (log_seq_ >= kLogMaxRecords) {
            auto t = log_->truncate(0);
            if (!t) check_.fail("writer: truncate log");
            ++log_epoch_;
            log_seq_ = 0;
        }
        for (int k = 0; k < 4; ++k) {
            auto n = log_->pwrite(bytes_of(log_record(log_epoch_, log_seq_)),
                                  uint64_t{log_seq_} * kLogRecord);
            if (!n) check_.fail("writer: append log");
            ++log_seq_;
        }
        // The mover and the exchange.
        const bool in_p1 = gen % 2 == 1;
        must(check_, fs_.rename(in_p1 ? "/p1/mover" : "/p2/mover", in_p1 ? "/p2/mover" : "/p1/mover"),
             "move dir");
        must(check_, fs_.rename("/x/a", "/x/b", RenameFlags::exchange), "exchange");
        // Churn.
        std::string name = fmt::format("/churn/c{}", gen % 16);
        if (gen % 3 == 0) {
            (void)fs_.unlink(name);
        } else {
            must(check_, write_file(fs_, "/stage/churn", make_content(gen, 200 + gen % 16, 24 + gen % kChurnMaxSize)),
                 "stage churn");
            must(check_, fs_.rename("/stage/churn", name), "churn in");
        }
    }

private:
    Backend& fs_;
    Checker& check_;
    uint32_t gen_ = 0;
    uint32_t log_epoch_ = 0;
    uint32_t log_seq_ = 0;
    FileHandle log_;
    std::vector<FileHandle> in_place_;
};

void check_log(Checker& c, std::string_view data, std::string_view where) {
    if (data.size() % kLogRecord != 0) {
        return c.fail(fmt::format("{}: /log is {} bytes, not whole records", where, data.size()));
    }
    uint32_t epoch = 0;
    for (std::size_t k = 0; k * kLogRecord < data.size(); ++k) {
        std::string_view r = data.substr(k * kLogRecord, kLogRecord);
        uint32_t e = get<uint32_t>(r, 0);
        if (k == 0) epoch = e;
        if (r != log_record(epoch, static_cast<uint32_t>(k))) {
            return c.fail(fmt::format("{}: /log record {} is not (epoch {}, seq {})", where, k,
                                      epoch, k));
        }
    }
}

void check_gen_file(Checker& c, const Result<std::string>& data, uint32_t id, uint32_t& gen,
                    std::string_view where) {
    if (!data) return c.fail(fmt::format("{}: /gen/f{}: {}", where, id, data.error().message()));
    auto d = decode(*data);
    if (!d) return c.fail(fmt::format("{}: /gen/f{} torn: {}", where, id, d.error()));
    if (d->id != id) return c.fail(fmt::format("{}: /gen/f{} holds file {}", where, id, d->id));
    gen = d->gen;
}

// Walks a whole (frozen) tree: every listed entry can be stat'ed and matches its listing;
// every self-checking file checks out.
void walk_snapshot(Checker& c, Backend& snap) {
    std::vector<std::string> dirs{"/"};
    while (!dirs.empty() && !c.failed()) {
        std::string dir = std::move(dirs.back());
        dirs.pop_back();
        auto list = snap.readdir(dir);
        if (!list) return c.fail(fmt::format("snapshot readdir {}: {}", dir, list.error().message()));
        for (const auto& e : *list) {
            std::string p = path_join(dir, e.name);
            auto st = snap.lstat(p);
            if (!st || st->ino != e.ino || st->type != e.type) {
                return c.fail(fmt::format("snapshot: listed {} does not stat the same", p));
            }
            if (e.type == FileType::directory) {
                dirs.push_back(p);
            } else if (e.type == FileType::regular && p != "/log" && !p.starts_with("/x/") &&
                       !p.starts_with("/stage/")) {
                auto data = read_file(snap, p);
                if (!data) return c.fail(fmt::format("snapshot read {}: {}", p, data.error().message()));
                if (auto d = decode(*data); !d) {
                    return c.fail(fmt::format("snapshot: {} torn: {}", p, d.error()));
                }
                if (data->size() != st->size) {
                    return c.fail(fmt::format("snapshot: {} read {} bytes, stat says {}", p,
                                              data->size(), st->size));
                }
            }
        }
    }
}

void check_snapshot(Checker& c, Backend& snap, uint64_t& last_sum) {
    uint32_t g[kGenFiles] = {};
    for (uint32_t i = 0; i < kGenFiles; ++i) {
        check_gen_file(c, read_file(snap, fmt::format("/gen/f{}", i)), i, g[i], "snapshot");
    }
    if (c.failed()) return;
    uint64_t sum = 0;
    for (uint32_t i = 0; i < kGenFiles; ++i) {
        sum += g[i];
        if (i > 0 && g[i] > g[i - 1]) {
            return c.fail(fmt::format("snapshot: generations {} {} {} {} not non-increasing", g[0],
                                      g[1], g[2], g[3]));
        }
    }
    if (g[0] - g[kGenFiles - 1] > 1) {
        return c.fail(fmt::format("snapshot: generations {} {} {} {} span more than one round",
                                  g[0], g[1], g[2], g[3]));
    }
    if (sum < last_sum) {
        return c.fail(fmt::format("snapshot went back in time: sum {} after {}", sum, last_sum));
    }
    last_sum = sum;

    auto log = read_file(snap, "/log");
    if (!log) return c.fail("snapshot: read /log: " + log.error().message());
    check_log(c, *log, "snapshot");

    auto m1 = snap.lstat("/p1/mover");
    auto m2 = snap.lstat("/p2/mover");
    if (m1.has_value() == m2.has_value()) {
        return c.fail(fmt::format("snapshot: mover in /p1: {}, in /p2: {} (must be exactly one)",
                                  m1.has_value(), m2.has_value()));
    }
    auto inside = read_file(snap, m1 ? "/p1/mover/inside" : "/p2/mover/inside");
    if (!inside || !decode(*inside)) return c.fail("snapshot: the mover's file is missing or torn");

    auto x = snap.readdir("/x");
    if (!x || x->size() != 2) return c.fail("snapshot: /x does not hold exactly two entries");
    auto a = read_file(snap, "/x/a");
    auto b = read_file(snap, "/x/b");
    if (!a || !b || !((*a == "A" && *b == "B") || (*a == "B" && *b == "A"))) {
        return c.fail("snapshot: /x/a and /x/b are not A and B in some order");
    }
    walk_snapshot(c, snap);
}

void check_live(Checker& c, Backend& fs) {
    uint32_t g[kGenFiles] = {};
    for (uint32_t i = kGenFiles; i-- > 0;) {  // f3 first: each later read may only be newer
        check_gen_file(c, read_once(fs, fmt::format("/gen/f{}", i)), i, g[i], "live");
    }
    if (c.failed()) return;
    for (uint32_t i = 1; i < kGenFiles; ++i) {
        if (g[i] > g[i - 1]) {
            return c.fail(fmt::format("live: generations {} {} {} {} read f3..f0 not "
                                      "non-increasing",
                                      g[0], g[1], g[2], g[3]));
        }
    }
    auto log = read_once(fs, "/log");
    if (!log) return c.fail("live: read /log: " + log.error().message());
    check_log(c, *log, "live");
    for (const char* p : {"/x/a", "/x/b"}) {
        auto data = read_once(fs, p);
        if (!data || (*data != "A" && *data != "B")) {
            return c.fail(fmt::format("live: {} vanished or is wrong during an exchange", p));
        }
    }
    // The churn directory: entries may vanish between readdir and read, never be torn.
    auto list = fs.readdir("/churn");
    if (!list) return c.fail("live: readdir /churn: " + list.error().message());
    for (const auto& e : *list) {
        auto data = read_once(fs, path_join("/churn", e.name));
        if (!data) {
            if (data.error().code() != ENOENT) c.fail("live: read churn: " + data.error().message());
            continue;
        }
        if (auto d = decode(*data); !d) c.fail(fmt::format("live: churn {} torn: {}", e.name, d.error()));
    }
}

TEST(MemConcurrency, ReadersSeeOnlyConsistentVersionsWhileOneWriterMutates) {
    auto fs = make_mem_backend();
    if (fs == nullptr) GTEST_SKIP() << "mem backend not built yet";
    const char* san = std::getenv("PACKFS_SANITIZER_RUN");
    const bool sanitizer = san != nullptr && std::string_view(san) == "1";
    const auto duration = std::chrono::milliseconds(sanitizer ? 1500 : 3000);
    if (sanitizer) {
        kGenFileSize = 70'000;
        kChurnMaxSize = 4'000;
    }

    Checker check;
    Writer writer(*fs, check);
    writer.setup();
    ASSERT_FALSE(check.failed()) << check.errors().front();

    std::atomic<bool> stop{false};
    std::atomic<uint64_t> rounds{0}, snapshots{0}, live_checks{0};
    std::vector<std::thread> readers;
    for (int r = 0; r < 4; ++r) {
        readers.emplace_back([&, r] {
            uint64_t last_sum = 0;
            for (uint64_t i = 0; !stop.load() && !check.failed(); ++i) {
                if ((i + r) % 2 == 0) {
                    auto snap = fs->snapshot();
                    if (!snap) return check.fail("snapshot(): " + snap.error().message());
                    check_snapshot(check, **snap, last_sum);
                    if (auto w = (*snap)->mkdir("/nope"); w || w.error().code() != EROFS) {
                        check.fail("snapshot accepted a mutation");
                    }
                    snapshots.fetch_add(1);
                } else {
                    check_live(check, *fs);
                    live_checks.fetch_add(1);
                }
            }
        });
    }
    const auto end = std::chrono::steady_clock::now() + duration;
    while (std::chrono::steady_clock::now() < end && !check.failed()) {
        writer.round();
        rounds.fetch_add(1);
    }
    stop.store(true);
    for (auto& t : readers) t.join();

    fmt::print("writer rounds={} reader snapshots={} live checks={}\n", rounds.load(),
               snapshots.load(), live_checks.load());
    for (const auto& e : check.errors()) ADD_FAILURE() << e;
    EXPECT_GT(rounds.load(), 3u);
    EXPECT_GT(snapshots.load(), 3u);
}

}  // namespace
}  // namespace packfs
