#include "pack/content_plan.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <unordered_map>
#include <memory>

#include "pack/parallel.hpp"

namespace packfs::pack {

namespace {

constexpr std::size_t kSliceBytes = 1 << 20;
// Contents up to this size are kept in memory between hashing and writing (up to a budget),
// so a tree of small files is read once.
constexpr uint64_t kKeepMax = 256 * 1024;
constexpr uint64_t kKeepBudget = 512ull << 20;
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

struct Hashed {
    std::array<uint64_t, 2> dedup_hash{};
    Sha256Digest sha256{};
    std::string kept;
    bool has_kept = false;
};

// Two sources' bytes compared in slices (or in memory when both were kept).
Result<bool> same_bytes(TreeSource& source, const ScannedTree& tree, const PlannedContent& a,
                        const ScannedInode& b_inode, const Hashed& b) {
    if (a.has_kept && b.has_kept) return a.kept == b.kept;
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

Result<void> read_content(TreeSource& source, SourceRef file, uint64_t size,
                          const std::function<void(std::span<const std::byte>)>& sink) {
    const std::string& path = file.path;
    auto reader = source.open(file);
    if (!reader) return std::unexpected(reader.error());
    std::vector<std::byte> buffer(static_cast<std::size_t>(std::min<uint64_t>(size, kSliceBytes)) + 1);
    uint64_t at = 0;
    for (;;) {
        auto n = (*reader)->read(buffer, at);
        if (!n) return std::unexpected(n.error().with_path(path));
        if (*n == 0) break;
        if (at + *n > size) break;  // grew: caught below
        sink(std::span(buffer.data(), *n));
        at += *n;
    }
    if (at != size) return fail(EAGAIN, "build: file changed while it was read", path);
    return {};
}

Result<std::string> read_whole(TreeSource& source, SourceRef file, uint64_t size) {
    auto reader = source.open(file);
    if (!reader) return std::unexpected(reader.error());
    std::string bytes(size + 1, '\0');  // one byte more: a file that grew is caught
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
    return bytes;
}

Result<ContentPlan> plan_contents(TreeSource& source, ScannedTree& tree,
                                  const PackWriteOptions& options, unsigned jobs,
                                  const std::function<void(uint64_t, uint64_t)>& progress) {
    std::vector<uint32_t> files;  // regular inodes with data, in inode order
    ContentPlan plan;
    for (std::size_t i = 0; i < tree.inodes.size(); ++i) {
        const Stat& st = tree.inodes[i].stat;
        if (st.type != FileType::regular) continue;
        plan.file_bytes += st.size;
        if (st.size > 0) files.push_back(static_cast<uint32_t>(i + 1));
    }

    // Hash every file, in parallel.
    std::vector<Hashed> hashed(files.size());
    std::atomic<uint64_t> kept_bytes{0};
    std::atomic<uint64_t> done{0};
    const bool hook = static_cast<bool>(options.dedup_hash_for_tests);
    auto hash_one = [&](std::size_t i) -> Result<void> {
        const ScannedInode& inode = tree.inodes[files[i] - 1];
        uint64_t size = inode.stat.size;
        Hashed& h = hashed[i];
        bool keep = size <= options.inline_max || hook ||
                    (size <= kKeepMax && kept_bytes.fetch_add(size) + size <= kKeepBudget);
        if (keep) {
            // Small: read whole, hash in one call each.
            auto bytes = read_whole(source, {inode.path, inode.handle}, size);
            if (!bytes) return std::unexpected(bytes.error());
            h.kept = std::move(*bytes);
            auto view = std::as_bytes(std::span(h.kept));
            h.sha256 = sha256(view);
            h.dedup_hash = hook ? options.dedup_hash_for_tests(view) : xxh3_128(view);
            h.has_kept = true;
        } else {
            Sha256 sha;
            Xxh3_128 xxh;
            auto r = read_content(source, {inode.path, inode.handle}, size,
                                  [&](std::span<const std::byte> slice) {
                                      sha.update(slice);
                                      xxh.update(slice);
                                  });
            if (!r) return r;
            h.sha256 = sha.finish();
            h.dedup_hash = xxh.finish();
        }
        done.fetch_add(1, std::memory_order_relaxed);
        return {};
    };
    auto tick = [&] {
        if (progress) progress(done.load(std::memory_order_relaxed), files.size());
    };
    if (auto r = parallel_for(files.size(), jobs, hash_one, tick); !r)
        return std::unexpected(r.error());

    // Dedup, in inode order, so the result does not depend on thread timing. Contents with
    // the same (hash, size) are chained, newest first.
    constexpr uint32_t kNone = UINT32_MAX;
    std::unordered_map<DedupKey, uint32_t, DedupKeyHash> newest;
    std::vector<uint32_t> older_same;  // per content: the next older one with its key
    if (options.dedup) newest.reserve(files.size());
    for (std::size_t i = 0; i < files.size(); ++i) {
        ScannedInode& inode = tree.inodes[files[i] - 1];
        Hashed& h = hashed[i];
        uint64_t size = inode.stat.size;
        uint32_t* chain = nullptr;
        if (options.dedup) {
            chain = &newest.try_emplace(DedupKey{h.dedup_hash, size}, kNone).first->second;
            uint32_t match = kNone;
            for (uint32_t candidate = *chain; candidate != kNone; candidate = older_same[candidate]) {
                auto same = same_bytes(source, tree, plan.contents[candidate], inode, h);
                if (!same) return std::unexpected(same.error());
                if (*same) {
                    match = candidate;
                    break;
                }
            }
            if (match != kNone) {
                inode.content = match + 1;
                continue;
            }
        }
        auto index = static_cast<uint32_t>(plan.contents.size());
        PlannedContent content;
        content.source_ino = files[i];
        content.size = size;
        content.is_inline = size <= options.inline_max;
        content.dedup_hash = h.dedup_hash;
        content.sha256 = h.sha256;
        content.kept = std::move(h.kept);
        content.has_kept = h.has_kept;
        plan.contents.push_back(std::move(content));
        plan.unique_bytes += size;
        inode.content = index + 1;
        older_same.push_back(chain ? *chain : kNone);
        if (chain) *chain = index;
    }

    // Lay out the stream: first appearance order, large contents page-aligned in raw packs.
    bool align = options.compression == Compression::none;
    for (PlannedContent& content : plan.contents) {
        if (content.is_inline) continue;
        if (align && content.size >= kAlignMin)
            plan.stream_size = (plan.stream_size + kPage - 1) / kPage * kPage;
        content.offset = plan.stream_size;
        plan.stream_size += content.size;
    }
    return plan;
}

}  // namespace packfs::pack
