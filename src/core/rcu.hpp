// Read-side critical sections and deferred reclamation (DESIGN §5): the mem engine's, and the
// volume's for the tree it replaces on compaction. Over
// liburcu's "bulletproof" flavour: a library cannot ask every application thread to register,
// and urcu-bp registers a thread at its first read lock.
//
// A reader brackets its work in a ReadSection: entering and leaving write only the reader's own
// per-thread counter (no shared cache line, no atomic read-modify-write), and inside it every
// object it reached through a published pointer stays allocated. The writer never frees an
// object a reader might still hold: it retires it to a Reclaimer, which frees it after a grace
// period (every read section that began before the retirement has ended).
//
// Rules the engine keeps:
// - The writer never waits for a grace period while it holds its lock (what it retires goes
//   to the reclamation thread, call_rcu; when no memory is left for a batch, the batch waits
//   for a later flush), so a reader may take the writer's lock inside a section (the last
//   close of an orphan does). Whoever calls synchronize() holds no lock a reader may wait for.
// - What is reached inside a section is not used after it, unless a reference (a hold on a
//   cell, a snapshot) keeps it.
//
// ThreadSanitizer does not see liburcu's grace periods, so in a TSan build each section's end
// releases, and each deferred free acquires, one synchronisation object: the happens-before
// the grace period gives is then visible to it too.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

namespace packfs::rcu {

void read_lock() noexcept;
void read_unlock() noexcept;

class ReadSection {
public:
    ReadSection() noexcept { read_lock(); }
    ~ReadSection() { read_unlock(); }
    ReadSection(const ReadSection&) = delete;
    ReadSection& operator=(const ReadSection&) = delete;
};

// Objects one writer retired, freed in batches after a grace period (one call_rcu per batch,
// on liburcu's reclamation thread). A batch goes when it holds kBatch objects or kBatchBytes
// of memory (a file's 64 KiB chunks count by their size), so what a quiet writer leaves
// pending is bounded by both. Not thread-safe: it belongs to the writer's lock.
//
// A deleter is given the object and the reclaimer's context (what the objects were allocated
// from: the mem engine's arena); a flushed batch keeps the context alive until it has run, so
// the owner may go before its last objects are freed.
class Reclaimer {
public:
    using Deleter = void (*)(void* object, void* context) noexcept;

    explicit Reclaimer(std::shared_ptr<void> context = nullptr) noexcept
        : context_(std::move(context)) {}
    ~Reclaimer() { flush(); }
    Reclaimer(const Reclaimer&) = delete;
    Reclaimer& operator=(const Reclaimer&) = delete;

    template <class T>
    void retire(T* p) {
        if (!p) return;
        add(p, &delete_as<T>, sizeof(T));
    }
    // A reference a reader may still be using through a raw pointer: dropped after the grace
    // period.
    template <class T>
    void retire_shared(std::shared_ptr<T> p) {
        if (p) retire(new std::shared_ptr<T>(std::move(p)));
    }
    // `bytes`: about what freeing `p` gives back. Pending until collect() or flush(): the
    // writer retires objects before it publishes what replaces them, and hands them over only
    // once nothing it retired is reachable any more.
    void add(void* p, Deleter deleter, std::size_t bytes);
    // flush(), when a batch is full (kBatch objects or kBatchBytes).
    void collect() noexcept {
        if (items_.size() >= kBatch || bytes_ >= kBatchBytes) flush();
    }
    // Hands what is pending to the reclamation thread now.
    void flush() noexcept;
    std::size_t pending() const noexcept { return items_.size(); }

    static constexpr std::size_t kBatch = 4096;
    static constexpr std::size_t kBatchBytes = 1 << 20;

private:
    template <class T>
    static void delete_as(void* object, void*) noexcept {
        delete static_cast<T*>(object);
    }

    std::shared_ptr<void> context_;
    std::vector<std::pair<void*, Deleter>> items_;
    std::size_t bytes_ = 0;
};

// Waits until every object retired so far (by any Reclaimer that was flushed) is freed.
void barrier() noexcept;
// Waits until every read section that began before the call has ended. Never from inside a
// read section, nor holding a lock a reader in a section may wait for.
void synchronize() noexcept;

}  // namespace packfs::rcu
