// Gate: a door many threads pass through at once and one thread at a time can close, waiting
// until everyone inside has left (the Vfs's changes, against its snapshot, which must see every
// member at one instant). A reader-writer lock would do, but its shared side is a
// read-modify-write on one cache line every passing thread shares; a pass here is a hazard
// pointer (hazard.hpp) to the gate in the thread's own record, so passes share nothing, and the
// rare closer pays: it marks the gate closed and waits until no record names it.
//
// A pass checks, after its hazard is visible, that the gate is open; a closer marks it closed
// and then looks for hazards. Both with sequentially consistent operations, so either the
// closer sees the pass's hazard (and waits for it) or the pass sees the gate closed (and
// steps back and waits for the closer to finish).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>

#include "core/hazard.hpp"

namespace packfs {

class Gate {
public:
    // Inside the gate while it lives.
    class Pass {
    public:
        explicit Pass(const Gate& gate) : gate_(gate), record_(hazard::mine()) {
            for (;;) {
                slot_ = hazard::hold(record_, &gate);
                // No slot left (passes nested deep): counted in the gate instead.
                if (slot_ < 0) gate.overflow_.fetch_add(1, std::memory_order_seq_cst);
                if (!gate.closed_.load(std::memory_order_seq_cst)) return;
                leave();
                std::lock_guard wait_for_the_closer(gate.closer_);
            }
        }
        ~Pass() { leave(); }
        Pass(const Pass&) = delete;
        Pass& operator=(const Pass&) = delete;

    private:
        void leave() noexcept {
            if (slot_ >= 0) {
                hazard::drop(record_, slot_);
            } else {
                gate_.overflow_.fetch_sub(1, std::memory_order_release);
            }
        }

        const Gate& gate_;
        hazard::Record& record_;
        int slot_ = -1;
    };

    // The gate closed while it lives: no pass is inside, none gets in. Never from a thread that
    // holds a Pass of this gate.
    class Closed {
    public:
        explicit Closed(Gate& gate) : gate_(gate), lock_(gate.closer_) {
            gate_.closed_.store(true, std::memory_order_seq_cst);
            hazard::wait_unused(&gate_);
            while (gate_.overflow_.load(std::memory_order_seq_cst) != 0) std::this_thread::yield();
        }
        ~Closed() { gate_.closed_.store(false, std::memory_order_seq_cst); }
        Closed(const Closed&) = delete;
        Closed& operator=(const Closed&) = delete;

    private:
        Gate& gate_;
        std::lock_guard<std::mutex> lock_;  // released after the gate reopens
    };

private:
    mutable std::mutex closer_;  // one closer at a time; a pass that found it closed waits here
    std::atomic<bool> closed_{false};
    mutable std::atomic<uint32_t> overflow_{0};  // passes inside without a hazard slot
};

}  // namespace packfs
