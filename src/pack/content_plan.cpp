#include "pack/content_plan.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
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
    auto ra = source.open(tree.inodes[a.source_ino - 1].path);
    if (!ra) return std::unexpected(ra.error());
    auto rb = source.open(b_inode.path);
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

Result<void> read_content(TreeSource& source, const std::string& path, uint64_t size,
                          const std::function<void(std::span<const std::byte>)>& sink) {
    auto reader = source.open(path);
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
        if (keep) h.kept.reserve(size);
        Sha256 sha;
        Xxh3_128 xxh;
        auto r = read_content(source, inode.path, size, [&](std::span<const std::byte> slice) {
            sha.update(slice);
            if (!hook) xxh.update(slice);
            if (keep) h.kept.append(reinterpret_cast<const char*>(slice.data()), slice.size());
        });
        if (!r) return r;
        h.sha256 = sha.finish();
        h.dedup_hash = hook ? options.dedup_hash_for_tests(std::as_bytes(std::span(h.kept)))
                            : xxh.finish();
        h.has_kept = keep;
        done.fetch_add(1, std::memory_order_relaxed);
        return {};
    };
    auto tick = [&] {
        if (progress) progress(done.load(std::memory_order_relaxed), files.size());
    };
    if (auto r = parallel_for(files.size(), jobs, hash_one, tick); !r)
        return std::unexpected(r.error());

    // Dedup, in inode order, so the result does not depend on thread timing.
    std::map<std::pair<std::array<uint64_t, 2>, uint64_t>, std::vector<uint32_t>> candidates;
    for (std::size_t i = 0; i < files.size(); ++i) {
        ScannedInode& inode = tree.inodes[files[i] - 1];
        Hashed& h = hashed[i];
        uint64_t size = inode.stat.size;
        std::vector<uint32_t>* same_hash = nullptr;
        if (options.dedup) {
            same_hash = &candidates[{h.dedup_hash, size}];
            bool matched = false;
            for (uint32_t candidate : *same_hash) {
                auto same = same_bytes(source, tree, plan.contents[candidate], inode, h);
                if (!same) return std::unexpected(same.error());
                if (*same) {
                    inode.content = candidate + 1;
                    matched = true;
                    break;
                }
            }
            if (matched) continue;
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
        if (same_hash) same_hash->push_back(index);
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
