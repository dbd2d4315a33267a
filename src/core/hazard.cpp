#include "core/hazard.hpp"

#include <atomic>
#include <thread>

namespace packfs::hazard {

struct alignas(64) Record {
    static constexpr int kSlots = 8;
    std::atomic<const void*> slots[kSlots] = {};  // written by the owning thread only
    alignas(64) std::atomic<bool> taken{true};
    Record* next = nullptr;  // the registry's list; set once, before the record is published
};

namespace {

// Every record ever made: pushed at the front, never removed (a thread that ends gives its
// record back for the next thread to take), so a writer can walk it without a lock.
std::atomic<Record*> g_records{nullptr};

Record* take_record() {
    for (Record* r = g_records.load(std::memory_order_acquire); r; r = r->next) {
        bool expected = false;
        if (!r->taken.load(std::memory_order_relaxed) &&
            r->taken.compare_exchange_strong(expected, true, std::memory_order_acquire))
            return r;
    }
    auto* r = new Record;  // never freed: reachable from g_records for the process's life
    Record* head = g_records.load(std::memory_order_relaxed);
    do {
        r->next = head;
    } while (!g_records.compare_exchange_weak(head, r, std::memory_order_release,
                                              std::memory_order_relaxed));
    return r;
}

struct ThreadRecord {
    Record* record = take_record();
    ~ThreadRecord() { record->taken.store(false, std::memory_order_release); }
};

}  // namespace

Record& mine() {
    thread_local ThreadRecord t;
    return *t.record;
}

int hold(Record& r, const void* p) noexcept {
    for (int i = 0; i < Record::kSlots; ++i) {
        if (r.slots[i].load(std::memory_order_relaxed) == nullptr) {
            r.slots[i].store(p, std::memory_order_seq_cst);
            return i;
        }
    }
    return -1;
}

void drop(Record& r, int slot) noexcept {
    r.slots[slot].store(nullptr, std::memory_order_release);
}

void wait_unused(const void* p) noexcept {
    if (!p) return;
    for (Record* r = g_records.load(std::memory_order_acquire); r; r = r->next) {
        for (auto& slot : r->slots) {
            for (int spins = 0; slot.load(std::memory_order_seq_cst) == p; ++spins) {
                if (spins > 64) std::this_thread::yield();  // its reader was preempted
            }
        }
    }
}

}  // namespace packfs::hazard
