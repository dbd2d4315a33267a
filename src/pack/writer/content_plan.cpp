#include "pack/writer/content_plan.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "pack/format/name_hash.hpp"

namespace packfs::pack {

// A whole content read into `bytes`, reusing its capacity (below).
Result<void> read_whole(TreeSource& source, SourceRef file, uint64_t size, std::string& bytes);

namespace {

constexpr std::size_t kSliceBytes = 1 << 20;
// Contents up to this size are held in memory from hashing to writing, so they are read once;
// larger ones are hashed in slices and read again when written (reading a file twice from the
// page cache costs less than faulting in fresh memory to hold it). The bytes held at once are
// bounded: a worker waits before reading more, unless its file is the one the writer needs.
constexpr uint64_t kHoldMax = 1ull << 20;
constexpr uint64_t kHoldBudget = 64ull << 20;
// A written content's held bytes stay in the plan (up to this much in all), so a later
// duplicate of it is compared in memory instead of reading both files again.
constexpr uint64_t kKeptBudget = 64ull << 20;
// Raw packs start every content of at least this size on a 4 KiB boundary, so it can be
// served page-aligned from the mapping; smaller ones are packed tightly.
constexpr uint64_t kAlignMin = 16 * 1024;
constexpr uint64_t kPage = 4096;

struct DedupKey {
    std::array<uint64_t, 2> hash;
    uint64_t size;
    friend bool operator==(const DedupKey&, const DedupKey&) = default;
};
struct DedupKeyHash {
    std::size_t operator()(const DedupKey& k) const noexcept {
        return k.hash[0] ^ (k.hash[1] * 0x9E3779B97F4A7C15ull) ^ k.size;
    }
};

// One file's hashes, and its bytes while they are held.
struct Hashed {
    std::array<uint64_t, 2> dedup_hash{};
    Sha256Digest sha256{};
    std::string bytes;
    bool held = false;
    bool known = false;  // its SHA-256 from the files cache: not read (no dedup hash either)
};

// Workers hash the files in inode order, ahead of the writer, which takes each result in that
// order: reading, hashing and writing overlap, and what is held stays within kHoldBudget.
//
// Small files go in batches (up to kBatchFiles consecutive files of at most kBatchBytes), so a
// tree of many tiny files costs one lock round per batch, not per file: a worker claims a
// batch, hashes it unlocked, and publishes it at once; the writer finds a result ready through
// its atomic flag without the lock, and gives back what it is done with in batches too (at
// once when a worker waits for room, or before the writer itself waits).
class HashAhead {
public:
    HashAhead(TreeSource& source, const ScannedTree& tree, const std::vector<uint32_t>& files,
              KnownContents known, const WriteHooks& hooks, unsigned jobs)
        : source_(source),
          tree_(tree),
          files_(files),
          known_(known),
          hooks_(hooks),
          hold_budget_(hooks.hold_budget ? hooks.hold_budget : kHoldBudget),
          hashed_(files.size()),
          ready_(std::make_unique<std::atomic<bool>[]>(files.size())) {
        const std::size_t workers = std::min<std::size_t>(std::max(1u, jobs), files.size());
        for (std::size_t t = 0; t < workers; ++t) workers_.emplace_back([this] { work(); });
    }
    ~HashAhead() {
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        changed_.notify_all();
        workers_.clear();  // joins
    }

    // File i's result (i in order, each once), or the first worker's error.
    Result<Hashed*> take(std::size_t i) {
        if (ready_[i].load(std::memory_order_acquire)) [[likely]]
            return &hashed_[i];
        std::unique_lock lock(mutex_);
        give_back(lock);
        wanted_ = i;  // a worker waiting for room may go on with this one
        changed_.notify_all();
        changed_.wait(lock, [&] { return ready_[i].load(std::memory_order_acquire) || error_; });
        if (!ready_[i].load(std::memory_order_acquire)) return std::unexpected(*error_);
        return &hashed_[i];
    }
    // The writer is done with file i: its room in the budget is free again, and its buffer
    // is kept for another file (fresh memory costs a page fault per 4 KiB).
    void release(std::size_t i) {
        if (hashed_[i].held) pending_bytes_ += tree_.inodes[files_[i] - 1].stat.size;
        if (hashed_[i].bytes.capacity() != 0) pending_spare_.push_back(std::move(hashed_[i].bytes));
        if (++pending_count_ < kBatchFiles && !room_wanted_.load(std::memory_order_acquire)) return;
        std::unique_lock lock(mutex_);
        give_back(lock);
    }

private:
    static constexpr std::size_t kBatchFiles = 64;
    static constexpr uint64_t kBatchBytes = 64 * 1024;

    // Hands what release() gathered back to the workers (the writer thread, with the lock).
    void give_back(std::unique_lock<std::mutex>&) {
        if (pending_count_ == 0) return;
        held_bytes_ -= pending_bytes_;
        for (std::string& bytes : pending_spare_) {
            if (spare_bytes_ + bytes.capacity() > hold_budget_) break;
            spare_bytes_ += bytes.capacity();
            spare_.push_back(std::move(bytes));
        }
        pending_spare_.clear();
        pending_bytes_ = 0;
        pending_count_ = 0;
        changed_.notify_all();
    }

    // Whether file i may be read and held now: within the budget, or the one the writer needs.
    bool room_for(std::size_t i, uint64_t size) const {
        return wanted_ == i || held_bytes_ + size <= hold_budget_;
    }

    void work() {
        std::vector<Hashed> batch;
        std::unique_lock lock(mutex_);
        for (;;) {
            if (stopping_ || error_ || next_ >= files_.size()) return;
            // Claim the next file, waiting for room if it is to be held, then as many small
            // files after it as fit a batch and the budget (without waiting for those).
            const std::size_t first = next_;
            const uint64_t first_size = tree_.inodes[files_[first] - 1].stat.size;
            const bool hold_first = holds(first);
            if (hold_first) {
                if (!room_for(first, first_size)) {
                    // Another worker may claim `first` while this one waits: then start over
                    // from the next unclaimed file (claiming it again would hash it twice,
                    // overwrite a result the writer may be reading, and count its bytes twice
                    // in the budget, which then never drains: a hang).
                    ++room_waiters_;
                    room_wanted_.store(true, std::memory_order_release);
                    changed_.wait(lock, [&] {
                        return stopping_ || error_ || next_ != first || room_for(first, first_size);
                    });
                    if (--room_waiters_ == 0) room_wanted_.store(false, std::memory_order_release);
                    continue;
                }
                held_bytes_ += first_size;
            }
            // Files the cache knows cost nothing to "hash": they join any batch, whatever
            // their size, and hold nothing.
            std::size_t last = first + 1;
            uint64_t batch_bytes = known(first) ? 0 : first_size;
            if (batch_bytes <= kBatchBytes) {
                while (last < files_.size() && last - first < kBatchFiles) {
                    const uint64_t size = tree_.inodes[files_[last] - 1].stat.size;
                    if (!known(last)) {
                        if (size > kBatchBytes || batch_bytes + size > kBatchBytes ||
                            !holds(last) || held_bytes_ + size > hold_budget_)
                            break;
                        held_bytes_ += size;
                        batch_bytes += size;
                    }
                    ++last;
                }
            }
            next_ = last;
            batch.resize(last - first);
            for (Hashed& h : batch) {
                h = Hashed{};
                if (!spare_.empty()) {
                    h.bytes = std::move(spare_.back());
                    spare_.pop_back();
                    spare_bytes_ -= h.bytes.capacity();
                }
            }
            lock.unlock();
            Result<void> r;
            std::size_t done = 0;
            for (; done < batch.size() && r; ++done) r = hash_one(first + done, batch[done]);
            lock.lock();
            if (!r) {
                if (!error_) error_ = r.error();
            } else {
                for (std::size_t k = 0; k < batch.size(); ++k) {
                    hashed_[first + k] = std::move(batch[k]);
                    ready_[first + k].store(true, std::memory_order_release);
                }
            }
            changed_.notify_all();
        }
    }

    const Sha256Digest* known(std::size_t i) const {
        return known_.empty() ? nullptr : known_[files_[i] - 1];
    }
    // Whether file i is read whole and held (a file the cache knows is not read at all).
    bool holds(std::size_t i) const {
        return !known(i) &&
               (tree_.inodes[files_[i] - 1].stat.size <= kHoldMax || hooks_.dedup_hash);
    }

    Result<void> hash_one(std::size_t i, Hashed& h) {
        if (const Sha256Digest* sha = known(i)) {
            h.sha256 = *sha;
            h.known = true;
            return {};
        }
        const ScannedInode& inode = tree_.inodes[files_[i] - 1];
        const uint64_t size = inode.stat.size;
        if (holds(i)) {
            if (auto r = read_whole(source_, {inode.path, inode.handle}, size, h.bytes); !r)
                return r;
            const auto view = std::as_bytes(std::span(h.bytes));
            h.sha256 = sha256(view);
            h.dedup_hash = hooks_.dedup_hash ? hooks_.dedup_hash(view) : xxh3_128(view);
            h.held = true;
            return {};
        }
        Sha256 sha;
        Xxh3_128 xxh;
        auto r = read_content(source_, {inode.path, inode.handle}, inode.stat, size,
                              [&](std::span<const std::byte> slice, bool) {
                                  sha.update(slice);
                                  xxh.update(slice);
                              });
        if (!r) return r;
        h.sha256 = sha.finish();
        h.dedup_hash = xxh.finish();
        return {};
    }

    TreeSource& source_;
    const ScannedTree& tree_;
    const std::vector<uint32_t>& files_;
    const KnownContents known_;
    const WriteHooks& hooks_;
    const uint64_t hold_budget_;  // kHoldBudget, or the test hook's
    std::mutex mutex_;
    std::condition_variable changed_;  // a result, room in the budget, the writer's need, a stop
    // Element i is written by the worker that claimed file i before ready_[i] is set, and
    // after that only by the writer.
    std::vector<Hashed> hashed_;
    std::unique_ptr<std::atomic<bool>[]> ready_;
    std::size_t next_ = 0;    // the next file to claim
    std::size_t wanted_ = 0;  // the file the writer waits for
    uint64_t held_bytes_ = 0;
    std::vector<std::string> spare_;  // buffers of released files, for reuse
    uint64_t spare_bytes_ = 0;        // their capacity
    std::atomic<bool> room_wanted_{false};  // a worker waits for room in the budget
    std::size_t room_waiters_ = 0;          // how many (room_wanted_ is set while any does)
    // What the writer released since it last gave back (its own, no lock).
    uint64_t pending_bytes_ = 0;
    std::size_t pending_count_ = 0;
    std::vector<std::string> pending_spare_;
    bool stopping_ = false;
    std::optional<Error> error_;
    std::vector<std::jthread> workers_;
};

// Two contents' bytes compared: in memory when both are there, else read again in slices.
Result<bool> same_bytes(TreeSource& source, const ScannedTree& tree, const PlannedContent& a,
                        const ScannedInode& b_inode, const Hashed& b) {
    if (a.has_kept && b.held) return a.kept == b.bytes;
    const ScannedInode& a_inode = tree.inodes[a.source_ino - 1];
    auto ra = source.open({a_inode.path, a_inode.handle});
    if (!ra) return std::unexpected(ra.error());
    auto rb = source.open({b_inode.path, b_inode.handle});
    if (!rb) return std::unexpected(rb.error());
    std::vector<std::byte> ba(kSliceBytes), bb(kSliceBytes);
    for (uint64_t at = 0; at < a.size;) {
        auto na = (*ra)->read(ba, at);
        if (!na) return std::unexpected(na.error().with_path(tree.inodes[a.source_ino - 1].path));
        auto nb = (*rb)->read(bb, at);
        if (!nb) return std::unexpected(nb.error().with_path(b_inode.path));
        if (*na != *nb || *na == 0) return false;
        if (std::memcmp(ba.data(), bb.data(), *na) != 0) return false;
        at += *na;
    }
    return true;
}

}  // namespace

Result<void> read_content(TreeSource& source, SourceRef file, const Stat& stat, uint64_t size,
                          const std::function<void(std::span<const std::byte>, bool hole)>& sink) {
    static const std::vector<std::byte> zeros(kSliceBytes);  // a hole's bytes, never read
    const std::string& path = file.path;
    auto reader = source.open(file);
    if (!reader) return std::unexpected(reader.error());
    std::vector<std::byte> buffer(static_cast<std::size_t>(std::min<uint64_t>(size, kSliceBytes)) + 1);
    uint64_t at = 0;
    // Bytes [at, data_end) are known data; a dense file never asks where its holes are.
    uint64_t data_end = stat.blocks * 512 < size ? 0 : UINT64_MAX;
    for (;;) {
        if (at < size && at >= data_end) {
            auto extent = (*reader)->data_extent(at);
            if (!extent) return std::unexpected(extent.error().with_path(path));
            const uint64_t begin = std::min(extent->first, size);
            for (uint64_t n = 0; at < begin; at += n) {
                n = std::min<uint64_t>(begin - at, zeros.size());
                sink(std::span(zeros.data(), n), true);
            }
            data_end =
                std::max(extent->second, at + 1);  // at the end: one more byte, to see growth
        }
        const auto want =
            static_cast<std::size_t>(std::min<uint64_t>(buffer.size(), data_end - at));
        auto n = (*reader)->read(std::span(buffer).first(want), at);
        if (!n) return std::unexpected(n.error().with_path(path));
        if (*n == 0) break;
        if (at + *n > size) break;  // grew: caught below
        sink(std::span(buffer.data(), *n), false);
        at += *n;
    }
    if (at != size) return fail(EAGAIN, "build: file changed while it was read", path);
    return {};
}

Result<void> read_whole(TreeSource& source, SourceRef file, uint64_t size, std::string& bytes) {
    auto reader = source.open(file);
    if (!reader) return std::unexpected(reader.error());
    // One byte more: a file that grew is caught. Not zeroed first: every byte kept is read.
    bytes.resize_and_overwrite(size + 1, [](char*, std::size_t n) { return n; });
    auto buffer = std::as_writable_bytes(std::span(bytes));
    uint64_t at = 0;
    while (at < buffer.size()) {
        auto n = (*reader)->read(buffer.subspan(at), at);
        if (!n) return std::unexpected(n.error().with_path(file.path));
        if (*n == 0) break;
        at += *n;
    }
    if (at != size) return fail(EAGAIN, "build: file changed while it was read", file.path);
    bytes.resize(size);
    return {};
}

namespace {

// The regular inodes with data in the order a depth-first walk of the finished pack meets
// them: each directory's entries in the order it lists them (format 2: by name hash, then
// name, as metadata_writer.cpp's order_run lays them out), a hard-linked file at its first
// name (PackWriteOptions::Layout::walk).
std::vector<uint32_t> walk_order(const ScannedTree& tree, uint32_t (*hash)(std::string_view)) {
    std::vector<uint32_t> out;
    std::vector<bool> seen(tree.inodes.size() + 1, false);
    struct Level {
        std::vector<uint32_t> entries;  // dirent indexes, in listing order
        std::size_t next = 0;
    };
    std::vector<std::pair<uint32_t, uint32_t>> keyed;  // (name hash, dirent), one directory's
    auto listing = [&](uint32_t dir) {
        const ScannedInode& d = tree.inodes[dir - 1];
        keyed.clear();
        for (uint64_t k = 0; k < d.entry_count; ++k) {
            const auto at = static_cast<uint32_t>(d.first_dirent + k);
            keyed.emplace_back(hash(tree.dirents[at].name), at);
        }
        std::sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
            return a.first != b.first ? a.first < b.first
                                      : tree.dirents[a.second].name < tree.dirents[b.second].name;
        });
        Level level;
        level.entries.reserve(keyed.size());
        for (const auto& [h, at] : keyed) level.entries.push_back(at);
        return level;
    };
    std::vector<Level> stack;
    stack.push_back(listing(static_cast<uint32_t>(kRootIno)));
    while (!stack.empty()) {
        Level& top = stack.back();
        if (top.next == top.entries.size()) {
            stack.pop_back();
            continue;
        }
        const uint32_t ino = tree.dirents[top.entries[top.next++]].ino;
        const ScannedInode& inode = tree.inodes[ino - 1];
        if (inode.stat.type == FileType::directory) {
            stack.push_back(listing(ino));  // `top` is not used after this
        } else if (inode.stat.type == FileType::regular && inode.stat.size > 0 && !seen[ino]) {
            seen[ino] = true;
            out.push_back(ino);
        }
    }
    return out;
}

}  // namespace

Result<ContentPlan> plan_contents(TreeSource& source, ScannedTree& tree,
                                  const PackWriteOptions& options, const WriteHooks& hooks,
                                  KnownContents known, unsigned jobs,
                                  const std::function<void(uint64_t, uint64_t)>& progress,
                                  const ContentSink& write) {
    std::vector<uint32_t> files;  // regular inodes with data, in the order they are laid out
    ContentPlan plan;
    for (std::size_t i = 0; i < tree.inodes.size(); ++i) {
        const Stat& st = tree.inodes[i].stat;
        if (st.type != FileType::regular) continue;
        plan.file_bytes += st.size;
        if (st.size > 0) files.push_back(static_cast<uint32_t>(i + 1));
    }
    if (options.layout == PackWriteOptions::Layout::walk && options.format >= 2) {
        auto walked = walk_order(
            tree, hooks.name_hash ? hooks.name_hash : &name_hash);
        if (walked.size() == files.size()) files = std::move(walked);
    }
    plan.contents.reserve(files.size());  // at most one content per file
    HashAhead hashing(source, tree, files, known, hooks, jobs);

    // Dedup, in layout order, so the result does not depend on thread timing. Contents with
    // the same (hash, size) are chained, newest first. Each new content is laid out (first
    // appearance order, large ones page-aligned in raw packs) and written at once.
    constexpr uint32_t kNone = UINT32_MAX;
    const bool align = options.compression == Compression::none;
    uint64_t kept_bytes = 0;
    std::unordered_map<DedupKey, uint32_t, DedupKeyHash> newest;
    std::vector<uint32_t> older_same;  // per content: the next older one with its key
    if (options.dedup) newest.reserve(files.size());
    // With known contents: every content by its SHA-256, so a known file and a file read with
    // the same bytes are one content, as when both are read.
    std::unordered_map<Sha256Digest, uint32_t, Sha256DigestHash> by_sha;
    for (std::size_t i = 0; i < files.size(); ++i) {
        auto taken = hashing.take(i);
        if (!taken) return std::unexpected(taken.error());
        Hashed& h = **taken;
        ScannedInode& inode = tree.inodes[files[i] - 1];
        uint64_t size = inode.stat.size;
        uint32_t* chain = nullptr;
        uint32_t match = kNone;
        if (options.dedup && h.known) {
            if (auto it = by_sha.find(h.sha256); it != by_sha.end()) match = it->second;
        } else if (options.dedup) {
            chain = &newest.try_emplace(DedupKey{h.dedup_hash, size}, kNone).first->second;
            for (uint32_t candidate = *chain; candidate != kNone; candidate = older_same[candidate]) {
                auto same = same_bytes(source, tree, plan.contents[candidate], inode, h);
                if (!same) return std::unexpected(same.error());
                if (*same) {
                    match = candidate;
                    break;
                }
            }
            if (match == kNone && !by_sha.empty()) {
                auto it = by_sha.find(h.sha256);
                if (it != by_sha.end() && plan.contents[it->second].known) match = it->second;
            }
        }
        if (match != kNone) {
            inode.content = match + 1;
        } else {
            auto index = static_cast<uint32_t>(plan.contents.size());
            PlannedContent content;
            content.source_ino = files[i];
            content.size = size;
            content.is_inline = size <= options.inline_max;
            content.dedup_hash = h.dedup_hash;
            content.sha256 = h.sha256;
            content.known = h.known;
            if (content.is_inline) {
                content.kept = std::move(h.bytes);  // for the bytes section
                content.has_kept = true;
            } else {
                if (align && content.size >= kAlignMin)
                    plan.stream_size = (plan.stream_size + kPage - 1) / kPage * kPage;
                content.offset = plan.stream_size;
                auto used = write(content, h.held ? &h.bytes : nullptr);
                if (!used) return std::unexpected(used.error());
                plan.stream_size += *used;
                if (h.held && options.dedup && kept_bytes + size <= kKeptBudget) {
                    kept_bytes += size;
                    content.kept = std::move(h.bytes);  // for a later duplicate's compare
                    content.has_kept = true;
                }
            }
            plan.contents.push_back(std::move(content));
            plan.unique_bytes += size;
            inode.content = index + 1;
            older_same.push_back(chain ? *chain : kNone);
            if (chain) *chain = index;
            if (!known.empty() && options.dedup) by_sha.emplace(h.sha256, index);
        }
        hashing.release(i);
        if (progress) progress(i + 1, files.size());
    }
    return plan;
}

}  // namespace packfs::pack
