// Published<T> (core/published.hpp): readers see one whole version; a store returns only once
// no reader holds the version it replaced, which is then gone. Runs under TSan too.
#include "core/published.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

namespace packfs {
namespace {

// A version whose fields must agree (a torn or freed one would not), and which counts itself.
struct Version {
    static inline std::atomic<int> alive{0};
    explicit Version(uint64_t n) : a(n), b(n * 7) { alive.fetch_add(1); }
    ~Version() {
        a = b = 0xdead;
        alive.fetch_sub(1);
    }
    uint64_t a, b;
};

TEST(Published, AStoreWaitsForTheReaderOfTheOldVersionAndThenReleasesIt) {
    Published<Version> p(std::make_shared<const Version>(1));
    std::atomic<bool> reading{false}, release{false}, stored{false};
    std::thread reader([&] {
        Published<Version>::Reader r(p);
        EXPECT_EQ(r->a, 1u);
        reading = true;
        while (!release) std::this_thread::yield();
        EXPECT_EQ(r->b, 7u);  // still the old version, still whole
        EXPECT_FALSE(stored);
    });
    while (!reading) std::this_thread::yield();
    std::thread writer([&] {
        p.store(std::make_shared<const Version>(2));
        stored = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_FALSE(stored);  // the reader still holds version 1
    EXPECT_EQ(Version::alive.load(), 2);
    release = true;
    reader.join();
    writer.join();
    EXPECT_EQ(Version::alive.load(), 1);  // version 1 went with the store
    Published<Version>::Reader now(p);
    EXPECT_EQ(now->a, 2u);
}

TEST(Published, ReadersNestDeeperThanTheirSlots) {
    Published<Version> p(std::make_shared<const Version>(3));
    std::vector<std::unique_ptr<Published<Version>::Reader>> nested;
    for (int i = 0; i < 20; ++i) {
        nested.push_back(std::make_unique<Published<Version>::Reader>(p));
        EXPECT_EQ((*nested.back())->b, 21u);
    }
    nested.clear();
    p.store(std::make_shared<const Version>(4));  // nothing left holding 3: returns at once
    Published<Version>::Reader r(p);
    EXPECT_EQ(r->b, 28u);
}

TEST(Published, ReadersAlwaysSeeAWholeLiveVersionWhileStoresGoOn) {
    const int before = Version::alive.load();
    {
        Published<Version> p(std::make_shared<const Version>(1));
        std::atomic<bool> done{false};
        std::atomic<uint64_t> bad{0}, reads{0};
        auto reader = [&] {
            uint64_t last = 0;
            while (!done) {
                Published<Version>::Reader r(p);
                const uint64_t a = r->a;
                if (r->b != a * 7 || a < last) ++bad;  // torn, freed, or going back
                last = a;
                ++reads;
            }
        };
        std::thread t1(reader), t2(reader);
        // Stores go on until the readers have met many of them.
        for (uint64_t n = 2; n < 2000 || reads.load() < 20000; ++n)
            p.store(std::make_shared<const Version>(n));
        done = true;
        t1.join();
        t2.join();
        EXPECT_EQ(bad.load(), 0u);
        EXPECT_GT(reads.load(), 0u);
        EXPECT_EQ(Version::alive.load(), before + 1);  // only the current one is left
    }
    EXPECT_EQ(Version::alive.load(), before);
}

}  // namespace
}  // namespace packfs
