// PackBackend::verify: proves every byte of a pack, or lists what is wrong with it.
//
// 0. with compressed metadata, every block inflated; 1. each section against its checksum; 2. each
// metadata block against its sum (and records the result in the checked-block bitmaps); 3. each
// content against its SHA-256, reading the stream in offset order so each compressed block is
// decompressed once; 4. each compressed block that no content touched; 5. the tree, walked from the
// root, so every record is checked and each bad content is reported under the virtual path of every
// file that holds it;
// 6. the inode numbers, when the pack keeps them: all non-zero, the order a permutation sorted
// strictly ascending; 7. the image digest. Nothing here stops at the first problem.
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>

#include "pack/codec.hpp"
#include "pack/digest.hpp"
#include "pack/reader.hpp"

namespace packfs::pack {

namespace {

constexpr uint64_t kChunk = 1 << 20;  // hashing slice, for progress and pread buffers

std::string hex64(uint64_t v) {
    return fmt::format("{:#018x}", v);
}

// Progress reporting, at most every 8 MiB of work.
class Progress {
public:
    Progress(const std::function<void(uint64_t, uint64_t)>& callback, uint64_t total)
        : callback_(callback), total_(total) {}
    void add(uint64_t bytes) {
        done_ += bytes;
        if (callback_ && done_ - reported_ >= (8u << 20)) {
            reported_ = done_;
            callback_(std::min(done_, total_), total_);
        }
    }
    void finish() {
        if (callback_) callback_(total_, total_);
    }
    uint64_t done() const noexcept { return done_; }

private:
    const std::function<void(uint64_t, uint64_t)>& callback_;
    uint64_t total_;
    uint64_t done_ = 0;
    uint64_t reported_ = 0;
};

}  // namespace

VerifyReport PackReader::verify(const std::function<void(uint64_t, uint64_t)>& progress) const {
    VerifyReport report;
    const Ctx ctx{"verify", {}};
    auto problem = [&](std::string where, std::string what) {
        report.problems.push_back(VerifyProblem{std::move(where), std::move(what)});
    };

    // 0. Compressed metadata: every block inflated first, so everything below reads the region
    // as if it were stored raw (a block whose frame is bad reads as zeros, and fails its sum).
    if (frames_) {
        for (uint64_t b = 0; b < block_sum_count_; ++b) {
            if (auto fault = frames_->inflate(b)) {
                const Corruption& c = fault->corruption;
                if (!fault->transient)
                    failed_[b / 64].fetch_or(uint64_t{1} << (b % 64), std::memory_order_acq_rel);
                problem(fmt::format("metadata block {} (offset {})", b, c.offset),
                        fault->transient ? c.what
                                         : fmt::format("{}: expected {}, found {}", c.what,
                                                       c.expected, c.actual));
            }
        }
    }

    // The contents, read first (records only) so the progress total is known.
    struct Item {
        uint64_t index, offset, size;
        bool is_inline;
        Sha256Digest sha;
    };
    std::vector<Item> items;
    std::vector<std::string> bad_content(content_count_);  // why content i is bad ("" if fine)
    uint64_t content_bytes = 0;
    items.reserve(content_count_);
    // v1: the content records. v2: each content's locator is in the inodes that hold it (the
    // first one, in record order; the tree walk below checks every other one agrees) and its
    // SHA-256 in the digests section. Raw reads: a record in a failed block is still worth
    // hashing against its data.
    std::vector<Content> located;
    if (version_ >= 2) {
        located.assign(content_count_, Content{});
        for (uint64_t i = 0; i < inode_count_; ++i) {
            const auto n = load<InodeV2>(meta_ + inode_rel(i));
            if ((n.mode & S_IFMT) != S_IFREG || n.size == 0 || n.aux >= content_count_) continue;
            Content& c = located[n.aux];
            if (c.size == 0) {
                c.offset = n.ref;
                c.size = n.size;
            }
        }
        for (uint64_t i = 0; i < content_count_; ++i)
            std::memcpy(located[i].sha256, meta_ + contents_rel_ + i * 32, 32);
    }
    for (uint64_t i = 0; i < content_count_; ++i) {
        const Content c =
            version_ >= 2 ? located[i] : load<Content>(meta_ + contents_rel_ + i * sizeof(Content));
        Item item{i, c.offset, c.size, c.size <= inline_max_, {}};
        std::memcpy(item.sha.data(), c.sha256, item.sha.size());
        const uint64_t limit = item.is_inline ? bytes_length_ : stream_size_;
        if (c.size == 0 || c.offset > limit || c.size > limit - c.offset) {
            bad_content[i] =
                c.size == 0 && version_ >= 2
                    ? fmt::format("content {} is held by no file", i)
                    : fmt::format("content record {} has a bad range (offset {}, size {})", i,
                                  c.offset, c.size);
            continue;
        }
        content_bytes += c.size;
        items.push_back(item);
    }
    const uint64_t compressed_total = codec_ == Codec::none && !holes_ ? 0 : data_length_;
    const uint64_t digested_total = block_digests_ ? data_length_ : 0;
    Progress meter(progress, 3 * meta_length_ + content_bytes + compressed_total + digested_total);

    // 1. Sections.
    for (std::size_t s = 0; s < kSectionCount; ++s) {
        const SectionEntry& e = section(header_, s);
        if (e.offset == 0) continue;  // absent (open() checked its entry is all zero)
        const uint64_t sum = xxh3_64(std::span(meta_ + (e.offset - meta_offset_), e.length));
        ++report.sections_checked;
        meter.add(e.length);
        if (sum != e.checksum)
            problem(fmt::format("section {}", section_name(version_, s)),
                    fmt::format("checksum mismatch: expected {}, found {}", hex64(e.checksum),
                                hex64(sum)));
    }

    // 2. Metadata blocks.
    for (uint64_t b = 0; b < block_sum_count_; ++b) {
        uint64_t expected = 0, actual = 0;
        const uint64_t bit = uint64_t{1} << (b % 64);
        ++report.blocks_checked;
        meter.add(std::min<uint64_t>(kMetaBlockSize, meta_length_ - b * kMetaBlockSize));
        if (block_sum_matches(b, expected, actual)) {
            // A block that failed before stays failed (the file changed in place since).
            if ((failed_[b / 64].load(std::memory_order_acquire) & bit) == 0)
                checked_[b / 64].fetch_or(bit, std::memory_order_acq_rel);
        } else {
            failed_[b / 64].fetch_or(bit, std::memory_order_acq_rel);
            problem(
                fmt::format("metadata block {} (offset {})", b, meta_offset_ + b * kMetaBlockSize),
                fmt::format("checksum mismatch: expected {}, found {}", hex64(expected),
                            hex64(actual)));
        }
    }

    // 3. Contents, in stream order. A compressed block is loaded once into `block`.
    std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
        return a.is_inline != b.is_inline ? a.is_inline : a.offset < b.offset;
    });
    std::vector<uint8_t> block_state(block_count_, 0);  // 0 unseen, 1 fine, 2 bad
    std::vector<std::byte> block;
    uint64_t block_index = UINT64_MAX;
    auto load_block = [&](uint64_t index) -> bool {
        if (index == block_index) return true;
        block_index = UINT64_MAX;
        if (index >= block_count_) {  // contents were checked against the stream; be sure anyway
            problem(fmt::format("data block {}", index), "past the blocks section");
            return false;
        }
        if (block_state[index] == 2) return false;
        auto where = stored_block(index, ctx);
        Result<void> ok;
        if (!where) {
            ok = std::unexpected(where.error());
        } else {
            block.resize(where->stream_length);
            if (where->hole()) {
                std::fill(block.begin(), block.end(), std::byte{0});
            } else if (where->raw()) {
                if (const std::byte* map = image_->mapping()) {
                    std::memcpy(block.data(), map + where->stored_offset, block.size());
                } else if (!image_->read_at(where->stored_offset, block)) {
                    ok = fail(EIO, "verify");
                }
            } else {
                ok = decompress(index, *where, block, ctx);
            }
            meter.add(where->stored_length);
        }
        if (block_state[index] == 0) ++report.blocks_checked;
        if (!ok) {
            block_state[index] = 2;
            problem(fmt::format("data block {}", index), ok.error().message());
            return false;
        }
        block_state[index] = 1;
        block_index = index;
        return true;
    };
    std::vector<std::byte> chunk;
    Sha256 sha;
    for (const Item& item : items) {
        bool readable = true;
        std::string why;
        for (uint64_t done = 0; done < item.size && readable;) {
            const uint64_t n = std::min(kChunk, item.size - done);
            std::span<const std::byte> part;
            if (item.is_inline) {
                auto at = meta(bytes_rel_ + item.offset, item.size, ctx);
                if (!at) {
                    readable = false;
                    why = at.error().message();
                    break;
                }
                part = std::span(*at, item.size);
            } else if (codec_ == Codec::none && !holes_) {
                const uint64_t at = data_offset_ + item.offset + done;
                if (const std::byte* map = image_->mapping()) {
                    part = std::span(map + at, n);
                } else {
                    chunk.resize(n);
                    if (!image_->read_at(at, chunk)) {
                        readable = false;
                        why = "cannot be read (I/O error or short file)";
                        break;
                    }
                    part = chunk;
                }
            } else {
                const uint64_t pos = item.offset + done;
                const uint64_t index = pos / block_size_;
                if (!load_block(index)) {
                    readable = false;
                    why = fmt::format("cannot be read: data block {} is bad", index);
                    break;
                }
                const uint64_t in_block = pos % block_size_;
                part = std::span(block).subspan(in_block,
                                                std::min<uint64_t>(n, block.size() - in_block));
            }
            sha.update(part);
            done += part.size();
            meter.add(part.size());
        }
        if (!readable) {
            (void)sha.finish();  // resets it
            bad_content[item.index] = "content " + why;
            continue;
        }
        const Sha256Digest got = sha.finish();
        if (got != item.sha) {
            bad_content[item.index] = fmt::format("content SHA-256 mismatch: expected {}, found {}",
                                                  to_hex(item.sha), to_hex(got));
        }
    }

    // 4. Compressed blocks no content touched (padding, or contents with bad records).
    for (uint64_t i = 0; i < block_count_; ++i) {
        if (block_state[i] == 0) (void)load_block(i);
    }

    // 4a. Each block's stored bytes against its digest (the block-digests feature).
    if (block_digests_) {
        std::vector<std::byte> stored;
        for (uint64_t i = 0, count = stream_block_count(); i < count; ++i) {
            auto extent = block_extent(i, ctx);
            auto want = extent ? block_digest(i, ctx) : std::unexpected(extent.error());
            if (!want) {
                problem(fmt::format("data block {}", i), want.error().message());
                continue;
            }
            std::span<const std::byte> bytes;
            if (const std::byte* map = image_->mapping()) {
                bytes = std::span(map + extent->offset, extent->length);
            } else {
                stored.resize(extent->length);
                if (!image_->read_at(extent->offset, stored)) {
                    problem(fmt::format("data block {}", i),
                            "cannot be read (I/O error or short file)");
                    continue;
                }
                bytes = stored;
            }
            const Sha256Digest got = sha256(bytes);
            meter.add(bytes.size());
            if (std::memcmp(got.data(), want->data(), got.size()) != 0)
                problem(fmt::format("data block {} (offset {})", i, extent->offset),
                        fmt::format("block digest mismatch: expected {}, found {}",
                                    to_hex(std::span<const uint8_t>(*want)), to_hex(got)));
        }
    }

    // 4b. Bytes that belong to nothing are zero (format.hpp): the header page after the header,
    // the gap before the metadata, and the bytes of a raw stream outside every content.
    std::vector<std::byte> zeros_buffer;
    auto check_zero = [&](uint64_t offset, uint64_t length, std::string_view what) {
        for (uint64_t done = 0; done < length;) {
            const uint64_t n = std::min(kChunk, length - done);
            const std::byte* at = nullptr;
            if (const std::byte* map = image_->mapping()) {
                at = map + offset + done;
            } else {
                zeros_buffer.resize(n);
                if (!image_->read_at(offset + done, zeros_buffer)) {
                    problem(std::string(what), "cannot be read (I/O error or short file)");
                    return;
                }
                at = zeros_buffer.data();
            }
            for (uint64_t i = 0; i < n; ++i) {
                if (at[i] != std::byte{0}) {
                    problem(std::string(what),
                            fmt::format("byte at offset {} is {:#04x}; padding must be zero",
                                        offset + done + i, static_cast<unsigned>(at[i])));
                    return;
                }
            }
            done += n;
        }
    };
    check_zero(kHeaderSize, data_offset_ - kHeaderSize, "header page");
    check_zero(data_offset_ + data_length_, meta_offset_ - data_offset_ - data_length_,
               "gap before the metadata");
    // Stream bytes [offset, offset + length) where they are stored raw: all of a raw stream,
    // or with holes the raw blocks' parts (a hole stores nothing).
    auto check_stream_zero = [&](uint64_t offset, uint64_t length) {
        if (!holes_) return check_zero(data_offset_ + offset, length, "stream padding");
        for (uint64_t pos = offset, end = offset + length; pos < end;) {
            const uint64_t index = pos / block_size_, in_block = pos % block_size_;
            auto where = stored_block(index, ctx);
            if (!where) return;  // reported with the blocks
            const uint64_t n = std::min(end - pos, where->stream_length - in_block);
            if (!where->hole()) check_zero(where->stored_offset + in_block, n, "stream padding");
            pos += n;
        }
    };
    if (codec_ == Codec::none) {
        uint64_t covered = 0;  // items: the inline ones first, then by stream offset
        for (const Item& item : items) {
            if (item.is_inline) continue;
            if (item.offset > covered) check_stream_zero(covered, item.offset - covered);
            covered = std::max(covered, item.offset + item.size);
        }
        if (stream_size_ > covered) check_stream_zero(covered, stream_size_ - covered);
    }

    // Every xattr record of an inode: name and value inside `bytes`, lengths in range.
    auto check_xattrs = [&](const std::string& path, const InodeView& node) {
        if (node.rec.xattr_count == 0) return;
        const Ctx at{"verify", path};
        auto names = xattr_names(node, at);
        if (!names) {
            problem(path, names.error().message());
            return;
        }
        std::string value;
        for (const std::string& name : *names) {
            if (auto found = find_xattr(node, name, value, at); !found) {
                problem(path, found.error().message());
                return;
            }
        }
    };

    // 5. The tree: every record checked, and the paths of the files with bad content.
    std::vector<std::vector<std::string>> bad_paths(content_count_);
    uint64_t bad_total = 0;
    for (const std::string& why : bad_content) bad_total += !why.empty();
    std::vector<bool> seen_dir(inode_count_ + 1, false);
    struct Dir {
        std::string path;
        InodeView node;
    };
    std::vector<Dir> dirs;
    if (auto root = inode(kRootIno, ctx); !root) {
        problem("/", root.error().message());
    } else if (root->type != FileType::directory) {
        problem("/", "the root inode is not a directory");
    } else {
        seen_dir[kRootIno] = true;
        check_xattrs("/", *root);
        dirs.push_back(Dir{"/", *root});
    }
    while (!dirs.empty()) {
        Dir dir = std::move(dirs.back());
        dirs.pop_back();
        auto entries = list(dir.node, Ctx{"verify", dir.path});
        if (!entries) {
            problem(dir.path, entries.error().message());
            continue;
        }
        const std::byte* dirents = meta_ + dirents_rel_ + dir.node.rec.ref * sizeof(Dirent);
        const bool v2 = version_ >= 2;
        auto key_of = [&](const std::string& name) {
            return v2 ? hash_of(name) : name_prefix(name.data(), name.size());
        };
        if (v2) check_buckets(dir.path, dir.node, *entries, report);
        for (std::size_t i = 0; i < entries->size(); ++i) {
            const DirEntry& e = (*entries)[i];
            std::string path = path_join(dir.path, e.name);
            // list() checked the range; lookups trust the order and the keys (v1: the name's
            // prefix, v2: its hash; the order is by key, then name), so check both.
            const auto key = load<uint32_t>(dirents + i * sizeof(Dirent) + kDirentHashOffset);
            if (key != key_of(e.name))
                problem(path, fmt::format("dirent {} {:#x} does not match the name (a lookup may "
                                          "miss it)",
                                          v2 ? "name hash" : "name prefix", key));
            if (i > 0) {
                const std::string& before = (*entries)[i - 1].name;
                const uint32_t key_before = key_of(before);
                if (key_before > key_of(e.name) ||
                    (key_before == key_of(e.name) && before >= e.name))
                    problem(path, "directory entries out of order (a lookup may miss them)");
            }
            // DirEntry::ino is the inode number; the walk goes by record number (list()
            // checked it in range).
            const uint64_t record =
                load<uint32_t>(dirents + i * sizeof(Dirent) + offsetof(Dirent, ino));
            auto node = inode(record, Ctx{"verify", path});
            if (!node) {
                problem(path, node.error().message());
                continue;
            }
            if (node->type != e.type) {  // v2 lists from the dirents alone
                problem(path, fmt::format("dirent type {} differs from its inode's, {}",
                                          file_type_name(e.type), file_type_name(node->type)));
                continue;
            }
            check_xattrs(path, *node);
            switch (node->type) {
                case FileType::directory:
                    if (seen_dir[record]) {
                        problem(path, "directory reached twice (a cycle or a linked directory)");
                    } else {
                        seen_dir[record] = true;
                        dirs.push_back(Dir{std::move(path), *node});
                    }
                    break;
                case FileType::regular:
                    ++report.files_checked;
                    if (node->rec.size != 0) {
                        const uint64_t c = v2 ? node->aux : node->rec.ref - 1;
                        if (auto ok = content(*node, Ctx{"verify", path}); !ok) {
                            problem(path, ok.error().message());
                        } else if (v2 && (located[c].offset != node->rec.ref ||
                                          located[c].size != node->rec.size)) {
                            problem(path,
                                    fmt::format("content {} is at offset {} size {} in another "
                                                "file; here at {} size {}",
                                                c, located[c].offset, located[c].size,
                                                node->rec.ref, node->rec.size));
                        } else if (!bad_content[c].empty()) {
                            bad_paths[c].push_back(std::move(path));
                        }
                    }
                    break;
                case FileType::symlink:
                    if (auto t = symlink_target(*node, Ctx{"verify", path}); !t)
                        problem(path, t.error().message());
                    break;
                default:
                    break;
            }
        }
    }
    if (bad_total != 0) {
        for (uint64_t c = 0; c < content_count_; ++c) {
            if (bad_content[c].empty()) continue;
            if (bad_paths[c].empty()) problem(fmt::format("content {}", c), bad_content[c]);
            for (std::string& path : bad_paths[c]) problem(std::move(path), bad_content[c]);
        }
    }

    // 6. The inode numbers.
    if (numbered_) verify_numbering(report);

    // 7. The image digest: the header (checksum and digest zero), then the metadata region, or
    // with metadata digests their table, each block checked against its entry.
    Header zeroed = header_;
    zeroed.header_checksum = 0;
    std::memset(zeroed.image_digest, 0, sizeof zeroed.image_digest);
    sha.update(std::as_bytes(std::span(&zeroed, 1)));
    if (!meta_digests_.empty()) {
        for (uint64_t b = 0; b < block_sum_count_; ++b) {
            const uint64_t at = b * kMetaBlockSize;
            const uint64_t n = std::min<uint64_t>(kMetaBlockSize, meta_length_ - at);
            if (auto mismatch = check_meta_block(meta_digests_, b, std::span(meta_ + at, n)))
                problem(fmt::format("metadata block {} (offset {})", b, meta_offset_ + at),
                        fmt::format("SHA-256 mismatch: expected {}, found {}", mismatch->expected,
                                    mismatch->found));
            meter.add(n);
        }
        sha.update(meta_digests_);
    } else {
        for (uint64_t at = 0; at < meta_length_; at += kChunk) {
            const uint64_t n = std::min(kChunk, meta_length_ - at);
            sha.update(std::span(meta_ + at, n));
            meter.add(n);
        }
    }
    const Sha256Digest digest = sha.finish();
    if (std::memcmp(digest.data(), header_.image_digest, digest.size()) != 0)
        problem("image digest", fmt::format("mismatch: expected {}, found {}",
                                            to_hex(std::span<const uint8_t>(header_.image_digest)),
                                            to_hex(digest)));

    if (image_->damaged())
        problem("pack file", "changed underneath it (truncated?) while it was read");
    report.bytes_checked = meter.done();
    meter.finish();
    return report;
}

// A v2 directory's buckets against its entries (lookups trust them): each bucket starts where
// the first entry whose hash's top bits reach it is.
void PackReader::check_buckets(const std::string& path, const InodeView& dir,
                               const std::vector<DirEntry>& entries, VerifyReport& report) const {
    const unsigned bits = bucket_bits(dir.rec.size);
    if (bits == 0) return;
    const uint64_t count = uint64_t{1} << bits;
    auto starts = meta(buckets_rel_ + uint64_t{dir.aux} * 4, (count + 1) * 4, Ctx{"verify", path});
    if (!starts) {
        report.problems.push_back(VerifyProblem{path, starts.error().message()});
        return;
    }
    uint64_t at = 0;
    for (uint64_t k = 0; k <= count; ++k) {
        while (at < entries.size() && (hash_of(entries[at].name) >> (32 - bits)) < k) ++at;
        const uint64_t stored = load<uint32_t>(*starts + k * 4);
        if (stored != at) {
            report.problems.push_back(VerifyProblem{
                path, fmt::format("directory bucket {} starts at entry {}, should at {} (a lookup "
                                  "may miss entries)",
                                  k, stored, at)});
            return;
        }
    }
}

// Every stored number non-zero; inode_order a permutation of the records, sorted strictly
// ascending by number (so no two numbers are equal). Each kind of fault is reported once, with
// how often it occurs and where first: a hostile pack could otherwise add a problem per inode.
void PackReader::verify_numbering(VerifyReport& report) const {
    const Ctx ctx{"verify", {}};
    const uint64_t n = inode_count_;
    auto numbers = meta(numbers_rel_, n * 8, ctx);
    auto order = meta(order_rel_, n * 4, ctx);
    if (!numbers || !order) {
        report.problems.push_back(VerifyProblem{
            "inode numbers", (!numbers ? numbers.error() : order.error()).message()});
        return;
    }
    struct Fault {
        const char* what;
        const char* unit;  // what `first` counts
        uint64_t count = 0, first = 0;
        void note(uint64_t at) {
            if (count++ == 0) first = at;
        }
    };
    Fault zero{"a stored inode number is 0", "record"},
        range{"an inode order entry names no record", "position"},
        twice{"inode order lists a record twice", "position"},
        unsorted{"inode order is not strictly ascending by number", "position"};
    std::vector<bool> listed(n, false);
    uint64_t previous = 0;  // no number is 0
    for (uint64_t i = 0; i < n; ++i) {
        if (load<uint64_t>(*numbers + i * 8) == 0) zero.note(i);
        const uint64_t index = load<uint32_t>(*order + i * 4);
        if (index >= n) {
            range.note(i);
            continue;
        }
        if (listed[index]) twice.note(i);
        listed[index] = true;
        const auto number = load<uint64_t>(*numbers + index * 8);
        if (i > 0 && number <= previous) unsorted.note(i);
        previous = number;
    }
    for (const Fault* f : {&zero, &range, &twice, &unsorted}) {
        if (f->count == 0) continue;
        report.problems.push_back(VerifyProblem{
            "inode numbers", fmt::format("{} (first at {} {}, {} in all)", f->what, f->unit,
                                            f->first, f->count)});
    }
}

}  // namespace packfs::pack
