#include "core/rcu.hpp"

// The inline (LGPL) read-side fast paths, except in sanitizer builds: liburcu-bp 0.13 keeps its
// 128-byte-aligned reader records at 16-byte offsets in its arena, which UBSan reports as a
// misaligned access inside the inlined code; the library's own calls are not instrumented.
#if !defined(PACKFS_URCU_LIBRARY_CALLS)
#define _LGPL_SOURCE
#endif
#include <pthread.h>
#include <urcu-bp.h>
#include <urcu/rculist.h>

#include <mutex>
#include <new>

#if defined(__SANITIZE_THREAD__)
#define PACKFS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PACKFS_TSAN 1
#endif
#endif

#ifdef PACKFS_TSAN
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace packfs::rcu {
namespace {

#ifdef PACKFS_TSAN
char grace_period_token;
#endif

// liburcu's registry and reclamation thread must be told about fork() so a child can go on
// using them (a test forks a writer it later kills; the FUSE daemon forks before it starts).
void install_fork_handlers() {
    static std::once_flag once;
    std::call_once(once, [] {
        pthread_atfork(
            [] {
                call_rcu_before_fork();
                urcu_bp_before_fork();
            },
            [] {
                urcu_bp_after_fork_parent();
                call_rcu_after_fork_parent();
            },
            [] {
                urcu_bp_after_fork_child();
                call_rcu_after_fork_child();
            });
    });
}

struct Batch {
    rcu_head head;
    std::vector<std::pair<void*, Reclaimer::Deleter>> items;
    std::shared_ptr<void> context;
};

void free_batch(rcu_head* head) {
    Batch* batch = caa_container_of(head, Batch, head);
#ifdef PACKFS_TSAN
    __tsan_acquire(&grace_period_token);
    __tsan_acquire(batch);
#endif
    for (auto& [p, deleter] : batch->items) deleter(p, batch->context.get());
    delete batch;
}

}  // namespace

void read_lock() noexcept { rcu_read_lock(); }

void read_unlock() noexcept {
#ifdef PACKFS_TSAN
    __tsan_release(&grace_period_token);
#endif
    rcu_read_unlock();
}

void Reclaimer::add(void* p, Deleter deleter, std::size_t bytes) {
    if (items_.capacity() == 0) items_.reserve(kBatch);
    items_.emplace_back(p, deleter);
    bytes_ += bytes;
}

void Reclaimer::flush() noexcept {
    if (items_.empty()) return;
    install_fork_handlers();
    // No memory for a batch: the items stay pending for the next flush (waiting for a grace
    // period here could wait for a reader that waits for the writer's lock).
    Batch* batch = new (std::nothrow) Batch;
    if (!batch) return;
    batch->items.swap(items_);
    batch->context = context_;
    bytes_ = 0;
#ifdef PACKFS_TSAN
    __tsan_release(batch);
#endif
    call_rcu(&batch->head, free_batch);
}

void barrier() noexcept { rcu_barrier(); }

void synchronize() noexcept {
    synchronize_rcu();
#ifdef PACKFS_TSAN
    __tsan_acquire(&grace_period_token);
#endif
}

}  // namespace packfs::rcu
