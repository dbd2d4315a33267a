// Gate (core/gate.hpp): passes share the gate; a closer waits for every pass inside and keeps
// new ones out until it reopens. Runs under TSan too.
#include "core/gate.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

namespace packfs {
namespace {

TEST(Gate, AClosingWaitsForThePassInsideAndKeepsNewOnesOut) {
    Gate gate;
    std::atomic<bool> inside{false}, leave{false}, closed{false}, late_entered{false};
    std::thread passer([&] {
        Gate::Pass pass(gate);
        inside = true;
        while (!leave) std::this_thread::yield();
    });
    while (!inside) std::this_thread::yield();
    std::thread closer([&] {
        Gate::Closed c(gate);
        closed = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        EXPECT_FALSE(late_entered);  // kept out while closed
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_FALSE(closed);  // the pass is still inside
    leave = true;
    passer.join();
    while (!closed) std::this_thread::yield();
    std::thread late([&] {
        Gate::Pass pass(gate);
        late_entered = true;
    });
    closer.join();
    late.join();
    EXPECT_TRUE(late_entered);  // and let in once reopened
}

TEST(Gate, PassesNestDeeperThanTheirSlotsThenTheGateCloses) {
    Gate gate;
    std::vector<std::unique_ptr<Gate::Pass>> nested;
    for (int i = 0; i < 20; ++i) nested.push_back(std::make_unique<Gate::Pass>(gate));
    nested.clear();
    // Nothing is left inside, so this closes at once. A pass the gate lost count of would hold
    // it open: the test then hangs, and ctest's timeout fails it.
    Gate::Closed c(gate);
}

// Changes inside the gate keep two counters equal only between changes; a closer must never
// see them apart.
TEST(Gate, AClosedGateSeesNoChangeHalfDone) {
    Gate gate;
    std::atomic<uint64_t> a{0}, b{0}, checks{0}, bad{0};
    std::atomic<bool> done{false};
    auto changer = [&] {
        while (!done) {
            Gate::Pass pass(gate);
            a.fetch_add(1);
            std::this_thread::yield();
            b.fetch_add(1);
        }
    };
    std::thread t1(changer), t2(changer);
    // Closes until both changers have been through many times.
    while (checks.load() < 2000 || a.load() < 20000) {
        {
            Gate::Closed c(gate);
            if (a.load() != b.load()) ++bad;
            ++checks;
        }
        std::this_thread::yield();
    }
    done = true;
    t1.join();
    t2.join();
    EXPECT_EQ(bad.load(), 0u);
    EXPECT_GT(a.load(), 0u);
}

}  // namespace
}  // namespace packfs
