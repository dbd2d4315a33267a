// Readers against a writer on the mem engine (DESIGN §5), by path and by node: readers walk,
// stat, list and read while the writer renames a directory between two parents, exchanges two
// names, rewrites a file in one write, creates and unlinks, and takes snapshots. Each reader
// checks what every version of the tree keeps:
// - /x/a and /x/b always exist (an exchange is atomic), by path and by a held /x node;
// - a file read whole in one pread is one write's bytes (self-checking content), by path, by a
//   held node, and in a snapshot;
// - a listing has no name twice;
// - a snapshot never changes: read twice, the same generation and the same bytes;
// - /gen/copy, a reflink of /gen/f made each round (and sometimes overwritten), reads as one
//   whole version of either, or empty.
// Run under ThreadSanitizer (label tsan): a data race fails it too.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "packfs/mem.hpp"

namespace packfs {
namespace {

bool sanitizer_run() { return std::getenv("PACKFS_SANITIZER_RUN") != nullptr; }

uint64_t checksum(std::string_view s) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
    return h;
}

// [gen u64][payload derived from gen][checksum u64 of all before]
std::string content(uint64_t gen, std::size_t size) {
    std::string s(size, '\0');
    std::memcpy(s.data(), &gen, 8);
    for (std::size_t i = 8; i + 8 < size; ++i) s[i] = static_cast<char>((gen * 131 + i) % 251);
    const uint64_t sum = checksum(std::string_view(s).substr(0, size - 8));
    std::memcpy(s.data() + size - 8, &sum, 8);
    return s;
}

// The generation a self-checking content holds, or -1 when it does not check out.
int64_t generation_of(std::string_view s) {
    if (s.size() < 16) return -1;
    uint64_t gen = 0, sum = 0;
    std::memcpy(&gen, s.data(), 8);
    std::memcpy(&sum, s.data() + s.size() - 8, 8);
    if (sum != checksum(s.substr(0, s.size() - 8))) return -1;
    return static_cast<int64_t>(gen);
}

std::string read_whole(File& f, std::size_t size) {
    std::string buf(size, '\0');
    auto n = f.pread(std::as_writable_bytes(std::span(buf.data(), buf.size())), 0);
    if (!n) return {};
    buf.resize(*n);
    return buf;
}

constexpr std::size_t kGenSize = 150'000;  // three 64 KiB chunks

struct Shared {
    std::shared_ptr<Backend> fs;
    std::atomic<bool> done{false};
    std::mutex snaps_mu;
    std::vector<std::pair<std::shared_ptr<Backend>, uint64_t>> snaps;  // snapshot, its /gen/f gen
    std::atomic<uint64_t> failures{0};
    std::mutex report_mu;
    std::vector<std::string> reports;
    void fail(std::string what) {
        failures.fetch_add(1);
        std::lock_guard lock(report_mu);
        if (reports.size() < 20) reports.push_back(std::move(what));
    }
};

void writer(Shared& s, int rounds) {
    Backend& fs = *s.fs;
    auto gen_file = fs.open("/gen/f", O_RDWR);
    if (!gen_file) return s.fail("open /gen/f");
    bool in_p1 = true;
    for (int r = 1; r <= rounds; ++r) {
        if (!fs.rename(in_p1 ? "/p1/mover" : "/p2/mover", in_p1 ? "/p2/mover" : "/p1/mover"))
            s.fail("rename mover");
        in_p1 = !in_p1;
        if (!fs.rename("/x/a", "/x/b", RenameFlags::exchange)) s.fail("exchange");
        const std::string c = content(static_cast<uint64_t>(r), kGenSize);
        if (!(*gen_file)->pwrite(std::as_bytes(std::span(c.data(), c.size())), 0))
            s.fail("pwrite /gen/f");
        // /gen/copy: emptied, then /gen/f's content shared into it whole (a reflink), and
        // every third round overwritten through the copy (which copies the shared chunks).
        {
            auto copy = fs.open("/gen/copy", O_RDWR | O_CREAT | O_TRUNC, 0644);
            if (!copy) return s.fail("open /gen/copy");
            auto from = lookup_path(fs, "/gen/f");
            auto to = lookup_path(fs, "/gen/copy");
            if (!from || !to) return s.fail("lookup /gen/f, /gen/copy");
            const HeldNode held_from(fs, from->node), held_to(fs, to->node);
            auto n = fs.copy_range(from->node, 0, to->node, 0, kGenSize);
            if (!n || *n != kGenSize) s.fail("copy_range /gen/f -> /gen/copy");
            if (r % 3 == 0) {
                const std::string other = content(static_cast<uint64_t>(r) + 100000, kGenSize);
                if (!(*copy)->pwrite(std::as_bytes(std::span(other.data(), other.size())), 0))
                    s.fail("pwrite /gen/copy");
            }
        }
        if (!write_file(fs, fmt::format("/churn/c{}", r), content(r, 64 + r % 300)))
            s.fail("create churn");
        if (r > 8 && !fs.unlink(fmt::format("/churn/c{}", r - 8))) s.fail("unlink churn");
        if (r % 16 == 0) {
            auto snap = fs.snapshot();
            if (!snap) return s.fail("snapshot");
            std::lock_guard lock(s.snaps_mu);
            s.snaps.emplace_back(*snap, static_cast<uint64_t>(r));
            if (s.snaps.size() > 8) s.snaps.erase(s.snaps.begin());
        }
    }
}

void path_reader(Shared& s) {
    Backend& fs = *s.fs;
    while (!s.done.load()) {
        for (const char* p : {"/x/a", "/x/b"}) {
            auto body = read_file(fs, p);
            if (!body || (*body != "A" && *body != "B")) s.fail(fmt::format("{} by path", p));
        }
        for (const char* p : {"/p1/mover/file", "/p2/mover/file"}) {
            if (auto body = read_file(fs, p); body && generation_of(*body) != 7)
                s.fail(fmt::format("{}: torn", p));
        }
        if (auto f = fs.open("/gen/f", O_RDONLY)) {
            if (generation_of(read_whole(**f, kGenSize)) < 0) s.fail("/gen/f by path: torn");
        } else {
            s.fail("/gen/f by path: gone");
        }
        if (auto f = fs.open("/gen/copy", O_RDONLY)) {  // empty between O_TRUNC and the copy
            const std::string body = read_whole(**f, kGenSize);
            if (!body.empty() && generation_of(body) < 0) s.fail("/gen/copy: torn");
        }
        auto names = fs.readdir("/churn");
        if (!names) {
            s.fail("readdir /churn");
        } else {
            std::set<std::string> seen;
            for (auto& e : *names)
                if (!seen.insert(e.name).second) s.fail("a name listed twice");
        }
    }
}

void node_reader(Shared& s) {
    Backend& fs = *s.fs;
    auto x = fs.lookup(kRootNode, "x");
    auto gen_dir = fs.lookup(kRootNode, "gen");
    auto churn = fs.lookup(kRootNode, "churn");
    if (!x || !gen_dir || !churn) return s.fail("lookup of the fixed directories");
    auto gen = fs.lookup(gen_dir->node, "f");
    if (!gen) return s.fail("lookup /gen/f");
    while (!s.done.load()) {
        for (const char* name : {"a", "b"}) {
            auto e = fs.lookup(x->node, name);
            if (!e) {
                s.fail(fmt::format("/x/{} by node: {}", name, e.error().message()));
                continue;
            }
            auto f = fs.open(e->node, O_RDONLY);
            std::string body = f ? read_whole(**f, 4) : "";
            if (body != "A" && body != "B") s.fail(fmt::format("/x/{} by node: '{}'", name, body));
            fs.forget(e->node, 1);
        }
        auto st = fs.getattr(gen->node);
        if (!st || st->size != kGenSize) s.fail("/gen/f getattr by node");
        if (auto f = fs.open(gen->node, O_RDONLY)) {
            if (generation_of(read_whole(**f, kGenSize)) < 0) s.fail("/gen/f by node: torn");
        }
        if (auto listed = fs.list(churn->node)) {
            std::set<std::string> seen;
            for (auto& e : *listed) {
                if (!seen.insert(e.name).second) s.fail("a name listed twice by node");
                auto found = fs.lookup(churn->node, e.name);
                if (found) {
                    fs.forget(found->node, 1);
                } else if (found.error().code() != ENOENT) {
                    s.fail("lookup of a listed name: " + found.error().message());
                }
            }
        }
    }
    fs.forget(gen->node, 1);
    fs.forget(x->node, 1);
    fs.forget(gen_dir->node, 1);
    fs.forget(churn->node, 1);
}

void snapshot_reader(Shared& s) {
    while (!s.done.load()) {
        std::pair<std::shared_ptr<Backend>, uint64_t> pick;
        {
            std::lock_guard lock(s.snaps_mu);
            if (s.snaps.empty()) continue;
            pick = s.snaps[s.snaps.size() / 2];
        }
        Backend& snap = *pick.first;
        const auto first = read_file(snap, "/gen/f");
        const auto again = read_file(snap, "/gen/f");
        if (!first || !again || *first != *again) s.fail("a snapshot changed");
        if (first && generation_of(*first) != static_cast<int64_t>(pick.second))
            s.fail(fmt::format("snapshot of round {} holds {}", pick.second,
                               first ? generation_of(*first) : -2));
        auto a = read_file(snap, "/x/a");
        auto b = read_file(snap, "/x/b");
        if (!a || !b || *a == *b) s.fail("a snapshot's /x is not one exchange's");
        const bool p1 = snap.stat("/p1/mover").has_value();
        const bool p2 = snap.stat("/p2/mover").has_value();
        if (p1 == p2) s.fail("a snapshot's mover is in both parents or neither");
        // By node, too.
        auto x = snap.lookup(kRootNode, "x");
        if (!x) {
            s.fail("snapshot lookup /x");
            continue;
        }
        auto listed = snap.list(x->node);
        if (!listed || listed->size() != 2) s.fail("a snapshot's /x by node");
        snap.forget(x->node, 1);
    }
}

TEST(MemConcurrency, ReadersByPathAndByNodeSeeWholeVersionsWhileTheWriterWorks) {
    Shared s;
    s.fs = make_mem_backend();
    Backend& fs = *s.fs;
    for (const char* d : {"/p1", "/p2", "/x", "/gen", "/churn", "/p1/mover"})
        ASSERT_TRUE(fs.mkdir(d)) << d;
    ASSERT_TRUE(write_file(fs, "/p1/mover/file", content(7, 5000)));
    ASSERT_TRUE(write_file(fs, "/x/a", "A"));
    ASSERT_TRUE(write_file(fs, "/x/b", "B"));
    ASSERT_TRUE(write_file(fs, "/gen/f", content(0, kGenSize)));
    const int rounds = sanitizer_run() ? 400 : 4000;
    std::vector<std::thread> readers;
    readers.emplace_back(path_reader, std::ref(s));
    readers.emplace_back(node_reader, std::ref(s));
    readers.emplace_back(snapshot_reader, std::ref(s));
    writer(s, rounds);
    s.done.store(true);
    for (auto& t : readers) t.join();
    for (const auto& r : s.reports) ADD_FAILURE() << r;
    EXPECT_EQ(s.failures.load(), 0u);
    // And the writer's work is all there.
    EXPECT_EQ(generation_of(read_file(fs, "/gen/f").value_or("")), rounds);
}

}  // namespace
}  // namespace packfs
