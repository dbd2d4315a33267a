// write_pack: scan the tree, hash and dedup the contents, stream them into the data region,
// then write the metadata and finally the header, into a temporary file that is renamed into
// place only when complete and durable.
#include "pack/writer/writer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>
#include <unordered_map>

#include "pack/format/chunker.hpp"
#include "pack/format/digest.hpp"
#include "pack/writer/base_index.hpp"
#include "pack/writer/content_plan.hpp"
#include "pack/writer/files_cache.hpp"
#include "pack/writer/metadata_writer.hpp"
#include "pack/writer/output_file.hpp"
#include "pack/writer/stream_writer.hpp"
#include "pack/writer/tree_scan.hpp"
#include "packfs/pack.hpp"

namespace packfs {

namespace {

using namespace pack;

constexpr uint32_t kMinBlock = 4096;
constexpr uint32_t kMaxBlock = 16u << 20;
constexpr uint32_t kMaxInline = 4096;
constexpr uint32_t kDefaultChunkSize = 64 << 10;  // with bases and no chunk size given

// A content's only extent is named by the content's digest (docs/FORMAT.md "Extents"): its own
// name is left zero rather than stored twice (32 incompressible bytes a file in a pack over
// bases, where most files are one extent in a base).
void unname(Extent& e) noexcept {
    std::memset(e.sha256, 0, sizeof e.sha256);
}

Result<void> check_options(const PackWriteOptions& o) {
    if (o.block_size < kMinBlock || o.block_size > kMaxBlock || (o.block_size & (o.block_size - 1)))
        return fail(EINVAL, "build: block size must be a power of two from 4 KiB to 16 MiB");
    if (o.inline_max > kMaxInline) return fail(EINVAL, "build: inline limit over 4096 bytes");
    if (o.format < kOldestFormatVersion || o.format > kFormatVersion)
        return fail(EINVAL, "build: pack format version must be 1 or 2");
    if (o.chunk_size != 0 || !o.bases.empty()) {
        if (o.format < 2) return fail(EINVAL, "build: chunks and bases need pack format 2");
        if (o.chunk_size != 0) {
            if (const std::string why = ChunkParams::around(o.chunk_size).check(); !why.empty())
                return fail(EINVAL, fmt::format("build: {}", why));
        }
    }
    if (o.clamp_time && (o.clamp_time->nsec < 0 || o.clamp_time->nsec >= 1'000'000'000))
        return fail(EINVAL, "build: clamp time's nanoseconds outside 0 ..= 999,999,999");
    return {};
}

// What a files cache compares, of each regular file that has a content record (the others
// are cheap or in the metadata): by inode index, zero for the rest.
std::vector<FileStamp> stamps_of(const ScannedTree& tree, uint32_t inline_max) {
    std::vector<FileStamp> out(tree.inodes.size());
    for (std::size_t i = 0; i < tree.inodes.size(); ++i) {
        const Stat& st = tree.inodes[i].stat;
        if (st.type == FileType::regular && st.size > inline_max)
            out[i] = FileStamp{st.size, st.ino, st.mtime, st.ctime};
    }
    return out;
}

// By inode index: the digest the base's files cache records for a file whose stamp it still
// matches, when a base holds that content (a cache names nothing else); else nullptr.
std::vector<const Sha256Digest*> known_contents(const ScannedTree& tree,
                                                const std::vector<FileStamp>& stamps,
                                                const FilesCache& cache, const BaseIndex& bases) {
    std::vector<const Sha256Digest*> out(tree.inodes.size(), nullptr);
    for (std::size_t i = 0; i < tree.inodes.size(); ++i) {
        if (stamps[i].size == 0) continue;
        const Sha256Digest* sha = cache.find(tree.inodes[i].path, stamps[i]);
        if (sha && bases.whole(*sha)) out[i] = sha;
    }
    return out;
}

// The files cache of the pack just written, for a build over it (best effort: without it the
// next build reads every file).
void record_files(const std::string& dir, const ScannedTree& tree,
                  const std::vector<FileStamp>& stamps, const ContentPlan& plan, Time scan_start,
                  const Header& header) {
    std::vector<FilesCacheEntry> entries;
    entries.reserve(plan.contents.size());
    for (std::size_t i = 0; i < tree.inodes.size(); ++i) {
        const ScannedInode& inode = tree.inodes[i];
        if (stamps[i].size == 0 || inode.content == 0 || !FilesCache::settled(stamps[i], scan_start))
            continue;
        entries.push_back({inode.path, stamps[i], plan.contents[inode.content - 1].sha256});
    }
    if (entries.empty()) return;  // nothing the next build could use
    Sha256Digest digest;
    std::memcpy(digest.data(), header.image_digest, digest.size());
    (void)FilesCache::write(dir, digest, entries);
}

Codec codec_of(Compression c) {
    switch (c) {
        case Compression::zstd: return Codec::zstd;
        case Compression::lz4: return Codec::lz4;
        case Compression::none: break;
    }
    return Codec::none;
}

void report(const PackWriteOptions& o, BuildProgress::Phase phase, uint64_t done, uint64_t total) {
    if (o.progress) o.progress(BuildProgress{phase, done, total});
}

PackStats stats_of(const ScannedTree& tree, const ContentPlan& plan, const MetadataImage& meta,
                   const StreamWriter& stream) {
    PackStats s;
    s.inodes = tree.inodes.size();
    for (const ScannedInode& inode : tree.inodes) {
        switch (inode.stat.type) {
            case FileType::directory: ++s.directories; break;
            case FileType::regular: ++s.regular_files; break;
            case FileType::symlink: ++s.symlinks; break;
            default: ++s.specials; break;
        }
    }
    s.hard_links = tree.hard_links;
    s.xattrs = tree.xattr_count;
    s.excluded = tree.excluded;
    s.file_bytes = plan.file_bytes;
    s.unique_bytes = plan.unique_bytes;
    s.inline_bytes = meta.inline_bytes;
    s.stream_bytes = stream.stream_bytes();
    s.data_bytes = stream.stored_bytes();
    s.metadata_bytes = meta.header.file_size - meta.header.meta_offset;  // as stored
    s.pack_bytes = meta.header.file_size;
    s.digest = to_hex(meta.header.image_digest);
    return s;
}

Result<PackStats> build(TreeSource& source, std::string_view out_path,
                        const PackWriteOptions& options, const WriteHooks& hooks) {
    if (auto r = check_options(options); !r) return std::unexpected(r.error());
    unsigned jobs = options.jobs ? options.jobs : std::max(1u, std::thread::hardware_concurrency());

    using Clock = std::chrono::steady_clock;
    auto t0 = Clock::now();
    const Time scan_start = Time::now();
    auto tree = scan_tree(source, options.exclude,
                          [&](uint64_t n) { report(options, BuildProgress::Phase::scan, n, 0); });
    if (!tree) return std::unexpected(tree.error());
    // The files cache compares the source's times, not the ones the pack records (a clamp).
    const bool files_cache = !options.files_cache.empty() && options.format >= 2;
    std::vector<FileStamp> stamps;
    if (files_cache) stamps = stamps_of(*tree, options.inline_max);
    record_times(*tree, options.times, options.clamp_time);
    std::optional<InodeNumbering> numbering;
    if (options.keep_inode_numbers) {  // refused before any content is read
        auto numbers = number_inodes(*tree);
        if (!numbers) return std::unexpected(numbers.error());
        numbering = std::move(*numbers);
    }

    auto t1 = Clock::now();
    auto out = OutputFile::create(out_path);
    if (!out) return std::unexpected(out.error());
    if (auto r = out->append_zeros(kDataOffset); !r) return std::unexpected(r.error());
    Codec codec = codec_of(options.compression);
    // Version 2 stores blocks of zeros as holes (version 1 readers know no holes).
    StreamWriter stream(*out, codec, options.level, options.block_size, jobs,
                        /*holes=*/options.format >= 2,
                        /*digests=*/options.format >= 2 && options.block_digests);
    // Extents (format 2): contents in the bases referenced there, large ones cut into chunks.
    const bool extents = options.format >= 2 && (options.chunk_size != 0 || !options.bases.empty());
    std::optional<BaseIndex> bases;
    if (!options.bases.empty()) {
        auto opened = BaseIndex::open(options.bases);
        if (!opened) return std::unexpected(opened.error());
        bases = std::move(*opened);
    }
    // Given, else the first base's (chunks cut at another size would not match), else 64 KiB.
    const uint32_t chunk_size = options.chunk_size != 0                 ? options.chunk_size
                                : bases && bases->chunk_size() != 0 ? bases->chunk_size()
                                                                    : kDefaultChunkSize;
    std::unordered_map<Sha256Digest, uint64_t, Sha256DigestHash> local_chunks;  // name -> stream offset
    uint64_t base_bytes = 0, extent_count = 0;
    // The files the first base's files cache knows: their contents are that base's, unread.
    FilesCache base_cache;
    std::vector<const Sha256Digest*> known;
    if (files_cache && bases) {
        base_cache = FilesCache::load(options.files_cache, bases->first().image_digest);
        if (base_cache.size() > 0) known = known_contents(*tree, stamps, base_cache, *bases);
    }

    // A content's bytes: the held copy, or read again from the source (the dedup hash is
    // recomputed so a file changed since it was hashed is caught instead of stored under a
    // stale SHA-256). `sink(bytes, hole)`.
    auto content_bytes = [&](const PlannedContent& content, const std::string* held,
                             const std::function<Result<void>(std::span<const std::byte>, bool)>&
                                 sink) -> Result<void> {
        if (held) return sink(std::as_bytes(std::span(*held)), false);
        Xxh3_128 check;
        Result<void> put;
        const ScannedInode& inode = tree->inodes[content.source_ino - 1];
        const std::string& path = inode.path;
        auto r = read_content(source, {path, inode.handle}, inode.stat, content.size,
                              [&](std::span<const std::byte> s, bool hole) {
                                  check.update(s);
                                  if (put) put = sink(s, hole);
                              });
        if (!r) return r;
        if (!put) return put;
        if (!hooks.dedup_hash && check.finish() != content.dedup_hash)
            return fail(EAGAIN, "build: file changed while it was read", path);
        return {};
    };
    // A large content cut into chunks: each one a base holds, or this pack already, referenced;
    // the others written to the stream.
    auto write_chunked = [&](PlannedContent& content, const std::string* held) -> Result<void> {
        StreamChunker chunker(ChunkParams::around(chunk_size));
        Result<void> put;
        uint64_t at = 0;
        auto chunk = [&](std::span<const std::byte> bytes) {
            if (!put) return;
            const Sha256Digest name = sha256(bytes);
            Extent e{.at = at, .offset = 0, .length = bytes.size(), .pack = 0, .count = 0,
                     .sha256 = {}};
            std::memcpy(e.sha256, name.data(), 32);
            if (const Extent* in_base = bases ? bases->chunk(name, bytes.size()) : nullptr) {
                e.offset = in_base->offset;
                e.pack = in_base->pack;
                base_bytes += bytes.size();
            } else if (auto it = local_chunks.find(name); it != local_chunks.end()) {
                e.offset = it->second;
            } else {
                e.offset = stream.stream_bytes();
                local_chunks.emplace(name, e.offset);
                put = stream.put(bytes);
            }
            content.extents.push_back(e);
            at += bytes.size();
        };
        std::vector<std::byte> zeros;
        auto r = content_bytes(content, held, [&](std::span<const std::byte> s, bool hole) {
            if (hole) {  // zeros the source did not read: chunked like any others
                zeros.assign(s.size(), std::byte{0});
                s = zeros;
            }
            chunker.put(s, chunk);
            return put;
        });
        if (!r) return r;
        chunker.finish(chunk);
        if (!put) return put;
        content.extents.front().count = static_cast<uint32_t>(content.extents.size());
        if (content.extents.size() == 1) unname(content.extents.front());
        extent_count += content.extents.size();
        return {};
    };
    // Each new content as the plan decides it, in stream order.
    auto write_content = [&](PlannedContent& content, const std::string* held) -> Result<uint64_t> {
        if (auto r = stream.put_zeros(content.offset - stream.stream_bytes()); !r)
            return std::unexpected(r.error());
        if (content.known && !(bases && bases->whole(content.sha256)))  // known_contents() saw it
            return fail(EIO, "build: a known content no base holds", to_hex(content.sha256));
        if (extents) {
            if (const BaseContent* whole = bases ? bases->whole(content.sha256) : nullptr) {
                base_bytes += content.size;
                // One run of a base's stream: the inode says where, and the base has its digest.
                if (whole->location) {
                    content.in_base = whole->location;
                    return 0;
                }
                content.extents = whole->extents;
                if (whole->extents.size() == 1) unname(content.extents.front());
                extent_count += whole->extents.size();
                return 0;
            }
            if (content.size >= chunk_size) {
                if (auto r = write_chunked(content, held); !r) return std::unexpected(r.error());
                return stream.stream_bytes() - content.offset;
            }
        }
        auto r = content_bytes(content, held, [&](std::span<const std::byte> s, bool hole) {
            return hole ? stream.put_zeros(s.size()) : stream.put(s);
        });
        if (!r) return std::unexpected(r.error());
        return content.size;
    };
    auto plan = plan_contents(
        source, *tree, options, hooks, known, jobs,
        [&](uint64_t done, uint64_t total) {
            report(options, BuildProgress::Phase::hash, done, total);
        },
        write_content);
    if (!plan) return std::unexpected(plan.error());

    auto t2 = Clock::now();
    auto blocks = stream.finish();
    if (!blocks) return std::unexpected(blocks.error());

    auto t3 = Clock::now();
    StreamFacts facts{.codec = codec,
                      .block_size = options.block_size,
                      .inline_max = options.inline_max,
                      .data_length = stream.stored_bytes(),
                      .stream_size = stream.stream_bytes(),
                      .block_offsets = std::move(*blocks),
                      .holes = stream.wrote_holes(),
                      .block_digests = stream.take_digests()};
    const MetadataFormat format{.version = options.format,
                                .all_times = options.times == PackTimes::all,
                                .meta_digests = options.block_digests && options.metadata_digests,
                                .name_hash_for_tests = hooks.name_hash,
                                .chunk_size = extents ? chunk_size : 0,
                                .bases = bases ? bases->bases() : std::vector<BaseSpec>{}};
    auto meta = build_metadata(*tree, *plan, facts, format, numbering ? &*numbering : nullptr);
    if (!meta) return std::unexpected(meta.error());
    report(options, BuildProgress::Phase::finish, plan->stream_size, plan->stream_size);

    uint64_t data_end = kDataOffset + facts.data_length;
    if (auto r = out->append_zeros(meta->header.meta_offset - data_end); !r)
        return std::unexpected(r.error());
    if (compresses_metadata(options)) {
        // The region as one frame per metadata block, compressed by the pool like the data.
        StreamWriter frames(*out, codec, options.level, kMetaBlockSize, jobs);
        if (auto r = frames.put(meta->region); !r) return std::unexpected(r.error());
        auto offsets = frames.finish();
        if (!offsets) return std::unexpected(offsets.error());
        const std::vector<std::byte> index = frame_metadata(*meta, *offsets);
        if (auto r = out->append_zeros(frame_index_offset(meta->header) - meta->header.meta_offset -
                                       meta->header.meta_frames_length);
            !r)
            return std::unexpected(r.error());
        if (auto r = out->append(index); !r) return std::unexpected(r.error());
    } else if (auto r = out->append(meta->region); !r) {
        return std::unexpected(r.error());
    }
    if (auto r = out->append(meta->sums); !r) return std::unexpected(r.error());
    if (auto r = out->append(meta->meta_digests); !r) return std::unexpected(r.error());
    if (auto r = out->write_at(std::as_bytes(std::span(&meta->header, 1)), 0); !r)
        return std::unexpected(r.error());
    if (auto r = out->commit(); !r) return std::unexpected(r.error());
    PackStats stats = stats_of(*tree, *plan, *meta, stream);
    stats.base_bytes = base_bytes;
    stats.extents = extent_count;
    stats.unchanged_files = static_cast<uint64_t>(
        std::count_if(known.begin(), known.end(), [](const Sha256Digest* k) { return k; }));
    if (files_cache) record_files(options.files_cache, *tree, stamps, *plan, scan_start, meta->header);
    auto seconds = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
    stats.scan_seconds = seconds(t1 - t0);
    stats.hash_seconds = seconds(t2 - t1);
    stats.data_seconds = seconds(t3 - t2);
    stats.finish_seconds = seconds(Clock::now() - t3);
    return stats;
}

}  // namespace

Result<PackStats> pack::write_pack_from_source(TreeSource& source, std::string_view out_path,
                                               const PackWriteOptions& options,
                                               const WriteHooks& hooks) {
    return build(source, out_path, options, hooks);
}

Result<PackStats> pack::write_pack_with_hooks(Backend& source, std::string_view out_path,
                                              const PackWriteOptions& options,
                                              const WriteHooks& hooks, std::string_view root) {
    auto tree = make_backend_source(source, root);
    if (!tree) return std::unexpected(tree.error());
    return build(**tree, out_path, options, hooks);
}

Result<PackStats> write_pack(Backend& source, std::string_view out_path,
                             const PackWriteOptions& options, std::string_view root) {
    return pack::write_pack_with_hooks(source, out_path, options, pack::WriteHooks{}, root);
}

Result<PackStats> write_pack_from_host(std::string_view host_dir, std::string_view out_path,
                                       const PackWriteOptions& options) {
    auto tree = make_host_source(host_dir);
    if (!tree) return std::unexpected(tree.error());
    return build(**tree, out_path, options, pack::WriteHooks{});
}

}  // namespace packfs
